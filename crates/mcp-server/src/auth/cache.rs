//! Verified tokens, remembered by the SHA-256 of the token (never the token) for as long as
//! their verifier allows and never past their expiry; bounded.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use sha2::{Digest as _, Sha256};

use crate::principal::VerifiedToken;

pub(super) struct TokenCache {
    capacity: usize,
    entries: Mutex<HashMap<[u8; 32], Entry>>,
}

struct Entry {
    token: Arc<VerifiedToken>,
    /// The token's `exp`.
    expires: Option<SystemTime>,
    /// When the verifier must be asked again.
    fresh_until: Option<Instant>,
}

impl Entry {
    fn stale(&self, now: SystemTime, instant: Instant) -> bool {
        self.expires.is_some_and(|exp| exp <= now) || self.fresh_until.is_some_and(|f| f <= instant)
    }
}

impl TokenCache {
    pub(super) fn new(capacity: usize) -> Self {
        TokenCache { capacity, entries: Mutex::new(HashMap::new()) }
    }

    pub(super) fn digest(token: &[u8]) -> [u8; 32] {
        Sha256::digest(token).into()
    }

    pub(super) fn get(&self, digest: &[u8; 32]) -> Option<Arc<VerifiedToken>> {
        let mut entries = self.entries.lock().expect("not poisoned");
        let entry = entries.get(digest)?;
        if entry.stale(SystemTime::now(), Instant::now()) {
            entries.remove(digest);
            return None;
        }
        Some(Arc::clone(&entry.token))
    }

    /// Remembers `token` until `fresh_until` (`None`: until it expires).
    pub(super) fn insert(&self, digest: [u8; 32], token: &Arc<VerifiedToken>, fresh_until: Option<Instant>) {
        if self.capacity == 0 {
            return;
        }
        let mut entries = self.entries.lock().expect("not poisoned");
        if entries.len() >= self.capacity {
            let (now, instant) = (SystemTime::now(), Instant::now());
            entries.retain(|_, entry| !entry.stale(now, instant));
            if entries.len() >= self.capacity {
                // Still full of live tokens: forget one; it is verified again when it comes back.
                if let Some(first) = entries.keys().next().copied() {
                    entries.remove(&first);
                }
            }
        }
        let entry = Entry { token: Arc::clone(token), expires: token.expires_at, fresh_until };
        entries.insert(digest, entry);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.lock().expect("not poisoned").len()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_cache_is_bounded_and_forgets_stale_tokens() {
        let cache = TokenCache::new(2);
        let expired =
            VerifiedToken { expires_at: Some(SystemTime::now() - Duration::from_secs(1)), ..Default::default() };
        cache.insert([1; 32], &Arc::new(expired), None);
        assert!(cache.get(&[1; 32]).is_none());
        let live = Arc::new(VerifiedToken::default());
        cache.insert([2; 32], &live, Some(Instant::now() - Duration::from_millis(1)));
        assert!(cache.get(&[2; 32]).is_none(), "past the verifier's reuse time");
        for i in 0..5u8 {
            cache.insert([i; 32], &live, None);
        }
        assert_eq!(cache.len(), 2);
        assert!(cache.get(&[4; 32]).is_some());
    }
}
