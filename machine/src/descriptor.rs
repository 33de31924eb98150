//! The parts of a dogu descriptor (`dogu.json`) that validation needs: dependencies and volumes.
//!
//! Both descriptor formats are read: v2 lists dependencies as objects (`{"type", "name", "version"}`),
//! v1 as plain dogu names.

use serde::{Deserialize, Deserializer, Serialize};

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct DoguDescriptor {
    /// Qualified name, e.g. `official/redmine`.
    #[serde(rename = "Name", default)]
    pub name: String,
    #[serde(rename = "Version", default)]
    pub version: String,
    #[serde(
        rename = "Dependencies",
        default,
        deserialize_with = "dependencies",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub dependencies: Vec<Dependency>,
    #[serde(
        rename = "OptionalDependencies",
        default,
        deserialize_with = "dependencies",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub optional_dependencies: Vec<Dependency>,
    #[serde(rename = "Volumes", default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<Volume>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct Dependency {
    /// `dogu`, `client` or `package`; missing means `dogu`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default)]
    pub name: String,
    /// A version constraint such as `>=2.0.0-2`; empty allows every version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
}

impl Dependency {
    /// Whether this is a dependency on another dogu (a missing type means dogu).
    pub fn is_dogu(&self) -> bool {
        matches!(self.kind.as_deref(), None | Some("") | Some("dogu"))
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct Volume {
    #[serde(rename = "Name", default)]
    pub name: String,
    /// Volumes with clients are managed by another component and cannot take additional mounts.
    #[serde(rename = "Clients", default, deserialize_with = "null_as_empty", skip_serializing_if = "Vec::is_empty")]
    pub clients: Vec<serde_json::Value>,
}

fn null_as_empty<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

fn dependencies<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Dependency>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum AnyDependency {
        V2(Dependency),
        V1(String),
    }
    let list = Option::<Vec<AnyDependency>>::deserialize(d)?.unwrap_or_default();
    Ok(list
        .into_iter()
        .map(|dep| match dep {
            AnyDependency::V2(dep) => dep,
            AnyDependency::V1(name) => Dependency { kind: Some("dogu".into()), name, version: String::new() },
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_v2_and_v1_dependencies() {
        let v2: DoguDescriptor = serde_json::from_str(
            r#"{"Name":"official/redmine","Version":"5.1.3-2","Dependencies":[{"type":"dogu","name":"postgresql","version":">=12"},{"name":"cas"},{"type":"package","name":"jq"}],
               "Volumes":[{"Name":"plugins"},{"Name":"menu","Clients":[{"Name":"k8s-dogu-operator"}]}]}"#,
        )
        .unwrap();
        assert_eq!(v2.dependencies.len(), 3);
        assert!(v2.dependencies[0].is_dogu() && v2.dependencies[1].is_dogu() && !v2.dependencies[2].is_dogu());
        assert_eq!(v2.dependencies[0].version, ">=12");
        assert_eq!(v2.volumes[1].clients.len(), 1);

        let v1: DoguDescriptor = serde_json::from_str(
            r#"{"Name":"official/scm","Version":"1.0.0-1","Dependencies":["cas","nginx"],"Volumes":null}"#,
        )
        .unwrap();
        assert_eq!(
            v1.dependencies[0],
            Dependency { kind: Some("dogu".into()), name: "cas".into(), version: String::new() }
        );
        assert!(v1.volumes.is_empty());
    }
}
