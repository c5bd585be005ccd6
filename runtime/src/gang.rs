//! Gangs: one dispatched instance of a moldable task, run by every worker of its place.
//!
//! A gang's bookkeeping — ranks still running, the slowest rank's time, the barrier — lives
//! in its graph, one [`GangSlot`] per task, instead of in an allocation per dispatch: a task
//! is dispatched once per run, so its slot is free to re-arm when the task is dispatched
//! again (the next run of a prepared graph), and a steady stream of runs allocates nothing.
//! A slot is a few atomics (40 bytes), so graphs of a million tasks stay affordable. The
//! assembly queues hold [`GangRef`]s: which graph, which task, which place.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use crossbeam_utils::Backoff;

use crate::graph::GraphState;
use crate::place::Place;

/// One gang queued on every worker of `place`: each of them runs `node` of `graph`.
pub(crate) struct GangRef {
    pub(crate) graph: Arc<GraphState>,
    pub(crate) node: usize,
    pub(crate) place: Place,
}

/// The shared state of a task's gang, re-armed each time the task is dispatched.
#[derive(Default)]
pub(crate) struct GangSlot {
    /// Ranks that have not finished yet; the rank that brings it to zero completes the task.
    remaining: AtomicU32,
    /// The slowest rank's time, emulated stall included: the task's time at its place.
    slowest_ns: AtomicU64,
    pub(crate) sync: GangSync,
}

// Every task of every graph has a slot: keep it to a few atomics.
const _: () = assert!(std::mem::size_of::<GangSlot>() <= 40);

impl GangSlot {
    /// Arms the slot for a gang of `width` ranks. The dispatcher calls it before queuing
    /// the gang; the assembly queues' locks publish it to the ranks. Nothing else touches
    /// the slot in between: the previous gang of this task (an earlier run) finished before
    /// its run ended, and a task is dispatched once per run.
    pub(crate) fn arm(&self, width: usize) {
        self.remaining.store(width as u32, Ordering::Relaxed);
        self.slowest_ns.store(0, Ordering::Relaxed);
        self.sync.reset();
    }

    /// Whether ranks of the gang (or of a later dispatch of the task) still run: what a
    /// rank that left it waits on before it parks (the registry's `GANG_LINGER`).
    pub(crate) fn running(&self) -> bool {
        self.remaining.load(Ordering::Relaxed) > 0
    }

    /// A rank finished after `took`. Returns the gang's time (its slowest rank) to the last
    /// rank, `None` to the others. A rank touches the slot no more after this.
    pub(crate) fn rank_done(&self, took: Duration) -> Option<Duration> {
        self.slowest_ns
            .fetch_max(took.as_nanos() as u64, Ordering::AcqRel);
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            Some(Duration::from_nanos(
                self.slowest_ns.load(Ordering::Acquire),
            ))
        } else {
            None
        }
    }
}

/// What the ranks of one gang synchronise with: a reusable sense-reversing barrier, and a
/// shared list of work items that ranks claim as they get free ([`GangSync::share`]). Both
/// spin, then yield: gang members run at the same time by construction, so waits are
/// short. The width comes from the caller (the gang's place), so one value serves whatever
/// place the task gets.
#[derive(Default)]
pub(crate) struct GangSync {
    arrived: AtomicU32,
    generation: AtomicU32,
    /// The current phase's claims, both ends packed in one word ([`Claims`]).
    claims: AtomicU64,
    /// Items of the shared list finished so far.
    finished: AtomicU32,
    broken: AtomicBool,
}

impl GangSync {
    /// Waits until `width` ranks arrived.
    pub(crate) fn wait(&self, width: usize) {
        if width <= 1 {
            return;
        }
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) as usize + 1 == width {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
            return;
        }
        self.spin_until(|| self.generation.load(Ordering::Acquire) != generation);
    }

    /// Runs items of `phases` consecutive phases, phase `p` holding `len(p)` items, as
    /// `run(p, item)`. Every one of the `width` ranks of the gang calls it with the same
    /// phases; each item runs exactly once, on whichever rank claims it first, and no item
    /// of a phase starts before every item of the phases before it has finished. A gang of
    /// one runs them in order and touches no counter, as [`GangSync::wait`] does.
    ///
    /// Items are claimed one at a time, so a rank that is late (descheduled, or on a slower
    /// core) takes fewer items instead of holding the others back. In a pair's share of one
    /// phase rank 0 claims from the front, rank 1 from the back ([`Claims`]): each rank
    /// then takes the same end of every layer, so a layer split by pixels reads mostly
    /// what the same core wrote a layer before. That pays where two cores share no
    /// L3: on a 2-core VM whose two cores sat on different L3s for seconds to minutes (a
    /// core-to-core round trip of 330–380 ns instead of 55–80), ResNet50 at width 2 went
    /// from 50.2 to 45.7 ms a frame in those minutes and AlexNet from 13.6 to 12.2; with
    /// the L3 shared, from 38.9 to 38.6 and 12.9 to 12.7, VGG16 level (medians of rounds
    /// taking turns, tagged by a round trip timed before and after; `docs/kernel-log.md`).
    ///
    /// Phase order follows from one count of finished items: an item of a phase starting at
    /// index `s` (items numbered across phases in order) waits until `s` items have
    /// finished, and as no item of a later phase can be claimed before its phase opens,
    /// those are exactly the items before `s`.
    pub(crate) fn share(
        &self,
        rank: usize,
        width: usize,
        phases: usize,
        len: impl Fn(usize) -> usize,
        mut run: impl FnMut(usize, usize),
    ) {
        if width <= 1 {
            for phase in 0..phases {
                (0..len(phase)).for_each(|item| run(phase, item));
            }
            return;
        }
        assert!(
            phases <= Claims::MAX_PHASES,
            "{phases} phases are more than a gang shares ({})",
            Claims::MAX_PHASES
        );
        // Both ends for a pair's share of one phase only: a phase of several mixes large
        // items with small ones placed last to even out its end, and a claim from the back
        // would take those first (VGG16 at width 2 ran 2% slower so); in a wider gang the
        // ranks on one end still interleave, and VGG16 at width 16 measured 0–5% slower.
        let front = phases > 1 || width != 2 || rank == 0;
        let checked_len = |phase: usize| {
            let n = len(phase);
            assert!(
                n <= Claims::MAX_ITEMS,
                "{n} items are more than a phase holds"
            );
            n
        };
        // This rank's view: the phase it is in, where that phase starts, and its length.
        let (mut phase, mut start) = (0, 0);
        let Some(mut n) = (phases > 0).then(|| checked_len(0)) else {
            return;
        };
        let mut ready = 0;
        loop {
            let claim = Claims(self.claims.fetch_add(Claims::one(front), Ordering::Relaxed));
            // The claim counts in the phase the word was in, which may be later than ours.
            while phase < claim.phase() {
                (phase, start) = (phase + 1, start + n);
                n = checked_len(phase);
            }
            let Some(item) = claim.item(front, n) else {
                // The phase is handed out: open the next one (one rank does), or end.
                if phase + 1 == phases {
                    return;
                }
                self.open_phase(phase + 1, n);
                continue;
            };
            if ready < start {
                self.spin_until(|| self.finished.load(Ordering::Acquire) as usize >= start);
                ready = start;
            }
            run(phase, item);
            self.finished.fetch_add(1, Ordering::Release);
        }
    }

    /// Moves the claims word from phase `next − 1`, all of whose `n` items are handed out,
    /// to `next` with none claimed, unless another rank already did.
    fn open_phase(&self, next: usize, n: usize) {
        let mut word = self.claims.load(Ordering::Relaxed);
        // Ranks that find the phase handed out still add to the word: retry until it moves.
        while Claims(word).phase() < next {
            debug_assert!(Claims(word).handed_out(n));
            match self.claims.compare_exchange_weak(
                word,
                Claims::opening(next),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(now) => word = now,
            }
        }
    }

    /// Spins, then yields, until `done()`; panics if another rank broke the gang.
    fn spin_until(&self, done: impl Fn() -> bool) {
        let backoff = Backoff::new();
        while !done() {
            if self.broken.load(Ordering::Acquire) {
                panic!("a gang was abandoned: another rank of this task panicked");
            }
            if backoff.is_completed() {
                std::thread::yield_now();
            } else {
                backoff.snooze();
            }
        }
    }

    /// Called when a rank panicked: ranks waiting now, or later, give up instead of hanging.
    pub(crate) fn abandon(&self) {
        self.broken.store(true, Ordering::Release);
    }

    /// Forgets arrivals, items and a break of an earlier gang (one that failed midway).
    fn reset(&self) {
        self.arrived.store(0, Ordering::Relaxed);
        self.claims.store(Claims::opening(0), Ordering::Relaxed);
        self.finished.store(0, Ordering::Relaxed);
        self.broken.store(false, Ordering::Relaxed);
    }
}

/// One word of a phase's claims: `[phase: 16 | from the back: 24 | from the front: 24]`.
/// A claim adds one to its end's count and takes the item that count named, while the
/// two counts together stay under the phase's length: the front takes items `0, 1, …`,
/// the back `n − 1, n − 2, …`, and no item is taken twice. A claim past that finds the
/// phase handed out; its count stays too high until the next phase opens, which starts
/// both counts again at zero.
#[derive(Clone, Copy, Debug)]
struct Claims(u64);

impl Claims {
    const BITS: u32 = 24;
    const MASK: u64 = (1 << Self::BITS) - 1;
    /// Most phases a gang shares out at once.
    const MAX_PHASES: usize = 1 << 16;
    /// Most items of a phase: room for every rank to overshoot the count once.
    const MAX_ITEMS: usize = 1 << (Self::BITS - 1);

    /// What one claim from the front (or the back) adds to the word.
    fn one(front: bool) -> u64 {
        if front { 1 } else { 1 << Self::BITS }
    }

    /// Phase `phase`, nothing claimed.
    fn opening(phase: usize) -> u64 {
        (phase as u64) << (2 * Self::BITS)
    }

    fn phase(self) -> usize {
        (self.0 >> (2 * Self::BITS)) as usize
    }

    /// Items claimed from the front and from the back.
    fn counts(self) -> (usize, usize) {
        (
            (self.0 & Self::MASK) as usize,
            ((self.0 >> Self::BITS) & Self::MASK) as usize,
        )
    }

    fn handed_out(self, n: usize) -> bool {
        let (front, back) = self.counts();
        front + back >= n
    }

    /// The item of an `n`-item phase that the claim which returned this word (the word as
    /// it was before the claim) took from the front (or back), or `None`: handed out.
    fn item(self, front: bool, n: usize) -> Option<usize> {
        let (f, b) = self.counts();
        (!self.handed_out(n)).then(|| if front { f } else { n - 1 - b })
    }
}

#[cfg(test)]
mod tests {
    use super::Claims;

    /// Claims from both ends of a 5-item phase, as a word would see them in turn.
    #[test]
    fn claims_meet_in_the_middle_and_never_repeat() {
        let mut word = Claims::opening(3);
        let mut taken = Vec::new();
        for front in [true, false, true, true, false, false, true] {
            let claim = Claims(word);
            word += Claims::one(front);
            assert_eq!(Claims(word).phase(), 3);
            if let Some(item) = claim.item(front, 5) {
                taken.push(item);
            }
        }
        // Front 0, back 4, front 1 and 2, back 3: then the phase is handed out.
        assert_eq!(taken, [0, 4, 1, 2, 3]);
        assert!(Claims(word).handed_out(5));
        let next = Claims(Claims::opening(4));
        assert_eq!((next.phase(), next.counts()), (4, (0, 0)));
        assert_eq!(next.item(false, 2), Some(1));
        // An empty phase is handed out from the start.
        assert_eq!(next.item(true, 0), None);
    }
}
