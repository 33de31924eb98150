//! Qualified names of dogus and components. The simple name is the identity everywhere (object names,
//! diff keys, config stores); the namespace is an attribute whose change is a "namespace switch".

use std::fmt;

use crate::problem::Problem;

/// `namespace/simpleName` of a dogu, e.g. `official/postgresql`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DoguName {
    pub namespace: String,
    pub simple: String,
}

impl DoguName {
    pub fn parse(text: &str) -> Result<Self, Problem> {
        // By a one-char array, not `'/'`: see `DoguVersion::parse`.
        let mut parts = text.split(['/']);
        let (Some(namespace), Some(simple), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(Problem::new(format!("dogu name needs to be in the form 'namespace/dogu' but is '{text}'")));
        };
        let mut problems = Vec::new();
        if namespace.is_empty() {
            problems.push(Problem::new(format!("namespace of dogu \"{simple}\" must not be empty")));
        }
        if simple.is_empty() {
            problems.push(Problem::new("dogu name must not be empty"));
        }
        problems.extend(shape_problems("dogu", text, namespace, simple));
        match Problem::join(problems) {
            Some(problem) => Err(problem),
            None => Ok(DoguName { namespace: namespace.to_owned(), simple: simple.to_owned() }),
        }
    }
}

impl fmt::Display for DoguName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.simple)
    }
}

/// `distributionNamespace/simpleName` of a component, e.g. `k8s/k8s-dogu-operator`. The distribution
/// namespace is the Helm repository namespace, not a Kubernetes namespace.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ComponentName {
    pub namespace: String,
    pub simple: String,
}

impl ComponentName {
    pub fn parse(text: &str) -> Result<Self, Problem> {
        let mut parts = text.split('/');
        let (Some(namespace), Some(simple), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(Problem::new(format!(
                "component name needs to be in the form 'namespace/component' but is '{text}'"
            )));
        };
        let mut problems = Vec::new();
        if namespace.is_empty() {
            problems.push(Problem::new(format!("namespace of component \"{simple}\" must not be empty")));
        }
        if simple.is_empty() {
            problems.push(Problem::new(format!("component name must not be empty: '{namespace}/{simple}'")));
        }
        problems.extend(shape_problems("component", text, namespace, simple));
        match Problem::join(problems) {
            Some(problem) => Err(problem),
            None => Ok(ComponentName { namespace: namespace.to_owned(), simple: simple.to_owned() }),
        }
    }
}

impl fmt::Display for ComponentName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.simple)
    }
}

/// The longest simple name: it is a Kubernetes label value (`dogu.name`).
const MAX_PART: usize = 63;

/// The simple name names Kubernetes objects (the Dogu or Component CR, `<dogu>-config`) and is a label
/// value; both parts are path segments of registry URLs. So both must be DNS labels: lower-case ASCII
/// letters, digits and `-`, starting and ending with a letter or digit, at most 63 characters; the
/// namespace may also hold `_` (`prerelease_official`). Empty parts are reported on their own.
fn shape_problems(what: &str, text: &str, namespace: &str, simple: &str) -> Vec<Problem> {
    let mut problems = Vec::new();
    for (part, underscore) in [(namespace, true), (simple, false)] {
        if part.is_empty() || is_label(part, underscore) {
            continue;
        }
        let allowed =
            if underscore { "lower-case letters, digits, '-' and '_'" } else { "lower-case letters, digits and '-'" };
        problems.push(Problem::new(format!(
            "{what} name '{text}' is not valid: \"{}\" must consist of {allowed}, start and end with a letter or digit, and have at most {MAX_PART} characters",
            part.escape_debug()
        )));
    }
    problems
}

fn is_label(part: &str, underscore: bool) -> bool {
    let inner = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || (underscore && c == '_');
    let edge = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    part.len() <= MAX_PART
        && part.chars().all(inner)
        && part.chars().next().is_some_and(edge)
        && part.chars().last().is_some_and(edge)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dogu_names_need_exactly_one_slash_and_two_non_empty_parts() {
        assert_eq!(DoguName::parse("official/redmine").unwrap().simple, "redmine");
        assert_eq!(
            DoguName::parse("invalid").unwrap_err().to_string(),
            "dogu name needs to be in the form 'namespace/dogu' but is 'invalid'"
        );
        assert!(DoguName::parse("a/b/c").is_err());
        assert_eq!(DoguName::parse("/x").unwrap_err().to_string(), "namespace of dogu \"x\" must not be empty");
        assert_eq!(
            DoguName::parse("/").unwrap_err().to_string(),
            "namespace of dogu \"\" must not be empty\ndogu name must not be empty"
        );
    }

    /// The finding: `official/..` and unicode names passed, and became object names and URL paths.
    #[test]
    fn names_are_kubernetes_labels() {
        for bad in [
            "official/..",
            "official/Redmine",
            "official/rédmine",
            "official/-x",
            "official/x_y",
            "../x",
            "official/a.b",
        ] {
            let error = DoguName::parse(bad).unwrap_err().to_string();
            assert!(error.contains("is not valid") && error.contains("at most 63 characters"), "{bad}: {error}");
        }
        assert!(DoguName::parse(&format!("official/{}", "a".repeat(64))).is_err());
        for good in ["official/nginx-ingress", "k8s/nginx-static", "prerelease_official/cas", "premium/x1"] {
            assert!(DoguName::parse(good).is_ok(), "{good}");
        }
        assert!(ComponentName::parse("k8s/../x").is_err());
        assert!(ComponentName::parse("k8s/K8s-Longhorn").is_err());
        assert!(ComponentName::parse("k8s/k8s-longhorn").is_ok());
    }

    #[test]
    fn component_names_report_their_specific_messages() {
        assert_eq!(
            ComponentName::parse("k8s-dogu-operator").unwrap_err().to_string(),
            "component name needs to be in the form 'namespace/component' but is 'k8s-dogu-operator'"
        );
        assert_eq!(ComponentName::parse("k8s/").unwrap_err().to_string(), "component name must not be empty: 'k8s/'");
        assert_eq!(ComponentName::parse("k8s/longhorn").unwrap().to_string(), "k8s/longhorn");
    }
}
