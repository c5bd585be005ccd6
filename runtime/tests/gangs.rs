//! Gangs: every rank of every moldable task runs exactly once, on the workers of its
//! place, and overlapping gangs that meet at barriers never deadlock.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use taopipe_runtime::{Place, Runtime, Task, TaskGraph};

/// Counts (task, rank) visits and checks each rank ran on the worker its place says.
struct RankLog {
    visits: Vec<AtomicUsize>,
    wrong_worker: AtomicUsize,
}

#[test]
fn every_rank_of_every_gang_runs_exactly_once() {
    let workers = 4;
    let rt = Runtime::builder()
        .workers(workers)
        .build()
        .expect("runtime");
    let places = rt.topology().places();
    let mut rng = StdRng::seed_from_u64(7);
    let tasks = 2000;
    let chosen: Vec<Place> = (0..tasks)
        .map(|_| places[rng.random_range(0..places.len())])
        .collect();
    let log = Arc::new(RankLog {
        visits: (0..tasks * workers).map(|_| AtomicUsize::new(0)).collect(),
        wrong_worker: AtomicUsize::new(0),
    });
    let mut g = TaskGraph::new();
    for (i, &place) in chosen.iter().enumerate() {
        let log = log.clone();
        g.add(
            Task::new("gang", move |ctx| {
                log.visits[i * workers + ctx.rank()].fetch_add(1, Ordering::SeqCst);
                if ctx.worker() != place.leader() + ctx.rank() || ctx.place() != place {
                    log.wrong_worker.fetch_add(1, Ordering::SeqCst);
                }
            })
            .on(place),
        );
    }
    common::within(Duration::from_secs(60), "2000 gangs", move || rt.run(g)).expect("runs");
    assert_eq!(
        log.wrong_worker.load(Ordering::SeqCst),
        0,
        "a rank ran outside its place"
    );
    for (i, place) in chosen.iter().enumerate() {
        for rank in 0..workers {
            let expected = usize::from(rank < place.width());
            let seen = log.visits[i * workers + rank].load(Ordering::SeqCst);
            assert_eq!(
                seen, expected,
                "task {i} on {place}: rank {rank} ran {seen} times"
            );
        }
    }
}

/// Independent gangs on random overlapping places, each meeting at three barriers. If two
/// gangs were queued in different orders on two shared workers, each would wait at a
/// barrier for a rank stuck behind the other: the watchdog turns that into a failure.
#[test]
fn overlapping_gangs_with_barriers_never_deadlock() {
    for workers in [2, 3, 4, 6] {
        let rt = Runtime::builder()
            .workers(workers)
            .idle_spin(Duration::from_micros(5))
            .build()
            .expect("runtime");
        let places = rt.topology().places();
        let mut rng = StdRng::seed_from_u64(workers as u64);
        let done = Arc::new(AtomicUsize::new(0));
        let mut g = TaskGraph::new();
        let tasks = 3000;
        for _ in 0..tasks {
            let done = done.clone();
            let place = places[rng.random_range(0..places.len())];
            g.add(
                Task::new("barriers", move |ctx| {
                    for _ in 0..3 {
                        ctx.barrier();
                    }
                    if ctx.rank() == 0 {
                        done.fetch_add(1, Ordering::SeqCst);
                    }
                })
                .on(place),
            );
        }
        common::within(
            Duration::from_secs(120),
            &format!("{tasks} overlapping gangs on {workers} workers"),
            move || rt.run(g),
        )
        .expect("runs");
        assert_eq!(done.load(Ordering::SeqCst), tasks);
    }
}

/// Barriers order the ranks: what one rank wrote before the barrier, every rank reads after.
#[test]
fn barrier_separates_phases() {
    let rt = Runtime::builder().workers(3).build().expect("runtime");
    let slots = Arc::new((0..3).map(|_| AtomicUsize::new(0)).collect::<Vec<_>>());
    let bad = Arc::new(AtomicUsize::new(0));
    for round in 1..=200 {
        let (slots, bad) = (slots.clone(), bad.clone());
        rt.run_on(Place::new(0, 3), move |ctx| {
            slots[ctx.rank()].store(round, Ordering::Relaxed);
            ctx.barrier();
            if slots.iter().any(|s| s.load(Ordering::Relaxed) != round) {
                bad.fetch_add(1, Ordering::Relaxed);
            }
            ctx.barrier();
        })
        .expect("round runs");
    }
    assert_eq!(bad.load(Ordering::Relaxed), 0);
}

#[test]
fn width_placement_uses_a_place_of_that_width() {
    let rt = Runtime::builder().workers(4).build().expect("runtime");
    let widths = Arc::new((0..100).map(|_| AtomicUsize::new(0)).collect::<Vec<_>>());
    let mut g = TaskGraph::new();
    for i in 0..100 {
        let widths = widths.clone();
        g.add(
            Task::new("w3", move |ctx| {
                widths[i].fetch_add(ctx.width() * 10 + 1, Ordering::SeqCst);
            })
            .width(3),
        );
    }
    rt.run(g).expect("runs");
    // Three ranks, each adding 3*10+1.
    assert!(widths.iter().all(|w| w.load(Ordering::SeqCst) == 93));
}

/// `TaskCtx::share` runs every item of every phase exactly once, and no item before every
/// item of the earlier phases finished: random phase lengths (empty phases included) on
/// every place of 4 workers, many gangs per graph, so slots are re-armed and reused.
#[test]
fn shared_items_run_once_each_in_phase_order() {
    let rt = Arc::new(Runtime::builder().workers(4).build().expect("runtime"));
    let places = rt.topology().places();
    let mut rng = StdRng::seed_from_u64(11);
    for round in 0..20 {
        let phases: Vec<usize> = (0..rng.random_range(1..6))
            .map(|_| rng.random_range(0..9))
            .collect();
        let total: usize = phases.iter().sum();
        let tasks = 30;
        let runs = Arc::new(
            (0..tasks * total)
                .map(|_| AtomicUsize::new(0))
                .collect::<Vec<_>>(),
        );
        let finished = Arc::new(
            (0..tasks * phases.len())
                .map(|_| AtomicUsize::new(0))
                .collect::<Vec<_>>(),
        );
        let early = Arc::new(AtomicUsize::new(0));
        let mut g = TaskGraph::new();
        for t in 0..tasks {
            let place = places[rng.random_range(0..places.len())];
            let (phases, runs, finished, early) = (
                phases.clone(),
                runs.clone(),
                finished.clone(),
                early.clone(),
            );
            g.add(
                Task::new("share", move |ctx| {
                    let fin = &finished[t * phases.len()..(t + 1) * phases.len()];
                    ctx.share(
                        phases.len(),
                        |p| phases[p],
                        |p, item| {
                            if (0..p).any(|q| fin[q].load(Ordering::SeqCst) != phases[q]) {
                                early.fetch_add(1, Ordering::SeqCst);
                            }
                            let at = phases[..p].iter().sum::<usize>() + item;
                            runs[t * phases.iter().sum::<usize>() + at]
                                .fetch_add(1, Ordering::SeqCst);
                            // Long enough that ranks overlap inside a phase.
                            common::spin_for(20 + (at % 3) as u64 * 10);
                            fin[p].fetch_add(1, Ordering::SeqCst);
                        },
                    );
                })
                .on(place),
            );
        }
        let rt = rt.clone();
        common::within(Duration::from_secs(60), "shared items", move || rt.run(g)).expect("runs");
        assert_eq!(
            early.load(Ordering::SeqCst),
            0,
            "round {round}: an item ran before its phase"
        );
        for (i, r) in runs.iter().enumerate() {
            assert_eq!(
                r.load(Ordering::SeqCst),
                1,
                "round {round} {phases:?}: item {i}"
            );
        }
    }
}

/// At width 2 rank 0 claims a one-phase share's items from the front and rank 1 from the
/// back, so each takes the same end of every layer (and reads what it wrote a layer
/// before): rank 0's items are a prefix and rank 1's the rest, whatever the timing.
#[test]
fn a_pair_claims_one_phase_from_both_ends() {
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let owner = Arc::new((0..19).map(|_| AtomicUsize::new(2)).collect::<Vec<_>>());
    for _ in 0..50 {
        let seen = owner.clone();
        rt.run_on(Place::new(0, 2), move |ctx| {
            ctx.share(
                1,
                |_| 19,
                |_, item| {
                    seen[item].store(ctx.rank(), Ordering::SeqCst);
                    common::spin_for(5 + (item % 4) as u64 * 5);
                },
            );
        })
        .expect("runs");
        let ranks: Vec<usize> = owner.iter().map(|r| r.load(Ordering::SeqCst)).collect();
        assert!(
            ranks.is_sorted() && ranks.iter().all(|&r| r < 2),
            "{ranks:?}"
        );
    }
}

/// A share of several phases, or any share of a gang wider than two, is claimed from the
/// front only (a phase's small items, placed last, fill its end): rank 1, arriving while
/// rank 0 runs item 2 of 6, takes item 3, not item 5. A third rank waits until it has.
#[test]
fn longer_shares_and_wider_gangs_claim_from_the_front() {
    let rt = Arc::new(Runtime::builder().workers(3).build().expect("runtime"));
    for (width, phases) in [(2, vec![6, 3]), (3, vec![6])] {
        let first = Arc::new(AtomicUsize::new(usize::MAX));
        let at_two = Arc::new(AtomicBool::new(false));
        let (seen, two, rt) = (first.clone(), at_two.clone(), rt.clone());
        common::within(Duration::from_secs(30), "front claims", move || {
            rt.run_on(Place::new(0, width), move |ctx| {
                let wait_for = |done: &dyn Fn() -> bool| {
                    while !done() {
                        std::hint::spin_loop();
                    }
                };
                match ctx.rank() {
                    0 => {}
                    1 => wait_for(&|| two.load(Ordering::SeqCst)),
                    _ => wait_for(&|| seen.load(Ordering::SeqCst) != usize::MAX),
                }
                ctx.share(
                    phases.len(),
                    |p| phases[p],
                    |p, item| {
                        if ctx.rank() == 1 {
                            let _ = seen.compare_exchange(
                                usize::MAX,
                                item,
                                Ordering::SeqCst,
                                Ordering::SeqCst,
                            );
                        } else if ctx.rank() == 0 && (p, item) == (0, 2) {
                            two.store(true, Ordering::SeqCst);
                            wait_for(&|| seen.load(Ordering::SeqCst) != usize::MAX);
                        }
                    },
                );
            })
        })
        .expect("runs");
        assert_eq!(first.load(Ordering::SeqCst), 3, "width {width}");
    }
}

/// A rank that comes late leaves its items to the others: rank 1 of 2 enters `share` only
/// after the last item ran, so rank 0 must run them all. A static split would leave half
/// of them to rank 1 and never finish; the watchdog turns that into a failure.
#[test]
fn a_late_rank_leaves_its_items_to_the_others() {
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let ran = Arc::new((0..2).map(|_| AtomicUsize::new(0)).collect::<Vec<_>>());
    let seen = ran.clone();
    common::within(Duration::from_secs(30), "a late rank", move || {
        rt.run_on(Place::new(0, 2), move |ctx| {
            if ctx.rank() == 1 {
                while seen.iter().map(|r| r.load(Ordering::SeqCst)).sum::<usize>() < 10 {
                    std::thread::yield_now();
                }
            }
            ctx.share(
                2,
                |_| 5,
                |_, _| {
                    seen[ctx.rank()].fetch_add(1, Ordering::SeqCst);
                },
            );
        })
    })
    .expect("runs");
    assert_eq!(ran[0].load(Ordering::SeqCst), 10);
    assert_eq!(ran[1].load(Ordering::SeqCst), 0);
}
