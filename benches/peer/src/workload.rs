//! The realistic cell's three tools, shaped like the public cross-language MCP server benchmarks:
//! one doing I/O on a real Redis (`record`: GET, a small JSON transform, SET), one CPU-bound
//! (`fibonacci`, computed the naive recursive way), one returning a large text (`blob`, 100 KiB by
//! default). Both servers call these functions with the same Redis client crate and connection
//! type, so the figures compare the SDKs, not the tools.

use redis::AsyncCommands as _;
use serde::{Deserialize, Serialize};

/// The environment variable that gives the servers Redis's URL (`redis://127.0.0.1:PORT`).
pub const REDIS_URL: &str = "PEER_REDIS_URL";
/// The `n` the driver asks `fibonacci` for, and its answer.
pub const FIBONACCI_N: u32 = 25;
pub const FIBONACCI_ANSWER: u64 = 75_025;
/// How many KiB `blob` returns.
pub const BLOB_KIB: u32 = 100;
/// How many values a record keeps.
const HISTORY: usize = 8;

/// `record`'s arguments: the client's key and the value to add to it.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct RecordArgs {
    pub key: String,
    pub value: i64,
}

/// `fibonacci`'s arguments.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct FibonacciArgs {
    pub n: u32,
}

/// `blob`'s arguments: its size and a seed that starts its text (so that an answer is checked as
/// the one to its request).
#[derive(Deserialize, schemars::JsonSchema)]
pub struct BlobArgs {
    pub kib: u32,
    pub seed: i64,
}

/// What `record` keeps under a key, as JSON.
#[derive(Serialize, Deserialize, Default)]
pub struct Record {
    pub count: u64,
    pub total: i64,
    pub history: Vec<i64>,
}

/// A multiplexed Redis connection, cloned into every request.
#[derive(Clone)]
pub struct Store(redis::aio::ConnectionManager);

impl Store {
    /// Connects to the Redis named by [`REDIS_URL`].
    pub async fn connect() -> Result<Store, String> {
        let url = std::env::var(REDIS_URL).map_err(|_| format!("{REDIS_URL} is not set"))?;
        let client = redis::Client::open(url.as_str()).map_err(|e| e.to_string())?;
        Ok(Store(redis::aio::ConnectionManager::new(client).await.map_err(|e| e.to_string())?))
    }

    /// `record`: reads the key's record, adds `value`, writes it back; returns the new record's JSON.
    pub async fn record(&self, args: RecordArgs) -> Result<String, String> {
        let mut redis = self.0.clone();
        let key = format!("peer-bench:{}", args.key);
        let stored: Option<String> = redis.get(&key).await.map_err(|e| e.to_string())?;
        let mut record: Record = match stored {
            Some(json) => serde_json::from_str(&json).map_err(|e| e.to_string())?,
            None => Record::default(),
        };
        record.count += 1;
        record.total += args.value;
        record.history.push(args.value);
        if record.history.len() > HISTORY {
            record.history.remove(0);
        }
        let json = serde_json::to_string(&record).map_err(|e| e.to_string())?;
        let () = redis.set(&key, &json).await.map_err(|e| e.to_string())?;
        Ok(json)
    }
}

/// `fibonacci`: the naive recursion, a fixed amount of CPU per call.
pub fn fibonacci(n: u32) -> u64 {
    if n < 2 { u64::from(n) } else { fibonacci(n - 1) + fibonacci(n - 2) }
}

/// `blob`: `kib` KiB of text starting with the seed.
pub fn blob(args: BlobArgs) -> String {
    let size = args.kib as usize * 1024;
    let mut text = format!("{}:", args.seed);
    while text.len() < size {
        text.push_str("0123456789abcdefghijklmnopqrstuvwxyz");
    }
    text.truncate(size);
    text
}
