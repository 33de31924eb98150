//! Reading journals back: every line a record, every problem named with its file and line.

use std::io::BufRead;
use std::ops::ControlFlow;
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

/// What was read: the records, and what was skipped on the way.
#[derive(Clone, Debug, Default)]
pub struct Read {
    pub entries: Vec<Entry>,
    pub warnings: Vec<String>,
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

/// The records of `files`, in order, all in memory (see [`visit_files`] for one at a time).
pub fn read_files(files: &[PathBuf]) -> Result<Read, ReadError> {
    let mut entries = Vec::new();
    let warnings = visit_files(files, |entry| {
        entries.push(entry);
        ControlFlow::Continue(())
    })?;
    Ok(Read { entries, warnings })
}

/// Hands the records of `files` to `visit` one at a time, in order, until it breaks: a journal of any
/// size is read in the memory of one record. Returns the warnings (skipped torn last lines).
pub fn visit_files(
    files: &[PathBuf],
    mut visit: impl FnMut(Entry) -> ControlFlow<()>,
) -> Result<Vec<String>, ReadError> {
    let mut warnings = Vec::new();
    for file in files {
        let io = |e: std::io::Error| ReadError::Io { file: file.display().to_string(), problem: e.to_string() };
        let handle = std::fs::File::open(file).map_err(io)?;
        if parse_from(file, std::io::BufReader::new(handle), &mut warnings, &mut visit)?.is_break() {
            break;
        }
    }
    Ok(warnings)
}

/// The records of one journal's text.
pub fn parse(file: &Path, text: &str) -> Result<Read, ReadError> {
    let (mut entries, mut warnings) = (Vec::new(), Vec::new());
    let _ = parse_from(file, text.as_bytes(), &mut warnings, &mut |entry| {
        entries.push(entry);
        ControlFlow::Continue(())
    })?;
    Ok(Read { entries, warnings })
}

/// Blank lines are skipped. A last line without its newline that does not read is what a writer
/// leaves when it stops mid-line: skipped with a warning, not an error.
fn parse_from(
    file: &Path,
    mut input: impl BufRead,
    warnings: &mut Vec<String>,
    visit: &mut impl FnMut(Entry) -> ControlFlow<()>,
) -> Result<ControlFlow<()>, ReadError> {
    let shown = || file.display().to_string();
    let mut bytes = Vec::new();
    let mut number = 0;
    loop {
        bytes.clear();
        let length =
            input.read_until(b'\n', &mut bytes).map_err(|e| ReadError::Io { file: shown(), problem: e.to_string() })?;
        if length == 0 {
            break;
        }
        number += 1;
        let complete = bytes.last() == Some(&b'\n');
        let line = &bytes[..bytes.len() - usize::from(complete)];
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match parse_line(line) {
            Ok(record) => match check(&record) {
                None => {
                    if visit(Entry { file: file.to_owned(), line: number, record }).is_break() {
                        return Ok(ControlFlow::Break(()));
                    }
                }
                Some(problem) => return Err(ReadError::Malformed { file: shown(), line: number, problem }),
            },
            Err(_) if !complete => {
                warnings.push(format!("{}:{number}: skipped a torn last line (the writer stopped mid-line)", shown()));
            }
            Err(Problem::Format(found)) if found > u64::from(FORMAT) => {
                return Err(ReadError::Newer { file: shown(), line: number, found });
            }
            Err(Problem::Format(found)) => return Err(ReadError::Older { file: shown(), line: number, found }),
            Err(Problem::Malformed(problem)) => {
                return Err(ReadError::Malformed { file: shown(), line: number, problem });
            }
        }
    }
    Ok(ControlFlow::Continue(()))
}

enum Problem {
    /// A record of another format.
    Format(u64),
    Malformed(String),
}

/// One parse in the common case; only a line that does not read as a record is looked at again, to
/// name its format if it is a record of another one.
fn parse_line(line: &[u8]) -> Result<Record, Problem> {
    let error = match serde_json::from_slice::<Record>(line) {
        Ok(record) if record.format == FORMAT => return Ok(record),
        Ok(record) => return Err(Problem::Format(u64::from(record.format))),
        Err(error) => error,
    };
    let text = std::str::from_utf8(line).map_err(|e| Problem::Malformed(format!("not UTF-8: {e}")))?;
    let value: Value = serde_json::from_str(text).map_err(|e| Problem::Malformed(e.to_string()))?;
    match value.get("format").and_then(Value::as_u64) {
        None => Err(Problem::Malformed("it has no \"format\" number".into())),
        Some(format) if format != u64::from(FORMAT) => Err(Problem::Format(format)),
        Some(_) => Err(Problem::Malformed(error.to_string())),
    }
}

/// What a record must say about itself to be replayed and explained.
fn check(record: &Record) -> Option<String> {
    let actions = record.decision.as_ref().map(|d| d.actions.len()).unwrap_or(0);
    let execution = &record.execution;
    if execution.performed > actions {
        return Some(format!("{} actions performed of a decision with {actions}", execution.performed));
    }
    if let Some(failure) = &execution.failure
        && failure.action >= actions
    {
        return Some(format!("the failed action {} is not in a decision with {actions}", failure.action));
    }
    None
}
