//! A pipeline whose stages run prepared graphs carried by the frames makes no heap
//! allocation per frame, on any thread: admission, the queues between stages, the drivers,
//! the runs, the latency histogram and the sink.

mod counting;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use counting::Count;
use taopipe_runtime::{
    Pipeline, Place, PreparedGraph, Runtime, Stage, StopSignal, Task, TaskGraph,
};

const FRAMES: u64 = 64;
/// Frame buffers, reused round-robin: more than the pipeline can hold in flight (its
/// queues, one frame per stage, the sink's).
const SLOTS: usize = 16;
const FROM: u64 = 10;
const TO: u64 = 60;

/// A frame's buffer: the frame's number and the value its stages compute.
#[derive(Default)]
struct Data {
    seq: AtomicU64,
    value: AtomicU64,
}

/// A reusable frame: its buffer and, per stage, a graph prepared over it.
struct Slot {
    data: Arc<Data>,
    graphs: [PreparedGraph; 2],
}

/// Stage 0 on `0+1`: value = seq, then value *= 3 (two layers). Stage 1 on `1+1`:
/// value += 1.
fn slot(rt: &Runtime) -> Arc<Slot> {
    let data = Arc::new(Data::default());
    let mut first = TaskGraph::new();
    let d = data.clone();
    let load = first.add(
        Task::new("load", move |_| {
            d.value
                .store(d.seq.load(Ordering::SeqCst), Ordering::SeqCst);
        })
        .on(Place::new(0, 1)),
    );
    let d = data.clone();
    let triple = first.add(
        Task::new("triple", move |_| {
            d.value
                .fetch_add(2 * d.value.load(Ordering::SeqCst), Ordering::SeqCst);
        })
        .on(Place::new(0, 1)),
    );
    first.make_edge(load, triple);
    let mut second = TaskGraph::new();
    let d = data.clone();
    second.add(
        Task::new("inc", move |_| {
            d.value.fetch_add(1, Ordering::SeqCst);
        })
        .on(Place::new(1, 1)),
    );
    let graphs = [
        rt.prepare(first).expect("prepares"),
        rt.prepare(second).expect("prepares"),
    ];
    Arc::new(Slot { data, graphs })
}

#[test]
fn a_pipeline_of_prepared_graphs_allocates_nothing_per_frame() {
    let rt = Runtime::builder().workers(2).build().expect("runtime");
    let slots: Vec<Arc<Slot>> = (0..SLOTS).map(|_| slot(&rt)).collect();
    let stages = (0..2)
        .map(|s| {
            Stage::runner(
                format!("stage{s}"),
                Place::new(s, 1),
                move |rt: &Runtime, f: &Arc<Slot>| rt.run_prepared(&f.graphs[s]),
            )
        })
        .collect();
    let pipeline = Pipeline::new(stages).expect("pipeline");
    let mut frames = (0..FRAMES).map(|seq| {
        let slot = slots[seq as usize % SLOTS].clone();
        slot.data.seq.store(seq, Ordering::SeqCst);
        slot
    });
    let (mut start, mut spent) = (None, None);
    let mut wrong = 0u64;
    let stats = pipeline
        .run(
            &rt,
            &mut frames,
            |seq, f| {
                if seq == FROM {
                    start = Some(Count::now());
                }
                if seq == TO {
                    spent = start.map(Count::since);
                }
                let ok = f.data.seq.load(Ordering::SeqCst) == seq
                    && f.data.value.load(Ordering::SeqCst) == 3 * seq + 1;
                wrong += u64::from(!ok);
            },
            &StopSignal::new(),
        )
        .expect("runs");
    assert_eq!(stats.delivered, FRAMES);
    assert_eq!(
        wrong, 0,
        "frames came out wrong (or a slot was reused in flight)"
    );
    let spent = spent.expect("frame {TO} was delivered");
    assert_eq!(
        spent.allocations, 0,
        "frames {FROM}..{TO} allocated {} times (and freed {})",
        spent.allocations, spent.frees
    );
}
