#!/bin/sh
# Builds the peer benchmark (release) and runs it; arguments go to the driver, e.g. --seconds 5.
# The run is added to RESULTS.md (newest first) with its charts in charts/; pass --results DIR to
# write them elsewhere.
set -e
cd "$(dirname "$0")"
CARGO_INCREMENTAL=0 cargo build --release --bins --quiet
exec ./target/release/driver --results "$PWD" "$@"
