#!/usr/bin/env bash
# Memory under a long load (issue 47): a client (mcp-client's `soak` example) makes --calls
# `tools/call`s of mcp-server's `echo` example, directly (mcp-server alone) or through mcp-gateway
# with echo as its HTTP upstream or its stdio child, in both eras, and reads the resident memory
# of the client itself and of the server or gateway at 10 %, 50 % and 100 % of the calls and after
# --idle-secs of rest. A scenario fails when either process grew by more than 10 % over its
# first reading. Release builds, loopback ports, fresh processes per scenario.
#
#   benches/soak/run.sh [--calls 1000000] [--clients 16] [--idle-secs 60]
#                       [--scenarios server-modern,server-legacy,gateway-http-modern,...]
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
calls=1000000 clients=16 idle=60
scenarios="server-modern,server-legacy,gateway-http-modern,gateway-http-legacy,gateway-stdio-modern,gateway-stdio-legacy"
while [ $# -gt 0 ]; do
  case "$1" in
    --calls) calls="$2" ;;
    --clients) clients="$2" ;;
    --idle-secs) idle="$2" ;;
    --scenarios) scenarios="$2" ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
  shift 2
done

cd "$repo"
cargo build --release --quiet -p mcp-gateway --bins
cargo build --release --quiet -p mcp-server --example echo
cargo build --release --quiet -p mcp-client --example soak
bin="$repo/target/release"
work="$(mktemp -d)"
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for() { for _ in $(seq 200); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done; cat "$1"; return 1; }

failed=0
IFS=, read -r -a chosen <<<"$scenarios"
for scenario in "${chosen[@]}"; do
  era="${scenario##*-}"
  echo "=== $scenario"
  echo_port="$(free_port)"
  "$bin/examples/echo" "127.0.0.1:$echo_port" 2>"$work/echo.log" & pids+=($!); echo_pid=$!
  wait_for "$work/echo.log" "serving"
  case "$scenario" in
    server-*) url="http://127.0.0.1:$echo_port/mcp"; watch="$echo_pid" ;;
    gateway-*)
      gateway_port="$(free_port)"
      case "$scenario" in
        gateway-http-*) upstream="url = \"http://127.0.0.1:$echo_port/mcp\"" ;;
        gateway-stdio-*) upstream="command = [\"$bin/examples/echo\"]" ;;
      esac
      printf 'listen = "127.0.0.1:%s"\n[[upstream]]\nname = "echo"\n%s\nprefix = ""\n' "$gateway_port" "$upstream" \
        >"$work/gateway.toml"
      RUST_LOG=warn "$bin/mcp-gateway" --config "$work/gateway.toml" 2>"$work/gateway.log" & pids+=($!); watch=$!
      wait_for "$work/gateway.log" "listening on"
      url="http://127.0.0.1:$gateway_port/mcp"
      ;;
  esac
  "$bin/examples/soak" --url "$url" --era "$era" --calls "$calls" --clients "$clients" \
    --idle-secs "$idle" --watch "$watch" || { echo "$scenario: memory grew (or calls failed)"; failed=1; }
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  pids=()
  sleep 0.5
done
exit "$failed"
