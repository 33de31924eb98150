//! Error messages as a tree, rendered the way upstream renders wrapped and joined errors:
//! a wrapper reads `outer: inner`, a join puts each part on its own line. The texts are part of what
//! users see in conditions and events, so their shape is kept stable.

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    message: String,
    causes: Vec<Problem>,
}

impl Problem {
    pub fn new(message: impl Into<String>) -> Self {
        Problem { message: message.into(), causes: Vec::new() }
    }

    /// `message: cause1\ncause2...`
    pub fn wrap(message: impl Into<String>, causes: Vec<Problem>) -> Self {
        Problem { message: message.into(), causes }
    }

    /// All problems as one, or `None` when there are none.
    pub fn join(mut problems: Vec<Problem>) -> Option<Problem> {
        match problems.len() {
            0 => None,
            1 => problems.pop(),
            _ => Some(Problem { message: String::new(), causes: problems }),
        }
    }

    /// Wraps the problems under `message` if there are any.
    pub fn wrap_all(message: impl Into<String>, problems: Vec<Problem>) -> Option<Problem> {
        if problems.is_empty() { None } else { Some(Problem::wrap(message, problems)) }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if self.causes.is_empty() {
            return Ok(());
        }
        if !self.message.is_empty() {
            f.write_str(": ")?;
        }
        for (i, cause) in self.causes.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{cause}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_with_colon_and_joins_with_newlines() {
        let p = Problem::wrap(
            "blueprint spec is invalid",
            vec![Problem::wrap("blueprint is invalid", vec![Problem::new("a"), Problem::new("b")]), Problem::new("c")],
        );
        assert_eq!(p.to_string(), "blueprint spec is invalid: blueprint is invalid: a\nb\nc");
        assert_eq!(Problem::join(vec![]), None);
        assert_eq!(Problem::join(vec![Problem::new("x"), Problem::new("y")]).unwrap().to_string(), "x\ny");
    }
}
