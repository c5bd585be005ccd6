//! A timeline of task parts: which worker ran which rank of which task, from when to when.
//!
//! The trace table keeps one moving average per task and place; it cannot say that a
//! layer's two ranks ended 0.2 ms apart, or that one rank started late. Spans can. They are
//! off by default and cost one relaxed load per task part then. [`Runtime::record_spans`]
//! turns them on with room for a fixed number of spans per worker, so that recording
//! never allocates while graphs run (the frames' zero-allocation promise holds with it on);
//! spans past that room are counted as dropped, not kept. [`Runtime::take_spans`] turns
//! them off and returns what was recorded.
//!
//! ```
//! use taopipe_runtime::{Place, Runtime};
//! let rt = Runtime::builder().workers(2).build()?;
//! rt.record_spans(64);
//! rt.run_on(Place::new(0, 2), |_| {})?;
//! let spans = rt.take_spans();
//! assert_eq!(spans.spans.len(), 2); // one part per rank
//! let runs = spans.gang_runs();
//! assert_eq!((runs.len(), runs[0].parts), (1, 2));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`Runtime::record_spans`]: crate::Runtime::record_spans
//! [`Runtime::take_spans`]: crate::Runtime::take_spans

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crossbeam_utils::CachePadded;
use parking_lot::Mutex;

/// One worker's run of one rank of a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// The task's type ([`Task::new`](crate::Task::new)'s `kind`).
    pub kind: &'static str,
    /// The task's hint ([`Task::hint`](crate::Task::hint); a layer's index in the nets crate).
    pub hint: u64,
    /// The worker that ran the part.
    pub worker: usize,
    /// Its rank in the place.
    pub rank: usize,
    /// The place's first worker.
    pub leader: usize,
    /// The place's width.
    pub width: usize,
    /// When the part started, from [`Runtime::record_spans`](crate::Runtime::record_spans).
    pub start: Duration,
    /// When it ended (with an emulated slowdown's stall, as the trace table counts it).
    pub end: Duration,
}

/// What [`Runtime::take_spans`](crate::Runtime::take_spans) returns: the spans of every
/// worker, ordered by start (then worker).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Spans {
    /// The spans kept.
    pub spans: Vec<Span>,
    /// Spans not kept because a worker's room was full.
    pub dropped: u64,
}

/// One run of a task on its place: the spans of its ranks, taken together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GangRun {
    /// The task's type.
    pub kind: &'static str,
    /// The task's hint.
    pub hint: u64,
    /// The place's first worker.
    pub leader: usize,
    /// The place's width.
    pub width: usize,
    /// Spans found for it: `width` unless some were dropped.
    pub parts: usize,
    /// The first rank's start.
    pub start: Duration,
    /// The last rank's end.
    pub end: Duration,
    /// The ranks' time inside the task, summed.
    pub busy: Duration,
    /// From the first rank's start to the last rank's.
    pub start_skew: Duration,
    /// From the first rank's end to the last rank's: how long a rank that finished waited
    /// for the slowest one.
    pub end_skew: Duration,
}

impl Spans {
    /// The runs of tasks. A task is dispatched again only after every rank of its last
    /// run finished (the next run of its graph), so the spans of one task and place (same
    /// type, hint, leader and width), in order of start, come run by run: a run is the next
    /// `width` of them, one per rank. A rank seen twice closes a run early, where spans
    /// were dropped. Ordered by start.
    pub fn gang_runs(&self) -> Vec<GangRun> {
        // Each run, with its first rank's end and the ranks it holds.
        let mut runs: Vec<(GangRun, Duration, Vec<bool>)> = Vec::new();
        // The open run of each (kind, hint, leader, width).
        let mut open = HashMap::new();
        for s in &self.spans {
            let key = (s.kind, s.hint, s.leader, s.width);
            if let Some(&i) = open.get(&key) {
                let (r, first_end, ranks): &mut (GangRun, Duration, Vec<bool>) = &mut runs[i];
                if r.parts < r.width && !ranks[s.rank] {
                    ranks[s.rank] = true;
                    r.parts += 1;
                    r.busy += s.end - s.start;
                    r.start_skew = s.start - r.start;
                    r.end = r.end.max(s.end);
                    *first_end = (*first_end).min(s.end);
                    continue;
                }
            }
            open.insert(key, runs.len());
            let mut ranks = vec![false; s.width];
            ranks[s.rank] = true;
            let run = GangRun {
                kind: s.kind,
                hint: s.hint,
                leader: s.leader,
                width: s.width,
                parts: 1,
                start: s.start,
                end: s.end,
                busy: s.end - s.start,
                start_skew: Duration::ZERO,
                end_skew: Duration::ZERO,
            };
            runs.push((run, s.end, ranks));
        }
        runs.into_iter()
            .map(|(r, first_end, _)| GangRun {
                end_skew: r.end - first_end,
                ..r
            })
            .collect()
    }
}

/// Every worker's span log, and whether recording is on.
pub(crate) struct SpanRecorder {
    on: AtomicBool,
    logs: Box<[CachePadded<Mutex<Log>>]>,
}

#[derive(Default)]
struct Log {
    /// When recording started: `None` while off.
    epoch: Option<quanta::Instant>,
    spans: Vec<Span>,
    dropped: u64,
}

/// A part to record: what [`SpanRecorder::record`] needs besides the worker.
pub(crate) struct Part {
    pub(crate) kind: &'static str,
    pub(crate) hint: u64,
    pub(crate) rank: usize,
    pub(crate) leader: usize,
    pub(crate) width: usize,
    pub(crate) start: quanta::Instant,
    pub(crate) took: Duration,
}

impl SpanRecorder {
    pub(crate) fn new(workers: usize) -> SpanRecorder {
        SpanRecorder {
            on: AtomicBool::new(false),
            logs: (0..workers).map(|_| CachePadded::default()).collect(),
        }
    }

    /// Starts recording, with room for `capacity` spans per worker, dropping any kept.
    pub(crate) fn start(&self, capacity: usize) {
        let epoch = quanta::Instant::now();
        for log in self.logs.iter() {
            let mut log = log.lock();
            *log = Log {
                epoch: Some(epoch),
                spans: Vec::with_capacity(capacity),
                dropped: 0,
            };
        }
        self.on.store(true, Ordering::Release);
    }

    /// Stops recording and returns the spans, ordered by start.
    pub(crate) fn take(&self) -> Spans {
        self.on.store(false, Ordering::Release);
        let mut all = Spans::default();
        for log in self.logs.iter() {
            let log = std::mem::take(&mut *log.lock());
            all.spans.extend(log.spans);
            all.dropped += log.dropped;
        }
        all.spans.sort_by_key(|s| (s.start, s.worker));
        all
    }

    /// Records `worker`'s part if recording is on: no allocation, the log has its room.
    /// `part` is only called then, so a task part pays one load while recording is off.
    pub(crate) fn record(&self, worker: usize, part: impl FnOnce() -> Part) {
        if !self.on.load(Ordering::Relaxed) {
            return;
        }
        let part = part();
        let mut log = self.logs[worker].lock();
        let Some(epoch) = log.epoch else { return };
        if log.spans.len() == log.spans.capacity() {
            log.dropped += 1;
            return;
        }
        let start = part.start.saturating_duration_since(epoch);
        log.spans.push(Span {
            kind: part.kind,
            hint: part.hint,
            worker,
            rank: part.rank,
            leader: part.leader,
            width: part.width,
            start,
            end: start + part.took,
        });
    }
}

#[cfg(test)]
mod test;
