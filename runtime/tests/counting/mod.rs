//! A global allocator that counts allocations on every thread, for tests that show a path
//! allocates nothing, and the bytes live, for tests that show nothing leaks.
//!
//! `#[global_allocator]` is per binary, so a test file that wants it says `mod counting;`
//! and holds exactly one test: the harness then runs nothing else in that process while
//! the test counts.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static FREES: AtomicU64 = AtomicU64::new(0);
/// Bytes allocated and not yet freed (wrapping: a free may be counted before the matching
/// allocation's add is seen, but the sum is exact once both happened).
static LIVE_BYTES: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The calling thread's own allocations, frees and live bytes: under Miri, libtest's
    /// main thread allocates while a test runs, so a test of the counting itself must not
    /// read the process-wide figures. Const-initialised and without a destructor, so
    /// touching it never allocates.
    static MINE: Cell<(u64, u64, u64)> = const { Cell::new((0, 0, 0)) };
}

/// Adds to the counts, process-wide and this thread's: `allocations` allocating calls,
/// `frees` frees, `bytes` made live and `freed` bytes released.
fn count(allocations: u64, frees: u64, bytes: u64, freed: u64) {
    ALLOCATIONS.fetch_add(allocations, Ordering::Relaxed);
    FREES.fetch_add(frees, Ordering::Relaxed);
    LIVE_BYTES.fetch_add(bytes, Ordering::Relaxed);
    LIVE_BYTES.fetch_sub(freed, Ordering::Relaxed);
    // `try_with`: a thread's last frees may come after its locals are gone.
    let _ = MINE.try_with(|m| {
        let (a, f, live) = m.get();
        m.set((
            a + allocations,
            f + frees,
            live.wrapping_add(bytes).wrapping_sub(freed),
        ));
    });
}

/// The bytes a call that returned `ptr` for `size` bytes left live (none if it failed).
fn live_if(ptr: *mut u8, size: usize) -> u64 {
    if ptr.is_null() { 0 } else { size as u64 }
}

/// The system allocator, counting allocations and reallocations (which may move), frees,
/// and the bytes they leave live.
struct Counting;

// SAFETY: every method forwards its arguments unchanged to `System`, so `System`'s
// guarantees are this allocator's; counting is atomic adds and a const thread local,
// which do not allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which is `System`'s.
        let ptr = unsafe { System.alloc(layout) };
        count(1, 0, live_if(ptr, layout.size()), 0);
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        count(1, 0, live_if(ptr, layout.size()), 0);
        ptr
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator, hence from `System`, with `layout`.
        let moved = unsafe { System.realloc(ptr, layout, new_size) };
        // On failure the old block stays live, unchanged.
        let freed = live_if(moved, layout.size());
        count(1, 0, live_if(moved, new_size), freed);
        moved
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(0, 1, 0, layout.size() as u64);
        // SAFETY: `ptr` came from this allocator, hence from `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Bytes allocated and not freed yet, on all threads.
#[allow(dead_code)] // only the leak test reads it
pub(crate) fn live_bytes() -> u64 {
    LIVE_BYTES.load(Ordering::SeqCst)
}

/// Bytes the calling thread allocated and has not freed itself (wrapping: a block another
/// thread frees counts there).
#[allow(dead_code)] // only the counting test reads it
pub(crate) fn my_live_bytes() -> u64 {
    MINE.with(|m| m.get().2)
}

/// Allocations and frees so far, on all threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Count {
    pub(crate) allocations: u64,
    pub(crate) frees: u64,
}

impl Count {
    pub(crate) fn now() -> Count {
        Count {
            allocations: ALLOCATIONS.load(Ordering::SeqCst),
            frees: FREES.load(Ordering::SeqCst),
        }
    }

    /// The calling thread's own allocations and frees so far.
    #[allow(dead_code)] // only the counting test reads it
    pub(crate) fn mine() -> Count {
        let (allocations, frees, _) = MINE.with(Cell::get);
        Count { allocations, frees }
    }

    /// What happened since `self`.
    #[allow(dead_code)] // a test binary that compares counts it took uses `after` alone
    pub(crate) fn since(self) -> Count {
        Count::now().after(self)
    }

    /// What happened between `earlier` and `self`.
    pub(crate) fn after(self, earlier: Count) -> Count {
        Count {
            allocations: self.allocations - earlier.allocations,
            frees: self.frees - earlier.frees,
        }
    }
}
