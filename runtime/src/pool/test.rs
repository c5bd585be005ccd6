use std::sync::atomic::AtomicUsize;
use std::sync::mpsc;

use super::*;
use crate::registry::Step;

/// Runs `f` on its own thread and fails the test if it has not returned within 30 s: a
/// runtime that hangs becomes a failure instead of a CI run that never ends.
fn within<T: Send + 'static>(what: String, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: no result after 30 s (hang)"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what}: the closure panicked"),
    }
}

/// `first` (width 1, placed by the dispatching worker) → `second` (a gang of both
/// workers); `ran` counts the ranks of `second` that ran.
fn chain(ran: &Arc<AtomicUsize>) -> TaskGraph {
    let mut g = TaskGraph::new();
    let first = g.add(Task::new("first", |_| {}));
    let ran = ran.clone();
    let second = g.add(
        Task::new("second", move |_| {
            ran.fetch_add(1, Ordering::SeqCst);
        })
        .on(Place::new(0, 2)),
    );
    g.make_edge(first, second);
    g
}

fn assert_runtime_panicked(result: Result<(), RuntimeError>, task: &str, step: Step) {
    match result {
        Err(RuntimeError::RuntimePanicked {
            task: t,
            index,
            during,
            message,
            ..
        }) => {
            assert_eq!((t.as_str(), during), (task, step.doing()), "{step:?}");
            assert_eq!(index, 0, "{step:?}");
            assert!(message.contains("fault injected"), "{message}");
        }
        other => panic!("{step:?}: expected RuntimePanicked for `{task}`, got {other:?}"),
    }
}

/// A panic in the runtime's own code around a task used to kill its worker (only task
/// bodies were caught): `--emulate c0=1e-30` panicked in the emulated stall and the run
/// hung. Each step now fails the graph, naming the task, and the runtime stays usable.
#[test]
fn a_panic_in_the_runtime_around_a_task_fails_its_graph_instead_of_hanging() {
    for step in [Step::Place, Step::Stall, Step::Record] {
        within(format!("{step:?}"), move || {
            let rt = Runtime::builder().workers(2).build().expect("runtime");
            // Slow worker 1 down, so that the real stall runs too.
            rt.emulate(&"w1=0.5".parse().expect("spec")).expect("fits");
            *rt.registry.fault.lock() = Some(step);

            let ran = Arc::new(AtomicUsize::new(0));
            assert_runtime_panicked(rt.run(chain(&ran)), "first", step);
            assert_eq!(ran.load(Ordering::SeqCst), 0, "{step:?}: a successor ran");

            // A gang queued directly (a root with a fixed place is never placed).
            let gang = rt.run_on(Place::new(0, 2), |ctx| ctx.barrier());
            if step == Step::Place {
                gang.expect("nothing to place");
            } else {
                assert_runtime_panicked(gang, "run_on", step);
            }

            // A prepared graph fails every run, and runs again once the fault is gone.
            let prepared = rt.prepare(chain(&ran)).expect("prepare");
            for _ in 0..2 {
                assert_runtime_panicked(rt.run_prepared(&prepared), "first", step);
            }
            *rt.registry.fault.lock() = None;
            rt.run_prepared(&prepared)
                .expect("prepared graph runs again");
            rt.run(chain(&ran)).expect("runtime still usable");
            assert_eq!(ran.load(Ordering::SeqCst), 4, "{step:?}");
        });
    }
}

/// A pinning runtime pins the caller to the CPU of the worker asked for, where the OS lets
/// it; then the caller runs there alone, and a graph it runs still completes.
#[test]
fn the_caller_is_pinned_to_its_workers_cpu() {
    let Ok(topology) = Topology::detect() else {
        return; // no CPU list to pin to (a sandbox): nothing to check
    };
    let last = topology.num_workers() - 1;
    let cpu = topology.cpus()[last].id;
    let rt = Runtime::builder()
        .topology(topology)
        .pin(true)
        .build()
        .expect("a pinning runtime");
    let pinned = within("pin_caller".into(), move || {
        let pinned = rt.pin_caller(last).expect("a worker of the runtime");
        if pinned {
            let ids: Vec<usize> = core_affinity::get_core_ids()
                .unwrap_or_default()
                .into_iter()
                .map(|c| c.id)
                .collect();
            assert_eq!(ids, vec![cpu], "the caller's CPUs after pin_caller({last})");
        }
        rt.run_on(Place::new(last, 1), |_| {})
            .expect("a graph run by the pinned caller");
        assert!(matches!(
            rt.pin_caller(last + 1),
            Err(RuntimeError::NoSuchWorker { worker, workers }) if worker == last + 1 && workers == last + 1
        ));
        pinned
    });
    // Where a thread of this process may pin itself there, so must the caller have been.
    let can_pin = std::thread::spawn(move || {
        core_affinity::set_for_current(core_affinity::CoreId { id: cpu })
    })
    .join()
    .expect("pinning by hand does not panic");
    assert_eq!(pinned, can_pin, "pin_caller against pinning by hand");
}
