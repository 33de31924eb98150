//! Log capture for tests. One global subscriber (callsite interest is process-wide in `tracing`, so a
//! per-test default subscriber can miss events whose callsites another thread registered first); it
//! writes into the current thread's capture buffer, if the test set one.

use std::cell::RefCell;
use std::io::Write;
use std::sync::Once;

thread_local! {
    static BUFFER: RefCell<Option<Vec<u8>>> = const { RefCell::new(None) };
}

struct ThreadBuffer;

impl Write for ThreadBuffer {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        BUFFER.with(|b| {
            if let Some(buffer) = b.borrow_mut().as_mut() {
                buffer.extend_from_slice(data);
            }
        });
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Starts capturing this thread's log output (every level, every crate).
pub fn capture() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        use tracing_subscriber::prelude::*;
        // Decided per event (not cached per callsite): only threads that capture pay for formatting.
        let capturing = tracing_subscriber::filter::dynamic_filter_fn(|_, _| BUFFER.with(|b| b.borrow().is_some()));
        let layer =
            tracing_subscriber::fmt::layer().with_writer(|| ThreadBuffer).with_ansi(false).with_filter(capturing);
        tracing_subscriber::registry().with(layer).init();
    });
    BUFFER.with(|b| *b.borrow_mut() = Some(Vec::new()));
}

/// What this thread logged since [`capture`].
pub fn captured() -> String {
    BUFFER.with(|b| String::from_utf8_lossy(b.borrow().as_deref().unwrap_or_default()).into_owned())
}
