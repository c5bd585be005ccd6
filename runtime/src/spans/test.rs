use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::*;
use crate::{Place, Runtime, Task, TaskGraph};

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

fn span(kind: &'static str, worker: usize, leader: usize, width: usize, t: (u64, u64)) -> Span {
    Span {
        kind,
        hint: 7,
        worker,
        rank: worker - leader,
        leader,
        width,
        start: ms(t.0),
        end: ms(t.1),
    }
}

/// The gang runs of `spans`.
fn runs_of(spans: Vec<Span>) -> Vec<GangRun> {
    Spans { spans, dropped: 0 }.gang_runs()
}

#[test]
fn gang_runs_join_overlapping_ranks_and_measure_their_skew() {
    let runs = runs_of(vec![
        span("conv", 0, 0, 2, (0, 10)),
        span("conv", 1, 0, 2, (2, 7)),
        span("pool", 1, 1, 1, (8, 9)),
        // The next run of the same conv: it starts after the last one ended.
        span("conv", 0, 0, 2, (11, 20)),
        span("conv", 1, 0, 2, (11, 21)),
    ]);
    assert_eq!(runs.len(), 3, "{runs:?}");
    let (a, pool, b) = (runs[0], runs[1], runs[2]);
    assert_eq!(
        (a.kind, a.parts, a.start, a.end),
        ("conv", 2, ms(0), ms(10))
    );
    assert_eq!((a.busy, a.start_skew, a.end_skew), (ms(15), ms(2), ms(3)));
    assert_eq!((pool.kind, pool.parts, pool.end_skew), ("pool", 1, ms(0)));
    assert_eq!((b.start, b.end, b.busy), (ms(11), ms(21), ms(19)));
    assert_eq!((b.start_skew, b.end_skew), (ms(0), ms(1)));
}

#[test]
fn a_run_holds_one_span_per_rank() {
    // A late rank may start after the other ended (it found no items left): one run.
    // Then rank 0 again: the next run, even where rank 1's span of it was dropped.
    let runs = runs_of(vec![
        span("fc", 0, 0, 2, (0, 5)),
        span("fc", 1, 0, 2, (6, 7)),
        span("fc", 0, 0, 2, (8, 9)),
        span("fc", 0, 0, 2, (10, 11)),
    ]);
    let parts: Vec<_> = runs.iter().map(|r| (r.parts, r.start, r.end)).collect();
    assert_eq!(
        parts,
        [(2, ms(0), ms(7)), (1, ms(8), ms(9)), (1, ms(10), ms(11))]
    );
    assert_eq!((runs[0].start_skew, runs[0].end_skew), (ms(6), ms(2)));
}

#[test]
fn spans_are_off_until_asked_for_and_dropped_past_their_room() {
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    rt.run_on(Place::new(0, 2), |_| {}).expect("runs");
    assert_eq!(rt.take_spans(), Spans::default());

    rt.record_spans(2);
    for _ in 0..3 {
        rt.run_on(Place::new(0, 1), |_| {}).expect("runs");
    }
    let spans = rt.take_spans();
    assert_eq!((spans.spans.len(), spans.dropped), (2, 1));
    assert!(spans.spans.iter().all(|s| s.worker == 0 && s.width == 1));
    // Taking them turned recording off.
    rt.run_on(Place::new(0, 1), |_| {}).expect("runs");
    assert_eq!(rt.take_spans(), Spans::default());
}

#[test]
fn every_rank_of_a_gang_is_a_span_with_its_rank_and_place() {
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let late = Arc::new(AtomicBool::new(false));
    rt.record_spans(16);
    let mut g = TaskGraph::new();
    let l = late.clone();
    let wide = g.add(
        Task::new("wide", move |ctx| {
            // Rank 1 starts its work late and ends last: the run's end skew sees it.
            if ctx.rank() == 1 {
                std::thread::sleep(Duration::from_millis(20));
                l.store(true, Ordering::Relaxed);
            }
        })
        .hint(3)
        .on(Place::new(0, 2)),
    );
    let narrow = g.add(Task::new("narrow", |_| {}).on(Place::new(1, 1)));
    g.make_edge(wide, narrow);
    rt.run(g).expect("runs");
    let spans = rt.take_spans();
    assert!(late.load(Ordering::Relaxed));
    let wide: Vec<_> = spans.spans.iter().filter(|s| s.kind == "wide").collect();
    assert_eq!(wide.len(), 2);
    let mut ranks: Vec<_> = wide.iter().map(|s| (s.rank, s.worker)).collect();
    ranks.sort();
    assert_eq!(ranks, [(0, 0), (1, 1)]);
    assert!(
        wide.iter()
            .all(|s| s.hint == 3 && s.leader == 0 && s.start <= s.end)
    );
    let narrow = spans
        .spans
        .iter()
        .find(|s| s.kind == "narrow")
        .expect("span");
    assert!(wide.iter().all(|s| s.end <= narrow.start), "{spans:?}");
    let run = spans.gang_runs()[0];
    assert_eq!((run.kind, run.parts), ("wide", 2));
    assert!(run.end_skew >= Duration::from_millis(15), "{run:?}");
}
