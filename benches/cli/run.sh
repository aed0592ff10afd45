#!/usr/bin/env bash
# `mcp call` beside the official MCP Inspector CLI on the same `tools/call`, as whole processes:
# wall time and peak RSS over stdio (the server started by the client) and over Streamable HTTP
# (one local server on 127.0.0.1), every answer checked. See benches/cli/README.md.
#
#   benches/cli/run.sh [--runs N] [--no-npx] [--no-build]
#
# Needs cargo, python3, GNU time, node and npm; installs the Inspector (pinned: INSPECTOR_VERSION, default
# below) under TARGET/bench-cli/npm. Only loopback is used, and what it starts it stops.
set -euo pipefail

runs=20
npx=1
build=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs="${2:?--runs takes a number}"; shift 2 ;;
    --runs=*) runs="${1#--runs=}"; shift ;;
    --no-npx) npx=0; shift ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown argument $1 (--runs N, --no-npx, --no-build)" >&2; exit 2 ;;
  esac
done
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: --runs takes a positive number, not $runs" >&2; exit 2; }

inspector_version="${INSPECTOR_VERSION:-2.12.0}"
for tool in cargo python3 node npm; do
  command -v "$tool" >/dev/null || { echo "run.sh: $tool is not installed (needed: cargo, python3, node, npm)" >&2; exit 1; }
done
gnu_time="${GNU_TIME:-/usr/bin/time}"
"$gnu_time" --version 2>&1 | grep -q 'GNU Time' \
  || { echo "run.sh: GNU time is not at $gnu_time (Debian: apt-get install time; or set GNU_TIME)" >&2; exit 1; }
if [[ $npx == 1 ]] && ! command -v npx >/dev/null; then
  echo "run.sh: npx is not installed (or pass --no-npx)" >&2; exit 1
fi

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$repo"
target="${CARGO_TARGET_DIR:-$repo/target}"
[[ "$target" = /* ]] || target="$repo/$target"
work="$target/bench-cli"
mkdir -p "$work/npm" "$work/home"

if [[ $build == 1 ]]; then
  echo "building mcp and the echo example (release)…" >&2
  cargo build --quiet --release -p mcp-cli
  cargo build --quiet --release -p mcp-server --example echo --features stdio,http
fi
mcp="$target/release/mcp"
server="$target/release/examples/echo"
for binary in "$mcp" "$server"; do
  [[ -x "$binary" ]] || { echo "run.sh: $binary is missing (run without --no-build)" >&2; exit 1; }
done

inspector_dir="$work/npm/node_modules/@modelcontextprotocol/inspector"
installed="$(node -p "require('$inspector_dir/package.json').version" 2>/dev/null || true)"
if [[ "$installed" != "$inspector_version" ]]; then
  echo "installing @modelcontextprotocol/inspector@$inspector_version into $work/npm…" >&2
  npm install --prefix "$work/npm" --save-exact --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/inspector@$inspector_version" >&2
fi
inspector_bin="$inspector_dir/$(node -p "require('$inspector_dir/package.json').bin['mcp-inspector']")"
[[ -f "$inspector_bin" ]] || { echo "run.sh: the Inspector's bin script is not at $inspector_bin" >&2; exit 1; }

# The HTTP leg's server: the same example, on a free loopback port.
log="$(mktemp)"
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -f "$log"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
"$server" 127.0.0.1:0 2>"$log" >/dev/null &
server_pid=$!
url=""
for _ in $(seq 100); do
  url="$(grep -o 'http://127\.0\.0\.1:[0-9]*/mcp' "$log" || true)"
  [[ -n "$url" ]] && break
  kill -0 "$server_pid" 2>/dev/null || { echo "run.sh: the HTTP server exited: $(tail -1 "$log")" >&2; exit 1; }
  sleep 0.1
done
[[ -n "$url" ]] || { echo "run.sh: the HTTP server did not report its address in 10 s" >&2; exit 1; }

node_bin="$(command -v node)"
npx_args=()
[[ $npx == 1 ]] && npx_args=(--npx "$(command -v npx)")
echo "mcp: $mcp ($(stat -c %s "$mcp") bytes); Inspector $inspector_version on node $("$node_bin" --version); server $url" >&2
python3 "$here/bench.py" --runs "$runs" --mcp "$mcp" --server "$server" --url "$url" \
  --node "$node_bin" --inspector "$inspector_bin" --npm-dir "$work/npm" --home "$work/home" \
  --time "$gnu_time" --json-out "$work/results.json" "${npx_args[@]}"

stripped="$work/mcp.stripped"
if command -v strip >/dev/null; then
  strip -o "$stripped" "$mcp"
  python3 -c 'import os, sys; a, b = (os.path.getsize(p) for p in sys.argv[1:])
print(f"\nmcp release binary: {a} bytes ({a / 2**20:.2f} MiB); stripped: {b} bytes ({b / 2**20:.2f} MiB)")' \
    "$mcp" "$stripped"
  rm -f "$stripped"
fi
