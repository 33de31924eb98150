//! Processes the tests start: the operator's binary, killed when the test ends (also when it fails),
//! and free loopback ports for them.

use std::process::Child;

/// A child process (a `run` replica), killed and reaped when dropped.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A loopback port nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}
