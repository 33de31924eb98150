//! Reading local files with a bound: every file the operator reads is read up to a limit of its own,
//! and a larger one is refused with its name (`DOGU_REGISTRY_CA_FILE=/dev/zero` once grew the process
//! by 150 MB a second until it died).

use std::io::Read;
use std::path::Path;

const MIB: u64 = 1024 * 1024;

/// A CA bundle (a system bundle is about 200 KiB).
pub const CA_FILE_LIMIT: u64 = 4 * MIB;
/// A kubeconfig.
pub const KUBECONFIG_LIMIT: u64 = 16 * MIB;
/// A Blueprint (the API server stores none larger than 1.5 MiB).
pub const BLUEPRINT_FILE_LIMIT: u64 = 16 * MIB;
/// A `dogu.json`.
pub const DESCRIPTOR_FILE_LIMIT: u64 = 4 * MIB;
/// A cluster snapshot as `kubectl get -o yaml` prints it (5,000 Dogus with their config are 6 MB).
pub const CLUSTER_FILE_LIMIT: u64 = 256 * MIB;

#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("{path}: cannot read the file: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path}: larger than {limit_mib} MiB: not read")]
    TooLarge { path: String, limit_mib: u64 },
    #[error("{path}: not UTF-8 text")]
    NotText { path: String },
}

/// The file's bytes, if it holds at most `limit` of them.
pub fn read(path: &Path, limit: u64) -> Result<Vec<u8>, FileError> {
    let shown = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|source| FileError::Io { path: shown.clone(), source })?;
    read_bounded(file, shown, limit)
}

/// What `reader` gives, if it is at most `limit` bytes (`name` says where it came from in errors).
fn read_bounded(reader: impl Read, name: String, limit: u64) -> Result<Vec<u8>, FileError> {
    let mut bytes = Vec::new();
    reader.take(limit + 1).read_to_end(&mut bytes).map_err(|source| FileError::Io { path: name.clone(), source })?;
    if bytes.len() as u64 > limit {
        return Err(FileError::TooLarge { path: name, limit_mib: limit.div_ceil(MIB) });
    }
    Ok(bytes)
}

/// The text of the file, or of standard input when the path is `-`, if it holds at most `limit` bytes.
pub fn read_text_or_stdin(path: &Path, limit: u64) -> Result<String, FileError> {
    if path != Path::new("-") {
        return read_text(path, limit);
    }
    let name = "standard input".to_owned();
    String::from_utf8(read_bounded(std::io::stdin().lock(), name.clone(), limit)?)
        .map_err(|_| FileError::NotText { path: name })
}

/// The file's text, if it holds at most `limit` bytes.
pub fn read_text(path: &Path, limit: u64) -> Result<String, FileError> {
    String::from_utf8(read(path, limit)?).map_err(|_| FileError::NotText { path: path.display().to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The finding: a CA file of `/dev/zero` grew memory without end.
    #[test]
    fn an_endless_file_is_refused_after_its_limit() {
        let error = read(Path::new("/dev/zero"), MIB).unwrap_err();
        assert_eq!(error.to_string(), "/dev/zero: larger than 1 MiB: not read");
    }

    #[test]
    fn a_file_within_its_limit_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a");
        std::fs::write(&path, "text").unwrap();
        assert_eq!(read_text(&path, 4).unwrap(), "text");
        assert!(matches!(read_text(&path, 3), Err(FileError::TooLarge { .. })));
    }
}
