//! Dogu descriptors: the remote registry client, the cache layers, TLS.

mod client;
mod layers;
mod tls;

use std::time::Duration;

use blueprint_operator::descriptors::{RemoteSettings, UrlSchema};

/// A v2 descriptor: typed dependencies.
pub const CAS_V2: &str = r#"{"Name":"official/cas","Version":"7.1.5-2","Image":"registry.cloudogu.com/official/cas","Dependencies":[{"type":"dogu","name":"nginx","version":">=1.17.0"},{"type":"client","name":"k8s-dogu-operator"}],"Volumes":[{"Name":"data","Path":"/var/lib/cas"}]}"#;
/// A v1 descriptor: dependencies are plain dogu names.
pub const LDAP_V1: &str = r#"{"Name":"official/ldap","Version":"2.6.2-1","Image":"registry.cloudogu.com/official/ldap","Dependencies":["nginx","postfix"]}"#;

pub fn settings(endpoint: &str, schema: UrlSchema) -> RemoteSettings {
    RemoteSettings {
        endpoint: endpoint.to_owned(),
        schema,
        credentials: Some(("instance".into(), "s3cret".into())),
        proxy: None,
        timeout: Duration::from_secs(10),
        extra_ca: None,
    }
}
