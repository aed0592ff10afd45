//! A connection's future polled again at once when it wakes itself while being polled.
//!
//! hyper's HTTP/1 connection reads a request's body through a channel whose other end is the
//! connection itself: taking the body wakes the connection's own task, from inside its poll.
//! tokio treats such a task as one that yielded: it goes to the back of the run queue, and an idle
//! worker is woken (a futex wake and a context switch) to take it, only to find nothing to do.
//! That was two futex calls per request, for a bare hyper server as for this one. Here a wake that
//! comes while the connection is being polled only marks it, and the connection is polled again
//! in the same turn; a wake at any other time goes to the task as before.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use futures::task::AtomicWaker;

/// Polls of the inner future in one turn of the task, at most: a future that keeps waking itself
/// still yields to the others now and then.
const MAX_POLLS_PER_TURN: usize = 8;

/// [`Future`] for `inner`, as described in the module's documentation.
pub(super) struct RepollOnSelfWake<F> {
    inner: Pin<Box<F>>,
    shared: Arc<Shared>,
    waker: Waker,
}

struct Shared {
    /// Whether the inner future is being polled now.
    polling: AtomicBool,
    /// Whether it was woken since its poll began.
    woken: AtomicBool,
    task: AtomicWaker,
}

impl Wake for Shared {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::SeqCst);
        // Seen as polling: the poll checks `woken` after it ends. Both may act (a spare wake).
        if !self.polling.load(Ordering::SeqCst) {
            self.task.wake();
        }
    }
}

impl<F: Future> RepollOnSelfWake<F> {
    pub(super) fn new(inner: F) -> Self {
        let shared = Arc::new(Shared {
            polling: AtomicBool::new(false),
            woken: AtomicBool::new(false),
            task: AtomicWaker::new(),
        });
        RepollOnSelfWake { inner: Box::pin(inner), waker: Waker::from(Arc::clone(&shared)), shared }
    }
}

impl<F: Future> Future for RepollOnSelfWake<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        this.shared.task.register(cx.waker());
        let mut inner_cx = Context::from_waker(&this.waker);
        for _ in 0..MAX_POLLS_PER_TURN {
            this.shared.woken.store(false, Ordering::SeqCst);
            this.shared.polling.store(true, Ordering::SeqCst);
            let poll = this.inner.as_mut().poll(&mut inner_cx);
            this.shared.polling.store(false, Ordering::SeqCst);
            if poll.is_ready() {
                return poll;
            }
            // A future out of tokio's budget wakes itself to yield: let it.
            if !this.shared.woken.load(Ordering::SeqCst) || !tokio::task::coop::has_budget_remaining() {
                break;
            }
        }
        if this.shared.woken.load(Ordering::SeqCst) {
            cx.waker().wake_by_ref();
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Counts the wakes of the task that polls it.
    struct CountingWaker(AtomicUsize);

    impl Wake for CountingWaker {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A future that wakes itself during its first `selfish` polls and is ready after them.
    struct WakesItself {
        selfish: usize,
        polls: usize,
    }

    impl Future for WakesItself {
        type Output = usize;
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
            self.polls += 1;
            if self.polls > self.selfish {
                return Poll::Ready(self.polls);
            }
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }

    fn poll_once<F: Future>(future: &mut RepollOnSelfWake<F>, task: &Arc<CountingWaker>) -> Poll<F::Output> {
        let waker = Waker::from(Arc::clone(task));
        Pin::new(future).poll(&mut Context::from_waker(&waker))
    }

    #[test]
    fn a_wake_during_the_poll_polls_again_without_waking_the_task() {
        let task = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let mut future = RepollOnSelfWake::new(WakesItself { selfish: 3, polls: 0 });
        assert_eq!(poll_once(&mut future, &task), Poll::Ready(4));
        assert_eq!(task.0.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_future_that_keeps_waking_itself_yields_with_a_wake() {
        let task = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let mut future = RepollOnSelfWake::new(WakesItself { selfish: usize::MAX, polls: 0 });
        assert_eq!(poll_once(&mut future, &task), Poll::Pending);
        assert_eq!(future.inner.polls, MAX_POLLS_PER_TURN);
        assert_eq!(task.0.load(Ordering::SeqCst), 1, "the task is woken to come back");
    }

    #[test]
    fn a_wake_between_polls_wakes_the_task() {
        let task = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let mut future = RepollOnSelfWake::new(std::future::pending::<()>());
        assert_eq!(poll_once(&mut future, &task), Poll::Pending);
        assert_eq!(task.0.load(Ordering::SeqCst), 0);
        future.waker.wake_by_ref();
        assert_eq!(task.0.load(Ordering::SeqCst), 1);
    }
}
