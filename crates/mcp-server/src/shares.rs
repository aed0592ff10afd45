//! Counted shares of something many clients draw on (running tasks, open streams): each key
//! holds at most a limit at once, and a held place is given back when its [`Share`] is dropped.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

/// How many places each key holds.
pub(crate) struct Shares<K> {
    held: Mutex<HashMap<K, usize>>,
}

impl<K> Default for Shares<K> {
    fn default() -> Self {
        Shares { held: Mutex::new(HashMap::new()) }
    }
}

/// One place of `key`, given back when dropped.
pub(crate) struct Share<K: Eq + Hash> {
    shares: Arc<Shares<K>>,
    key: K,
}

impl<K: Eq + Hash + Clone> Shares<K> {
    /// One more place for `key`, or `None` when it already holds `limit`.
    pub(crate) fn admit(self: &Arc<Self>, key: K, limit: usize) -> Option<Share<K>> {
        let mut held = self.held.lock().expect("not poisoned");
        let count = held.entry(key.clone()).or_default();
        if *count >= limit {
            if *count == 0 {
                held.remove(&key);
            }
            return None;
        }
        *count += 1;
        Some(Share { shares: Arc::clone(self), key })
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.held.lock().expect("not poisoned").is_empty()
    }
}

impl<K: Eq + Hash> Drop for Share<K> {
    fn drop(&mut self) {
        let mut held = self.shares.held.lock().expect("not poisoned");
        if let Some(count) = held.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.key);
            }
        }
    }
}
