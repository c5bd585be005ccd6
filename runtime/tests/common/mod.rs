//! Helpers shared by the runtime's integration tests.
#![allow(dead_code)]

use std::sync::{Once, mpsc};
use std::time::Duration;

/// Runs `f` on its own thread and fails the test if it has not returned within `limit`:
/// a deadlock becomes a failure with a message instead of a CI run that hangs.
pub(crate) fn within<T: Send + 'static>(
    limit: Duration,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what}: no result after {limit:?} (deadlock?)")
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what}: the closure panicked"),
    }
}

/// Spins for about `micros` microseconds of real work (not sleep: a core stays busy).
pub(crate) fn spin_for(micros: u64) {
    let end = std::time::Instant::now() + Duration::from_micros(micros);
    let mut x = 0u64;
    while std::time::Instant::now() < end {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
    }
    std::hint::black_box(x);
}

/// The message of every panic the stress tests inject starts with this.
pub(crate) const INJECTED: &str = "injected panic";

/// Keeps injected panics, and the ranks they release from a broken barrier ("a gang was
/// abandoned"), off stderr: thousands of them would bury a real failure's message. Other
/// panics still print. Installed once per test binary.
pub(crate) fn quiet_injected_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let text = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied())
                .unwrap_or("");
            if !text.starts_with(INJECTED) && !text.starts_with("a gang was abandoned") {
                default(info);
            }
        }));
    });
}
