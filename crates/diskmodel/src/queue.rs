//! A queue between the daemon's threads in which a waiting thread sleeps and never spins.
//!
//! std's mpsc channel makes a receiver, and the other senders, spin without bound while a sender
//! that has reserved a slot has not yet written it (rust-lang/rust#112723). The daemon's threads
//! run under SCHED_FIFO, where spinning is not harmless: on a 2-CPU machine the drive thread (the
//! highest priority) preempted the image thread halfway through a send, then spun for that slot
//! on the very CPU the image thread was queued on, while the FUSE thread, spinning on the same
//! channel at the image thread's priority, held the other CPU. The daemon served nothing for 17
//! minutes, until a debugger's attach stopped the spinners. Here a thread that finds the queue
//! busy or empty sleeps on a futex (a `Mutex` and a `Condvar`), which lets the thread that holds
//! the lock run and release it, whatever the priorities.
//!
//! The semantics are mpsc's: `recv` returns `None` once the queue is empty and every sender is
//! gone; `send` gives the value back once the receiver is gone.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

struct State<T> {
    items: VecDeque<T>,
    senders: usize,
    receiver: bool,
}

struct Shared<T> {
    state: Mutex<State<T>>,
    ready: Condvar,
}

impl<T> Shared<T> {
    /// The lock, poisoned or not: no thread leaves the state half-changed (each change is one
    /// push, pop or count), so a panic elsewhere leaves it usable.
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The sending side; clone it for another sender.
pub struct Sender<T> {
    shared: Arc<Shared<T>>,
}

/// The receiving side (one).
pub struct Receiver<T> {
    shared: Arc<Shared<T>>,
}

/// A new queue: its sender and its receiver.
pub fn queue<T>() -> (Sender<T>, Receiver<T>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State { items: VecDeque::with_capacity(256), senders: 1, receiver: true }),
        ready: Condvar::new(),
    });
    (Sender { shared: shared.clone() }, Receiver { shared })
}

impl<T> Sender<T> {
    /// Queue `value`; `Err(value)` when the receiver is gone.
    pub fn send(&self, value: T) -> Result<(), T> {
        let mut s = self.shared.lock();
        if !s.receiver {
            return Err(value);
        }
        s.items.push_back(value);
        drop(s);
        self.shared.ready.notify_one();
        Ok(())
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.shared.lock().senders += 1;
        Sender { shared: self.shared.clone() }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let mut s = self.shared.lock();
        s.senders -= 1;
        let last = s.senders == 0;
        drop(s);
        if last {
            self.shared.ready.notify_all();
        }
    }
}

impl<T> Receiver<T> {
    /// The next value, waiting for one; `None` once the queue is empty and every sender is gone.
    pub fn recv(&self) -> Option<T> {
        let mut s = self.shared.lock();
        loop {
            if let Some(v) = s.items.pop_front() {
                return Some(v);
            }
            if s.senders == 0 {
                return None;
            }
            s = self.shared.ready.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The next value if one is queued, without waiting for a sender (but for the lock, which
    /// is only ever held for a push, a pop or a count).
    pub fn try_recv(&self) -> Option<T> {
        self.shared.lock().items.pop_front()
    }
}

impl<T> Iterator for &Receiver<T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        self.recv()
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let mut s = self.shared.lock();
        s.receiver = false;
        // Values still queued are dropped with the last handle (with the receiver gone, no one
        // reads them).
        s.items.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread;

    #[test]
    fn values_arrive_in_order_from_one_sender() {
        let (tx, rx) = queue();
        for i in 0..1000 {
            tx.send(i).unwrap();
        }
        drop(tx);
        let got: Vec<i32> = (&rx).collect();
        assert_eq!(got, (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn recv_ends_when_every_sender_is_gone() {
        let (tx, rx) = queue::<u8>();
        let tx2 = tx.clone();
        tx2.send(7).unwrap();
        drop(tx);
        assert_eq!(rx.recv(), Some(7));
        let t = thread::spawn(move || rx.recv());
        thread::sleep(std::time::Duration::from_millis(20));
        drop(tx2); // the waiting receiver must wake and see the end
        assert_eq!(t.join().unwrap(), None);
    }

    #[test]
    fn send_gives_the_value_back_when_the_receiver_is_gone() {
        let (tx, rx) = queue();
        drop(rx);
        assert_eq!(tx.send(5), Err(5));
    }

    #[test]
    fn try_recv_does_not_wait() {
        let (tx, rx) = queue::<u8>();
        assert_eq!(rx.try_recv(), None);
        tx.send(1).unwrap();
        assert_eq!(rx.try_recv(), Some(1));
        assert_eq!(rx.try_recv(), None);
    }

    #[test]
    fn many_senders_lose_and_duplicate_nothing() {
        let (tx, rx) = queue();
        let threads: Vec<_> = (0..4)
            .map(|k| {
                let tx = tx.clone();
                thread::spawn(move || {
                    for i in 0..10_000u64 {
                        tx.send(k * 1_000_000 + i).unwrap();
                    }
                })
            })
            .collect();
        drop(tx);
        let mut got: Vec<u64> = (&rx).collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(got.len(), 40_000);
        // Each sender's values arrive in its own order.
        for k in 0..4u64 {
            let mine: Vec<u64> = got.iter().copied().filter(|v| v / 1_000_000 == k).collect();
            assert!(mine.windows(2).all(|w| w[0] < w[1]));
        }
        got.sort_unstable();
        got.dedup();
        assert_eq!(got.len(), 40_000);
    }
}
