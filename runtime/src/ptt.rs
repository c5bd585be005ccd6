//! The performance trace table (PTT): what each task type took at each place.
//!
//! XiTAO keeps, per task type, a running estimate of the task's time at every (leader,
//! width) and uses it to place tasks that leave their place to the runtime. We keep the same
//! table per task type *and* workload hint, and follow XiTAO's rules to choose:
//!
//! 1. a place never measured comes first (the nearest one to the dispatching worker), so
//!    every place gets a first sample;
//! 2. with probability [`PlacePolicy::explore`], a random place, so the table notices when
//!    a place got faster (a governor change, a neighbour that left);
//! 3. otherwise the place with the least `width × time` ([`Objective::WidthTime`], XiTAO's
//!    default: the cheapest in core-seconds) or the least `time` ([`Objective::Time`]).
//!
//! Estimates are exponential moving averages with weight [`EMA_WEIGHT`] on the newest
//! sample: heavy enough to react within a handful of runs, light enough to ride out noise.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_utils::CachePadded;
use parking_lot::RwLock;
use rand::Rng;

use crate::place::Place;

/// Weight of the newest sample in a place's moving average.
pub const EMA_WEIGHT: f64 = 0.25;

/// What the runtime minimises when it chooses a place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Objective {
    /// Least `width × time`: the cheapest place in core-seconds (XiTAO's default).
    WidthTime,
    /// Least time, whatever the width.
    Time,
}

/// How tasks with [`Placement::Auto`](crate::Placement::Auto) are placed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlacePolicy {
    /// What to minimise.
    pub objective: Objective,
    /// Probability of trying a random place instead of the best known one.
    pub explore: f64,
}

impl Default for PlacePolicy {
    fn default() -> PlacePolicy {
        PlacePolicy {
            objective: Objective::WidthTime,
            explore: 1.0 / 32.0,
        }
    }
}

type Key = (&'static str, u64);

/// One place's estimate, alone on its cache line: each worker mostly updates the places
/// it leads, so padding keeps workers from invalidating each other's lines.
#[derive(Default)]
struct Slot {
    /// Moving average in seconds, as f64 bits; 0 = never measured.
    ema: AtomicU64,
    samples: AtomicU64,
}

/// The estimates of one (task type, hint) at every place. Submission resolves each task's
/// row once, so recording a time is one compare-and-swap, without hashing.
pub(crate) struct Row {
    slots: Box<[CachePadded<Slot>]>,
}

impl Row {
    fn ema(&self, i: usize) -> f64 {
        f64::from_bits(self.slots[i].ema.load(Ordering::Relaxed))
    }
}

/// The live table, shared by the workers.
pub(crate) struct TraceTable {
    places: Box<[Place]>,
    /// `index[leader * workers + width - 1]`: the place's slot, `u32::MAX` if not allowed.
    index: Box<[u32]>,
    workers: usize,
    rows: RwLock<HashMap<Key, Arc<Row>>>,
}

impl TraceTable {
    pub(crate) fn new(places: Vec<Place>, workers: usize) -> TraceTable {
        let mut index = vec![u32::MAX; workers * workers];
        for (i, p) in places.iter().enumerate() {
            if p.leader() < workers && p.width() <= workers {
                index[p.leader() * workers + p.width() - 1] = i as u32;
            }
        }
        TraceTable {
            places: places.into(),
            index: index.into(),
            workers,
            rows: RwLock::new(HashMap::new()),
        }
    }

    fn slot_of(&self, place: Place) -> Option<usize> {
        if place.leader() >= self.workers || place.width() > self.workers {
            return None;
        }
        let i = self.index[place.leader() * self.workers + place.width() - 1];
        (i != u32::MAX).then_some(i as usize)
    }

    /// The row of a task type and hint, created on first use.
    pub(crate) fn row(&self, kind: &'static str, hint: u64) -> Arc<Row> {
        if let Some(row) = self.rows.read().get(&(kind, hint)) {
            return row.clone();
        }
        let slots = (0..self.places.len())
            .map(|_| CachePadded::new(Slot::default()))
            .collect();
        self.rows
            .write()
            .entry((kind, hint))
            .or_insert_with(|| Arc::new(Row { slots }))
            .clone()
    }

    /// Folds one measured time into the place's average. Places outside the layout (none
    /// reach here: submission rejects them) are ignored.
    pub(crate) fn record(&self, row: &Row, place: Place, seconds: f64) {
        let Some(i) = self.slot_of(place) else { return };
        let slot = &row.slots[i];
        let mut old = slot.ema.load(Ordering::Relaxed);
        loop {
            let new = if old == 0 {
                seconds.max(f64::MIN_POSITIVE)
            } else {
                let prev = f64::from_bits(old);
                prev + EMA_WEIGHT * (seconds - prev)
            };
            match slot.ema.compare_exchange_weak(
                old,
                new.to_bits(),
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(seen) => old = seen,
            }
        }
        slot.samples.fetch_add(1, Ordering::Relaxed);
    }

    /// Chooses a place for a task of this row by the rules in the module docs.
    pub(crate) fn choose(
        &self,
        row: &Row,
        near: usize,
        policy: PlacePolicy,
        rng: &mut impl Rng,
    ) -> Place {
        let n = self.places.len();
        let unmeasured = (0..n)
            .filter(|&i| row.slots[i].ema.load(Ordering::Relaxed) == 0)
            .min_by_key(|&i| {
                (
                    self.places[i].leader().abs_diff(near),
                    self.places[i].width(),
                )
            });
        if let Some(i) = unmeasured {
            return self.places[i];
        }
        if policy.explore > 0.0 && rng.random_bool(policy.explore.min(1.0)) {
            return self.places[rng.random_range(0..n)];
        }
        let cost = |i: usize| match policy.objective {
            Objective::WidthTime => row.ema(i) * self.places[i].width() as f64,
            Objective::Time => row.ema(i),
        };
        let best = (0..n)
            .min_by(|&a, &b| cost(a).total_cmp(&cost(b)))
            .unwrap_or(0);
        self.places[best]
    }

    /// A copy of the table for reports.
    pub(crate) fn snapshot(&self) -> TraceSnapshot {
        let rows = self.rows.read();
        let mut out: Vec<TraceRow> = rows
            .iter()
            .map(|(&(kind, hint), row)| TraceRow {
                kind,
                hint,
                entries: (0..self.places.len())
                    .filter(|&i| row.slots[i].samples.load(Ordering::Relaxed) > 0)
                    .map(|i| TraceEntry {
                        place: self.places[i],
                        seconds: row.ema(i),
                        samples: row.slots[i].samples.load(Ordering::Relaxed),
                    })
                    .collect(),
            })
            .filter(|r| !r.entries.is_empty())
            .collect();
        out.sort_by_key(|r| (r.kind, r.hint));
        TraceSnapshot { rows: out }
    }

    /// Forgets every measurement. Rows stay (graphs in flight hold them), their slots reset.
    pub(crate) fn clear(&self) {
        for row in self.rows.read().values() {
            for slot in row.slots.iter() {
                slot.ema.store(0, Ordering::Relaxed);
                slot.samples.store(0, Ordering::Relaxed);
            }
        }
    }
}

/// The trace table at one moment: one row per (task type, hint).
#[derive(Debug, Clone, PartialEq)]
pub struct TraceSnapshot {
    /// Rows sorted by task type, then hint.
    pub rows: Vec<TraceRow>,
}

/// Measured places of one task type and hint.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceRow {
    /// Task type.
    pub kind: &'static str,
    /// Workload hint.
    pub hint: u64,
    /// Places measured at least once, by (leader, width).
    pub entries: Vec<TraceEntry>,
}

/// A place's moving-average time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceEntry {
    /// The place.
    pub place: Place,
    /// Moving average of the task's time there, in seconds.
    pub seconds: f64,
    /// How many runs it has seen.
    pub samples: u64,
}

impl TraceSnapshot {
    /// The row of a task type and hint, if it has run.
    pub fn row(&self, kind: &str, hint: u64) -> Option<&TraceRow> {
        self.rows.iter().find(|r| r.kind == kind && r.hint == hint)
    }

    /// Runs per place since `before`, an earlier snapshot of the same runtime's table,
    /// summed over every task type and hint: where the runtime put the tasks it placed in
    /// between (a place that ran none is left out). Counts come from each entry's
    /// `samples`, so a table cleared in between (a change of emulation clears it) counts
    /// only the runs since the clear, and a place whose count did not grow counts none.
    pub fn runs_since(&self, before: &TraceSnapshot) -> BTreeMap<Place, u64> {
        let mut runs = BTreeMap::new();
        for row in &self.rows {
            let earlier = before.row(row.kind, row.hint);
            for e in &row.entries {
                let old = earlier
                    .and_then(|r| r.entry(e.place))
                    .map_or(0, |o| o.samples);
                if e.samples > old {
                    *runs.entry(e.place).or_insert(0) += e.samples - old;
                }
            }
        }
        runs
    }
}

impl TraceRow {
    /// The measured entry of a place.
    pub fn entry(&self, place: Place) -> Option<&TraceEntry> {
        self.entries.iter().find(|e| e.place == place)
    }
}

impl fmt::Display for TraceSnapshot {
    /// One block per task type: each measured place with its average time and samples.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for row in &self.rows {
            writeln!(f, "{} (hint {})", row.kind, row.hint)?;
            writeln!(
                f,
                "  {:>8} {:>12} {:>14} {:>8}",
                "place", "time ms", "width x ms", "samples"
            )?;
            for e in &row.entries {
                let ms = e.seconds * 1e3;
                writeln!(
                    f,
                    "  {:>8} {:>12.3} {:>14.3} {:>8}",
                    e.place.to_string(),
                    ms,
                    ms * e.place.width() as f64,
                    e.samples
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod test;
