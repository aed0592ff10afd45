#!/usr/bin/env bash
# Build footprint of a one-tool server (the peer benchmark's `add` over stdio and Streamable HTTP)
# on mcp-server with its default features and on rmcp: crates in the build, clean release build
# time and binary size, each in a fresh project and target directory, one after the other.
#
#   benches/footprint/run.sh [-j JOBS]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
jobs="${2:-$(nproc)}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

make_project() {
  local name="$1" deps="$2" source="$3"
  mkdir -p "$work/$name/src"
  cat >"$work/$name/Cargo.toml" <<TOML
[workspace]
[package]
name = "$name-one-tool"
version = "0.0.0"
edition = "2024"
publish = false
[dependencies]
$deps
[profile.release]
debug = false
TOML
  cp "$source" "$work/$name/src/main.rs"
  # Same resolution as the peer benchmark.
  cp "$repo/benches/peer/Cargo.lock" "$work/$name/Cargo.lock"
}

common='tokio = { version = "1.54", features = ["rt-multi-thread", "macros", "net", "io-std"] }
serde = { version = "1.0.219", features = ["derive"] }
serde_json = "1.0.140"
schemars = "1.2"'
make_project ours "mcp-server = { path = \"$repo/crates/mcp-server\" }
$common" "$repo/benches/peer/src/bin/ours.rs"
make_project rmcp 'rmcp = { version = "=3.11.0", features = ["server", "macros", "transport-io", "transport-streamable-http-server"] }
axum = { version = "0.8.9", default-features = false, features = ["http1", "tokio"] }
'"$common" "$repo/benches/peer/src/bin/rmcp.rs"

echo "| server | crates (normal deps, incl. itself) | clean release build (-j $jobs) | binary |"
echo "|---|---:|---:|---:|"
for name in ours rmcp; do
  cd "$work/$name"
  cargo fetch --quiet
  crates="$(cargo tree -e normal --prefix none | sed 's/ (\*)$//' | sort -u | wc -l)"
  start="$(date +%s.%N)"
  CARGO_TARGET_DIR="$work/$name/target" cargo build --quiet --release --offline -j "$jobs"
  seconds="$(echo "$(date +%s.%N) - $start" | bc)"
  size="$(stat -c %s "$work/$name/target/release/$name-one-tool")"
  printf '| %s | %s | %.1f s | %.2f MiB |\n' "$name" "$crates" "$seconds" "$(echo "$size / 1048576" | bc -l)"
done
