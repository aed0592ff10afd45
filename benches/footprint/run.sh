#!/usr/bin/env bash
# Build footprint of mcp-server / mcp-client beside rmcp, the official Rust SDK, doing the same
# job. Each program is built as a fresh project (with the peer benchmark's Cargo.lock, so that the
# crates both sides share resolve alike; rmcp 3.11.0) in a fresh target directory, one after the
# other: first `cargo build` (debug), then `cargo build --release` (the default release profile,
# `debug = false`), each in a target directory of its own.
#
# Rows (sources in benches/footprint/src/):
#   server     one `add` tool over stdio and Streamable HTTP; mcp-server with its default features
#              against rmcp `server, macros, transport-io, transport-streamable-http-server` + axum
#   protected  the same tool over Streamable HTTP behind JWT verification (the issuer's JWKS) and
#              OpenTelemetry (OTLP/HTTP); mcp-server with `auth` and `otel` against rmcp with
#              jsonwebtoken, reqwest, opentelemetry(-otlp, _sdk) and tracing-opentelemetry
#   client     calls `add` over stdio or Streamable HTTP; mcp-client with its default features
#              against rmcp `client, transport-streamable-http-client-reqwest, reqwest,
#              transport-child-process`
#
# For each program: crates (`cargo tree -e normal`, distinct packages including itself), the
# crates whose build script compiles C (those with `cc` as a build-dependency), wall and CPU
# (user + sys) seconds of each clean build, the 1-minute load average at its start and end, and
# the release binary's size, stripped (and as built).
#
#   benches/footprint/run.sh [--only ROW[,ROW...]] [-j JOBS] [--work DIR] [--timings]
#
#   --only      the rows to measure (default: server,protected,client)
#   -j          cargo's jobs (default: nproc)
#   --work DIR  build there and keep the projects, their stripped release binaries and timings
#               (default: a temporary directory, removed at exit); target directories are
#               removed once measured
#   --timings   pass --timings to every build and keep each cargo-timing.html in the work directory
#
# The tables go to stdout, progress to stderr. On a shared machine run it under `nice -n 19` and
# read the CPU seconds: wall time depends on what else runs.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

only="server,protected,client"
jobs="$(nproc)"
work=""
timings=""
while [ $# -gt 0 ]; do
  case "$1" in
    --only) only="$2"; shift 2 ;;
    -j) jobs="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --timings) timings="--timings"; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$work" ]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
work="$(cd "$work" && pwd)"

log() { echo "[$(date +%T)] $*" >&2; }
load() { cut -d' ' -f1 /proc/loadavg; }

# make_project NAME SOURCE DEPENDENCIES: a package NAME (one binary, NAME) in $work/NAME.
make_project() {
  local name="$1" source="$2" deps="$3"
  rm -rf "${work:?}/$name"
  mkdir -p "$work/$name/src"
  cat >"$work/$name/Cargo.toml" <<TOML
[workspace]
[package]
name = "$name"
version = "0.0.0"
edition = "2024"
publish = false
[dependencies]
$deps
[profile.release]
debug = false
TOML
  cp "$here/src/$source" "$work/$name/src/main.rs"
  cp "$repo/benches/peer/Cargo.lock" "$work/$name/Cargo.lock"
}

# build NAME PROFILE: a clean build in a fresh target directory; sets wall, cpu and loads.
build() {
  local name="$1" profile="$2" flag=""
  [ "$profile" = release ] && flag="--release"
  local target="$work/$name/target-$profile"
  rm -rf "$target"
  log "$name: cargo build $flag -j $jobs (load $(load))"
  local before after
  before="$(load)"
  (cd "$work/$name" && CARGO_TARGET_DIR="$target" /usr/bin/time -f '%e %U %S' -o "$work/$name/$profile.time" \
    cargo build --quiet --offline --locked -j "$jobs" $flag $timings)
  after="$(load)"
  local user sys
  read -r wall user sys <"$work/$name/$profile.time"
  cpu="$(echo "$user + $sys" | bc)"
  loads="$before→$after"
  if [ -n "$timings" ]; then
    cp "$target/cargo-timings/cargo-timing.html" "$work/$name/cargo-timing-$profile.html"
  fi
  log "$name: $profile built in $wall s wall, $cpu s CPU (load $before -> $after)"
}

# measure ROW SDK NAME: one table line; remembers crates, CPU seconds and size for the ratios.
declare -A crates_of debug_cpu_of release_cpu_of size_of
measure() {
  local row="$1" sdk="$2" name="$3"
  cd "$work/$name"
  log "$name: resolving and fetching"
  cargo fetch --quiet # resolves what the peer lockfile lacks (network), outside the timed builds
  local crates c_crates
  crates="$(cargo tree -e normal --prefix none | sed 's/ (\*)$//' | sort -u | wc -l)"
  # The build scripts that compile C: the crates with `cc` (any version) as a build-dependency.
  c_crates="$(cargo tree -e normal,build --prefix none | sed -n 's/^cc \(v[^ ]*\).*/\1/p' | sort -u |
    while read -r version; do
      cargo tree -e normal,build -i "cc@${version#v}" --depth 1 |
        awk '/^\[/ { build = ($0 == "[build-dependencies]") } build && /^(├|└)── / { print $2 }'
    done | sort -u | paste -sd, - | sed 's/,/, /g')"
  cd "$here"

  build "$name" debug
  local debug_wall="$wall" debug_cpu="$cpu" debug_loads="$loads"
  build "$name" release
  local binary="$work/$name/target-release/release/$name" size stripped
  size="$(stat -c %s "$binary")"
  cp "$binary" "$work/$name/$name" # kept, stripped
  strip "$work/$name/$name"
  stripped="$(stat -c %s "$work/$name/$name")"
  rm -rf "$work/$name/target-debug" "$work/$name/target-release"

  crates_of[$row/$sdk]="$crates"
  debug_cpu_of[$row/$sdk]="$debug_cpu"
  release_cpu_of[$row/$sdk]="$cpu"
  size_of[$row/$sdk]="$stripped"
  printf '| %s | %s | %s | %s | %.0f s | %.0f s | %.0f s | %.0f s | %.2f MiB (%.2f) | %s; %s |\n' \
    "$row" "$sdk" "$crates" "${c_crates:-none}" "$debug_wall" "$debug_cpu" "$wall" "$cpu" \
    "$(echo "$stripped / 1048576" | bc -l)" "$(echo "$size / 1048576" | bc -l)" "$debug_loads" "$loads"
}

ratio() { printf '%.2f×' "$(echo "$1 / $2" | bc -l)"; }
ratios() {
  local row="$1"
  printf '| %s | ours / rmcp | %s | | | %s | | %s | %s | |\n' "$row" \
    "$(ratio "${crates_of[$row/ours]}" "${crates_of[$row/rmcp]}")" \
    "$(ratio "${debug_cpu_of[$row/ours]}" "${debug_cpu_of[$row/rmcp]}")" \
    "$(ratio "${release_cpu_of[$row/ours]}" "${release_cpu_of[$row/rmcp]}")" \
    "$(ratio "${size_of[$row/ours]}" "${size_of[$row/rmcp]}")"
}

ours_server="mcp-server = { path = \"$repo/crates/mcp-server\" }"
ours_client="mcp-client = { path = \"$repo/crates/mcp-client\" }"
rmcp='rmcp = { version = "=3.11.0", features'
axum='axum = { version = "0.8.9", default-features = false, features = ["http1", "tokio"'
tokio='tokio = { version = "1.54", features = ["rt-multi-thread", "macros", "net", "io-std"] }'
derives='serde = { version = "1.0.219", features = ["derive"] }
serde_json = "1.0.140"
schemars = "1.2"'

for row in ${only//,/ }; do
  case "$row" in
    server)
      make_project server-ours server-ours.rs "$ours_server
$tokio
$derives"
      make_project server-rmcp server-rmcp.rs "$rmcp = [\"server\", \"macros\", \"transport-io\", \"transport-streamable-http-server\"] }
$axum] }
$tokio
$derives"
      ;;
    protected)
      make_project protected-ours protected-ours.rs "mcp-server = { path = \"$repo/crates/mcp-server\", features = [\"auth\", \"otel\"] }
$tokio
$derives"
      # The same crates mcp-server's `auth` and `otel` take, with the same features.
      make_project protected-rmcp protected-rmcp.rs "$rmcp = [\"server\", \"macros\", \"transport-streamable-http-server\"] }
$axum, \"json\"] }
$tokio
$derives
jsonwebtoken = { version = \"11.1\", default-features = false, features = [\"rust_crypto\"] }
reqwest = { version = \"0.13.5\", default-features = false, features = [\"json\", \"rustls\"] }
opentelemetry = { version = \"0.33\", default-features = false, features = [\"trace\", \"metrics\"] }
opentelemetry_sdk = { version = \"0.33\", default-features = false, features = [\"trace\", \"metrics\"] }
opentelemetry-otlp = { version = \"0.33\", default-features = false, features = [\"trace\", \"metrics\", \"http-proto\", \"reqwest-blocking-client\"] }
tracing-opentelemetry = { version = \"0.34\", default-features = false, features = [\"metrics\"] }
tracing-subscriber = { version = \"0.3.20\", default-features = false, features = [\"std\", \"registry\", \"fmt\", \"env-filter\", \"ansi\"] }
tracing = \"0.1.44\""
      ;;
    client)
      make_project client-ours client-ours.rs "$ours_client
tokio = { version = \"1.54\", features = [\"rt-multi-thread\", \"macros\"] }
serde_json = \"1.0.140\""
      make_project client-rmcp client-rmcp.rs "$rmcp = [\"client\", \"transport-streamable-http-client-reqwest\", \"reqwest\", \"transport-child-process\"] }
tokio = { version = \"1.54\", features = [\"rt-multi-thread\", \"macros\", \"process\"] }
serde_json = \"1.0.140\""
      ;;
    *) echo "run.sh: unknown row $row (server, protected, client)" >&2; exit 2 ;;
  esac
done

echo "Clean builds with -j $jobs on $(nproc) CPUs; wall and CPU (user + sys) seconds; 1-min load at each build's start→end."
echo
echo "| row | SDK | crates | C compiled by | debug wall | debug CPU | release wall | release CPU | release binary, stripped (as built) | load (debug; release) |"
echo "|---|---|---:|---|---:|---:|---:|---:|---:|---|"
for row in ${only//,/ }; do
  measure "$row" ours "$row-ours"
  measure "$row" rmcp "$row-rmcp"
  ratios "$row"
done
