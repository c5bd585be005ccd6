//! Pipelines: frames leave in order, none lost or duplicated — also when stopped midway,
//! when a stage fails, and across a reconfiguration — and queues are bounded.

mod common;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use taopipe_runtime::{
    MAX_QUEUE, Pipeline, PipelineError, Place, PreparedGraph, Runtime, Stage, StopSignal, Task,
    TaskGraph,
};

/// A frame: its id and the stages it went through, in order.
#[derive(Debug)]
struct Frame {
    id: u64,
    visits: Mutex<Vec<usize>>,
}

fn frames(n: u64) -> impl Iterator<Item = Arc<Frame>> + Send {
    (0..n).map(|id| {
        Arc::new(Frame {
            id,
            visits: Mutex::new(Vec::new()),
        })
    })
}

/// A stage whose graph is a chain of `layers` moldable tasks on `place`, the first of which
/// records the visit and all of which take a little, frame-dependent time.
fn stage(index: usize, place: Place, layers: usize) -> Stage<Arc<Frame>> {
    Stage::new(format!("s{index}"), place, move |f: &Arc<Frame>| {
        let mut g = TaskGraph::new();
        let mut prev = None;
        for layer in 0..layers {
            let f = f.clone();
            let t = g.add(
                Task::new("layer", move |ctx| {
                    if layer == 0 && ctx.rank() == 0 {
                        f.visits.lock().expect("lock").push(index);
                    }
                    common::spin_for(20 + (f.id * 37 + index as u64 * 11) % 60);
                })
                .on(place),
            );
            if let Some(p) = prev {
                g.make_edge(p, t);
            }
            prev = Some(t);
        }
        g
    })
}

fn three_stages() -> Vec<Stage<Arc<Frame>>> {
    vec![
        stage(0, Place::new(0, 1), 2),
        stage(1, Place::new(1, 2), 3),
        stage(2, Place::new(3, 1), 1),
    ]
}

#[test]
fn frames_leave_in_order_and_each_exactly_once() {
    let rt = Runtime::builder().workers(4).build().expect("runtime");
    let pipeline = Pipeline::new(three_stages()).expect("pipeline");
    let mut source = frames(300);
    let mut seen = Vec::new();
    let stats = common::within(Duration::from_secs(60), "pipeline", move || {
        let r = pipeline.run(
            &rt,
            &mut source,
            |seq, f| seen.push((seq, f)),
            &StopSignal::new(),
        );
        (r, seen)
    });
    let (stats, seen) = (stats.0.expect("runs"), stats.1);
    assert_eq!((stats.admitted, stats.delivered), (300, 300));
    for (i, (seq, f)) in seen.iter().enumerate() {
        assert_eq!((*seq, f.id), (i as u64, i as u64), "frame out of order");
        assert_eq!(
            *f.visits.lock().expect("lock"),
            [0, 1, 2],
            "frame {i} visited stages out of order"
        );
    }
    assert!(stats.stages.iter().all(|s| s.frames == 300));
    assert_eq!(stats.latency.len(), 300);
    assert!(stats.throughput_fps() > 0.0 && stats.latency_ms(0.99) >= stats.latency_ms(0.5));
}

#[test]
fn stopping_midway_delivers_every_admitted_frame_and_leaves_the_rest() {
    let rt = Runtime::builder().workers(4).build().expect("runtime");
    let pipeline = Pipeline::new(three_stages()).expect("pipeline");
    let mut source = frames(500);
    let stop = StopSignal::new();
    let mut ids = Vec::new();
    let stats = pipeline
        .run(
            &rt,
            &mut source,
            |_, f| {
                ids.push(f.id);
                if ids.len() == 20 {
                    stop.stop();
                }
            },
            &stop,
        )
        .expect("runs");
    assert!(
        stats.admitted >= 20 && stats.admitted < 500,
        "admitted {}",
        stats.admitted
    );
    assert_eq!(
        stats.delivered, stats.admitted,
        "an admitted frame was lost"
    );
    assert_eq!(ids, (0..stats.admitted).collect::<Vec<_>>());
    // The frames never admitted are still in the iterator, in order.
    let rest: Vec<u64> = source.map(|f| f.id).collect();
    assert_eq!(rest, (stats.admitted..500).collect::<Vec<_>>());
}

#[test]
fn reconfiguring_between_frames_keeps_the_order() {
    let rt = Runtime::builder().workers(4).build().expect("runtime");
    let mut source = frames(120);
    let mut ids = Vec::new();
    let first = Pipeline::new(three_stages()).expect("pipeline");
    let stop = StopSignal::new();
    first
        .run(
            &rt,
            &mut source,
            |_, f| {
                ids.push(f.id);
                if ids.len() == 30 {
                    stop.stop();
                }
            },
            &stop,
        )
        .expect("first split");
    // A new split and new places, same runtime.
    let second = Pipeline::new(vec![
        stage(0, Place::new(0, 3), 4),
        stage(1, Place::new(3, 1), 2),
    ])
    .expect("pipeline");
    let stats = second
        .run(&rt, &mut source, |_, f| ids.push(f.id), &StopSignal::new())
        .expect("second split");
    assert_eq!(ids, (0..120).collect::<Vec<_>>());
    assert_eq!(stats.stages.len(), 2);
}

/// A pseudo-random split of 4 workers into 1..=4 stages (xorshift of `x`).
fn random_stages(x: &mut u64) -> Vec<Stage<Arc<Frame>>> {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    let mut widths = Vec::new();
    let mut left = 4;
    let mut bits = *x;
    while left > 0 {
        let w = 1 + (bits % left as u64) as usize;
        widths.push(w);
        left -= w;
        bits /= 5;
    }
    let mut leader = 0;
    widths
        .into_iter()
        .enumerate()
        .map(|(i, w)| {
            let s = stage(i, Place::new(leader, w), 1 + i % 2);
            leader += w;
            s
        })
        .collect()
}

#[test]
fn a_hundred_reconfigurations_under_load_deliver_every_frame_once_in_order() {
    let rt = Runtime::builder().workers(4).build().expect("runtime");
    let total = 1500;
    let mut source = frames(total);
    let mut ids = Vec::new();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let load_done = StopSignal::new();
    std::thread::scope(|s| {
        // Other graphs compete for the same workers all along.
        s.spawn(|| {
            while !load_done.is_stopped() {
                let mut g = TaskGraph::new();
                g.add(Task::new("load", |_| common::spin_for(50)).width(2));
                rt.run(g).expect("load graph");
            }
        });
        for run in 0..100u64 {
            let stop = StopSignal::new();
            // The observer ends the run, as a watcher noticing a change would: after a
            // few frames of the last stage.
            let last = Arc::new(AtomicUsize::new(0));
            let stages = random_stages(&mut x);
            let n = stages.len();
            let (seen, signal) = (last.clone(), stop.clone());
            let after = 2 + (run % 7) as usize;
            let pipeline =
                Pipeline::new(stages)
                    .expect("pipeline")
                    .with_observer(move |stage, _, _| {
                        if stage + 1 == n && seen.fetch_add(1, Ordering::Relaxed) + 1 >= after {
                            signal.stop();
                        }
                    });
            pipeline
                .run(
                    &rt,
                    &mut source,
                    |_, f| {
                        let visits = f.visits.lock().expect("lock").clone();
                        assert_eq!(visits, (0..n).collect::<Vec<_>>(), "frame {}", f.id);
                        ids.push(f.id);
                    },
                    &stop,
                )
                .expect("run");
        }
        load_done.stop();
    });
    let delivered = ids.len() as u64;
    assert!(delivered >= 200, "only {delivered} frames in 100 runs");
    assert_eq!(ids, (0..delivered).collect::<Vec<_>>());
    // The rest are still in the source, untouched.
    assert_eq!(source.next().map(|f| f.id), Some(delivered));
}

#[test]
fn a_failing_stage_is_an_error_naming_stage_and_frame() {
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let ok = stage(0, Place::new(0, 1), 1);
    let failing = Stage::new("boom", Place::new(1, 1), |f: &Arc<Frame>| {
        let id = f.id;
        let mut g = TaskGraph::new();
        g.add(Task::new("maybe", move |_| assert!(id != 7, "frame 7 is bad")).on(Place::new(1, 1)));
        g
    });
    let pipeline = Pipeline::new(vec![ok, failing]).expect("pipeline");
    let mut source = frames(100);
    let mut ids = Vec::new();
    let err = common::within(Duration::from_secs(30), "failing pipeline", move || {
        let r = pipeline.run(&rt, &mut source, |_, f| ids.push(f.id), &StopSignal::new());
        (r.map(|_| ()), ids)
    });
    let (result, ids) = err;
    match result {
        Err(PipelineError::Stage {
            stage,
            frame,
            error,
        }) => {
            assert_eq!((stage.as_str(), frame), ("boom", 7));
            assert!(error.to_string().contains("frame 7 is bad"), "{error}");
        }
        other => panic!("expected a stage error, got {other:?}"),
    }
    assert_eq!(
        ids,
        (0..7).collect::<Vec<_>>(),
        "the frames ahead of the failed one are delivered, in order"
    );
}

#[test]
fn queues_are_bounded() {
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let entered = Arc::new(AtomicU64::new(0));
    let left = Arc::new(AtomicU64::new(0));
    let max_ahead = Arc::new(AtomicUsize::new(0));
    let (e, l, m) = (entered.clone(), left.clone(), max_ahead.clone());
    let fast = Stage::new("fast", Place::new(0, 1), move |_: &Arc<Frame>| {
        let ahead = e.fetch_add(1, Ordering::SeqCst) + 1 - l.load(Ordering::SeqCst);
        m.fetch_max(ahead as usize, Ordering::SeqCst);
        let mut g = TaskGraph::new();
        g.add(Task::new("fast", |_| {}).on(Place::new(0, 1)));
        g
    });
    let slow = Stage::new("slow", Place::new(1, 1), |_: &Arc<Frame>| {
        let mut g = TaskGraph::new();
        g.add(
            Task::new("slow", |_| std::thread::sleep(Duration::from_millis(2)))
                .on(Place::new(1, 1)),
        );
        g
    });
    let pipeline = Pipeline::new(vec![fast, slow])
        .expect("pipeline")
        .with_queue(2)
        .expect("queue");
    let mut source = frames(60);
    pipeline
        .run(
            &rt,
            &mut source,
            |_, _| {
                left.fetch_add(1, Ordering::SeqCst);
            },
            &StopSignal::new(),
        )
        .expect("runs");
    // In flight at most: the out queue, the slow stage's frame and queue, the fast stage's
    // frame — (stages + 1) queues of 2, plus one frame per stage, plus one.
    let bound = 3 * 2 + 2 + 1;
    let seen = max_ahead.load(Ordering::SeqCst);
    assert!(
        seen <= bound,
        "{seen} frames ahead of the sink; the queues are not bounded"
    );
}

/// A frame that counts the frames alive and remembers the most at once.
struct Live(Arc<(AtomicUsize, AtomicUsize)>);

impl Live {
    fn new(count: &Arc<(AtomicUsize, AtomicUsize)>) -> Live {
        let now = count.0.fetch_add(1, Ordering::SeqCst) + 1;
        count.1.fetch_max(now, Ordering::SeqCst);
        Live(count.clone())
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.0.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// With a slow sink every queue fills and every stage waits holding a frame: the frames
/// alive reach `max_in_flight` and never pass it (frame pools are sized by it).
#[test]
fn max_in_flight_is_the_most_frames_alive() {
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let noop = |w| {
        Stage::new(format!("s{w}"), Place::new(w, 1), move |_: &Live| {
            let mut g = TaskGraph::new();
            g.add(Task::new("noop", |_| {}).on(Place::new(w, 1)));
            g
        })
    };
    let pipeline = Pipeline::new(vec![noop(0), noop(1)])
        .expect("pipeline")
        .with_queue(3)
        .expect("queue");
    let count = Arc::new((AtomicUsize::new(0), AtomicUsize::new(0)));
    let c = count.clone();
    let mut source = (0..40).map(move |_| Live::new(&c));
    pipeline
        .run(
            &rt,
            &mut source,
            |_, frame| {
                std::thread::sleep(Duration::from_millis(10));
                drop(frame);
            },
            &StopSignal::new(),
        )
        .expect("runs");
    assert_eq!(pipeline.max_in_flight(), 3 * 3 + 2 + 2);
    assert_eq!(count.0.load(Ordering::SeqCst), 0, "every frame was dropped");
    assert_eq!(count.1.load(Ordering::SeqCst), pipeline.max_in_flight());
}

#[test]
fn bad_pipelines_are_refused() {
    let overlap = Pipeline::new(vec![
        stage(0, Place::new(0, 2), 1),
        stage(1, Place::new(1, 1), 1),
    ]);
    let text = overlap.expect_err("overlap").to_string();
    assert!(
        text.contains("s0") && text.contains("s1") && text.contains("0+2") && text.contains("1+1"),
        "{text}"
    );
    assert_eq!(
        Pipeline::<Arc<Frame>>::new(vec![]).expect_err("empty"),
        PipelineError::NoStages
    );
    let zero = Pipeline::new(vec![stage(0, Place::new(0, 1), 1)])
        .expect("ok")
        .with_queue(0);
    assert_eq!(zero.expect_err("zero"), PipelineError::ZeroQueue);
    let deep = || Pipeline::new(vec![stage(0, Place::new(0, 1), 1)]).expect("ok");
    for frames in [MAX_QUEUE + 1, usize::MAX] {
        // usize::MAX panicked ("capacity overflow") in max_in_flight and the queues.
        let error = deep().with_queue(frames).expect_err("too deep");
        assert_eq!(error, PipelineError::QueueTooLong { frames });
        assert!(error.to_string().contains(&frames.to_string()), "{error}");
    }
    let deepest = deep().with_queue(MAX_QUEUE).expect("the most");
    assert_eq!(deepest.max_in_flight(), 2 * MAX_QUEUE + 3);
}

/// A frame that carries its own prepared graph per stage.
struct Carried {
    id: u64,
    trail: Arc<Mutex<Vec<usize>>>,
    graphs: Vec<PreparedGraph>,
}

/// Runner stages: each frame's own prepared graphs run in order, stage after stage, and a
/// failing run is a pipeline error naming the stage and the frame.
#[test]
fn runner_stages_run_the_frames_prepared_graphs() {
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let places = [Place::new(0, 1), Place::new(1, 1)];
    let carried = |id: u64| {
        let trail = Arc::new(Mutex::new(Vec::new()));
        let graphs = places
            .iter()
            .enumerate()
            .map(|(s, &place)| {
                let t = trail.clone();
                let mut g = TaskGraph::new();
                let a = g.add(
                    Task::new("visit", move |_| {
                        assert!(!(s == 1 && id == 13), "frame 13 is bad");
                        t.lock().expect("lock").push(s);
                    })
                    .on(place),
                );
                let b = g.add(Task::new("spin", |_| common::spin_for(30)).on(place));
                g.make_edge(a, b);
                rt.prepare(g).expect("prepares")
            })
            .collect();
        Arc::new(Carried { id, trail, graphs })
    };
    let stages = (0..2)
        .map(|s| {
            Stage::runner(
                format!("s{s}"),
                places[s],
                move |rt: &Runtime, f: &Arc<Carried>| rt.run_prepared(&f.graphs[s]),
            )
        })
        .collect();
    let pipeline = Pipeline::new(stages).expect("pipeline");
    let mut source = (0..40).map(carried);
    let mut seen = Vec::new();
    let result = pipeline.run(
        &rt,
        &mut source,
        |seq, f| seen.push((seq, f)),
        &StopSignal::new(),
    );
    match result {
        Err(PipelineError::Stage {
            stage,
            frame,
            error,
        }) => {
            assert_eq!((stage.as_str(), frame), ("s1", 13));
            assert!(error.to_string().contains("frame 13 is bad"), "{error}");
        }
        other => panic!("expected a stage error, got {other:?}"),
    }
    assert_eq!(
        seen.len(),
        13,
        "the frames ahead of the failed one are delivered"
    );
    for (i, (seq, f)) in seen.iter().enumerate() {
        assert_eq!((*seq, f.id), (i as u64, i as u64));
        assert_eq!(*f.trail.lock().expect("lock"), [0, 1], "frame {i}");
    }
}
