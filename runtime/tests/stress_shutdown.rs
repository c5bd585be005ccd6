//! Stress: the runtime dropped while graphs and a pipeline are in flight on other threads
//! neither hangs nor leaks.
//!
//! Each round builds a pool and lets two threads submit random graphs (gangs meeting at
//! barriers, injected panics, tasks that hold the runtime and submit more work) and wait
//! for them, and a third run a [`Pipeline`], while the test thread drops its reference at
//! a seeded moment. A `Pipeline::run` borrows the runtime, so the runtime cannot go away
//! under a running pipeline: the test drops the other references while it runs, so the
//! pipeline's thread may be the one whose drop shuts the pool down, with graphs of the
//! other threads still in flight. The last reference may also be a task's: the runtime
//! is then dropped on one of its own workers.
//!
//! No hang: a watchdog aborts the process, naming the round, when a round makes no
//! progress for 60 s. No leak: the counting allocator's live bytes come back to where
//! they were after warm-up rounds (which initialise the lazy statics of the runtime and
//! its dependencies). `TAOPIPE_STRESS=full` runs more rounds (`scripts/stress.sh`).

mod common;
mod counting;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use taopipe_runtime::{
    GraphHandle, Pipeline, Place, Runtime, RuntimeError, Stage, StopSignal, Task, TaskGraph, TaskId,
};

use common::INJECTED;

/// How a round's graphs ended.
#[derive(Default)]
struct Outcomes {
    ok: AtomicUsize,
    shut_down: AtomicUsize,
    panicked: AtomicUsize,
    /// Anything else, or an `Ok` graph that did not run every rank, as text.
    wrong: Mutex<Vec<String>>,
}

impl Outcomes {
    fn wrong(&self, what: String) {
        self.wrong.lock().expect("lock").push(what);
    }

    /// Sorts a graph's result; `ran` ranks of `ranks` ran.
    fn record(&self, result: Result<(), RuntimeError>, ran: usize, ranks: usize) {
        let count = match result {
            Ok(()) if ran == ranks => &self.ok,
            Ok(()) => return self.wrong(format!("Ok, but {ran} of {ranks} ranks ran")),
            Err(RuntimeError::ShutDown { .. }) => &self.shut_down,
            Err(RuntimeError::TaskPanicked { message, .. }) if message.starts_with(INJECTED) => {
                &self.panicked
            }
            Err(other) => return self.wrong(other.to_string()),
        };
        count.fetch_add(1, Ordering::SeqCst);
    }
}

/// A random graph of gangs (fixed places and widths, barriers, a little spinning), one
/// task in 300 panicking; with `spawner`, a task that holds the runtime and submits a small
/// graph without waiting for it. Returns the graph, its rank counter and its total ranks.
fn random_graph(
    rng: &mut StdRng,
    rt: &Arc<Runtime>,
    spawner: bool,
) -> (TaskGraph, Arc<AtomicUsize>, usize) {
    let workers = rt.num_workers();
    let ran = Arc::new(AtomicUsize::new(0));
    let mut ranks = 0;
    let mut g = TaskGraph::new();
    let mut ids: Vec<TaskId> = Vec::new();
    for i in 0..rng.random_range(20usize..120) {
        let width = rng.random_range(1..=workers);
        let leader = rng.random_range(0..=workers - width);
        let panics = rng.random_ratio(1, 300);
        let r = ran.clone();
        let task = Task::new("work", move |ctx| {
            r.fetch_add(1, Ordering::SeqCst);
            assert!(!panics, "{INJECTED} in task {i}");
            common::spin_for(20);
            ctx.barrier();
        });
        ranks += width;
        ids.push(g.add(if rng.random_bool(0.5) {
            task.on(Place::new(leader, width))
        } else {
            task.width(width)
        }));
        if i > 0 {
            g.make_edge(ids[rng.random_range(i.saturating_sub(5)..i)], ids[i]);
        }
    }
    if spawner {
        let (rt, r) = (rt.clone(), ran.clone());
        ids.push(g.add(Task::new("spawner", move |_| {
            r.fetch_add(1, Ordering::SeqCst);
            let mut more = TaskGraph::new();
            more.add(Task::new("more", |ctx| ctx.barrier()).width(rt.num_workers()));
            // Fire and forget: its handle is dropped at once.
            drop(rt.submit(more).expect("submits"));
        })));
        ranks += 1;
    }
    (g, ran, ranks)
}

/// Submits graphs, keeping a few in flight, until `stop` (or the runtime is gone), then
/// waits for all of them.
fn submitter(weak: Weak<Runtime>, seed: u64, stop: StopSignal, outcomes: Arc<Outcomes>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut in_flight: VecDeque<(GraphHandle, Arc<AtomicUsize>, usize)> = VecDeque::new();
    while !stop.is_stopped() {
        let Some(rt) = weak.upgrade() else { break };
        let spawner = rng.random_ratio(1, 4);
        let (g, ran, ranks) = random_graph(&mut rng, &rt, spawner);
        in_flight.push_back((rt.submit(g).expect("submits"), ran, ranks));
        // Only the handle stays: the runtime may be dropped right here, on this thread.
        drop(rt);
        if in_flight.len() > 3 {
            let (handle, ran, ranks) = in_flight.pop_front().expect("in flight");
            let result = handle.wait();
            outcomes.record(result, ran.load(Ordering::SeqCst), ranks);
        }
    }
    for (handle, ran, ranks) in in_flight {
        let result = handle.wait();
        outcomes.record(result, ran.load(Ordering::SeqCst), ranks);
    }
}

/// Runs a two-stage pipeline until `stop`; every admitted frame must come out, in order.
fn pipeline(weak: Weak<Runtime>, stop: StopSignal, outcomes: Arc<Outcomes>) {
    let Some(rt) = weak.upgrade() else { return };
    let n = rt.num_workers();
    let stage = |name: &'static str, place: Place| {
        Stage::new(name, place, move |x: &u64| {
            let x = *x;
            let mut g = TaskGraph::new();
            g.add(
                Task::new(name, move |ctx| {
                    std::hint::black_box(x);
                    ctx.barrier();
                })
                .on(place),
            );
            g
        })
    };
    let stages = vec![
        stage("first", Place::new(0, 1)),
        stage("rest", Place::new(1, n - 1)),
    ];
    let pipeline = Pipeline::new(stages).expect("disjoint stages");
    let mut next = 0;
    let result = pipeline.run(
        &rt,
        &mut (0u64..),
        |seq, frame| {
            if seq != frame || frame != next {
                outcomes.wrong(format!("frame {frame} came out as {seq}, expected {next}"));
            }
            next += 1;
        },
        &stop,
    );
    match result {
        Ok(stats) if stats.admitted == stats.delivered && stats.delivered == next => {}
        Ok(stats) => outcomes.wrong(format!(
            "pipeline admitted {} and delivered {} ({next} seen)",
            stats.admitted, stats.delivered
        )),
        Err(e) => outcomes.wrong(format!("pipeline: {e}")),
    }
    // This may be the last reference: then the pool shuts down here, under the others.
    drop(rt);
}

/// One round: a pool of 2 to 4 workers, two submitters and a pipeline, and the test
/// thread's reference dropped after a seeded pause. Returns how many graphs finished, were
/// cut short by the shutdown, and failed with an injected panic.
fn round(seed: u64) -> [usize; 3] {
    let mut rng = StdRng::seed_from_u64(seed);
    let workers = 2 + (seed % 3) as usize;
    let rt = Arc::new(
        Runtime::builder()
            .workers(workers)
            .build()
            .expect("runtime"),
    );
    let outcomes = Arc::new(Outcomes::default());
    let stop = StopSignal::new();
    let mut threads = Vec::new();
    for s in 0..2 {
        let (weak, st, outcomes) = (Arc::downgrade(&rt), stop.clone(), outcomes.clone());
        threads.push(std::thread::spawn(move || {
            submitter(weak, seed * 10 + s, st, outcomes)
        }));
    }
    let (weak, o, st) = (Arc::downgrade(&rt), outcomes.clone(), stop.clone());
    threads.push(std::thread::spawn(move || pipeline(weak, st, o)));
    std::thread::sleep(Duration::from_micros(rng.random_range(0..20_000)));
    stop.stop();
    drop(rt);
    for t in threads {
        t.join().expect("a submitter or the pipeline panicked");
    }
    let wrong = outcomes.wrong.lock().expect("lock");
    assert!(wrong.is_empty(), "round {seed}: {wrong:?}");
    [&outcomes.ok, &outcomes.shut_down, &outcomes.panicked].map(|c| c.load(Ordering::SeqCst))
}

/// Aborts the process when `progress` has not moved for `limit`: a hung drop cannot be
/// failed from the thread it hangs, and must not hang CI. Allocates nothing while it
/// watches (the leak check counts every thread).
fn watchdog(progress: Arc<AtomicU64>, finished: Arc<AtomicBool>, limit: Duration) {
    let (mut seen, mut since) = (progress.load(Ordering::SeqCst), Instant::now());
    while !finished.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(50));
        let now = progress.load(Ordering::SeqCst);
        if now != seen {
            (seen, since) = (now, Instant::now());
        } else if since.elapsed() > limit {
            // Straight to stderr: the test harness captures `eprintln!`, and an abort
            // would lose it.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "stress_shutdown: no progress for {limit:?} at step {now} (a hang); aborting"
            );
            std::process::abort();
        }
    }
}

#[test]
fn dropping_the_runtime_mid_flight_neither_hangs_nor_leaks() {
    common::quiet_injected_panics();
    let full = std::env::var("TAOPIPE_STRESS").is_ok_and(|v| v == "full");
    let rounds = if full { 400 } else { 40 };
    let (progress, finished) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicBool::new(false)),
    );
    let dog = {
        let (p, f) = (progress.clone(), finished.clone());
        std::thread::spawn(move || watchdog(p, f, Duration::from_secs(60)))
    };

    let warm_up = 6;
    for seed in 0..warm_up {
        round(seed);
        progress.fetch_add(1, Ordering::SeqCst);
    }
    let settled = || settle(&progress);
    let before = settled();
    let mut seen = [0; 3];
    for seed in warm_up..warm_up + rounds {
        let counts = round(seed);
        (0..3).for_each(|i| seen[i] += counts[i]);
        progress.fetch_add(1, Ordering::SeqCst);
    }
    let after = settled();
    finished.store(true, Ordering::SeqCst);
    dog.join().expect("watchdog");
    eprintln!("{rounds} rounds: {seen:?} graphs finished, shut down, panicked");
    // Within one node of crossbeam-epoch's queue of garbage bags (2 KiB, present or not
    // depending on when it last collected: collecting defers the free of the queue's old
    // head, so it never settles to nothing). What a round leaks is far larger: a pool and
    // its stats histograms take hundreds of KiB, a graph tens, and anything of the round
    // left behind each time adds up over the rounds.
    // The rounds did what they are for: graphs finished, graphs cut short by the drop,
    // injected panics reported.
    let [ok, shut_down, panicked] = seen;
    assert!(
        ok > 0 && shut_down > 0 && panicked > 0,
        "{ok} finished, {shut_down} shut down, {panicked} panicked"
    );
    let leaked = after as i64 - before as i64;
    assert!(
        leaked.abs() <= 4096,
        "{rounds} rounds left {after} bytes live against {before} after warm-up ({leaked:+})"
    );
}

/// The live bytes once the pools of the rounds before have wound down. A pool dropped on
/// one of its own workers lets its threads exit on their own, so this polls (while the
/// watchdog watches) until the count stops moving. The work-stealing deques free memory
/// through crossbeam-epoch, which defers frees (a grown deque's old buffer, the record of
/// an exited thread) until some thread collects: each poll collects.
fn settle(progress: &AtomicU64) -> u64 {
    let collect = || {
        for _ in 0..4 {
            crossbeam_epoch::pin().flush();
        }
        counting::live_bytes()
    };
    let mut last = collect();
    let mut same = 0;
    while same < 20 {
        std::thread::sleep(Duration::from_millis(10));
        let now = collect();
        same = if now == last { same + 1 } else { 0 };
        last = now;
    }
    progress.fetch_add(1, Ordering::SeqCst);
    last
}
