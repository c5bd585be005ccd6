//! The counting allocator that the allocation and leak tests trust: each of its methods
//! forwards to the system allocator and counts what it did. Runs under Miri too
//! (`cargo +nightly miri test -p taopipe-runtime --test counting_alloc`), which checks
//! the forwarding of every `unsafe` method. It reads this thread's own counts, kept beside
//! the process-wide ones by the same calls: under Miri (nightly of 2026-10) libtest's main
//! thread allocates while the test runs, and the process-wide live bytes were 144 off.

mod counting;

use std::hint::black_box;

use counting::Count;

/// Allocates, grows, shrinks, allocates zeroed and frees, checking the live bytes at each
/// step against what the vectors hold; returns what was counted meanwhile.
fn exercise() -> Count {
    let live = counting::my_live_bytes();
    let before = Count::mine();
    let mut v: Vec<u64> = Vec::with_capacity(4); // alloc
    v.extend([1, 2, 3, 4]);
    v.reserve_exact(60); // realloc, growing
    v.extend(5..=64);
    assert_eq!(counting::my_live_bytes().wrapping_sub(live), 64 * 8);
    v.truncate(2);
    v.shrink_to_fit(); // realloc, shrinking
    assert_eq!(counting::my_live_bytes().wrapping_sub(live), 2 * 8);
    assert_eq!(black_box(&v)[..], [1, 2]);
    let zeros = vec![0u32; 300]; // alloc_zeroed
    assert!(black_box(&zeros).iter().all(|&z| z == 0));
    assert_eq!(
        counting::my_live_bytes().wrapping_sub(live),
        2 * 8 + 300 * 4
    );
    drop((v, zeros)); // dealloc
    assert_eq!(counting::my_live_bytes(), live, "everything freed");
    Count::mine().after(before)
}

#[test]
fn every_method_forwards_and_counts() {
    exercise(); // the first pass may meet lazily initialised runtime state
    let before = Count::now();
    let seen = exercise();
    assert_eq!((seen.allocations, seen.frees), (4, 2), "{seen:?}");
    // The process-wide counts, which the allocation tests read, saw them too.
    let all = Count::now().after(before);
    assert!(all.allocations >= 4 && all.frees >= 2, "{all:?}");
}
