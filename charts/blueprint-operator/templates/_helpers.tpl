{{/* The name of every object: the operator's component name, as upstream's chart installs it. */}}
{{- define "operator.name" -}}
k8s-blueprint-operator
{{- end -}}

{{- define "operator.labels" -}}
app: ces
app.kubernetes.io/name: {{ include "operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "operator.selector" -}}
app.kubernetes.io/name: {{ include "operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}


{{/* The conversion webhook's certificate is the operator's own (not cert-manager's). */}}
{{- define "webhook.selfManaged" -}}
{{- if and .Values.webhook.enabled (not .Values.webhook.certManager.enabled) }}true{{ end -}}
{{- end -}}

{{/* The conversion webhook's certificate is cert-manager's. */}}
{{- define "webhook.certManager" -}}
{{- if and .Values.webhook.enabled .Values.webhook.certManager.enabled }}true{{ end -}}
{{- end -}}
