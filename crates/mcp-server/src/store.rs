//! What every shared store (tasks, sessions, events, used states, DPoP proofs) returns: the
//! ground the stores stand on, so that none of them imports another.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

/// What a store method returns.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Why a store could not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreError(pub String);

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StoreError {}
