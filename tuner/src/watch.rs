//! Watching a configuration while it serves: notice when the cores change.
//!
//! # The rule (a decision: the paper tunes once)
//! Every frame served gives each stage's service time. The [`Watch`] keeps the last
//! [`WatchOptions::window`] frames and compares each stage's **median** over them with a
//! reference:
//! - the first frame a configuration serves is not watched (cold caches, queues filling);
//! - the reference is the median of the first full window after it (a re-tune's trial
//!   times can differ a little from steady serving);
//! - if the configuration came with expected times (its trial), that first window is
//!   checked against them first, with twice the threshold (a trial's few frames and steady
//!   serving differ by more than noise): conditions that changed *during* the search are
//!   caught at once;
//! - a change is reported when some stage's median leaves
//!   `[reference / (1 + threshold), reference × (1 + threshold)]`. That covers the
//!   bottleneck moving (a stage becoming slower than the old bottleneck by more than the
//!   threshold shifted by more than the threshold) and the slowest stage's time shifting,
//!   either way (a core that speeds up again is worth a re-tune too).
//!
//! A median over an odd `window` of frames moves only when more than half of them moved, so
//! a change must last at least `window / 2 + 1` frames to count (with an even window, half
//! of them move it halfway), and noise whose spread stays inside the threshold never
//! counts. Defaults: 9 frames (a change counts after 5), 25%: the 2-core VM this was
//! developed on drifts by 15–30% between runs of the same configuration with nothing
//! changed, while a core at half speed moves its stage by +100%.

use std::collections::VecDeque;

use serde::Serialize;

use crate::{StageTimes, median};

/// The watch's settings (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct WatchOptions {
    /// Frames in the window.
    pub window: usize,
    /// Relative shift of a stage's median that counts as a change.
    pub threshold: f64,
}

impl Default for WatchOptions {
    /// 9 frames, 25%.
    fn default() -> Self {
        WatchOptions {
            window: 9,
            threshold: 0.25,
        }
    }
}

/// A sustained change of a stage's service time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// The stage that moved the most.
    pub stage: usize,
    /// What it was expected to take (reference or trial), ms.
    pub was_ms: f64,
    /// Its median over the window now, ms.
    pub now_ms: f64,
    /// The window's medians of every stage, ms.
    pub window_ms: Vec<f64>,
    /// What every stage was expected to take (reference or trial), ms.
    pub reference_ms: Vec<f64>,
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "stage {} went from {:.1} to {:.1} ms ({:+.0}%)",
            self.stage,
            self.was_ms,
            self.now_ms,
            (self.now_ms / self.was_ms - 1.0) * 100.0
        )
    }
}

/// Tracks a serving configuration's stage times (module docs).
///
/// ```
/// use taopipe_tuner::{Watch, WatchOptions};
///
/// let mut watch = Watch::new(WatchOptions::default(), None);
/// assert_eq!(watch.observe(&[50.0, 8.0]), None); // a cold first frame is not watched
/// for i in 0..20 {
///     let noise = if i % 2 == 0 { 1.04 } else { 0.96 }; // ±4%: never a change
///     assert_eq!(watch.observe(&[10.0 * noise, 8.0]), None);
/// }
/// let change = (0..9).find_map(|_| watch.observe(&[20.0, 8.0])); // stage 0 halves its speed
/// assert_eq!(change.map(|c| c.stage), Some(0));
/// ```
#[derive(Debug, Clone)]
pub struct Watch {
    options: WatchOptions,
    expected: Option<Vec<f64>>,
    reference: Option<Vec<f64>>,
    recent: VecDeque<Vec<f64>>,
    warm: bool,
}

impl Watch {
    /// A watch for a configuration that starts serving now, expected to take `expected`
    /// (its trial's times), if known.
    pub fn new(options: WatchOptions, expected: Option<&StageTimes>) -> Self {
        Watch {
            options: WatchOptions {
                window: options.window.max(1),
                ..options
            },
            expected: expected.map(|t| t.stage_ms.clone()),
            reference: None,
            recent: VecDeque::new(),
            warm: false,
        }
    }

    /// The settings.
    pub fn options(&self) -> WatchOptions {
        self.options
    }

    /// Takes one frame's stage times; a change when the rule says so (module docs). After
    /// a change the watch starts over (a fresh window, no reference) until a new watch
    /// replaces it.
    pub fn observe(&mut self, stage_ms: &[f64]) -> Option<Change> {
        if !std::mem::replace(&mut self.warm, true) {
            return None; // the first frame (module docs)
        }
        self.recent.push_back(stage_ms.to_vec());
        if self.recent.len() > self.options.window {
            self.recent.pop_front();
        }
        let now = self.window_times()?.stage_ms;
        let was = match (&self.reference, &self.expected) {
            (Some(reference), _) => reference.clone(),
            (None, Some(expected)) => expected.clone(),
            (None, None) => {
                self.reference = Some(now);
                return None;
            }
        };
        let band = if self.reference.is_some() { 1.0 } else { 2.0 };
        let change = self.compare(&was, &now, band * self.options.threshold);
        if change.is_some() {
            self.recent.clear();
            self.reference = None;
            self.expected = None;
        } else if self.reference.is_none() {
            self.reference = Some(now);
        }
        change
    }

    /// Each stage's median over the window; `None` until the window is full.
    pub fn window_times(&self) -> Option<StageTimes> {
        if self.recent.len() < self.options.window {
            return None;
        }
        let stages = self.recent.iter().map(Vec::len).min().unwrap_or(0);
        Some(StageTimes::new(
            (0..stages)
                .map(|s| {
                    let column: Vec<f64> = self.recent.iter().map(|f| f[s]).collect();
                    median(&column).unwrap_or(0.0)
                })
                .collect(),
        ))
    }

    /// The reference medians, once the first window is in.
    pub fn reference(&self) -> Option<&[f64]> {
        self.reference.as_deref()
    }

    fn compare(&self, was: &[f64], now: &[f64], threshold: f64) -> Option<Change> {
        let band = 1.0 + threshold;
        let (stage, shift) = was
            .iter()
            .zip(now)
            .enumerate()
            .filter(|(_, (w, _))| **w > 0.0)
            .map(|(s, (w, n))| (s, (n / w).max(w / n)))
            .max_by(|a, b| a.1.total_cmp(&b.1))?;
        (shift > band).then(|| Change {
            stage,
            was_ms: was[stage],
            now_ms: now[stage],
            window_ms: now.to_vec(),
            reference_ms: was.to_vec(),
        })
    }
}

#[cfg(test)]
mod test;
