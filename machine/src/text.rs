//! Comparing texts that are often empty, in code every reconcile runs.
//!
//! `==` on two empty `String`s costs about 78 ns here against 2 ns for any other short text: an empty
//! `String` points at address 1, `==` of two texts of equal length calls `memcmp`, and glibc's AVX-512
//! `memcmp` (Debian 12's, the operator image's) reads the first 32 bytes with a masked load even for a
//! length of 0; a masked load whose address is unmapped is completed by a microcode assist. Profiled,
//! the reverse-proxy settings of each dogu (empty nearly always) took an eighth of a steady reconcile.
//! Where such texts are compared, they are compared through [`same`].

/// `a == b`, without calling `memcmp` for two empty texts.
#[inline]
pub(crate) fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && (a.is_empty() || a == b)
}

/// `a == b` for optional texts (see [`same`]).
#[inline]
pub(crate) fn same_option(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => same(a, b),
        (a, b) => a.is_none() && b.is_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::same;

    #[test]
    fn same_is_equality() {
        let (empty, other_empty) = (String::new(), String::new());
        for (a, b) in [("", ""), ("a", "a"), ("a", ""), ("", "a"), ("ab", "ac"), ("dogu", "dogu")] {
            assert_eq!(same(a, b), a == b, "{a:?} {b:?}");
        }
        assert!(same(&empty, &other_empty));
        for (a, b) in [(None, None), (Some(""), None), (None, Some("")), (Some(""), Some("")), (Some("a"), Some("b"))] {
            assert_eq!(super::same_option(a, b), a == b, "{a:?} {b:?}");
        }
    }
}
