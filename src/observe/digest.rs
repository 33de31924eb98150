//! Keyed digests of secret values. Secret values are replaced by HMAC-SHA256 digests (with a key that
//! exists only in this process) the moment they are read, so that no plaintext secret reaches an
//! observation, a decision, a log or a journal; equal values still compare equal.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use blueprint_machine::observation::SecretDigest;

pub struct Digester {
    key: [u8; 32],
}

impl Digester {
    /// A digester with a fresh random key.
    pub fn random() -> Self {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).expect("the operating system provides randomness");
        Digester { key }
    }

    pub fn digest(&self, value: &[u8]) -> SecretDigest {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes keys of any length");
        mac.update(value);
        let bytes = mac.finalize().into_bytes();
        SecretDigest(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }
}

impl std::fmt::Debug for Digester {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Digester { key: <hidden> }")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_values_give_equal_digests_and_keys_differ_per_digester() {
        let a = Digester::random();
        let b = Digester::random();
        assert_eq!(a.digest(b"secret"), a.digest(b"secret"));
        assert_ne!(a.digest(b"secret"), a.digest(b"other"));
        assert_ne!(a.digest(b"secret"), b.digest(b"secret"));
        assert!(!a.digest(b"secret").0.contains("secret"));
        assert_eq!(a.digest(b"x").0.len(), 64);
    }
}
