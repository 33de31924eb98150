//! Secret values appear in no request but the sensitive-config write, and in no log line.

use super::harness::*;
use crate::support::dogu_cr;

const VALUE: &str = "sup3r-s3cret-ldap-passw0rd";
const OLD_VALUE: &str = "0ld-s3cret-value";

fn base64(text: &str) -> String {
    use std::fmt::Write;
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = text.as_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= chunk.len() {
                out.write_char(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char).unwrap();
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[tokio::test]
async fn secret_values_stay_out_of_requests_and_logs() {
    crate::support::logs::capture();

    let harness = Harness::new(
        "{displayName: x, blueprint: {dogus: [{name: official/ldap, version: 1.0.0-1}],
            config: {dogus: {ldap: [{key: admin/password, sensitive: true, secretRef: {name: ldap-admin, key: password}}]}}}}",
    )
    .descriptor("official/ldap", "1.0.0-1")
    .dogu(dogu_cr("official/ldap", "1.0.0-1"))
    .sensitive(secret(
        "ldap-config",
        &[("app", "ces"), ("k8s.cloudogu.com/type", "sensitive-config"), ("dogu.name", "ldap")],
        &[("config.yaml", &format!("admin:\n  password: {OLD_VALUE}\n"))],
        "40",
    ))
    .secret(secret("ldap-admin", &[], &[("password", VALUE)], "41"));
    let (outcome, requests) = harness.reconcile(healthy(harness.blueprint.clone())).await;
    assert_eq!(outcome.execution.failure, None);

    let write_path = "/api/v1/namespaces/ecosystem/secrets/ldap-config";
    let write =
        requests.iter().find(|r| r.method == "PATCH" && r.path == write_path).expect("the sensitive config is written");
    let written = base64(&format!("admin:\n  password: {VALUE}\n"));
    assert_eq!(write.body["data"]["config.yaml"], written.as_str());
    assert_eq!(write.body["metadata"]["resourceVersion"], "40");

    for request in requests.iter().filter(|r| !(r.method == "PATCH" && r.path == write_path)) {
        for secret in [VALUE, OLD_VALUE] {
            assert!(!request.raw_body.contains(secret), "{} contains a secret value", request.line());
            assert!(!request.raw_body.contains(&base64(secret)), "{} contains a secret value", request.line());
        }
    }
    let logs = crate::support::logs::captured();
    assert!(logs.contains("applied"), "the reconcile logged: {logs}");
    for secret in [VALUE, OLD_VALUE] {
        assert!(!logs.contains(secret), "a secret value is in the logs");
    }
    let outcome_text = serde_json::to_string(&outcome).unwrap();
    assert!(!outcome_text.contains(VALUE) && !outcome_text.contains(OLD_VALUE));
}
