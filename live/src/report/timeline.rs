//! Where the ranks of a gang spent a run's frames (`frame --trace`): the runtime's spans as
//! a Chrome trace for a timeline viewer, and the sums that say how much the ranks waited
//! for one another.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{Value, json};
use taopipe_runtime::{Span, Spans};

/// What the spans of a run of frames add up to, per frame.
///
/// A layer's *end skew* is the time from its first rank's end to its last rank's: the
/// first waited that long, idle, for the layer's successor. Summed over the layers of a
/// frame, it is the time a rank of a gang of two lost to imbalance (a wider gang loses up
/// to it on each of its ranks but the last).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimelineReport {
    /// Spans recorded (one per rank of each task run).
    pub spans: usize,
    /// Spans not kept: a worker's room was full.
    pub dropped: u64,
    /// Frames the spans cover.
    pub frames: usize,
    /// The ranks' time inside tasks, summed over the ranks, ms per frame.
    pub busy_ms_per_frame: f64,
    /// First rank's start to last rank's, summed over the layers, ms per frame.
    pub start_skew_ms_per_frame: f64,
    /// First rank's end to last rank's, summed over the layers, ms per frame.
    pub end_skew_ms_per_frame: f64,
    /// The layers with the most end skew, most first (at most [`TimelineReport::TOP`]).
    pub most_end_skew: Vec<LayerSkew>,
}

/// One layer's end skew, ms per frame.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayerSkew {
    /// The layer's name.
    pub layer: String,
    /// First rank's end to last rank's, ms per frame.
    pub end_skew_ms: f64,
}

impl TimelineReport {
    /// Layers listed in [`TimelineReport::most_end_skew`].
    pub const TOP: usize = 5;

    /// Sums `spans` of `frames` frames; `name` names a task by its kind and hint.
    pub fn new(spans: &Spans, frames: usize, name: impl Fn(&'static str, u64) -> String) -> Self {
        let per_frame = |secs: f64| secs * 1e3 / frames.max(1) as f64;
        let runs = spans.gang_runs();
        let sum = |f: &dyn Fn(&taopipe_runtime::GangRun) -> f64| runs.iter().map(f).sum::<f64>();
        let mut by_task: HashMap<(&'static str, u64), f64> = HashMap::new();
        for r in &runs {
            *by_task.entry((r.kind, r.hint)).or_default() += r.end_skew.as_secs_f64();
        }
        let mut most: Vec<_> = by_task.into_iter().collect();
        // Most skew first; ties by hint, so that equal runs list in a fixed order.
        most.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.1.cmp(&b.0.1)));
        TimelineReport {
            spans: spans.spans.len(),
            dropped: spans.dropped,
            frames,
            busy_ms_per_frame: per_frame(sum(&|r| r.busy.as_secs_f64())),
            start_skew_ms_per_frame: per_frame(sum(&|r| r.start_skew.as_secs_f64())),
            end_skew_ms_per_frame: per_frame(sum(&|r| r.end_skew.as_secs_f64())),
            most_end_skew: most
                .into_iter()
                .take(Self::TOP)
                .map(|((kind, hint), secs)| LayerSkew {
                    layer: name(kind, hint),
                    end_skew_ms: per_frame(secs),
                })
                .collect(),
        }
    }
}

/// The spans in the Chrome trace event format (`chrome://tracing`, ui.perfetto.dev): one
/// complete event a span, on a row per worker, named by `name` from its kind and hint.
///
/// ```
/// use std::time::Duration;
/// use taopipe_live::report::chrome_trace;
/// use taopipe_runtime::{Span, Spans};
/// let span = Span {
///     kind: "conv", hint: 0, worker: 1, rank: 1, leader: 0, width: 2,
///     start: Duration::from_micros(10), end: Duration::from_micros(25),
/// };
/// let trace = chrome_trace(&Spans { spans: vec![span], dropped: 0 }, |_, i| format!("layer {i}"));
/// let event = &trace["traceEvents"][0];
/// assert_eq!((event["name"].as_str(), event["tid"].as_u64()), (Some("layer 0"), Some(1)));
/// assert_eq!((event["ts"].as_f64(), event["dur"].as_f64()), (Some(10.0), Some(15.0)));
/// ```
pub fn chrome_trace(spans: &Spans, name: impl Fn(&'static str, u64) -> String) -> Value {
    let us = |d: std::time::Duration| d.as_secs_f64() * 1e6;
    let events: Vec<Value> = spans
        .spans
        .iter()
        .map(|s: &Span| {
            json!({
                "name": name(s.kind, s.hint),
                "cat": s.kind,
                "ph": "X",
                "ts": us(s.start),
                "dur": us(s.end - s.start),
                "pid": 0,
                "tid": s.worker,
                "args": { "rank": s.rank, "place": format!("{}+{}", s.leader, s.width) },
            })
        })
        .collect();
    json!({ "traceEvents": events, "displayTimeUnit": "ms", "otherData": { "dropped": spans.dropped } })
}

#[cfg(test)]
mod test {
    use std::time::Duration;

    use super::*;

    fn span(worker: usize, hint: u64, t: (u64, u64)) -> Span {
        Span {
            kind: "conv",
            hint,
            worker,
            rank: worker,
            leader: 0,
            width: 2,
            start: Duration::from_millis(t.0),
            end: Duration::from_millis(t.1),
        }
    }

    #[test]
    fn sums_per_frame_and_lists_the_layers_that_waited_most() {
        // Two frames of two layers on two ranks.
        let spans = Spans {
            spans: vec![
                span(0, 0, (0, 4)),
                span(1, 0, (1, 5)),
                span(0, 1, (5, 6)),
                span(1, 1, (5, 9)),
                span(0, 0, (10, 14)),
                span(1, 0, (10, 12)),
                span(0, 1, (14, 15)),
                span(1, 1, (14, 16)),
            ],
            dropped: 0,
        };
        let r = TimelineReport::new(&spans, 2, |_, i| format!("l{i}"));
        assert_eq!((r.spans, r.frames), (8, 2));
        assert!((r.busy_ms_per_frame - 11.0).abs() < 1e-9, "{r:?}");
        assert!((r.start_skew_ms_per_frame - 0.5).abs() < 1e-9, "{r:?}");
        // Layer 0: 1 + 2 ms, layer 1: 3 + 1 ms, over 2 frames.
        assert!((r.end_skew_ms_per_frame - 3.5).abs() < 1e-9, "{r:?}");
        let most: Vec<_> = r
            .most_end_skew
            .iter()
            .map(|l| (l.layer.as_str(), l.end_skew_ms))
            .collect();
        assert_eq!(most, [("l1", 2.0), ("l0", 1.5)]);
    }

    #[test]
    fn a_chrome_trace_has_an_event_per_span_on_its_workers_row() {
        let spans = Spans {
            spans: vec![span(0, 3, (0, 1)), span(1, 3, (0, 2))],
            dropped: 4,
        };
        let t = chrome_trace(&spans, |kind, i| format!("{kind} {i}"));
        let events = t["traceEvents"].as_array().expect("events");
        assert_eq!(events.len(), 2);
        assert_eq!(events[1]["tid"], 1);
        assert_eq!(events[1]["name"], "conv 3");
        assert_eq!(events[1]["dur"].as_f64(), Some(2000.0));
        assert_eq!(events[1]["args"]["place"], "0+2");
        assert_eq!(t["otherData"]["dropped"], 4);
    }
}
