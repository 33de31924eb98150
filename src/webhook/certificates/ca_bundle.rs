//! The CA the API server trusts when it calls the webhook: the `caBundle` of the CRD's conversion
//! webhook (self-managed mode; with cert-manager its CA injector writes it). Written only when it
//! differs (one merge patch, conditional on the `resourceVersion` read), so a replica that starts with
//! everything in place writes nothing.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::{Map, Value};

/// The operator's CRD.
pub const BLUEPRINT_CRD: &str = "blueprints.k8s.cloudogu.com";
/// Where a CRD's conversion webhook keeps its CA (a JSON pointer).
pub const CONVERSION_CA_BUNDLE: &str = "/spec/conversion/webhook/clientConfig/caBundle";

/// Which CRD's `caBundle` holds the webhook's CA, and where in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaBundleTarget {
    /// The CRD's name (`blueprints.k8s.cloudogu.com`; the tests use one of their own).
    pub crd: String,
    /// A JSON pointer to the `caBundle` ([`CONVERSION_CA_BUNDLE`]).
    pub pointer: String,
    /// The operator's webhook Service (`namespace`, `name`): where the `caBundle`'s client config names
    /// a Service, it is made to name this one (the shipped CRD names `ecosystem`, which Helm cannot
    /// template). `None`: the reference is left as it is (a `url`, as in the tests).
    pub service: Option<(String, String)>,
}

impl CaBundleTarget {
    /// The conversion webhook's `caBundle` of the CRD `crd`.
    pub fn conversion_of(crd: &str) -> Self {
        CaBundleTarget { crd: crd.to_owned(), pointer: CONVERSION_CA_BUNDLE.to_owned(), service: None }
    }

    /// The same, and the client config's Service reference made the operator's own.
    pub fn with_service(mut self, namespace: &str, name: &str) -> Self {
        self.service = Some((namespace.to_owned(), name.to_owned()));
        self
    }

    /// The operator's Service, `(namespace, name)`, if the reference is to be made its own.
    fn service_ref(&self) -> Option<(&str, &str)> {
        self.service.as_ref().map(|(namespace, name)| (namespace.as_str(), name.as_str()))
    }
}

/// What writing `ca_pem` into a CRD takes.
#[derive(Clone, Debug, PartialEq)]
pub enum BundleChange {
    /// The CRD has no object where the `caBundle` would be (no webhook conversion): nothing to write.
    NoWebhook,
    /// It holds `ca_pem` already.
    Current,
    /// This merge patch (conditional on the CRD's `resourceVersion`).
    Patch(Value),
}

/// The annotation by which cert-manager's CA injector finds the Certificate whose CA it writes into a
/// CRD's conversion webhook.
pub const INJECT_CA_FROM: &str = "cert-manager.io/inject-ca-from";

/// What a CRD's conversion webhook is to hold, in either certificate mode.
#[derive(Clone, Copy, Debug, Default)]
pub struct Wanted<'a> {
    /// Self-managed: this CA in the `caBundle`, and no annotation of cert-manager's (its CA injector
    /// would overwrite the CA). `None`: the `caBundle` is cert-manager's to write.
    pub ca_pem: Option<&'a str>,
    /// cert-manager: the Certificate its CA injector reads the CA from (`namespace/name`).
    pub inject_from: Option<&'a str>,
    /// Where the client config names a Service: that it names this one (`namespace`, `name`).
    pub service: Option<(&'a str, &'a str)>,
}

/// Whether `crd` (as JSON) holds what is `wanted` in the client config whose `caBundle` `pointer`
/// names, and the one merge patch (conditional on its `resourceVersion`) that makes it so.
pub fn conversion_change(crd: &Value, pointer: &str, wanted: Wanted<'_>) -> BundleChange {
    use base64::Engine;
    let base64 = base64::engine::general_purpose::STANDARD;
    let path: Vec<String> = pointer.split('/').skip(1).map(|part| part.replace("~1", "/").replace("~0", "~")).collect();
    let Some((field, parents)) = path.split_last() else { return BundleChange::NoWebhook };
    let parent = parents.iter().try_fold(crd, |value, part| value.get(part));
    let Some(parent) = parent.filter(|p| p.is_object()) else { return BundleChange::NoWebhook };
    let mut fields = Map::new();
    if let Some(ca_pem) = wanted.ca_pem {
        let held = parent.get(field).and_then(Value::as_str).and_then(|text| base64.decode(text).ok());
        if held.as_deref() != Some(ca_pem.as_bytes()) {
            fields.insert(field.clone(), Value::String(base64.encode(ca_pem)));
        }
    }
    if let Some(service) = service_change(parent.get("service"), wanted.service) {
        fields.insert("service".to_owned(), service);
    }
    let annotated = crd.pointer("/metadata/annotations").and_then(|a| a.get(INJECT_CA_FROM));
    let annotation = match (wanted.inject_from, annotated) {
        (Some(inject_from), held) if held.and_then(Value::as_str) != Some(inject_from) => {
            Some(Value::from(inject_from))
        }
        (None, Some(_)) if wanted.ca_pem.is_some() => Some(Value::Null),
        _ => None,
    };
    if fields.is_empty() && annotation.is_none() {
        return BundleChange::Current;
    }
    let mut patch = serde_json::json!({});
    if !fields.is_empty() {
        patch = Value::Object(fields);
        for part in parents.iter().rev() {
            patch = Value::Object(Map::from_iter([(part.clone(), patch)]));
        }
    }
    if let Some(version) = crd.pointer("/metadata/resourceVersion") {
        patch["metadata"] = serde_json::json!({"resourceVersion": version});
    }
    if let Some(annotation) = annotation {
        patch["metadata"]["annotations"] = serde_json::json!({INJECT_CA_FROM: annotation});
    }
    BundleChange::Patch(patch)
}

/// Self-managed: whether `crd` holds `ca_pem` at `pointer`, and the patch that would put it there.
pub fn bundle_change(crd: &Value, pointer: &str, ca_pem: &str) -> BundleChange {
    client_config_change(crd, pointer, ca_pem, None)
}

/// As [`bundle_change`], and where the client config beside the `caBundle` names a Service, that it
/// names `service` (`namespace`, `name`); one patch for both.
pub fn client_config_change(crd: &Value, pointer: &str, ca_pem: &str, service: Option<(&str, &str)>) -> BundleChange {
    conversion_change(crd, pointer, Wanted { ca_pem: Some(ca_pem), service, ..Wanted::default() })
}

/// With cert-manager: whether `crd` names the Certificate `inject_from` (`namespace/name`) for the CA
/// injector and, where its client config names a Service, names `service`; the patch that makes it so.
pub fn injector_change(crd: &Value, pointer: &str, inject_from: &str, service: Option<(&str, &str)>) -> BundleChange {
    conversion_change(crd, pointer, Wanted { inject_from: Some(inject_from), service, ..Wanted::default() })
}

/// The Service reference to write: where `named` (the client config's `service`) names another one
/// than `wanted` (`namespace`, `name`).
fn service_change(named: Option<&Value>, wanted: Option<(&str, &str)>) -> Option<Value> {
    match (named.filter(|s| s.is_object()), wanted) {
        (Some(named), Some((namespace, name)))
            if named.get("namespace").and_then(Value::as_str) != Some(namespace)
                || named.get("name").and_then(Value::as_str) != Some(name) =>
        {
            Some(serde_json::json!({"namespace": namespace, "name": name}))
        }
        _ => None,
    }
}

/// What [`inject`] found and did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Injected {
    /// The CRD held the CA already: nothing written.
    Current,
    /// The CA was written.
    Patched,
    /// The CRD has no webhook conversion: nothing written.
    NoWebhook,
    /// There is no such CRD: nothing written.
    NoCrd,
}

/// How often a patch that met another writer (409) is decided again on a fresh read.
const ATTEMPTS: usize = 5;

/// Makes `target`'s `caBundle` hold `ca_pem`: a read, and a patch only if it differs.
pub async fn inject(
    crds: &Api<CustomResourceDefinition>,
    target: &CaBundleTarget,
    ca_pem: &str,
) -> Result<Injected, kube::Error> {
    let written =
        patch_if_needed(crds, target, |crd| client_config_change(crd, &target.pointer, ca_pem, target.service_ref()))
            .await?;
    if written == Injected::Patched {
        tracing::info!(crd = %target.crd, "the webhook's CA written into the CRD's caBundle");
    }
    Ok(written)
}

/// With cert-manager: makes `target`'s CRD name the Certificate `inject_from` (`namespace/name`) for
/// cert-manager's CA injector, and the operator's Service: a read, and a patch only if it differs.
pub async fn name_injector(
    crds: &Api<CustomResourceDefinition>,
    target: &CaBundleTarget,
    inject_from: &str,
) -> Result<Injected, kube::Error> {
    let written =
        patch_if_needed(crds, target, |crd| injector_change(crd, &target.pointer, inject_from, target.service_ref()))
            .await?;
    if written == Injected::Patched {
        tracing::info!(crd = %target.crd, %inject_from, "the CRD names cert-manager's Certificate for its CA injector");
    }
    Ok(written)
}

/// Reads `target`'s CRD and sends the patch `change` decides on, if any; a patch that met another
/// writer (409) is decided again on a fresh read.
async fn patch_if_needed(
    crds: &Api<CustomResourceDefinition>,
    target: &CaBundleTarget,
    change: impl Fn(&Value) -> BundleChange,
) -> Result<Injected, kube::Error> {
    let mut attempt = 0;
    loop {
        let Some(crd) = crds.get_opt(&target.crd).await? else {
            tracing::warn!(crd = %target.crd, "the CRD does not exist: no caBundle to keep");
            return Ok(Injected::NoCrd);
        };
        let crd = serde_json::to_value(crd).map_err(kube::Error::SerdeError)?;
        let patch = match change(&crd) {
            BundleChange::Current => return Ok(Injected::Current),
            BundleChange::NoWebhook => {
                tracing::info!(crd = %target.crd, path = %target.pointer, "the CRD has no webhook conversion: its caBundle is left alone");
                return Ok(Injected::NoWebhook);
            }
            BundleChange::Patch(patch) => patch,
        };
        match crds.patch(&target.crd, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(_) => return Ok(Injected::Patched),
            Err(kube::Error::Api(status)) if status.is_conflict() && attempt + 1 < ATTEMPTS => attempt += 1,
            Err(error) => return Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Self-managed after cert-manager: the annotation naming cert-manager's Certificate goes with the CA
    /// (else the injector would overwrite the CA), once.
    #[test]
    fn the_self_managed_ca_removes_cert_managers_annotation() {
        let mut annotated = crd(json!({"service": {"name": "s"}}));
        annotated["metadata"]["annotations"] =
            json!({INJECT_CA_FROM: "ecosystem/blueprint-operator-webhook", "other": "kept"});
        let BundleChange::Patch(patch) = bundle_change(&annotated, CONVERSION_CA_BUNDLE, "ca") else {
            panic!("a patch")
        };
        assert_eq!(patch["metadata"]["annotations"], json!({INJECT_CA_FROM: null}));
        let mut patched = annotated.clone();
        json_patch::merge(&mut patched, &patch);
        assert_eq!(patched["metadata"]["annotations"], json!({"other": "kept"}));
        assert_eq!(bundle_change(&patched, CONVERSION_CA_BUNDLE, "ca"), BundleChange::Current);
    }

    /// cert-manager mode: the annotation and the Service in one patch, then nothing; the caBundle is
    /// never written (the CA injector's).
    #[test]
    fn the_crd_is_made_to_name_the_certificate_and_the_service_once() {
        let shipped = crd(
            json!({"service": {"name": "blueprint-operator-webhook", "namespace": "ecosystem", "path": "/convert", "port": 443}}),
        );
        let service = Some(("ces", "bp-webhook"));
        let BundleChange::Patch(patch) = injector_change(&shipped, CONVERSION_CA_BUNDLE, "ces/bp-cert", service) else {
            panic!("a patch")
        };
        assert_eq!(
            patch,
            json!({"metadata": {"annotations": {INJECT_CA_FROM: "ces/bp-cert"}, "resourceVersion": "41"},
                   "spec": {"conversion": {"webhook": {"clientConfig": {"service": {"namespace": "ces", "name": "bp-webhook"}}}}}})
        );
        let mut patched = shipped.clone();
        json_patch::merge(&mut patched, &patch);
        assert_eq!(patched["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"], 443);
        assert_eq!(injector_change(&patched, CONVERSION_CA_BUNDLE, "ces/bp-cert", service), BundleChange::Current);
        // In `ecosystem` under the shipped names: the annotation alone.
        let BundleChange::Patch(patch) = injector_change(
            &shipped,
            CONVERSION_CA_BUNDLE,
            "ecosystem/blueprint-operator-webhook",
            Some(("ecosystem", "blueprint-operator-webhook")),
        ) else {
            panic!("a patch")
        };
        assert!(patch.get("spec").is_none(), "{patch}");
        let no_webhook = json!({"metadata": {"name": "x"}, "spec": {"conversion": {"strategy": "None"}}});
        assert_eq!(injector_change(&no_webhook, CONVERSION_CA_BUNDLE, "ces/bp-cert", None), BundleChange::NoWebhook);
    }

    fn crd(client_config: Value) -> Value {
        json!({"metadata": {"name": "blueprints.k8s.cloudogu.com", "resourceVersion": "41"},
               "spec": {"conversion": {"strategy": "Webhook", "webhook": {"clientConfig": client_config}}}})
    }

    #[test]
    fn the_bundle_is_patched_only_when_it_differs() {
        let pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
        let change = bundle_change(&crd(json!({"service": {"name": "s"}})), CONVERSION_CA_BUNDLE, pem);
        let expected = json!({"metadata": {"resourceVersion": "41"},
            "spec": {"conversion": {"webhook": {"clientConfig": {"caBundle": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="}}}}});
        assert_eq!(change, BundleChange::Patch(expected.clone()));
        let held = crd(expected["spec"]["conversion"]["webhook"]["clientConfig"].clone());
        assert_eq!(bundle_change(&held, CONVERSION_CA_BUNDLE, pem), BundleChange::Current);
        assert!(matches!(bundle_change(&held, CONVERSION_CA_BUNDLE, "another"), BundleChange::Patch(_)));
        // Not base64 (a hand edit): replaced.
        assert!(matches!(
            bundle_change(&crd(json!({"caBundle": "%%%"})), CONVERSION_CA_BUNDLE, pem),
            BundleChange::Patch(_)
        ));
    }

    /// The shipped CRD names the Service in `ecosystem`; an operator installed elsewhere makes it name
    /// its own, in the same patch as the CA, and then writes nothing more.
    #[test]
    fn the_service_reference_is_made_the_operators_own() {
        let pem = "ca";
        let shipped = crd(
            json!({"service": {"name": "blueprint-operator-webhook", "namespace": "ecosystem", "path": "/convert", "port": 443}}),
        );
        let BundleChange::Patch(patch) =
            client_config_change(&shipped, CONVERSION_CA_BUNDLE, pem, Some(("ces", "blueprint-operator-webhook")))
        else {
            panic!("a patch")
        };
        let config = &patch["spec"]["conversion"]["webhook"]["clientConfig"];
        assert_eq!(
            config["service"],
            json!({"namespace": "ces", "name": "blueprint-operator-webhook"}),
            "path and port are kept by the merge"
        );
        assert!(config["caBundle"].is_string());
        let mut patched = shipped.clone();
        json_patch::merge(&mut patched, &patch);
        assert_eq!(patched["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"], 443);
        assert_eq!(
            client_config_change(&patched, CONVERSION_CA_BUNDLE, pem, Some(("ces", "blueprint-operator-webhook"))),
            BundleChange::Current
        );
        // Only the Service differs: a patch of it alone.
        let BundleChange::Patch(patch) =
            client_config_change(&patched, CONVERSION_CA_BUNDLE, pem, Some(("other", "blueprint-operator-webhook")))
        else {
            panic!("a patch")
        };
        assert!(patch["spec"]["conversion"]["webhook"]["clientConfig"].get("caBundle").is_none());
        // A url is left alone.
        let by_url = crd(json!({"url": "https://127.0.0.1:1/convert"}));
        let BundleChange::Patch(patch) = client_config_change(&by_url, CONVERSION_CA_BUNDLE, pem, Some(("ces", "s")))
        else {
            panic!("a patch")
        };
        assert!(patch["spec"]["conversion"]["webhook"]["clientConfig"].get("service").is_none());
    }

    #[test]
    fn a_crd_without_webhook_conversion_is_left_alone() {
        let none = json!({"metadata": {"name": "x"}, "spec": {"conversion": {"strategy": "None"}}});
        assert_eq!(bundle_change(&none, CONVERSION_CA_BUNDLE, "ca"), BundleChange::NoWebhook);
        assert_eq!(bundle_change(&json!({"spec": {}}), CONVERSION_CA_BUNDLE, "ca"), BundleChange::NoWebhook);
        assert_eq!(bundle_change(&crd(json!("text")), CONVERSION_CA_BUNDLE, "ca"), BundleChange::NoWebhook);
        assert_eq!(bundle_change(&crd(json!({})), "", "ca"), BundleChange::NoWebhook);
    }
}
