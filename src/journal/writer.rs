//! Appending records, one JSON line each, with size-based rotation: when the next line would take
//! the file past `max_bytes`, `PATH` becomes `PATH.1` (`PATH.1` becomes `PATH.2`, ...), at most `keep`
//! rotated files are kept, and a new `PATH` is started. Each line is written with one `write` call so
//! that a crash leaves whole lines.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::Record;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JournalSettings {
    pub path: PathBuf,
    /// Rotate before a line would take the file past this size (a single larger line is still written).
    pub max_bytes: u64,
    /// Rotated files kept besides the current one.
    pub keep: usize,
}

pub struct Journal {
    settings: JournalSettings,
    file: Mutex<Open>,
}

struct Open {
    file: File,
    size: u64,
}

impl Journal {
    /// Opens `path` for appending (created if missing; its directory must exist).
    pub fn open(settings: JournalSettings) -> io::Result<Self> {
        let file = append(&settings.path)?;
        let size = file.metadata()?.len();
        Ok(Journal { settings, file: Mutex::new(Open { file, size }) })
    }

    pub fn path(&self) -> &Path {
        &self.settings.path
    }

    pub fn append(&self, record: &Record) -> io::Result<()> {
        let mut line = serde_json::to_vec(record).map_err(io::Error::other)?;
        line.push(b'\n');
        let mut open = self.file.lock().expect("not poisoned");
        if open.size > 0 && open.size + line.len() as u64 > self.settings.max_bytes {
            self.rotate(&mut open)?;
        }
        open.file.write_all(&line)?;
        open.size += line.len() as u64;
        Ok(())
    }

    fn rotate(&self, open: &mut Open) -> io::Result<()> {
        let path = &self.settings.path;
        let rotated = |n: usize| PathBuf::from(format!("{}.{n}", path.display()));
        if self.settings.keep == 0 {
            std::fs::remove_file(path)?;
        } else {
            // The oldest falls off; the others move up by one.
            match std::fs::remove_file(rotated(self.settings.keep)) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
            for n in (1..self.settings.keep).rev() {
                match std::fs::rename(rotated(n), rotated(n + 1)) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                    _ => {}
                }
            }
            std::fs::rename(path, rotated(1))?;
        }
        *open = Open { file: append(path)?, size: 0 };
        Ok(())
    }
}

fn append(path: &Path) -> io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}
