//! Idle workers and gangs: a rank that leaves a gang early stays awake for the gang's
//! next task. Alone in its test binary, so that no other test's runtime competes for the
//! cores while it counts parks.

mod common;

use std::sync::Arc;
use std::time::Duration;

use taopipe_runtime::{Place, Runtime, Task, TaskGraph};

/// A rank that leaves a gang whose other rank still runs spins until the gang completes
/// instead of parking, so the next gang finds it awake: a chain of 20 gangs whose rank 1
/// takes 1 ms (ten times the 100 µs idle spin) parks worker 0 once per gang without the
/// linger, and at most at the chain's end with it. A loose bound, for loaded machines.
#[test]
fn a_rank_waits_awake_for_its_gangs_last_rank() {
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let mut g = TaskGraph::new();
    let mut prev = None;
    for _ in 0..20 {
        let id = g.add(
            Task::new("uneven gang", |ctx| {
                if ctx.rank() == 1 {
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
            .on(Place::new(0, 2)),
        );
        if let Some(p) = prev {
            g.make_edge(p, id);
        }
        prev = Some(id);
    }
    rt.reset_stats();
    let rt = Arc::new(rt);
    let runner = rt.clone();
    common::within(Duration::from_secs(30), "20 uneven gangs", move || {
        runner.run(g)
    })
    .expect("runs");
    let parks = rt.stats().workers[0].parks;
    assert!(
        parks < 10,
        "worker 0 parked {parks} times in a chain of 20 gangs"
    );
}
