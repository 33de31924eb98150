//! The operator's memory allocator: mimalloc, tuned to give memory back.
//!
//! mimalloc makes a reconcile's many small, short-lived allocations cheap (a 30-dogu reconcile takes
//! 47 µs with it and 77 µs with glibc's allocator). Its defaults keep memory, though: on Linux it
//! commits its whole arena up front, and it purges freed pages only after a delay (1 s, and 10 s
//! inside arenas), so the burst of a fresh install stays resident. With 1,000 dogus the defaults
//! peak at 93–105 MiB; committing on demand and purging after 10 ms peaks at about 54 MiB (README,
//! "Performance").
//!
//! The options must be set before the first allocation: the Rust runtime allocates before `main`,
//! and the arena reserved then keeps the commit mode it was reserved with. So a binary sets them
//! from a constructor (`.init_array`), which runs before the runtime: see [`global_allocator!`].

pub use mimalloc::MiMalloc;

/// mimalloc's option numbers (`mi_option_e` in mimalloc v3's `mimalloc.h`; `libmimalloc-sys` does
/// not name these two). The unit test below checks them against the options' defaults.
pub const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
pub const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How long freed pages wait before they go back to the system. Long enough that a reconcile reuses
/// its own freed pages (0 ms makes the 30-dogu fresh install 60% slower: a purge per reconcile),
/// short enough that a burst does not stay resident.
pub const PURGE_DELAY_MS: std::ffi::c_long = 10;

/// Commit arena memory on demand, and return freed pages to the system soon.
pub extern "C" fn tune() {
    // SAFETY: setting an option is a plain store into mimalloc's option table; these two are read
    // when an arena is reserved and when freed pages are purged.
    unsafe {
        libmimalloc_sys::mi_option_set(ARENA_EAGER_COMMIT, 0);
        libmimalloc_sys::mi_option_set(PURGE_DELAY, PURGE_DELAY_MS);
    }
}

/// Makes tuned mimalloc the global allocator of the binary (or benchmark) it is written in.
#[macro_export]
macro_rules! global_allocator {
    () => {
        #[global_allocator]
        static ALLOCATOR: $crate::allocator::MiMalloc = $crate::allocator::MiMalloc;

        // A constructor: runs before the Rust runtime's first allocation (see `allocator`).
        #[cfg(target_os = "linux")]
        #[used]
        #[unsafe(link_section = ".init_array")]
        static TUNE_ALLOCATOR: extern "C" fn() = $crate::allocator::tune;
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The numbers name the options meant: their defaults are mimalloc's documented ones (2: eager
    /// commit on systems that overcommit; 1,000 ms). This test process does not tune, so it sees them.
    #[test]
    fn the_option_numbers_are_the_options_meant() {
        if std::env::vars().any(|(name, _)| name.starts_with("MIMALLOC_")) {
            return; // the environment may set them
        }
        // SAFETY: reading an option.
        let (eager, delay) = unsafe {
            (libmimalloc_sys::mi_option_get(ARENA_EAGER_COMMIT), libmimalloc_sys::mi_option_get(PURGE_DELAY))
        };
        assert_eq!((eager, delay), (2, 1000));
    }
}
