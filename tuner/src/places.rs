//! The places a platform lets a stage run on, and how the tuner's placements keep to them.
//!
//! A runtime may allow fewer places than every contiguous run of workers: a XiTAO layout
//! file lists, per leader worker, the widths a task led there may have (`0 1` then `1`
//! and `1` allows width 1 only). A stage on any other place is rejected when it runs, so
//! every configuration the tuner makes must use allowed places only.
//!
//! # The rule: the widest allowed place inside a stage's run
//!
//! A placement first gives each stage a contiguous run of workers (the place policies of
//! [`PlacePolicy`](crate::PlacePolicy)); under a restriction each stage then takes the
//! **widest allowed place inside its run**, the lowest leader on ties
//! ([`AllowedPlaces::widest_in`]). Workers of the run outside that place stay idle: a
//! stage is one moldable task per unit on one place, so it cannot use two places at once
//! (the one-stage configuration under a width-1-only layout runs on `0+1`, and the
//! two-stage pipeline `0+1, 1+1` is what uses both workers). Without a restriction the
//! widest place inside a run is the run itself, so nothing changes.

use std::ops::Range;

use crate::config::{ConfigError, Configuration, contiguous_places};

/// The places stages may use (module docs): per leader worker, the allowed widths.
///
/// ```
/// use taopipe_tuner::AllowedPlaces;
///
/// // A XiTAO layout allowing width 1 only, on 2 workers.
/// let places = AllowedPlaces::new(vec![vec![1], vec![1]])?;
/// assert!(places.allows(1, 1) && !places.allows(0, 2));
/// assert_eq!(places.contiguous(1)?, vec![(0, 1)]); // the one-stage place
/// assert_eq!(places.contiguous(2)?, vec![(0, 1), (1, 1)]);
/// assert_eq!(AllowedPlaces::all(2).contiguous(1)?, vec![(0, 2)]);
/// # Ok::<(), taopipe_tuner::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AllowedPlaces {
    workers: usize,
    /// Allowed widths per leader, ascending; `None`: every contiguous run.
    widths: Option<Vec<Vec<usize>>>,
}

impl AllowedPlaces {
    /// Every contiguous run of `workers` workers (no layout).
    pub fn all(workers: usize) -> Self {
        AllowedPlaces {
            workers,
            widths: None,
        }
    }

    /// The places of one width list per leader worker (`widths[l]`: the widths a place led
    /// by worker `l` may have; the workers are `widths.len()`). Widths are sorted and
    /// deduplicated; lists allowing every run make [`AllowedPlaces::all`].
    ///
    /// # Errors
    /// [`ConfigError::LayoutWidth`] for a width of 0 or one that runs past the last worker.
    pub fn new(mut widths: Vec<Vec<usize>>) -> Result<Self, ConfigError> {
        let workers = widths.len();
        for (leader, list) in widths.iter_mut().enumerate() {
            if let Some(&width) = list.iter().find(|&&w| w == 0 || leader + w > workers) {
                return Err(ConfigError::LayoutWidth {
                    leader,
                    width,
                    workers,
                });
            }
            list.sort_unstable();
            list.dedup();
        }
        let every_run = widths
            .iter()
            .enumerate()
            .all(|(leader, list)| list.len() == workers - leader);
        Ok(AllowedPlaces {
            workers,
            widths: (!every_run).then_some(widths),
        })
    }

    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// Whether every contiguous run is allowed.
    pub fn allows_every_run(&self) -> bool {
        self.widths.is_none()
    }

    /// The widths a place led by `leader` may have, ascending (none past the last worker).
    pub fn widths(&self, leader: usize) -> Vec<usize> {
        match &self.widths {
            None => (1..=self.workers.saturating_sub(leader)).collect(),
            Some(widths) => widths.get(leader).cloned().unwrap_or_default(),
        }
    }

    /// Whether the place `leader + width` is allowed.
    pub fn allows(&self, leader: usize, width: usize) -> bool {
        match &self.widths {
            None => {
                width >= 1
                    && leader
                        .checked_add(width)
                        .is_some_and(|end| end <= self.workers)
            }
            Some(widths) => widths
                .get(leader)
                .is_some_and(|list| list.binary_search(&width).is_ok()),
        }
    }

    /// The widest allowed place inside the workers `run`, the lowest leader on ties, as
    /// `(leader, width)`; `None` when the run holds none.
    ///
    /// ```
    /// use taopipe_tuner::AllowedPlaces;
    ///
    /// let places = AllowedPlaces::new(vec![vec![1], vec![1, 2], vec![1]])?;
    /// assert_eq!(places.widest_in(0..3), Some((1, 2)));
    /// assert_eq!(places.widest_in(0..2), Some((0, 1)));
    /// # Ok::<(), taopipe_tuner::ConfigError>(())
    /// ```
    pub fn widest_in(&self, run: Range<usize>) -> Option<(usize, usize)> {
        let run = run.start..run.end.min(self.workers);
        if run.is_empty() {
            return None;
        }
        if self.widths.is_none() {
            return Some((run.start, run.len()));
        }
        let mut best: Option<(usize, usize)> = None;
        for leader in run.clone() {
            let room = run.end - leader;
            let widest = self.widths(leader).into_iter().filter(|&w| w <= room).max();
            if let Some(width) = widest
                && best.is_none_or(|(_, w)| width > w)
            {
                best = Some((leader, width));
            }
        }
        best
    }

    /// The [`contiguous_places`] of `stages` stages, each stage on the widest allowed place
    /// inside its run (module docs). `contiguous(1)` is the one-stage place, where a
    /// "whole net on all workers" configuration runs.
    ///
    /// # Errors
    /// [`ConfigError::TooManyStages`] unless `1 ≤ stages ≤ workers`;
    /// [`ConfigError::NoAllowedPlace`] when a stage's run holds no allowed place.
    pub fn contiguous(&self, stages: usize) -> Result<Vec<(usize, usize)>, ConfigError> {
        contiguous_places(self.workers, stages)?
            .into_iter()
            .enumerate()
            .map(|(stage, (leader, width))| {
                self.widest_in(leader..leader + width)
                    .ok_or(ConfigError::NoAllowedPlace {
                        stage,
                        leader,
                        width,
                    })
            })
            .collect()
    }

    /// Checks that every stage of `config` is on an allowed place of these workers (as
    /// [`Configuration::validate`] does for its units and overlaps).
    ///
    /// # Errors
    /// [`ConfigError::OutsidePlatform`] for a place past the last worker,
    /// [`ConfigError::PlaceNotAllowed`] (naming the widths its leader may use) for one the
    /// restriction forbids.
    pub fn check(&self, config: &Configuration) -> Result<(), ConfigError> {
        config.validate(config.units(), self.workers)?;
        for (stage, (leader, width)) in config.places().into_iter().enumerate() {
            if !self.allows(leader, width) {
                return Err(ConfigError::PlaceNotAllowed {
                    stage,
                    leader,
                    width,
                    allowed: self.widths(leader),
                });
            }
        }
        Ok(())
    }

    /// For each position `pos` and stage count `k ≤ stages`, how many ways the workers
    /// `pos..` split into exactly `k` allowed places in order (saturating): `[k][pos]`.
    pub(crate) fn tilings(&self, stages: usize) -> Vec<Vec<u128>> {
        let n = self.workers;
        let mut ways = vec![vec![0u128; n + 1]; stages + 1];
        ways[0][n] = 1;
        for k in 1..=stages {
            for pos in (0..n).rev() {
                ways[k][pos] = self
                    .widths(pos)
                    .into_iter()
                    .filter(|&w| pos + w <= n)
                    .fold(0u128, |sum, w| sum.saturating_add(ways[k - 1][pos + w]));
            }
        }
        ways
    }

    /// Every split of all workers into `stages` allowed places in order, as `(leader,
    /// width)` per stage, in lexicographic order of the widths.
    pub(crate) fn tilings_of(&self, stages: usize) -> Vec<Vec<(usize, usize)>> {
        let ways = self.tilings(stages);
        let mut out = Vec::new();
        let mut current = Vec::with_capacity(stages);
        self.extend_tilings(&ways, 0, stages, &mut current, &mut out);
        out
    }

    fn extend_tilings(
        &self,
        ways: &[Vec<u128>],
        pos: usize,
        left: usize,
        current: &mut Vec<(usize, usize)>,
        out: &mut Vec<Vec<(usize, usize)>>,
    ) {
        if left == 0 {
            out.push(current.clone());
            return;
        }
        for width in self.widths(pos) {
            if pos + width <= self.workers && ways[left - 1][pos + width] > 0 {
                current.push((pos, width));
                self.extend_tilings(ways, pos + width, left - 1, current, out);
                current.pop();
            }
        }
    }
}

#[cfg(test)]
mod test;
