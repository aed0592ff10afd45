//! What the peer benchmark's binaries share: the realistic cell's tools ([`workload`]), written
//! once so that `ours` and `rmcp` differ only in the SDK around them, and the results file and
//! charts the driver writes ([`report`]).

pub mod report;
pub mod workload;
