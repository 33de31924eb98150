//! Dogu versions (`MAJOR[.MINOR[.PATCH[.NANO]]][-EXTRA]`, e.g. `8.4.6-1`, `4.0.7.11-3`, `2018-1`) and the
//! version constraints of `dogu.json` dependencies (`>=2.0.0-2`).

use std::cmp::Ordering;
use std::fmt;

use crate::problem::Problem;

/// A parsed dogu version. The raw text is kept because it is what gets written back (status, Dogu CR,
/// labels); comparison uses only the numbers, so `1.2.3-1` equals `1.2.3.0-1`.
#[derive(Clone, Debug)]
pub struct DoguVersion {
    raw: String,
    numbers: [u64; 5],
}

impl DoguVersion {
    pub fn parse(raw: &str) -> Result<Self, Problem> {
        // A leading run of comparison operators is tolerated (and kept in the raw text), as upstream does.
        let text = raw.trim_start_matches(['=', '>', '<']);
        // Split by a one-char array: a `char` pattern searches with memchr and compares each match with
        // memcmp, which cost more than versions this short do (every Dogu CR's version is parsed in
        // every reconcile).
        let mut halves = text.split(['-']);
        let core = halves.next().unwrap_or_default();
        let extra = halves.next();
        if halves.next().is_some() {
            return Err(Problem::new(format!("found more than one hyphen in version {raw}")));
        }
        let mut numbers = [0u64; 5];
        const PARTS: [&str; 4] = ["major", "minor", "patch", "nano"];
        // Parts beyond the fourth are ignored, as upstream does.
        for (i, part) in core.split(['.']).take(4).enumerate() {
            numbers[i] = parse_number(part)
                .ok_or_else(|| Problem::new(format!("failed to parse {} version {part} of {raw}", PARTS[i])))?;
        }
        if let Some(extra) = extra {
            numbers[4] = parse_number(extra)
                .ok_or_else(|| Problem::new(format!("failed to parse extra version {extra} of {raw}")))?;
        }
        Ok(DoguVersion { raw: raw.to_owned(), numbers })
    }

    /// The text as written.
    pub fn raw(&self) -> &str {
        &self.raw
    }
}

fn parse_number(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

impl PartialEq for DoguVersion {
    fn eq(&self, other: &Self) -> bool {
        self.numbers == other.numbers
    }
}

impl Eq for DoguVersion {}

impl PartialOrd for DoguVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for DoguVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        self.numbers.cmp(&other.numbers)
    }
}

impl fmt::Display for DoguVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

/// A dependency's version requirement from `dogu.json`: an optional operator (`=`, `==`, `<`, `>`, `<=`,
/// `>=`) and a version. An empty requirement allows every version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct VersionConstraint {
    op: Op,
    version: Option<DoguVersion>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Eq,
    Lt,
    Gt,
    Le,
    Ge,
}

impl VersionConstraint {
    pub(crate) fn parse(text: &str) -> Result<Self, Problem> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(VersionConstraint { op: Op::Eq, version: None });
        }
        let op_len = text.bytes().take_while(|b| matches!(b, b'=' | b'<' | b'>')).count();
        let (op, rest) = text.split_at(op_len);
        let op = match op {
            "" | "=" | "==" => Op::Eq,
            "<" => Op::Lt,
            ">" => Op::Gt,
            "<=" => Op::Le,
            ">=" => Op::Ge,
            other => {
                return Err(Problem::new(format!("invalid version operator '{other}' in '{text}'")));
            }
        };
        let version = DoguVersion::parse(rest.trim())?;
        Ok(VersionConstraint { op, version: Some(version) })
    }

    pub(crate) fn allows(&self, candidate: &DoguVersion) -> bool {
        let Some(bound) = &self.version else {
            return true;
        };
        let ordering = candidate.cmp(bound);
        match self.op {
            Op::Eq => ordering == Ordering::Equal,
            Op::Lt => ordering == Ordering::Less,
            Op::Gt => ordering == Ordering::Greater,
            Op::Le => ordering != Ordering::Greater,
            Op::Ge => ordering != Ordering::Less,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> DoguVersion {
        DoguVersion::parse(s).unwrap()
    }

    #[test]
    fn parses_all_documented_forms() {
        assert_eq!(v("1.2.3-4").numbers, [1, 2, 3, 0, 4]);
        assert_eq!(v("4.0.7.11-3").numbers, [4, 0, 7, 11, 3]);
        assert_eq!(v("2018-1").numbers, [2018, 0, 0, 0, 1]);
        assert_eq!(v("1.2.3.4.5").numbers, [1, 2, 3, 4, 0], "parts beyond nano are ignored");
        assert_eq!(v(">=1.0.0").raw(), ">=1.0.0");
    }

    #[test]
    fn rejects_what_upstream_rejects() {
        assert_eq!(
            DoguVersion::parse("1.0.0-rc1").unwrap_err().to_string(),
            "failed to parse extra version rc1 of 1.0.0-rc1"
        );
        assert!(DoguVersion::parse("v1.2.3").is_err());
        assert!(DoguVersion::parse("1..2").is_err());
        assert!(DoguVersion::parse("").is_err());
        assert_eq!(DoguVersion::parse("1-2-3").unwrap_err().to_string(), "found more than one hyphen in version 1-2-3");
    }

    #[test]
    fn compares_numerically_ignoring_the_raw_text() {
        assert_eq!(v("1.2.3-1"), v("1.2.3.0-1"));
        assert!(v("3.2.1-2") > v("3.2.1-1"));
        assert!(v("10.0.0-1") > v("9.9.9-9"));
        assert!(v("1.0.0") < v("1.0.0-1"));
    }

    #[test]
    fn constraints_follow_their_operator() {
        let c = |s: &str| VersionConstraint::parse(s).unwrap();
        assert!(c(">=2.0.0-2").allows(&v("2.0.0-2")));
        assert!(c(">=2.0.0-2").allows(&v("2.1.0-1")));
        assert!(!c(">=2.0.0-2").allows(&v("2.0.0-1")));
        assert!(c("<3").allows(&v("2.9.9-9")));
        assert!(!c(">2.0.0-2").allows(&v("2.0.0-2")));
        assert!(c("<=2.0.0-2").allows(&v("2.0.0-2")));
        assert!(c("2.0.0-2").allows(&v("2.0.0.0-2")));
        assert!(c("").allows(&v("0.0.1")));
        assert!(VersionConstraint::parse(">>=1.0").is_err());
    }
}
