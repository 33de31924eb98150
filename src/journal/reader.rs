//! Reading journals back: every line a record, every problem named with its file and line.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{FORMAT, Record};

/// A record and where it was read.
#[derive(Clone, Debug)]
pub struct Entry {
    pub file: PathBuf,
    /// 1-based line in the file.
    pub line: usize,
    pub record: Record,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ReadError {
    #[error("{file}: cannot read: {problem}")]
    Io { file: String, problem: String },
    #[error("{file}:{line}: not a journal record: {problem}")]
    Malformed { file: String, line: usize, problem: String },
    #[error(
        "{file}:{line}: journal format {found} is newer than this operator reads (format {FORMAT}); replay it with the operator version that wrote it or a newer one"
    )]
    Newer { file: String, line: usize, found: u64 },
    #[error("{file}:{line}: journal format {found} is no longer read (this operator reads format {FORMAT})")]
    Older { file: String, line: usize, found: u64 },
}

/// The records of `files`, in order.
pub fn read_files(files: &[PathBuf]) -> Result<Vec<Entry>, ReadError> {
    let mut entries = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file)
            .map_err(|e| ReadError::Io { file: file.display().to_string(), problem: e.to_string() })?;
        entries.extend(parse(file, &text)?);
    }
    Ok(entries)
}

/// The records of one journal's text; blank lines are skipped.
pub fn parse(file: &Path, text: &str) -> Result<Vec<Entry>, ReadError> {
    let shown = || file.display().to_string();
    let mut entries = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        let malformed = |problem: String| ReadError::Malformed { file: shown(), line: number, problem };
        // The format first: a record of another format must be named as such, not as malformed.
        let value: Value = serde_json::from_str(line).map_err(|e| malformed(e.to_string()))?;
        let format = value
            .get("format")
            .and_then(Value::as_u64)
            .ok_or_else(|| malformed("it has no \"format\" number".into()))?;
        if format > u64::from(FORMAT) {
            return Err(ReadError::Newer { file: shown(), line: number, found: format });
        }
        if format < u64::from(FORMAT) {
            return Err(ReadError::Older { file: shown(), line: number, found: format });
        }
        let record: Record = serde_json::from_value(value).map_err(|e| malformed(e.to_string()))?;
        entries.push(Entry { file: file.to_owned(), line: number, record });
    }
    Ok(entries)
}
