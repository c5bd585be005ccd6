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
            rect: Rect::row(5, 2),
            held: Rect::row(2, 4)
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
        ClaimError::BeingWritten {
            held: Rect::row(1, 1)
        }
    );
    drop(w);
    let r1 = buf.read().expect("read");
    let r2 = buf.read().expect("many readers");
    assert_eq!(
        buf.write(0..1).expect_err("being read"),
        ClaimError::BeingRead {
            rect: Rect::row(0, 1),
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
            rect: Rect::row(2, 3),
            len: 4
        }
    );
    #[allow(clippy::reversed_empty_ranges)]
    let backwards = 3..1;
    let err = buf.write(backwards.clone()).expect_err("backwards");
    assert_eq!(err, ClaimError::Backwards { range: backwards });
    assert!(err.to_string().contains("3..1"), "{err}");
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
    buf.get_mut().expect("no window shares it")[1] = 7;
    assert_eq!(buf.into_vec(), vec![1, 7, 3]);
}

#[test]
fn get_mut_refuses_a_buffer_whose_window_lives() {
    let mut buf = SharedSlice::new(vec![1, 2, 3]);
    let window = buf.window(1..3);
    assert!(buf.get_mut().is_none());
    drop(window);
    assert!(buf.get_mut().is_some());
}

/// A window writes its part of the parent, and its claims, reads and errors count in the
/// parent's list, in its own indices.
#[test]
fn windows_write_their_part_and_share_the_parents_claims() {
    let buf = SharedSlice::<u8>::zeroed(10);
    let (left, right) = (buf.window(0..4), buf.window(4..10));
    assert_eq!((left.len(), right.len()), (4, 6));
    {
        let mut l = left.write(0..4).expect("left");
        let mut r = right
            .write_rect(Rect::new(1, 3, 2, 2))
            .expect("right: 5, 6, 8, 9");
        l.fill(1);
        r.rows_mut().for_each(|row| row.fill(2));
        // The parent sees both claims; a window sees the parent's, in its own indices.
        let err = buf.write(3..6).expect_err("overlaps both");
        assert_eq!(
            err.to_string(),
            "3..6 overlaps 0..4, which is being written"
        );
        assert!(buf.write(7..8).is_ok(), "element 7 is free");
        assert!(matches!(buf.read(), Err(ClaimError::BeingWritten { .. })));
        assert!(matches!(right.read(), Err(ClaimError::BeingWritten { .. })));
    }
    assert_eq!(
        &*buf.read().expect("no writer"),
        &[1, 1, 1, 1, 0, 2, 2, 0, 2, 2]
    );
    assert_eq!(&*right.read().expect("no writer"), &[0, 2, 2, 0, 2, 2]);
    // A reader of the parent holds off a window's writes, and the other way round.
    let reading = buf.read().expect("no writer");
    assert!(matches!(
        left.write(0..1),
        Err(ClaimError::BeingRead { readers: 1, .. })
    ));
    drop(reading);
    let reading = right.read().expect("no writer");
    assert!(buf.write(0..1).is_err());
    drop(reading);
    // Out of a window's bounds, by its own length, even where the parent goes on.
    assert_eq!(
        left.write(3..5).expect_err("past the window").to_string(),
        "3..5 is out of bounds for a buffer of 4"
    );
    // A window of a window is a window of the parent.
    let inner = right.window(2..4);
    inner.write(0..2).expect("free").fill(3);
    assert_eq!(
        &*buf.read().expect("no writer"),
        &[1, 1, 1, 1, 0, 2, 3, 3, 2, 2]
    );
}

#[test]
#[should_panic(expected = "window 3..7 of a buffer of 6")]
fn a_window_past_the_end_panics() {
    SharedSlice::new(vec![0u8; 6]).window(3..7);
}

#[test]
#[should_panic(expected = "window or its parent shares")]
fn into_vec_of_a_shared_buffer_panics() {
    let buf = SharedSlice::new(vec![0u8; 6]);
    let _window = buf.window(0..2);
    buf.into_vec();
}

/// Threads writing the two windows of one buffer at once, then reading it whole (Miri
/// checks the accesses for data races).
#[test]
fn threads_write_windows_concurrently() {
    let buf = Arc::new(SharedSlice::<u32>::zeroed(48));
    let windows = [Arc::new(buf.window(0..16)), Arc::new(buf.window(16..48))];
    let handles: Vec<_> = windows
        .iter()
        .enumerate()
        .map(|(t, w)| {
            let w = w.clone();
            std::thread::spawn(move || {
                let mut part = w.write(0..w.len()).expect("windows are disjoint");
                for (i, x) in part.iter_mut().enumerate() {
                    *x = (t * 100 + i) as u32;
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("a writer thread");
    }
    let whole = buf.read().expect("no writer");
    let expect: Vec<u32> = (0..16).chain(100..132).collect();
    assert_eq!(&*whole, &expect[..]);
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

/// A 4 × 6 matrix cut into four 2 × 3 tiles, all claimed at once, each written row by row.
#[test]
fn disjoint_tiles_coexist_and_their_rows_land_in_place() {
    let m = SharedSlice::new(vec![0u8; 24]);
    let tiles = [(0, 0), (0, 3), (2, 0), (2, 3)].map(|(r, c)| Rect::new(r * 6 + c, 6, 2, 3));
    let mut guards: Vec<RectGuard<'_, u8>> = tiles
        .iter()
        .map(|&t| m.write_rect(t).expect("tiles are disjoint"))
        .collect();
    for (k, g) in guards.iter_mut().enumerate() {
        assert_eq!((g.rows(), g.cols(), g.rect()), (2, 3, tiles[k]));
        g.row_mut(0).fill(10 * k as u8 + 1);
        g.row_mut(1).fill(10 * k as u8 + 2);
    }
    assert!(
        m.read().is_err(),
        "a read waits for every tile to be released"
    );
    drop(guards);
    #[rustfmt::skip]
    let expected = [
        1, 1, 1, 11, 11, 11,
        2, 2, 2, 12, 12, 12,
        21, 21, 21, 31, 31, 31,
        22, 22, 22, 32, 32, 32,
    ];
    assert_eq!(&*m.read().expect("released"), &expected);
}

/// `rows_mut` hands out every row at once; Miri checks that the slices do not alias.
#[test]
fn rows_of_one_rect_may_be_held_together() {
    let m = SharedSlice::new(vec![0u32; 20]);
    let mut g = m.write_rect(Rect::new(1, 5, 4, 3)).expect("fits");
    let mut rows: Vec<&mut [u32]> = g.rows_mut().collect();
    assert_eq!(rows.len(), 4);
    for (i, row) in rows.iter_mut().enumerate() {
        for (j, x) in row.iter_mut().enumerate() {
            *x = (i * 10 + j) as u32 + 1;
        }
    }
    rows[0][0] += rows[3][2]; // two rows borrowed at the same time
    drop(g);
    let out = m.into_vec();
    assert_eq!(&out[0..5], &[0, 1 + 33, 2, 3, 0]);
    assert_eq!(&out[16..20], &[31, 32, 33, 0]);
}

#[test]
fn overlapping_rects_are_refused_naming_both() {
    let m = SharedSlice::<u8>::zeroed(32);
    let held = Rect::new(2, 8, 3, 3); // rows 0..3, columns 2..5
    let _g = m.write_rect(held).expect("first");
    let asked = Rect::new(8 + 4, 8, 2, 2); // rows 1..3, columns 4..6: meets column 4
    let err = m.write_rect(asked).expect_err("overlap");
    assert_eq!(err, ClaimError::Overlap { rect: asked, held });
    let text = err.to_string();
    assert!(
        text.contains("2x2 at 12 (ld 8)") && text.contains("3x3 at 2 (ld 8)"),
        "{text}"
    );
    // Beside it, below it, and in the same columns past its last row: all fine.
    assert!(m.write_rect(Rect::new(5, 8, 3, 3)).is_ok());
    assert!(m.write_rect(Rect::new(0, 8, 4, 2)).is_ok());
    assert!(m.write_rect(Rect::new(24 + 2, 8, 1, 3)).is_ok());
}

/// Rows that run past their `ld`-wide line into the next one are compared element by
/// element, not as columns of one line.
#[test]
fn rows_that_wrap_past_ld_are_checked_exactly() {
    let m = SharedSlice::<u8>::zeroed(16);
    let wrap = Rect::new(2, 4, 2, 3); // elements 2, 3, 4 and 6, 7, 8
    let _g = m.write_rect(wrap).expect("first");
    let _five = m
        .write_rect(Rect::new(5, 4, 1, 1))
        .expect("5 is between the rows");
    let _late = m
        .write_rect(Rect::new(9, 4, 2, 1))
        .expect("9 and 13 are past it");
    assert_eq!(
        m.write_rect(Rect::new(0, 4, 3, 2))
            .expect_err("0, 1, 4, 5, 8, 9"),
        ClaimError::Overlap {
            rect: Rect::new(0, 4, 3, 2),
            held: wrap
        }
    );
    assert!(m.write(4..5).is_err(), "4 is the wrapped end of row 0");
}

#[test]
fn a_rect_whose_rows_collide_is_refused() {
    let m = SharedSlice::<u8>::zeroed(32);
    let bad = Rect::new(0, 4, 2, 5);
    let err = m.write_rect(bad).expect_err("5 columns, rows 4 apart");
    assert_eq!(err, ClaimError::RowsCollide { rect: bad });
    assert!(err.to_string().contains("2x5 at 0 (ld 4)"), "{err}");
    // One row has no second row to collide with: it is a plain range.
    assert!(m.write_rect(Rect::new(0, 4, 1, 5)).is_ok());
}

#[test]
fn out_of_bounds_rects_name_the_rect_and_the_length() {
    let m = SharedSlice::<u8>::zeroed(11);
    let past = Rect::new(0, 4, 3, 4); // ends at 12
    let err = m.write_rect(past).expect_err("past the end");
    assert_eq!(
        err,
        ClaimError::OutOfBounds {
            rect: past,
            len: 11
        }
    );
    assert!(
        err.to_string().contains("3x4 at 0 (ld 4)") && err.to_string().contains("11"),
        "{err}"
    );
    let huge = Rect::new(1, usize::MAX / 2, 3, 1);
    assert!(matches!(
        m.write_rect(huge),
        Err(ClaimError::OutOfBounds { .. })
    ));
    assert!(m.write_rect(Rect::new(0, 4, 3, 3)).is_ok(), "ends at 11");
}

/// A range is a rect of one row: ranges and rects exclude each other exactly, and only
/// two multi-row rects of different strides fall back to their bounding ranges.
#[test]
fn ranges_and_rects_interoperate() {
    let m = SharedSlice::<u8>::zeroed(40);
    let _r = m.write(4..6).expect("range");
    let _t = m
        .write_rect(Rect::new(2, 4, 2, 2))
        .expect("2, 3 and 6, 7 miss 4..6");
    assert!(
        m.write_rect(Rect::new(1, 4, 2, 1)).is_err(),
        "1 is free, but 5 is in the range 4..6"
    );
    assert!(
        m.write(0..1).is_ok() && m.write(8..9).is_ok(),
        "around the claims"
    );
    let _a = m.write_rect(Rect::new(20, 4, 3, 1)).expect("20, 24, 28");
    // 21, 26, 31 share no element with 20, 24, 28, but their spans meet: refused.
    let other_ld = Rect::new(21, 5, 3, 1);
    assert_eq!(
        m.write_rect(other_ld)
            .expect_err("conservative across strides"),
        ClaimError::Overlap {
            rect: other_ld,
            held: Rect::new(20, 4, 3, 1)
        }
    );
}

#[test]
fn empty_rects_never_conflict() {
    let m = SharedSlice::<u8>::zeroed(8);
    let _all = m.write(0..8).expect("all");
    assert!(m.write_rect(Rect::new(3, 2, 0, 5)).is_ok());
    assert!(m.write_rect(Rect::new(3, 2, 4, 0)).is_ok());
    assert!(
        m.write_rect(Rect::new(9, 2, 0, 1)).is_err(),
        "still bounded"
    );
}

#[test]
fn a_panicking_rect_writer_releases_its_claim() {
    let m = SharedSlice::<u8>::zeroed(8);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut g = m.write_rect(Rect::new(0, 4, 2, 2)).expect("write");
        g.row_mut(1)[0] = 1;
        panic!("kernel failed");
    }));
    assert!(result.is_err());
    assert_eq!(
        &*m.read().expect("released on unwind"),
        &[0, 0, 0, 0, 1, 0, 0, 0]
    );
}

#[test]
#[should_panic(expected = "row 2 of a rect of 2 rows")]
fn a_row_past_the_last_panics() {
    let m = SharedSlice::<u8>::zeroed(8);
    let mut g = m.write_rect(Rect::new(0, 4, 2, 2)).expect("write");
    g.row_mut(2);
}

/// Threads writing the column blocks of a matrix at once: every row of every block is a
/// separate slice (Miri checks the accesses for data races).
#[test]
fn threads_write_disjoint_tiles_concurrently() {
    let (rows, ld) = (5, 12);
    let m = Arc::new(SharedSlice::<u64>::zeroed(rows * ld));
    let threads = if cfg!(miri) { 3 } else { 4 };
    std::thread::scope(|s| {
        for t in 0..threads {
            let m = m.clone();
            s.spawn(move || {
                let cols = crate::task::split_range(ld, t, threads);
                let mut tile = m
                    .write_rect(Rect::new(cols.start, ld, rows, cols.len()))
                    .expect("column blocks are disjoint");
                for (i, row) in tile.rows_mut().enumerate() {
                    for (x, j) in row.iter_mut().zip(cols.clone()) {
                        *x = (i * ld + j) as u64;
                    }
                }
            });
        }
    });
    let expected: Vec<u64> = (0..(rows * ld) as u64).collect();
    assert_eq!(&*m.read().expect("done"), expected.as_slice());
}

/// A claim in a property test: a range or a rect.
#[derive(Debug, Clone)]
enum Claim {
    Range(Range<usize>),
    Rect(Rect),
}

impl Claim {
    fn rect(&self) -> Rect {
        match self {
            Claim::Range(r) => Rect::row(r.start, r.len()),
            Claim::Rect(r) => *r,
        }
    }

    /// The claim's elements, by brute force.
    fn elements(&self) -> std::collections::BTreeSet<usize> {
        let r = self.rect();
        (0..r.rows)
            .flat_map(|i| (0..r.cols).map(move |j| r.offset + i * r.ld + j))
            .collect()
    }
}

enum Held<'a> {
    Range(WriteGuard<'a, u16>),
    Rect(RectGuard<'a, u16>),
}

/// Claims each of `claims` in turn, keeping every accepted guard, and checks each answer
/// against the model: a rect whose rows collide or that does not fit is refused; otherwise
/// it is refused iff it conflicts with an accepted claim, where two claims conflict iff
/// they share an element — or, for two multi-row rects of different `ld`, iff their spans
/// meet. Accepted claims write their number into their elements, which must land exactly
/// there.
fn check_against_model(len: usize, claims: &[Claim]) {
    let buf = SharedSlice::new(vec![0u16; len]);
    let mut held = Vec::new();
    let mut accepted: Vec<(usize, Claim)> = Vec::new();
    let mut expected = vec![0u16; len];
    for (k, claim) in claims.iter().enumerate() {
        let rect = claim.rect();
        let elements = claim.elements();
        let conflict = accepted.iter().find(|(_, a)| {
            let b = a.rect();
            let strided = |r: &Rect| r.rows > 1 && !r.is_empty();
            if strided(&rect) && strided(&b) && rect.ld != b.ld {
                let (x, y) = (rect.span(), b.span());
                x.start < y.end && y.start < x.end
            } else {
                !elements.is_disjoint(&a.elements())
            }
        });
        let result = match claim {
            Claim::Range(r) => buf.write(r.clone()).map(Held::Range),
            Claim::Rect(r) => buf.write_rect(*r).map(Held::Rect),
        };
        let collide = rect.rows > 1 && rect.cols > rect.ld;
        let fits = if rect.is_empty() {
            rect.offset <= len
        } else {
            rect.offset + (rect.rows - 1) * rect.ld + rect.cols <= len
        };
        match (&result, collide, fits, conflict) {
            (Err(ClaimError::RowsCollide { .. }), true, _, _) => {}
            (Err(ClaimError::OutOfBounds { .. }), false, false, _) => {}
            (Err(ClaimError::Overlap { held: h, .. }), false, true, Some(_)) => {
                let h = *h;
                assert!(
                    accepted.iter().any(|(_, a)| a.rect() == h),
                    "claim {k} ({rect}) blamed {h}, which is not held"
                );
            }
            (Ok(_), false, true, None) => {}
            (r, _, _, c) => panic!(
                "claim {k} ({rect}): got {:?}, model says collide={collide} fits={fits} conflict={:?}",
                r.as_ref().map(|_| ()),
                c.map(|(i, a)| (i, a.rect()))
            ),
        }
        if let Ok(mut guard) = result {
            let id = k as u16 + 1;
            match &mut guard {
                Held::Range(g) => g.fill(id),
                Held::Rect(g) => g.rows_mut().for_each(|row| row.fill(id)),
            }
            for &e in &elements {
                expected[e] = id;
            }
            accepted.push((k, claim.clone()));
            held.push(guard);
        }
    }
    drop(held);
    assert_eq!(&*buf.read().expect("all released"), expected.as_slice());
}

fn rect_in(len: usize, ld: usize) -> impl Strategy<Value = Rect> {
    (0..len + 2, 0..5usize, 0..=ld + 1)
        .prop_map(move |(offset, rows, cols)| Rect::new(offset, ld, rows, cols))
}

use proptest::prelude::*;

proptest! {
    // A few cases under Miri, which interprets each: their writes through guards held
    // together are what it checks. The saved failures (`proptest-regressions/`) replay
    // natively only, since Miri isolates the file system.
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 8 } else { 512 },
        failure_persistence: if cfg!(miri) {
            None
        } else {
            ProptestConfig::default().failure_persistence
        },
        ..ProptestConfig::default()
    })]

    /// Random rects of one stride: accepted iff disjoint from every accepted one.
    #[test]
    fn same_ld_rects_are_accepted_iff_disjoint(
        (len, rects) in (1..7usize, 0..4usize).prop_flat_map(|(ld, extra)| {
            let len = ld * 6 + extra;
            (Just(len), prop::collection::vec(rect_in(len, ld), 1..9))
        })
    ) {
        let claims: Vec<Claim> = rects.into_iter().map(Claim::Rect).collect();
        check_against_model(len, &claims);
    }

    /// Ranges and rects of two strides mixed: exact where one stride decides, bounding
    /// ranges across strides, and never two claims on one element.
    #[test]
    fn mixed_claims_follow_the_model(
        claims in prop::collection::vec(
            prop_oneof![
                (0..42usize, 0..12usize).prop_map(|(s, n)| Claim::Range(s..s + n)),
                rect_in(40, 4).prop_map(Claim::Rect),
                rect_in(40, 7).prop_map(Claim::Rect),
            ],
            1..10,
        )
    ) {
        check_against_model(40, &claims);
    }
}

/// `zeroed` buffers start on a cache line and hold exactly the elements asked for: the
/// slack skipped to align them is neither readable nor writable nor returned.
#[test]
fn zeroed_buffers_start_on_a_cache_line_and_hide_their_slack() {
    // 40 000 floats (160 KB) come from mmap, 16 bytes past a page, without the slack;
    // Miri's allocator has no mmap, and copying them element by element is its slowest test.
    let big = if cfg!(miri) { 4000 } else { 40_000 };
    for len in [1usize, 15, 1000, big] {
        let buf = SharedSlice::<f32>::zeroed(len);
        assert_eq!(buf.len(), len);
        {
            let mut last = buf.write(len - 1..len).expect("the last element");
            last[0] = 7.0;
        }
        assert!(buf.write(len..len + 1).is_err(), "past the end of {len}");
        let read = buf.read().expect("no writers");
        assert_eq!(read.as_ptr() as usize % 64, 0, "{len} floats");
        assert_eq!(read.len(), len);
        drop(read);
        let values = buf.into_vec();
        assert_eq!(values.len(), len);
        assert_eq!(values[len - 1], 7.0);
        assert!(values[..len - 1].iter().all(|&v| v == 0.0));
    }
    // A size that does not divide 64 is not aligned, but still exact.
    let odd = SharedSlice::<[u8; 3]>::zeroed(5);
    assert_eq!(odd.len(), 5);
    assert_eq!(odd.into_vec(), vec![[0u8; 3]; 5]);
    assert!(SharedSlice::<f32>::zeroed(0).is_empty());
}
