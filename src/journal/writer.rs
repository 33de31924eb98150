//! Appending records, one JSON line each, with size-based rotation: when the next line would take
//! the file past `max_bytes`, `PATH` becomes `PATH.1` (`PATH.1` becomes `PATH.2`, ...), at most `keep`
//! rotated files are kept, and a new `PATH` is started.
//!
//! Reconciles never wait for the disk: [`JournalWriter`] hands records to a thread of its own through
//! a bounded queue (a full queue drops the record and counts it).
//!
//! A crash in the middle of a line leaves a torn last line: reopening the journal cuts it off, and a
//! write that fails half-way is rolled back, so every line in the file is a whole record.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};

use super::Record;
use crate::metrics::Metrics;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JournalSettings {
    pub path: PathBuf,
    /// Rotate before a line would take the file past this size (a single larger line is still written).
    pub max_bytes: u64,
    /// Rotated files kept besides the current one.
    pub keep: usize,
}

/// The file itself: synchronous, used by one thread.
pub struct Journal {
    settings: JournalSettings,
    file: File,
    size: u64,
}

impl Journal {
    /// Opens `path` for appending (created, readable by its owner only, if missing; its directory must
    /// exist), cutting off a torn last line.
    pub fn open(settings: JournalSettings) -> io::Result<Self> {
        let file = open_append(&settings.path)?;
        let size = cut_torn_line(&file)?;
        Ok(Journal { settings, file, size })
    }

    pub fn path(&self) -> &Path {
        &self.settings.path
    }

    pub fn append(&mut self, record: &Record) -> io::Result<()> {
        let mut line = serde_json::to_vec(record).map_err(io::Error::other)?;
        line.push(b'\n');
        self.follow_replacement()?;
        if self.size > 0 && self.size + line.len() as u64 > self.settings.max_bytes {
            self.rotate()?;
        }
        if let Err(error) = self.file.write_all(&line) {
            // Whatever part was written goes again: the file keeps whole lines only.
            let _ = self.file.set_len(self.size);
            return Err(error);
        }
        self.size += line.len() as u64;
        Ok(())
    }

    /// If `PATH` was deleted or replaced (by hand, by logrotate), write to the file now at `PATH`.
    fn follow_replacement(&mut self) -> io::Result<()> {
        if !same_file(&self.file, &self.settings.path) {
            self.file = open_append(&self.settings.path)?;
            self.size = cut_torn_line(&self.file)?;
        }
        Ok(())
    }

    fn rotate(&mut self) -> io::Result<()> {
        let path = &self.settings.path;
        let rotated = |n: usize| PathBuf::from(format!("{}.{n}", path.display()));
        // Missing files are fine at every step: someone may have removed them.
        let tolerate = |result: io::Result<()>| match result {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        };
        if self.settings.keep == 0 {
            tolerate(std::fs::remove_file(path))?;
        } else {
            // The oldest falls off; the others move up by one.
            tolerate(std::fs::remove_file(rotated(self.settings.keep)))?;
            for n in (1..self.settings.keep).rev() {
                tolerate(std::fs::rename(rotated(n), rotated(n + 1)))?;
            }
            tolerate(std::fs::rename(path, rotated(1)))?;
        }
        self.file = open_append(path)?;
        self.size = self.file.metadata()?.len();
        Ok(())
    }
}

fn open_append(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).append(true).read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Observations are not secret, but they describe the whole ecosystem.
        options.mode(0o600);
    }
    options.open(path)
}

/// Truncates the file after its last newline; returns the new size.
fn cut_torn_line(file: &File) -> io::Result<u64> {
    let size = file.metadata()?.len();
    if size == 0 {
        return Ok(0);
    }
    let mut reader = file;
    // Look back in blocks for the last newline.
    let mut end = size;
    let mut block = vec![0u8; 64 * 1024];
    while end > 0 {
        let start = end.saturating_sub(block.len() as u64);
        let length = (end - start) as usize;
        reader.seek(SeekFrom::Start(start))?;
        reader.read_exact(&mut block[..length])?;
        if let Some(at) = block[..length].iter().rposition(|b| *b == b'\n') {
            let whole = start + at as u64 + 1;
            if whole < size {
                file.set_len(whole)?;
            }
            return Ok(whole);
        }
        end = start;
    }
    // Not one whole line: nothing to keep.
    file.set_len(0)?;
    Ok(0)
}

#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_: &File, path: &Path) -> bool {
    path.exists()
}

enum Message {
    Record(Box<Record>),
    Flush(mpsc::Sender<()>),
}

/// How many records may wait for the disk before new ones are dropped.
const QUEUE: usize = 256;

/// The journal as reconciles use it: records are queued for a writer thread.
pub struct JournalWriter {
    sender: SyncSender<Message>,
    path: PathBuf,
    metrics: Arc<Metrics>,
}

impl JournalWriter {
    /// Opens the journal (an error here stops the start) and starts its writer thread.
    pub fn start(settings: JournalSettings, metrics: Arc<Metrics>) -> io::Result<Self> {
        let path = settings.path.clone();
        let journal = Journal::open(settings)?;
        let (sender, receiver) = mpsc::sync_channel(QUEUE);
        let thread_metrics = metrics.clone();
        std::thread::Builder::new()
            .name("journal".into())
            .spawn(move || write_all(journal, receiver, &thread_metrics))?;
        Ok(JournalWriter { sender, path, metrics })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Queues a record; never blocks. A full queue (a disk slower than the reconciles) drops it.
    /// Queues `record`; its observation is redacted before it is written (see [`super::redacted`]).
    pub fn record(&self, record: Record) {
        match self.sender.try_send(Message::Record(Box::new(record))) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                self.metrics.journal_errors.inc();
                tracing::warn!(journal = %self.path.display(), "the journal cannot keep up: a record was dropped");
            }
            Err(TrySendError::Disconnected(_)) => {
                self.metrics.journal_errors.inc();
            }
        }
    }

    /// Waits until every record queued so far is written (at shutdown, and in tests). Blocks the
    /// calling thread.
    pub fn flush(&self) {
        let (done, wait) = mpsc::channel();
        if self.sender.send(Message::Flush(done)).is_ok() {
            let _ = wait.recv();
        }
    }
}

fn write_all(mut journal: Journal, receiver: Receiver<Message>, metrics: &Metrics) {
    for message in receiver {
        match message {
            Message::Record(mut record) => {
                // Redacted here, off the reconcile's path (see `redacted`).
                record.observation = record.observation.take().map(super::redacted);
                match journal.append(&record) {
                    Ok(()) => {
                        metrics.journal_records.inc();
                    }
                    Err(error) => {
                        metrics.journal_errors.inc();
                        tracing::warn!(%error, journal = %journal.path().display(), "cannot write the journal");
                    }
                }
            }
            Message::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}
