//! TLS of the registry client: rustls on ring (the provider the Kubernetes client uses, so the process
//! has exactly one), trusting the platform's roots plus an optional extra CA (a private registry).

use std::path::Path;
use std::sync::Arc;

use rustls::{ClientConfig, RootCertStore};
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

/// The client configuration; fails only on an unreadable or empty extra CA file.
pub fn client_config(extra_ca: Option<&Path>) -> Result<ClientConfig, String> {
    let mut roots = RootCertStore::empty();
    // Unparsable platform certificates are skipped, as every TLS client does; an empty platform store
    // is not an error (plain-HTTP registries and images without CA bundles still work).
    let native = rustls_native_certs::load_native_certs();
    roots.add_parsable_certificates(native.certs);
    if let Some(path) = extra_ca {
        let shown = path.display();
        let bytes = crate::files::read(path, crate::files::CA_FILE_LIMIT).map_err(|e| match e {
            crate::files::FileError::Io { source, .. } => format!("cannot read the CA file {shown}: {source}"),
            other => format!("the CA file {other}"),
        })?;
        let certificates = CertificateDer::pem_slice_iter(&bytes)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("the CA file {shown} is not PEM: {e}"))?;
        if certificates.is_empty() {
            return Err(format!("the CA file {shown} holds no certificate"));
        }
        for certificate in certificates {
            roots.add(certificate).map_err(|e| format!("the CA file {shown} holds an unusable certificate: {e}"))?;
        }
    }
    ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("cannot configure TLS: {e}"))
        .map(|builder| builder.with_root_certificates(roots).with_no_client_auth())
}
