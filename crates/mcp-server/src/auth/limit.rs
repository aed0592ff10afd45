//! Failed verifications per remote address: a bad token costs a signature check (or an
//! introspection call), so one address may cause only so many before its new tokens are
//! refused unverified. A token bucket per address (kept as the instant it is full again),
//! in a bounded map. And a log line said at most once a minute.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Addresses followed at most; when full, those whose bucket refilled are forgotten first, then
/// new addresses go unlimited until room is made (their tokens are still verified).
const ADDRESSES: usize = 65_536;

pub(super) struct FailureLimiter {
    burst: u32,
    refill: Duration,
    /// When each address's bucket is full again (no entry: full).
    full_at: Mutex<HashMap<IpAddr, Instant>>,
}

impl FailureLimiter {
    pub(super) fn new(burst: u32, refill: Duration) -> Self {
        FailureLimiter { burst, refill, full_at: Mutex::new(HashMap::new()) }
    }

    /// How long `remote` must wait when its bucket is empty (one more failure would not fit).
    pub(super) fn exhausted(&self, remote: IpAddr) -> Option<Duration> {
        if self.burst == 0 {
            return None;
        }
        let full_at = *self.full_at.lock().expect("not poisoned").get(&remote)?;
        let owed = full_at.saturating_duration_since(Instant::now());
        // Room for one more failure while what is owed stays within burst - 1 refills.
        let room = self.refill * (self.burst - 1);
        (owed > room).then(|| owed - room)
    }

    /// Counts a failed verification of `remote`.
    pub(super) fn failed(&self, remote: IpAddr) {
        if self.burst == 0 {
            return;
        }
        let now = Instant::now();
        let mut full_at = self.full_at.lock().expect("not poisoned");
        if full_at.len() >= ADDRESSES && !full_at.contains_key(&remote) {
            full_at.retain(|_, at| *at > now);
            if full_at.len() >= ADDRESSES {
                return;
            }
        }
        let at = full_at.entry(remote).or_insert(now);
        *at = (*at).max(now) + self.refill;
    }
}

/// A log line said at the first occurrence, then at most once per `every` with the count of
/// those left unsaid: an issuer that stays down is one line a minute, not one per request.
pub(super) struct LogLimit {
    every: Duration,
    state: Mutex<(Option<Instant>, u64)>,
}

impl LogLimit {
    pub(super) fn new(every: Duration) -> Self {
        LogLimit { every, state: Mutex::new((None, 0)) }
    }

    /// Calls `log` with how many occurrences went unsaid since the last line, if one is due.
    pub(super) fn warn(&self, log: impl FnOnce(u64)) {
        let mut state = self.state.lock().expect("not poisoned");
        let (last, suppressed) = &mut *state;
        if last.is_some_and(|at| at.elapsed() < self.every) {
            *suppressed += 1;
            return;
        }
        *last = Some(Instant::now());
        log(std::mem::take(suppressed));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_gets_burst_failures_then_waits_for_a_refill() {
        let limiter = FailureLimiter::new(3, Duration::from_secs(3600));
        let (one, other) = ("127.0.0.2".parse().unwrap(), "127.0.0.3".parse().unwrap());
        for _ in 0..3 {
            assert_eq!(limiter.exhausted(one), None);
            limiter.failed(one);
        }
        let wait = limiter.exhausted(one).expect("the fourth failure does not fit");
        assert!(wait > Duration::from_secs(3500) && wait <= Duration::from_secs(3600), "{wait:?}");
        assert_eq!(limiter.exhausted(other), None, "another address is not limited");
        let unlimited = FailureLimiter::new(0, Duration::from_secs(1));
        unlimited.failed(one);
        assert_eq!(unlimited.exhausted(one), None);
    }

    #[test]
    fn a_limited_line_is_said_first_then_at_most_once_per_interval_with_the_unsaid_count() {
        let limit = LogLimit::new(Duration::from_secs(3600));
        let mut said = Vec::new();
        for _ in 0..1000 {
            limit.warn(|suppressed| said.push(suppressed));
        }
        assert_eq!(said, [0]);
        let every_time = LogLimit::new(Duration::ZERO);
        limit.state.lock().unwrap().0 = None;
        for _ in 0..3 {
            every_time.warn(|suppressed| said.push(suppressed));
        }
        limit.warn(|suppressed| said.push(suppressed));
        assert_eq!(said, [0, 0, 0, 0, 999]);
    }
}
