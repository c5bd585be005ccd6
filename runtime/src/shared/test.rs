//! Runs under Miri too: `cargo +nightly miri test -p taopipe-runtime shared`.

use std::sync::Arc;

use super::*;

#[test]
fn disjoint_writes_coexist_and_land_in_place() {
    let buf = SharedSlice::new(vec![0u8; 8]);
    let mut a = buf.write(0..3).expect("first");
    let mut b = buf.write(3..8).expect("disjoint");
    a.copy_from_slice(&[1, 2, 3]);
    b.fill(9);
    drop((a, b));
    assert_eq!(&*buf.read().expect("no writers"), &[1, 2, 3, 9, 9, 9, 9, 9]);
    assert_eq!(buf.into_vec(), vec![1, 2, 3, 9, 9, 9, 9, 9]);
}

#[test]
fn overlapping_writes_are_refused_naming_both_ranges() {
    let buf = SharedSlice::<u8>::zeroed(10);
    let _held = buf.write(2..6).expect("first");
    let err = buf.write(5..7).expect_err("overlap");
    assert_eq!(
        err,
        ClaimError::Overlap {
            range: 5..7,
            held: 2..6
        }
    );
    assert!(
        err.to_string().contains("5..7") && err.to_string().contains("2..6"),
        "{err}"
    );
    // Touching, not overlapping: fine.
    assert!(buf.write(6..10).is_ok());
    assert!(buf.write(0..2).is_ok());
}

#[test]
fn reads_and_writes_exclude_each_other() {
    let buf = SharedSlice::<u8>::zeroed(4);
    let w = buf.write(1..2).expect("write");
    assert_eq!(
        buf.read().expect_err("being written"),
        ClaimError::BeingWritten { held: 1..2 }
    );
    drop(w);
    let r1 = buf.read().expect("read");
    let r2 = buf.read().expect("many readers");
    assert_eq!(
        buf.write(0..1).expect_err("being read"),
        ClaimError::BeingRead {
            range: 0..1,
            readers: 2
        }
    );
    drop((r1, r2));
    assert!(buf.write(0..4).is_ok());
}

#[test]
fn bad_ranges_are_refused() {
    let buf = SharedSlice::<u8>::zeroed(4);
    assert_eq!(
        buf.write(2..5).expect_err("past the end"),
        ClaimError::OutOfBounds {
            range: 2..5,
            len: 4
        }
    );
    #[allow(clippy::reversed_empty_ranges)]
    let backwards = 3..1;
    assert!(buf.write(backwards).is_err());
    // Empty ranges are fine and never overlap anything.
    let _all = buf.write(0..4).expect("all");
    assert!(buf.write(4..4).is_ok());
}

#[test]
fn a_panicking_writer_releases_its_claim() {
    let buf = SharedSlice::<u8>::zeroed(4);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _w = buf.write(0..4).expect("write");
        panic!("kernel failed");
    }));
    assert!(result.is_err());
    assert!(buf.read().is_ok(), "the claim was released on unwind");
}

#[test]
fn get_mut_needs_no_claim() {
    let mut buf = SharedSlice::new(vec![1, 2, 3]);
    buf.get_mut()[1] = 7;
    assert_eq!(buf.into_vec(), vec![1, 7, 3]);
}

/// Threads writing disjoint parts at once (Miri checks the accesses for data races).
#[test]
fn threads_write_disjoint_parts_concurrently() {
    let buf = Arc::new(SharedSlice::<u64>::zeroed(64));
    let threads = if cfg!(miri) { 3 } else { 8 };
    std::thread::scope(|s| {
        for t in 0..threads {
            let buf = buf.clone();
            s.spawn(move || {
                let range = crate::task::split_range(64, t, threads);
                let mut part = buf.write(range.clone()).expect("disjoint");
                for (x, i) in part.iter_mut().zip(range) {
                    *x = i as u64 * 3;
                }
            });
        }
    });
    let expected: Vec<u64> = (0..64).map(|i| i * 3).collect();
    assert_eq!(&*buf.read().expect("done"), expected.as_slice());
}
