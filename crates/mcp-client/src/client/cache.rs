//! The `ttlMs` cache of list and read results, within `max_cache_bytes`.

use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::value::RawValue;

use super::results::result_type;
use super::{CacheEntry, Call, Client};
use crate::error::Error;

impl Client {
    /// A cacheable request: served from the cache while fresh (modern era only: legacy results
    /// carry no `ttlMs`).
    pub(super) async fn cached_request(&self, call: &Call, key: String) -> Result<Box<RawValue>, Error> {
        if let Some(entry) = self.inner.cache.lock().unwrap().get(&key)
            && entry.expires > Instant::now()
        {
            return Ok(entry.result.clone());
        }
        let result = self.request(call).await?;
        if let Some(ttl) = ttl_of(&result) {
            self.cache_put(key, &result, ttl);
        }
        Ok(result)
    }

    /// Caches `result` within `max_cache_bytes`: expired entries go first, then the ones that
    /// expire soonest; a result larger than the whole budget is not cached.
    pub(super) fn cache_put(&self, key: String, result: &RawValue, ttl: Duration) {
        let budget = self.inner.config.limits.max_cache_bytes;
        let size = |key: &str, result: &RawValue| key.len() + result.get().len();
        let needed = size(&key, result);
        if needed > budget {
            return;
        }
        let now = Instant::now();
        let mut cache = self.inner.cache.lock().unwrap();
        cache.remove(&key);
        cache.retain(|_, entry| entry.expires > now);
        let mut used: usize = cache.iter().map(|(key, entry)| size(key, &entry.result)).sum();
        while used + needed > budget {
            let soonest = cache.iter().min_by_key(|(_, entry)| entry.expires).map(|(key, _)| key.clone());
            let Some(entry) = soonest.and_then(|soonest| cache.remove_entry(&soonest)) else { break };
            used -= size(&entry.0, &entry.1.result);
        }
        cache.insert(key, CacheEntry { expires: now + ttl, result: result.to_owned() });
    }

    /// Drops every cached list and read result (and the cached `server/discover`).
    pub fn clear_cache(&self) {
        self.inner.cache.lock().unwrap().clear();
        *self.inner.discover_cache.lock().unwrap() = None;
    }

    pub(super) fn invalidate(&self, prefix: &str) {
        self.inner.cache.lock().unwrap().retain(|key, _| !key.starts_with(prefix));
    }
}

pub(super) fn cache_key(method: &str, arg: Option<&str>) -> String {
    format!("{method}\u{0}{}", arg.unwrap_or(""))
}

/// The freshness of a cacheable complete result: `None` when it must not be reused.
pub(super) fn ttl_of(result: &RawValue) -> Option<Duration> {
    #[derive(Deserialize)]
    struct Hints {
        #[serde(rename = "ttlMs")]
        ttl_ms: Option<mcp_types::TtlMs>,
    }
    if result_type(result).is_some_and(|t| t != "complete") {
        return None;
    }
    // Absent, negative or malformed: nothing to cache.
    let ttl = serde_json::from_str::<Hints>(result.get()).ok()?.ttl_ms?.duration();
    (!ttl.is_zero()).then_some(ttl)
}

#[cfg(test)]
mod tests {
    use mcp_types::ListToolsResult;

    use super::*;
    use crate::client::results::decode;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn ttl_and_normalization_follow_the_caching_rules() {
        assert_eq!(ttl_of(&raw(r#"{"ttlMs":1500}"#)), Some(Duration::from_millis(1500)));
        assert_eq!(ttl_of(&raw(r#"{"ttlMs":0}"#)), None);
        assert_eq!(ttl_of(&raw(r#"{"ttlMs":-5}"#)), None);
        assert_eq!(ttl_of(&raw(r#"{}"#)), None);
        assert_eq!(ttl_of(&raw(r#"{"ttlMs":10,"resultType":"input_required"}"#)), None);
        let page: ListToolsResult = decode("tools/list", &raw(r#"{"tools":[],"ttlMs":-3}"#)).unwrap();
        assert_eq!(page.ttl_ms.unwrap_or_default().duration(), Duration::ZERO);
        let page: ListToolsResult = decode("tools/list", &raw(r#"{"tools":[]}"#)).unwrap();
        assert_eq!((page.ttl_ms, page.cache_scope), (None, None));
    }
}
