//! A global allocator that counts allocations on every thread, for tests that show a path
//! allocates nothing.
//!
//! `#[global_allocator]` is per binary, so a test file that wants it says `mod counting;`
//! and holds exactly one test: the harness then runs nothing else in that process while
//! the test counts.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static FREES: AtomicU64 = AtomicU64::new(0);

/// The system allocator, counting allocations and reallocations (which may move) and
/// frees.
struct Counting;

// SAFETY: every method forwards its arguments unchanged to `System`, so `System`'s
// guarantees are this allocator's; counting is an atomic add, which does not allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which is `System`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as in `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: `ptr` came from this allocator, hence from `System`, with `layout`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        FREES.fetch_add(1, Ordering::Relaxed);
        // SAFETY: `ptr` came from this allocator, hence from `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

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
