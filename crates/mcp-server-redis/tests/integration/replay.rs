//! The DPoP replay store on a real Redis: a proof's first use wins on every store of one
//! deployment, and one DPoP key holds at most its share.
#![cfg(feature = "auth")]

use crate::support;

use std::time::{SystemTime, UNIX_EPOCH};

use mcp_server::auth::{ProofUse, ReplayStore};
use mcp_server_redis::Redis;
use support::RedisServer;

fn in_secs(seconds: u64) -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + seconds
}

/// Figures: with `per_key` 2, a key's third live proof is refused (`TooMany`) while another key
/// still records; a proof recorded through one store is `Replayed` through another.
#[tokio::test]
async fn a_proof_is_first_once_across_stores_and_a_key_holds_its_share() {
    let server = RedisServer::start();
    let (one, two) = (Redis::open(&server.url()).unwrap(), Redis::open(&server.url()).unwrap());
    let (one, two) = (one.replay_store(2), two.replay_store(2));
    assert_eq!(one.record("key-a", "j1", in_secs(60)).await.unwrap(), ProofUse::First);
    assert_eq!(two.record("key-a", "j1", in_secs(60)).await.unwrap(), ProofUse::Replayed);
    assert_eq!(two.record("key-a", "j2", in_secs(60)).await.unwrap(), ProofUse::First);
    assert_eq!(one.record("key-a", "j3", in_secs(60)).await.unwrap(), ProofUse::TooMany);
    assert_eq!(one.record("key-b", "j3", in_secs(60)).await.unwrap(), ProofUse::First);
}

/// Figure: an expiry already past is stored for at least a second, so a replay right after is
/// still refused.
#[tokio::test]
async fn a_proof_expiring_now_is_still_refused_when_replayed_at_once() {
    let server = RedisServer::start();
    let store = Redis::open(&server.url()).unwrap().replay_store(8);
    assert_eq!(store.record("key", "late", in_secs(0) - 5).await.unwrap(), ProofUse::First);
    assert_eq!(store.record("key", "late", in_secs(0) - 5).await.unwrap(), ProofUse::Replayed);
}

/// Figure: with Redis down the store answers an error (the request gets 503), never `First`.
#[tokio::test]
async fn redis_down_is_an_error_not_an_acceptance() {
    let mut server = RedisServer::start();
    let store = Redis::open(&server.url()).unwrap().with_timeout(std::time::Duration::from_millis(300)).replay_store(8);
    server.stop();
    assert!(store.record("key", "j", in_secs(60)).await.is_err());
}
