//! SIGINT (Ctrl-C) and SIGTERM in the examples that run long (issue 12).
//!
//! The first signal asks for a clean stop: the frame or trial in progress finishes, the
//! workers stop, the report of what was done is written with `"partial": true` (whole:
//! `--json PATH` goes through `taopipe::live::output::write_atomic`, a temporary file
//! renamed over the target), a one-line note goes to stderr, and the process exits with
//! 128 + the signal's number, as a shell reports a process a signal killed: **130** for
//! SIGINT, **143** for SIGTERM. A **second** signal exits at once with its own such code,
//! without waiting for the stop to finish; the report file is still never half-written,
//! since it only ever appears by rename (a temporary file beside it may remain if that
//! second signal lands during the write).
//!
//! The handler only stores to atomics (`signal_hook::flag`), the one thing a handler may
//! safely do; the work polls them. The library installs no handler: it takes the flag as a
//! [`StopSignal`] (`Engine::with_stop`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use anyhow::Context;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::flag;
use taopipe::runtime::StopSignal;

/// The process's interrupt flags (module docs).
#[derive(Debug, Clone)]
pub(crate) struct Interrupt {
    /// Raised by the first SIGINT or SIGTERM.
    stop: Arc<AtomicBool>,
    /// Which of the two it was (0: none yet).
    signal: Arc<AtomicUsize>,
}

impl Interrupt {
    /// Installs the handlers for SIGINT and SIGTERM; call it once, right after parsing
    /// the command line (before it, a signal ends the process as usual: nothing is
    /// written yet).
    pub(crate) fn install() -> anyhow::Result<Interrupt> {
        let stop = Arc::new(AtomicBool::new(false));
        let signal = Arc::new(AtomicUsize::new(0));
        for sig in [SIGINT, SIGTERM] {
            // Actions run in the order registered: the exit is armed by a signal before
            // this one (so the first only stops), and the number is stored before the
            // flag, so whoever sees the flag raised also sees which signal raised it.
            flag::register_conditional_shutdown(sig, 128 + sig, stop.clone())
                .and_then(|_| flag::register_usize(sig, signal.clone(), sig as usize))
                .and_then(|_| flag::register(sig, stop.clone()))
                .with_context(|| format!("installing the handler of signal {sig}"))?;
        }
        Ok(Interrupt { stop, signal })
    }

    /// The stop to hand the library (`Engine::with_stop`, `Pipeline::run`).
    pub(crate) fn stop_signal(&self) -> StopSignal {
        StopSignal::from_flag(self.stop.clone())
    }

    /// Whether a signal asked to stop.
    pub(crate) fn raised(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// `source` until a signal asks to stop: the frame sources of loops the library does
    /// not run (the baseline, switch mode) end between two frames.
    pub(crate) fn until<I: Iterator>(&self, source: I) -> impl Iterator<Item = I::Item> + use<I> {
        let stop = self.stop.clone();
        source.take_while(move |_| !stop.load(Ordering::SeqCst))
    }

    /// After the report is written: if a signal asked to stop, a one-line note on stderr
    /// saying `what` was done, and the exit with 128 + the signal (module docs). Returns
    /// when no signal came.
    pub(crate) fn exit_if_raised(&self, what: &str) {
        if !self.raised() {
            return;
        }
        let sig = self.signal.load(Ordering::SeqCst) as i32;
        let name = match sig {
            SIGINT => "SIGINT",
            SIGTERM => "SIGTERM",
            _ => "a signal",
        };
        eprintln!("interrupted by {name}: {what}; exit code {}", 128 + sig);
        std::process::exit(128 + sig);
    }
}
