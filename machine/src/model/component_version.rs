//! Component versions: semantic versions, parsed leniently like the Helm tooling does (`v1.2`, `1.0`),
//! compared by SemVer precedence (a pre-release sorts before its release, build metadata is ignored)
//! and written back in canonical form (`1.0` becomes `1.0.0`).

use std::cmp::Ordering;
use std::fmt;

use crate::problem::Problem;

#[derive(Clone, Debug)]
pub struct ComponentVersion(semver::Version);

impl ComponentVersion {
    pub fn parse(text: &str) -> Result<Self, Problem> {
        let trimmed = text.strip_prefix('v').unwrap_or(text);
        // Split off pre-release and build metadata so the numeric core can be padded.
        let core_end = trimmed.find(['-', '+']).unwrap_or(trimmed.len());
        let (core, suffix) = trimmed.split_at(core_end);
        let mut numbers = Vec::with_capacity(3);
        for part in core.split('.') {
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Err(invalid(text));
            }
            numbers.push(part.parse::<u64>().map_err(|_| invalid(text))?);
        }
        if numbers.len() > 3 {
            return Err(invalid(text));
        }
        numbers.resize(3, 0);
        let canonical = format!("{}.{}.{}{suffix}", numbers[0], numbers[1], numbers[2]);
        semver::Version::parse(&canonical)
            .map(ComponentVersion)
            .map_err(|e| Problem::new(format!("invalid semantic version {text}: {e}")))
    }
}

impl ComponentVersion {
    /// Whether `requirement` admits this version's release core (`2.7.0-1` is checked as `2.7.0`):
    /// a packaging suffix does not make a release of another implementation one of ours.
    pub fn core_matches(&self, requirement: &semver::VersionReq) -> bool {
        requirement.matches(&semver::Version::new(self.0.major, self.0.minor, self.0.patch))
    }
}

fn invalid(text: &str) -> Problem {
    Problem::new(format!("invalid semantic version {text}"))
}

impl PartialEq for ComponentVersion {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for ComponentVersion {}

impl PartialOrd for ComponentVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ComponentVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.cmp_precedence(&other.0)
    }
}

impl fmt::Display for ComponentVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> ComponentVersion {
        ComponentVersion::parse(s).unwrap()
    }

    #[test]
    fn lenient_parsing_and_canonical_output() {
        assert_eq!(v("1.0").to_string(), "1.0.0");
        assert_eq!(v("v2").to_string(), "2.0.0");
        assert_eq!(v("1.7.1-1").to_string(), "1.7.1-1");
        assert_eq!(v("1.2.3+build.5").to_string(), "1.2.3+build.5");
        assert!(ComponentVersion::parse("1.2.3.4").is_err());
        assert!(ComponentVersion::parse("latest").is_err());
        assert!(ComponentVersion::parse("").is_err());
    }

    #[test]
    fn precedence_ignores_build_metadata_and_sorts_prereleases_first() {
        assert!(v("3.2.1-1") < v("3.2.1"));
        assert!(v("3.2.1-1") < v("3.2.1-2"));
        assert!(v("3.2.1-0") < v("3.2.1-1"));
        assert!(v("3.2.1-2") < v("3.2.1-10"), "numeric identifiers compare numerically");
        assert_eq!(v("1.0.0+a"), v("1.0.0+b"));
        assert_eq!(v("1.0"), v("1.0.0"));
    }
}
