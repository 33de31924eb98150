//! The remote registry client against a real HTTP server on loopback (the sandbox's registry).

use std::time::Duration;

use blueprint_operator::descriptors::{RemoteError, RemoteRegistry, UrlSchema};
use blueprint_operator::sandbox::dogu_registry::{Fault, RegistryServer, Served};
use reqwest::StatusCode;

use super::{CAS_V2, LDAP_V1, settings};

async fn served() -> Served {
    let registry = RegistryServer::new(Some(("instance".into(), "s3cret".into())));
    registry.add(CAS_V2).unwrap();
    registry.add(LDAP_V1).unwrap();
    registry.serve(([127, 0, 0, 1], 0).into()).await.unwrap()
}

fn client(served: &Served, schema: UrlSchema) -> RemoteRegistry {
    RemoteRegistry::new(&settings(&served.endpoint(), schema)).unwrap()
}

#[tokio::test]
async fn default_schema_with_basic_auth() {
    let served = served().await;
    let fetched = client(&served, UrlSchema::Default).fetch("official/cas", "7.1.5-2").await.unwrap();
    assert_eq!(fetched.descriptor.name, "official/cas");
    assert_eq!(fetched.descriptor.dependencies.len(), 2);
    assert_eq!(fetched.text, CAS_V2, "the registry's text is kept as it came");
    let requests = served.registry.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/dogus/official/cas/7.1.5-2");
    assert_eq!(requests[0].user.as_deref(), Some("instance"), "basic auth was sent");
    assert!(!requests[0].absolute, "no proxy without PROXY_URL");
}

#[tokio::test]
async fn index_schema() {
    let served = served().await;
    let fetched = client(&served, UrlSchema::Index).fetch("official/cas", "7.1.5-2").await.unwrap();
    assert_eq!(fetched.descriptor.version, "7.1.5-2");
    assert_eq!(served.registry.requests()[0].path, "/official/cas/7.1.5-2/index.json");
}

#[tokio::test]
async fn urls_of_both_schemas_keep_the_endpoint_path() {
    let url = |endpoint: &str, schema| {
        RemoteRegistry::new(&settings(endpoint, schema)).unwrap().url("official/cas", "7.1.5-2").to_string()
    };
    assert_eq!(
        url("https://dogu.example.com/api/v2", UrlSchema::Default),
        "https://dogu.example.com/api/v2/dogus/official/cas/7.1.5-2"
    );
    // Upstream's endpoints may end in `dogus` or `dogus/`: it is not doubled.
    assert_eq!(
        url("https://dogu.example.com/api/v2/dogus/", UrlSchema::Default),
        "https://dogu.example.com/api/v2/dogus/official/cas/7.1.5-2"
    );
    assert_eq!(
        url("https://dogu.example.com/api/v2/dogus", UrlSchema::Default),
        "https://dogu.example.com/api/v2/dogus/official/cas/7.1.5-2"
    );
    assert_eq!(
        url("https://mirror.example.com/", UrlSchema::Index),
        "https://mirror.example.com/official/cas/7.1.5-2/index.json"
    );
}

#[tokio::test]
async fn an_endpoint_with_trailing_slashes() {
    let registry = RemoteRegistry::new(&settings("https://dogu.example.com/api/v2//", UrlSchema::Default)).unwrap();
    assert_eq!(
        registry.url("official/cas", "7.1.5-2").as_str(),
        "https://dogu.example.com/api/v2/dogus/official/cas/7.1.5-2"
    );
}

#[tokio::test]
async fn bad_endpoints_are_named_without_repeating_them() {
    for (endpoint, expected) in [
        ("ftp://user:pw-one@dogu.example.com", "must not contain credentials"),
        ("https://user:pw-one@dogu.example.com:port", "DOGU_REGISTRY_ENDPOINT is not a URL: invalid port number"),
        ("https://dogu.example.com/?token=pw-one", "must not have a query or a fragment"),
        ("ftp://dogu.example.com", "not an http(s) URL (the scheme is \"ftp\")"),
    ] {
        let error = RemoteRegistry::new(&settings(endpoint, UrlSchema::Default)).unwrap_err().to_string();
        assert!(error.contains(expected), "{endpoint}: {error}");
        assert!(!error.contains("pw-one"), "a credential in the message: {error}");
    }
    let mut zero = settings("https://dogu.example.com", UrlSchema::Default);
    zero.timeout = Duration::ZERO;
    assert_eq!(RemoteRegistry::new(&zero).unwrap_err().to_string(), "DOGU_REGISTRY_TIMEOUT must be longer than zero");
}

#[test]
fn settings_print_without_secrets() {
    let mut with_proxy = settings("https://dogu.example.com", UrlSchema::Default);
    with_proxy.proxy = Some("http://proxy-user:proxy-pw@proxy:3128".into());
    let printed = format!("{with_proxy:?}");
    assert!(printed.contains("instance"), "{printed}");
    assert!(!printed.contains("s3cret") && !printed.contains("proxy-pw"), "{printed}");
}

#[tokio::test]
async fn bad_settings_are_named() {
    let error = RemoteRegistry::new(&settings("dogu.example.com", UrlSchema::Default)).unwrap_err().to_string();
    assert!(error.contains("DOGU_REGISTRY_ENDPOINT"), "{error}");
    let error = RemoteRegistry::new(&settings("ftp://dogu.example.com", UrlSchema::Default)).unwrap_err().to_string();
    assert!(error.contains("not an http(s) URL"), "{error}");
    let error =
        RemoteRegistry::new(&settings("https://user:pw@dogu.example.com", UrlSchema::Default)).unwrap_err().to_string();
    assert!(error.contains("must not contain credentials") && !error.contains("pw"), "{error}");
    let mut with_proxy = settings("https://dogu.example.com", UrlSchema::Default);
    with_proxy.proxy = Some("http://user:proxy-pw@proxy:port".into());
    let error = RemoteRegistry::new(&with_proxy).unwrap_err().to_string();
    assert_eq!(error, "invalid proxy url (PROXY_URL): invalid port number");
    with_proxy.proxy = Some("ftp://proxy:21".into());
    let error = RemoteRegistry::new(&with_proxy).unwrap_err().to_string();
    assert!(error.contains("the scheme \"ftp\" is not http(s)"), "{error}");
    let mut with_ca = settings("https://dogu.example.com", UrlSchema::Default);
    with_ca.extra_ca = Some("/nonexistent/ca.pem".into());
    let error = RemoteRegistry::new(&with_ca).unwrap_err().to_string();
    assert!(error.contains("cannot read the CA file /nonexistent/ca.pem"), "{error}");
}

#[tokio::test]
async fn v1_dependencies_become_dogu_dependencies() {
    let served = served().await;
    let fetched = client(&served, UrlSchema::Default).fetch("official/ldap", "2.6.2-1").await.unwrap();
    let names: Vec<_> = fetched.descriptor.dependencies.iter().map(|d| (d.name.as_str(), d.is_dogu())).collect();
    assert_eq!(names, [("nginx", true), ("postfix", true)]);
}

#[tokio::test]
async fn not_found() {
    let served = served().await;
    let error = client(&served, UrlSchema::Default).fetch("official/cas", "9.9.9-9").await.unwrap_err();
    assert_eq!(error, RemoteError::NotFound { name: "official/cas".into(), version: "9.9.9-9".into() });
}

#[tokio::test]
async fn wrong_credentials_and_forbidden_say_credentials() {
    let served = served().await;
    let mut wrong = settings(&served.endpoint(), UrlSchema::Default);
    wrong.credentials = Some(("instance".into(), "wrong".into()));
    let error = RemoteRegistry::new(&wrong).unwrap().fetch("official/cas", "7.1.5-2").await.unwrap_err();
    assert!(matches!(error, RemoteError::Credentials { status: StatusCode::UNAUTHORIZED, .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("DOGU_REGISTRY_USERNAME and DOGU_REGISTRY_PASSWORD"), "{message}");
    assert!(!message.contains("wrong"), "the password is never shown: {message}");

    served.registry.inject(Fault::Status(403), 1);
    let error = client(&served, UrlSchema::Default).fetch("official/cas", "7.1.5-2").await.unwrap_err();
    assert!(matches!(error, RemoteError::Credentials { status: StatusCode::FORBIDDEN, .. }), "{error:?}");
}

#[tokio::test]
async fn a_proxy_that_refuses_says_proxy_credentials() {
    let served = served().await;
    served.registry.inject(Fault::Status(407), 1);
    let error = client(&served, UrlSchema::Default).fetch("official/cas", "7.1.5-2").await.unwrap_err();
    assert_eq!(error, RemoteError::ProxyCredentials);
    assert!(error.to_string().contains("check the user and password in PROXY_URL"));
}

#[tokio::test]
async fn an_answer_too_large_to_be_a_descriptor_is_not_read() {
    let served = served().await;
    served.registry.add_at("official/huge", "1.0.0-1", &" ".repeat(2 << 20));
    let error = client(&served, UrlSchema::Default).fetch("official/huge", "1.0.0-1").await.unwrap_err();
    assert!(matches!(error, RemoteError::Malformed { .. }), "{error:?}");
    assert!(error.to_string().ends_with("the answer is larger than 1048576 bytes"), "{error}");
}

#[tokio::test]
async fn server_errors_are_unavailable_with_the_status() {
    let served = served().await;
    served.registry.inject(Fault::Status(500), 1);
    let error = client(&served, UrlSchema::Default).fetch("official/cas", "7.1.5-2").await.unwrap_err();
    assert!(matches!(error, RemoteError::Status { status: StatusCode::INTERNAL_SERVER_ERROR, .. }), "{error:?}");
    assert!(error.to_string().contains("answered HTTP 500 Internal Server Error for official/cas 7.1.5-2"), "{error}");
}

#[tokio::test(start_paused = true)]
async fn a_registry_that_does_not_answer_in_time_times_out() {
    let served = served().await;
    served.registry.inject(Fault::Delay(Duration::from_secs(60)), 1);
    let mut slow = settings(&served.endpoint(), UrlSchema::Default);
    slow.timeout = Duration::from_secs(10);
    let started = tokio::time::Instant::now();
    let error = RemoteRegistry::new(&slow).unwrap().fetch("official/cas", "7.1.5-2").await.unwrap_err();
    assert!(matches!(error, RemoteError::Timeout { .. }), "{error:?}");
    assert_eq!(error.to_string(), format!("the dogu registry at {} did not answer within 10s", served.endpoint()));
    let waited = started.elapsed();
    assert!(waited >= Duration::from_secs(10) && waited < Duration::from_secs(60), "{waited:?}");
}

#[tokio::test]
async fn a_malformed_answer_is_not_a_descriptor() {
    let served = served().await;
    served.registry.inject(Fault::Malformed, 1);
    let error = client(&served, UrlSchema::Default).fetch("official/cas", "7.1.5-2").await.unwrap_err();
    assert!(matches!(error, RemoteError::Malformed { .. }), "{error:?}");
    assert!(
        error.to_string().starts_with("the dogu registry's answer for official/cas 7.1.5-2 is not a dogu descriptor")
    );
}

#[tokio::test]
async fn an_answer_for_another_dogu_is_rejected() {
    let served = served().await;
    // A broken mirror serves cas's descriptor under ldap's path.
    served.registry.add_at("official/ldap", "2.6.8-3", CAS_V2);
    let error = client(&served, UrlSchema::Default).fetch("official/ldap", "2.6.8-3").await.unwrap_err();
    assert!(matches!(error, RemoteError::WrongDescriptor { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "the dogu registry answered the request for official/ldap 2.6.8-3 with the descriptor of official/cas 7.1.5-2"
    );
}

#[tokio::test]
async fn a_registry_that_is_not_there_is_unavailable() {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let error = RemoteRegistry::new(&settings(&endpoint, UrlSchema::Default))
        .unwrap()
        .fetch("official/cas", "7.1.5-2")
        .await
        .unwrap_err();
    assert!(matches!(error, RemoteError::Transport { .. }), "{error:?}");
    assert!(error.to_string().starts_with(&format!("the dogu registry at {endpoint} cannot be reached")), "{error}");
}

#[tokio::test]
async fn through_a_proxy_with_credentials_from_its_url() {
    // The registry's server doubles as the proxy: a proxied request arrives in absolute form.
    let served = served().await;
    let mut proxied = settings("http://registry.invalid", UrlSchema::Default);
    proxied.proxy = Some(format!("http://proxy-user:proxy-pw@{}", served.address));
    let fetched = RemoteRegistry::new(&proxied).unwrap().fetch("official/cas", "7.1.5-2").await.unwrap();
    assert_eq!(fetched.descriptor.name, "official/cas");
    let request = &served.registry.requests()[0];
    assert!(request.absolute, "the request went to the proxy: {request:?}");
    assert_eq!(request.proxy_user.as_deref(), Some("proxy-user"));
    assert_eq!(request.user.as_deref(), Some("instance"));
}
