//! Files mode (`WEBHOOK_CERT_DIR`): the certificate is `tls.crt` and `tls.key` in a folder, where the
//! kubelet mounts cert-manager's Secret. When cert-manager renews it, the kubelet swaps the mounted
//! files (a new folder behind the `..data` link, at once). Instead of a timer or a file watch, every TLS
//! handshake compares the two files' identity (device, inode, size, modification time: a `stat` each)
//! with those last read, and reads them again when they differ: a renewed certificate is served from
//! the first connection after the swap, and nothing runs between connections. Files that do not make
//! a certificate (half written by another writer, a key that is not the certificate's) are reported
//! once and the certificate read before stays.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use super::{CERTIFICATE, PRIVATE_KEY, validity};
use crate::files::{CA_FILE_LIMIT, FileError};
use crate::webhook::tls::CurrentCertificate;

/// Why the files do not make a certificate; the message names the file.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    #[error("the webhook's certificate file {0}")]
    File(#[from] FileError),
    #[error("the webhook's certificate files in {dir}: {problem}")]
    Invalid { dir: String, problem: String },
}

/// The certificate (with the chain after it, as cert-manager writes `tls.crt`) and key in `dir`.
pub fn load(dir: &Path) -> Result<Arc<CertifiedKey>, FilesError> {
    let invalid = |problem: String| FilesError::Invalid { dir: dir.display().to_string(), problem };
    let certificate = crate::files::read(&dir.join(CERTIFICATE), CA_FILE_LIMIT)?;
    let key = crate::files::read(&dir.join(PRIVATE_KEY), CA_FILE_LIMIT)?;
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&certificate)
        .collect::<Result<_, _>>()
        .map_err(|e| invalid(format!("{CERTIFICATE} is not PEM: {e}")))?;
    if chain.is_empty() {
        return Err(invalid(format!("{CERTIFICATE} holds no certificate")));
    }
    let key =
        PrivateKeyDer::from_pem_slice(&key).map_err(|_| invalid(format!("{PRIVATE_KEY} holds no PEM private key")))?;
    let key = CertifiedKey::from_der(chain, key, &rustls::crypto::ring::default_provider())
        .map_err(|e| invalid(format!("{PRIVATE_KEY} is not the key of {CERTIFICATE}: {e}")))?;
    Ok(Arc::new(key))
}

/// The identity of the two files, as `stat` tells it (following the kubelet's links); `None` while
/// either is missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp([(u64, u64, u64, i64, i64); 2]);

fn stamp(dir: &Path) -> Option<Stamp> {
    let one = |name: &str| {
        let meta = std::fs::metadata(dir.join(name)).ok()?;
        Some((meta.dev(), meta.ino(), meta.size(), meta.mtime(), meta.mtime_nsec()))
    };
    Some(Stamp([one(CERTIFICATE)?, one(PRIVATE_KEY)?]))
}

/// The certificate of `dir`, served and read again whenever a handshake finds the files changed. The
/// first read must succeed (the start stops otherwise, naming the file).
pub fn serving(dir: &Path) -> Result<Arc<CurrentCertificate>, FilesError> {
    let dir = dir.to_path_buf();
    let seen = stamp(&dir);
    let first = load(&dir)?;
    report(&dir, &first);
    let seen = Mutex::new(seen);
    Ok(CurrentCertificate::refreshed_by(first, move || newer(&dir, &seen)))
}

/// A certificate from the files if they changed since they were last looked at.
fn newer(dir: &Path, seen: &Mutex<Option<Stamp>>) -> Option<Arc<CertifiedKey>> {
    let now = stamp(dir)?;
    {
        let mut seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
        if *seen == Some(now) {
            return None;
        }
        *seen = Some(now);
    }
    match load(dir) {
        Ok(key) => {
            report(dir, &key);
            Some(key)
        }
        Err(error) => {
            tracing::warn!(%error, "the webhook's certificate files changed but make no certificate: serving the previous one");
            None
        }
    }
}

fn report(dir: &Path, key: &CertifiedKey) {
    let expires = key.end_entity_cert().ok().and_then(|der| validity(der)).map(|(_, until)| until.to_string());
    tracing::info!(dir = %dir.display(), expires = expires.as_deref().unwrap_or("unknown"), "serving the webhook's certificate from files");
}
