use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

#[test]
fn items_come_out_in_order_and_the_end_follows_the_sender() {
    let q = Queue::new(2);
    let (tx, rx) = q.ends();
    std::thread::scope(|s| {
        s.spawn(move || {
            for i in 0..100 {
                tx.send(i).expect("receiver alive");
            }
        });
        assert_eq!(rx.collect::<Vec<_>>(), (0..100).collect::<Vec<_>>());
    });
}

#[test]
fn a_full_queue_holds_the_sender_back() {
    let q = Queue::new(3);
    let (tx, mut rx) = q.ends();
    let sent = &AtomicUsize::new(0);
    std::thread::scope(|s| {
        s.spawn(move || {
            for i in 0..10 {
                tx.send(i).expect("receiver alive");
                sent.fetch_add(1, Ordering::SeqCst);
            }
        });
        while sent.load(Ordering::SeqCst) < 3 {
            std::thread::yield_now();
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(
            sent.load(Ordering::SeqCst),
            3,
            "a 4th item went into a queue of 3"
        );
        assert_eq!(rx.next(), Some(0));
        assert_eq!(rx.by_ref().count(), 9);
    });
}

#[test]
fn a_dropped_receiver_hands_items_back_and_frees_a_waiting_sender() {
    let q = Queue::new(1);
    let (tx, rx) = q.ends();
    tx.send(1).expect("room");
    std::thread::scope(|s| {
        let blocked = s.spawn(|| tx.send(2));
        std::thread::sleep(std::time::Duration::from_millis(10));
        drop(rx);
        assert_eq!(blocked.join().expect("no panic"), Err(2));
    });
    assert_eq!(tx.send(3), Err(3));
}
