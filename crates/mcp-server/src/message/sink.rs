//! The channel that carries one request's messages from its handler to its [`Reply`](super::Reply).
//!
//! One is made for every request, and few requests send anything before their response, so it
//! is made in one ordinary allocation: a queue that allocates on its first message, a semaphore
//! for room, and the reader's waker. (tokio's channel made two, one of them cache-line aligned,
//! and cost about 1k instructions a request to make and drop.)

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures::task::AtomicWaker;
use tokio::sync::Semaphore;

use super::Outgoing;

/// How many messages a handler may send ahead of the reader before its next send waits.
const ROOM: usize = 32;

struct Shared {
    queue: Mutex<VecDeque<Outgoing>>,
    /// A permit for each free place in `queue`; closed when the receiver is dropped.
    room: Semaphore,
    senders: AtomicUsize,
    reader: AtomicWaker,
}

/// Where a handler sends its messages. Cloning it adds a sender; the receiver sees the end once
/// every sender is dropped.
pub(crate) struct Sink(Arc<Shared>);

/// The receiving end of a [`Sink`].
pub(crate) struct SinkReceiver(Arc<Shared>);

/// The receiver is gone: the message was not sent.
#[derive(Debug)]
pub(crate) struct Closed;

/// A [`Sink`] with room for 32 messages, and its receiving end.
pub(crate) fn sink() -> (Sink, SinkReceiver) {
    let shared = Arc::new(Shared {
        queue: Mutex::new(VecDeque::new()),
        room: Semaphore::new(ROOM),
        senders: AtomicUsize::new(1),
        reader: AtomicWaker::new(),
    });
    (Sink(Arc::clone(&shared)), SinkReceiver(shared))
}

impl Sink {
    /// Queues `message`, waiting while the queue is full; fails once the receiver is dropped.
    pub(crate) async fn send(&self, message: Outgoing) -> Result<(), Closed> {
        self.0.room.acquire().await.map_err(|_| Closed)?.forget();
        self.0.queue.lock().expect("not poisoned").push_back(message);
        self.0.reader.wake();
        Ok(())
    }
}

impl Clone for Sink {
    fn clone(&self) -> Self {
        self.0.senders.fetch_add(1, Ordering::Relaxed);
        Sink(Arc::clone(&self.0))
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        // Release: the reader that sees no sender left also sees every message they queued.
        if self.0.senders.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.reader.wake();
        }
    }
}

impl SinkReceiver {
    /// The next queued message, if one is there now.
    pub(crate) fn try_recv(&mut self) -> Option<Outgoing> {
        let message = self.0.queue.lock().expect("not poisoned").pop_front()?;
        self.0.room.add_permits(1);
        Some(message)
    }

    /// The next message; `None` once it is empty and every sender is dropped.
    pub(crate) fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<Outgoing>> {
        if let Some(message) = self.try_recv() {
            return Poll::Ready(Some(message));
        }
        self.0.reader.register(cx.waker());
        // Checked again after registering: a message or the last drop in between woke no one.
        match self.try_recv() {
            Some(message) => Poll::Ready(Some(message)),
            None if self.0.senders.load(Ordering::Acquire) == 0 => Poll::Ready(self.try_recv()),
            None => Poll::Pending,
        }
    }
}

impl Drop for SinkReceiver {
    fn drop(&mut self) {
        // Senders waiting for room, and any later send, fail; what was queued goes now. The
        // reader's waker goes too: a sender's drop after this wakes no one.
        self.0.reader.take();
        self.0.room.close();
        let queued = std::mem::take(&mut *self.0.queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
        drop(queued); // after the lock
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt as _;
    use futures::task::noop_waker_ref;

    fn note(n: usize) -> Outgoing {
        Outgoing::notification(&serde_json::json!({ "n": n }))
    }

    fn poll(rx: &mut SinkReceiver) -> Poll<Option<Outgoing>> {
        rx.poll_recv(&mut Context::from_waker(noop_waker_ref()))
    }

    #[tokio::test]
    async fn messages_arrive_in_order_and_the_end_follows_the_last_sender() {
        let (sink, mut rx) = sink();
        let second = sink.clone();
        sink.send(note(1)).await.unwrap();
        second.send(note(2)).await.unwrap();
        drop(sink);
        assert_eq!(poll(&mut rx), Poll::Ready(Some(note(1))));
        assert_eq!(rx.try_recv(), Some(note(2)));
        assert_eq!(poll(&mut rx), Poll::Pending, "a sender is left");
        second.send(note(3)).await.unwrap();
        drop(second);
        assert_eq!(poll(&mut rx), Poll::Ready(Some(note(3))), "queued before the last drop");
        assert_eq!(poll(&mut rx), Poll::Ready(None));
    }

    #[tokio::test]
    async fn a_full_sink_waits_for_room_and_a_dropped_receiver_fails_the_send() {
        let (sink, mut rx) = sink();
        for n in 0..ROOM {
            sink.send(note(n)).await.unwrap();
        }
        let mut waiting = Box::pin(sink.send(note(ROOM)));
        assert!((&mut waiting).now_or_never().is_none(), "no room for a 33rd message");
        assert_eq!(rx.try_recv(), Some(note(0)));
        assert!(matches!((&mut waiting).now_or_never(), Some(Ok(()))), "one place freed");
        drop(rx);
        assert!(sink.send(note(0)).await.is_err());
    }

    #[tokio::test]
    async fn a_send_or_the_last_drop_wakes_the_reader() {
        let (sink, mut rx) = sink();
        let reader = tokio::spawn(async move {
            let first = std::future::poll_fn(|cx| rx.poll_recv(cx)).await;
            let end = std::future::poll_fn(|cx| rx.poll_recv(cx)).await;
            (first, end)
        });
        tokio::task::yield_now().await;
        sink.send(note(7)).await.unwrap();
        tokio::task::yield_now().await;
        drop(sink);
        assert_eq!(reader.await.unwrap(), (Some(note(7)), None));
    }
}
