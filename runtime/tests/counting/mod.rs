//! A global allocator that counts allocations on every thread, for tests that show a path
//! allocates nothing, and the bytes live, for tests that show nothing leaks.
//!
//! `#[global_allocator]` is per binary, so a test file that wants it says `mod counting;`
//! and holds exactly one test: the harness then runs nothing else in that process while
//! the test counts.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static FREES: AtomicU64 = AtomicU64::new(0);
/// Bytes allocated and not yet freed (wrapping: a free may be counted before the matching
/// allocation's add is seen, but the sum is exact once both happened).
static LIVE_BYTES: AtomicU64 = AtomicU64::new(0);

/// The system allocator, counting allocations and reallocations (which may move), frees,
/// and the bytes they leave live.
struct Counting;

// SAFETY: every method forwards its arguments unchanged to `System`, so `System`'s
// guarantees are this allocator's; counting is an atomic add, which does not allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which is `System`'s.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            LIVE_BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as in `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            LIVE_BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: `ptr` came from this allocator, hence from `System`, with `layout`.
        let moved = unsafe { System.realloc(ptr, layout, new_size) };
        if !moved.is_null() {
            // On failure the old block stays live, unchanged.
            LIVE_BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
            LIVE_BYTES.fetch_sub(layout.size() as u64, Ordering::Relaxed);
        }
        moved
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        FREES.fetch_add(1, Ordering::Relaxed);
        LIVE_BYTES.fetch_sub(layout.size() as u64, Ordering::Relaxed);
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
