//! DPoP proofs already used ([`ReplayStore`]), shared by every instance of a deployment.

use mcp_server::auth::{ProofUse, ReplayStore};
use mcp_server::tasks::StoreError;

use crate::connection::Redis;

const REPLAY: &str = "DPoP replay store";

/// Records a proof only if its key is absent and its DPoP key's count allows: 1 first use,
/// 0 replayed, 2 the key holds its share. The count expires with the latest proof it counted,
/// so it never outlives what it bounds.
const RECORD: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local count = tonumber(redis.call('GET', KEYS[2]) or '0')
if count >= tonumber(ARGV[2]) then return 2 end
redis.call('SET', KEYS[1], 1, 'EXAT', ARGV[1])
redis.call('INCR', KEYS[2])
if redis.call('EXPIRETIME', KEYS[2]) < tonumber(ARGV[1]) then redis.call('EXPIREAT', KEYS[2], ARGV[1]) end
return 1
";

/// The `jti`s of DPoP proofs already used, in Redis: `PREFIXdpop:{KEY}:JTI` per proof (`SET`
/// only if absent, expiring when the proof is too old anyway), and `PREFIXdpop-count:{KEY}`
/// counting the proofs of one DPoP key (thumbprint `KEY`) until the last of them expires: at
/// most [`Redis::replay_store`]'s `per_key` proofs per key, so that one key cannot fill Redis.
/// A proof used on one instance is refused on every other; an unreachable Redis refuses the
/// request (503), never accepts a proof unchecked.
#[derive(Clone, Debug)]
pub struct RedisReplayStore {
    redis: Redis,
    per_key: u64,
}

impl Redis {
    /// The DPoP replay store of this deployment, holding at most `per_key` proofs of one DPoP
    /// key at once (e.g. 16,384: about 130 requests a second per client in a 60 s window);
    /// a key over it gets its proofs refused until its oldest age out.
    pub fn replay_store(&self, per_key: u64) -> RedisReplayStore {
        RedisReplayStore { redis: self.clone(), per_key: per_key.max(1) }
    }
}

impl ReplayStore for RedisReplayStore {
    fn record<'a>(
        &'a self,
        key: &'a str,
        jti: &'a str,
        until: u64,
    ) -> futures::future::BoxFuture<'a, Result<ProofUse, StoreError>> {
        Box::pin(async move {
            // The braces keep both keys in one cluster slot.
            let proof = self.redis.key("dpop", &format!("{{{key}}}:{jti}"));
            let count = self.redis.key("dpop-count", &format!("{{{key}}}"));
            // An expiry already past would make the key vanish at once and accept a replay.
            let until = until.max(crate::connection::now_ms() / 1000 + 1);
            let script = redis::Script::new(RECORD);
            let mut invocation = script.key(&proof);
            invocation.key(&count).arg(until).arg(self.per_key);
            let verdict: i64 = self.redis.invoke(REPLAY, invocation).await?;
            Ok(match verdict {
                1 => ProofUse::First,
                0 => ProofUse::Replayed,
                _ => ProofUse::TooMany,
            })
        })
    }
}
