//! TLS of the registry client: rustls on ring (the provider the Kubernetes client uses, so the process
//! has exactly one), trusting the platform's roots plus an optional extra CA (a private registry).

use std::path::Path;
use std::sync::Arc;

use rustls::{ClientConfig, RootCertStore};
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

use crate::files::FileError;

/// The setting that names the extra CA file: every problem with the file names it, so that the
/// administrator knows what to fix (`DOGU_REGISTRY_CA_FILE=/dev/zero` once said only "the CA file
/// /dev/zero: larger than 4 MiB").
const CA_SETTING: &str = "DOGU_REGISTRY_CA_FILE";

/// Why the registry client's TLS cannot be configured: a problem with the extra CA file, named.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{setting}: cannot read the CA file {path}: {source}", setting = CA_SETTING)]
    Unreadable { path: String, source: std::io::Error },
    #[error("{setting}: the CA file {0}", setting = CA_SETTING)]
    Bounded(FileError),
    #[error("{setting}: the CA file {path} is not PEM: {problem}", setting = CA_SETTING)]
    NotPem { path: String, problem: String },
    #[error("{setting}: the CA file {0} holds no certificate", setting = CA_SETTING)]
    Empty(String),
    #[error("{setting}: the CA file {path} holds an unusable certificate: {source}", setting = CA_SETTING)]
    Unusable { path: String, source: rustls::Error },
    #[error("cannot configure TLS: {0}")]
    Configure(rustls::Error),
}

/// The client configuration; fails only on an unreadable or empty extra CA file.
pub fn client_config(extra_ca: Option<&Path>) -> Result<ClientConfig, TlsError> {
    let mut roots = RootCertStore::empty();
    // Unparsable platform certificates are skipped, as every TLS client does; an empty platform store
    // is not an error (plain-HTTP registries and images without CA bundles still work).
    let native = rustls_native_certs::load_native_certs();
    roots.add_parsable_certificates(native.certs);
    if let Some(path) = extra_ca {
        let shown = || path.display().to_string();
        let bytes = crate::files::read(path, crate::files::CA_FILE_LIMIT).map_err(|e| match e {
            FileError::Io { source, .. } => TlsError::Unreadable { path: shown(), source },
            other => TlsError::Bounded(other),
        })?;
        let certificates = CertificateDer::pem_slice_iter(&bytes)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| TlsError::NotPem { path: shown(), problem: e.to_string() })?;
        if certificates.is_empty() {
            return Err(TlsError::Empty(shown()));
        }
        for certificate in certificates {
            roots.add(certificate).map_err(|source| TlsError::Unusable { path: shown(), source })?;
        }
    }
    ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Configure)
        .map(|builder| builder.with_root_certificates(roots).with_no_client_auth())
}
