//! `blueprint-operator replay`: re-run `reconcile` on every recorded observation and compare with what
//! was decided then.

use std::fmt::Write;
use std::path::PathBuf;

use super::Record;
use super::compare;
use std::ops::ControlFlow;

use super::reader::{Entry, ReadError, visit_files};
use crate::status::StatusWrite;

/// What replaying one record found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Identical,
    /// `recorded → now` lines.
    Divergent(Vec<String>),
    /// The reconcile had nothing to replay (it could not observe).
    Skipped(String),
}

/// Replays one record.
pub fn verdict(record: &Record) -> Verdict {
    let (Some(observation), Some(recorded)) = (&record.observation, &record.decision) else {
        let why = record.execution.error.clone().unwrap_or_else(|| "the record has no observation".into());
        return Verdict::Skipped(why);
    };
    let now = blueprint_machine::reconcile(observation);
    let mut lines = compare::differences(recorded, &now);
    if let Some(failure) = &record.execution.failure {
        // The recorded failure belongs to the recorded action; it can be replayed only where this
        // decision has the same action at that place.
        let same_action = recorded.actions.get(failure.action) == now.actions.get(failure.action);
        match (&record.execution.decision_after_failure, same_action) {
            (Some(recorded_after), true) => {
                let after = blueprint_machine::record_failure(observation, &now, failure);
                lines.extend(
                    compare::differences(recorded_after, &after).into_iter().map(|l| format!("after the failure: {l}")),
                );
            }
            (Some(_), false) => lines.push(format!(
                "after the failure: not replayed: this decision's action {} is not the one that failed",
                failure.action + 1
            )),
            (None, _) => lines.push("after the failure: the record has no decision".into()),
        }
    }
    if lines.is_empty() { Verdict::Identical } else { Verdict::Divergent(lines) }
}

pub struct ReplayArgs {
    pub files: Vec<PathBuf>,
    /// 1-based position of a record (counted over all files) to explain.
    pub explain: Option<usize>,
}

/// What `replay` prints and how it exits: 0 all identical, 1 a divergence, 2 unreadable input.
pub struct ReplayOutput {
    pub stdout: String,
    /// Lines skipped while reading (torn last lines), for stderr.
    pub warnings: Vec<String>,
    pub exit_code: u8,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ReplayError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("there is no record {asked}: the journal has {count}")]
    NoSuchRecord { asked: usize, count: usize },
}

/// Replays record by record: a journal of any size takes the memory of one record (and the report).
pub fn run(args: &ReplayArgs) -> Result<ReplayOutput, ReplayError> {
    if let Some(asked) = args.explain {
        let mut seen = 0;
        let mut explained = None;
        // Read to the end all the same: a journal with a malformed record is reported as such.
        let warnings = visit_files(&args.files, |entry| {
            seen += 1;
            if seen == asked {
                explained = Some(explain(asked, &entry));
            }
            ControlFlow::Continue(())
        })?;
        let output = explained.ok_or(ReplayError::NoSuchRecord { asked, count: seen })?;
        return Ok(ReplayOutput { warnings, ..output });
    }
    let mut out = String::new();
    let (mut identical, mut divergent, mut skipped, mut count) = (0, 0, 0, 0);
    let warnings = visit_files(&args.files, |entry| {
        count += 1;
        match verdict(&entry.record) {
            Verdict::Identical => identical += 1,
            Verdict::Divergent(lines) => {
                divergent += 1;
                let _ = writeln!(out, "divergent: {}", heading(count, &entry));
                for line in lines {
                    let _ = writeln!(out, "  {line}");
                }
                out.push('\n');
            }
            Verdict::Skipped(why) => {
                skipped += 1;
                let _ = writeln!(out, "skipped: {} (could not observe: {why})", heading(count, &entry));
            }
        }
        ControlFlow::Continue(())
    })?;
    let files = args.files.len();
    let _ = writeln!(
        out,
        "replayed {count} record{} of {files} file{}: {identical} identical, {divergent} divergent, {skipped} skipped",
        if count == 1 { "" } else { "s" },
        if files == 1 { "" } else { "s" },
    );
    Ok(ReplayOutput { stdout: out, warnings, exit_code: if divergent > 0 { 1 } else { 0 } })
}

/// `#N FILE:LINE TIME BLUEPRINT (operator VERSION, STATE)`
fn heading(position: usize, entry: &Entry) -> String {
    let record = &entry.record;
    let state = record.decision.as_ref().map(|d| format!(", {}", d.state)).unwrap_or_default();
    format!(
        "#{position} {}:{} {} {} (operator {}{state})",
        entry.file.display(),
        entry.line,
        record.time.0,
        record.blueprint,
        record.operator_version
    )
}

/// One record: the recorded decision in `plan`'s text format, what the shell did, and whether this
/// operator decides the same.
fn explain(position: usize, entry: &Entry) -> ReplayOutput {
    let record = &entry.record;
    let mut out = format!("record {}\n\n", heading(position, entry));
    match &record.decision {
        Some(decision) => out.push_str(&crate::plan::render::text(&record.blueprint, decision)),
        None => {
            let why = record.execution.error.as_deref().unwrap_or("no observation");
            let _ = writeln!(out, "no decision: the reconcile could not observe: {why}");
        }
    }
    let execution = &record.execution;
    let _ = writeln!(out, "\nexecuted:");
    let _ = writeln!(out, "  actions performed: {}", execution.performed);
    if let Some(failure) = &execution.failure {
        let number = failure.action.saturating_add(1);
        let _ = writeln!(out, "  action {number} failed ({:?}): {}", failure.kind, failure.message);
    }
    let status = match &execution.status {
        StatusWrite::Unchanged => "unchanged (not written)".to_owned(),
        StatusWrite::Written => "written".to_owned(),
        StatusWrite::Conflict => "conflict (the Blueprint had changed)".to_owned(),
        StatusWrite::Failed { message } => format!("failed: {message}"),
    };
    let _ = writeln!(out, "  status: {status}");
    let _ = writeln!(out, "  events published: {}", execution.events_published);
    let requeue = match execution.requeue_after_seconds {
        Some(seconds) => format!("after {seconds}s"),
        None => "when something changes".to_owned(),
    };
    let _ = writeln!(out, "  next reconcile: {requeue}");
    let verdict = verdict(record);
    let _ = writeln!(out, "\nreplayed by this operator ({}):", env!("CARGO_PKG_VERSION"));
    let exit_code = match verdict {
        Verdict::Identical => {
            let _ = writeln!(out, "  identical");
            0
        }
        Verdict::Divergent(lines) => {
            for line in lines {
                let _ = writeln!(out, "  {line}");
            }
            1
        }
        Verdict::Skipped(_) => {
            let _ = writeln!(out, "  nothing to replay");
            0
        }
    };
    ReplayOutput { stdout: out, warnings: Vec::new(), exit_code }
}
