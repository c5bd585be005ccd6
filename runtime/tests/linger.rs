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
/// linger, and at most at the chain's end with it. A loose bound, for loaded machines, on
/// the fewest parks of five chains: another process taking a core can only add parks (a
/// 1 ms sleep that overslept past the 5 ms linger; CI saw one chain park 10 times while a
/// build shared its 2 cores), while without the linger every chain parks 19-20 times.
#[test]
fn a_rank_waits_awake_for_its_gangs_last_rank() {
    let rt = Arc::new(Runtime::builder().workers(2).build().expect("runtime"));
    let parks: Vec<u64> = (0..5).map(|_| chain_parks(&rt)).collect();
    let fewest = parks.iter().copied().min().expect("five chains");
    assert!(
        fewest < 10,
        "worker 0 parked {parks:?} times in five chains of 20 gangs"
    );
}

/// Runs a chain of 20 uneven width-2 gangs and counts worker 0's parks.
fn chain_parks(rt: &Arc<Runtime>) -> u64 {
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
    let runner = rt.clone();
    common::within(Duration::from_secs(30), "20 uneven gangs", move || {
        runner.run(g)
    })
    .expect("runs");
    rt.stats().workers[0].parks
}
