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
        let mut parts = text.split('/');
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
