//! Places: where a moldable task runs.

use std::fmt;
use std::ops::Range;

/// A contiguous run of workers, `leader .. leader + width`, that runs one moldable task
/// together. XiTAO calls this an elastic place; the leader is the first worker of the run.
///
/// # Examples
/// ```
/// use taopipe_runtime::Place;
/// let p = Place::new(2, 3);
/// assert_eq!(p.workers(), 2..5);
/// assert!(p.contains(4) && !p.contains(5));
/// assert_eq!(p.to_string(), "2+3");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Place {
    leader: usize,
    width: usize,
}

impl Place {
    /// A place led by worker `leader` spanning `width` workers.
    ///
    /// Width 0 is clamped to 1: a place always has at least its leader. Whether the place
    /// fits a runtime is checked when a task is submitted.
    pub const fn new(leader: usize, width: usize) -> Place {
        let width = if width == 0 { 1 } else { width };
        Place { leader, width }
    }

    /// The first worker of the place.
    pub const fn leader(self) -> usize {
        self.leader
    }

    /// How many workers run a task placed here.
    pub const fn width(self) -> usize {
        self.width
    }

    /// The worker indices of this place.
    pub const fn workers(self) -> Range<usize> {
        self.leader..self.leader + self.width
    }

    /// Whether `worker` belongs to this place.
    pub const fn contains(self, worker: usize) -> bool {
        worker >= self.leader && worker < self.leader + self.width
    }

    /// Whether two places share a worker.
    pub const fn overlaps(self, other: Place) -> bool {
        self.leader < other.leader + other.width && other.leader < self.leader + self.width
    }
}

impl fmt::Display for Place {
    /// `leader+width`, the notation the trace table and reports use.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}+{}", self.leader, self.width)
    }
}
