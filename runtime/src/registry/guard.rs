//! Panics on a worker: a task's body, or one of the runtime's own steps around it, that
//! panics fails the task's graph instead of killing the worker (see the parent module).

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::Registry;
use crate::error::RuntimeError;
use crate::graph::GraphState;

/// The runtime's own steps around a task body, each run under [`Registry::guarded`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Choosing the place of a task that leaves it to the runtime.
    Place,
    /// The emulated stall after a rank's part, and counting the part.
    Stall,
    /// Recording the task's time in the trace table and the stats.
    Record,
}

impl Step {
    /// What the worker was doing to the task, for [`RuntimeError::RuntimePanicked`].
    pub(crate) fn doing(self) -> &'static str {
        match self {
            Step::Place => "placing",
            Step::Stall => "stalling (emulated speed) after",
            Step::Record => "recording the time of",
        }
    }
}

impl Registry {
    /// Runs `f` on `worker` for `node` of `graph`: the task's body (`step` is `None`) or a
    /// step of the runtime's own around it. A panic fails the graph with an error naming
    /// the task (the first failure is the one reported) and breaks the gang's barrier, so
    /// no rank waits for this one; the caller then goes on as if `f` had returned, and
    /// gets `None`.
    pub(super) fn guarded<R>(
        &self,
        graph: &GraphState,
        node: usize,
        worker: usize,
        step: Option<Step>,
        f: impl FnOnce() -> R,
    ) -> Option<R> {
        let payload = match catch_unwind(AssertUnwindSafe(|| {
            #[cfg(test)]
            self.inject_fault(step);
            f()
        })) {
            Ok(result) => return Some(result),
            Err(payload) => payload,
        };
        let (task, index) = (graph.tasks[node].kind.to_string(), node);
        let message = panic_message(payload.as_ref());
        // Record first: ranks released by the broken barrier panic too, and the error the
        // caller sees must be this one.
        graph.fail(match step {
            None => RuntimeError::TaskPanicked {
                task,
                index,
                worker,
                message,
            },
            Some(step) => RuntimeError::RuntimePanicked {
                task,
                index,
                worker,
                during: step.doing(),
                message,
            },
        });
        graph.gang(node).sync.abandon();
        None
    }

    /// Panics in `step` if a test asked for it.
    #[cfg(test)]
    fn inject_fault(&self, step: Option<Step>) {
        if let Some(step) = step.filter(|&s| *self.fault.lock() == Some(s)) {
            panic!("fault injected in {step:?}");
        }
    }
}

/// The panic's message, when its payload is a string (as `panic!` makes it).
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}
