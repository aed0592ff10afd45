#!/usr/bin/env bash
# Memory under a long load (issue 47): a client (mcp-client's `soak` example) makes --calls
# `tools/call`s of mcp-server's `echo` example, directly (mcp-server alone) or through mcp-gateway
# with echo as its HTTP upstream or its stdio child, in both eras, and reads the resident memory
# of the client itself and of the server or gateway at 10 %, 50 % and 100 % of the calls and after
# --idle-secs of rest. A scenario fails when either process grew by more than 10 % over its
# first reading. Release builds (the gateway with its default features, `otel` and `mimalloc`),
# loopback ports, fresh processes per scenario.
#
#   benches/soak/run.sh [--calls 1000000] [--clients 16] [--idle-secs 60]
#                       [--scenarios server-modern,server-legacy,gateway-http-modern,...]
#
# Scenarios: `server-<era>` and `gateway-<http|stdio>-<era>[-<config>]`, era `modern` or
# `legacy`. The gateway's optional configuration is one of these, or several joined by `+`
# (`gateway-http-modern-auth+redis+otel`):
#
#   auth   `[authorization]`: the gateway verifies JWT access tokens (resource: its own URL,
#          required scope `mcp:tools`) of a tiny issuer on loopback (`soak --issuer`: RFC 8414
#          metadata and a JWKS with one fixed ES256 test key); the client sends the token that
#          issuer printed as `Authorization: Bearer` on every request.
#   redis  `[redis]` (sessions, SSE events, tasks, used states, DPoP replay with `auth`) in a
#          `redis-server` started on a free loopback port (`--save '' --appendonly no`) and
#          stopped with the scenario; its `used_memory` and key count are printed at the end.
#   otel   traces and metrics exported over OTLP/HTTP (`OTEL_EXPORTER_OTLP_ENDPOINT`, metrics
#          every 5 s by `OTEL_METRIC_EXPORT_INTERVAL`, `RUST_LOG=info` so that the request spans
#          are recorded) to a python3 sink on loopback that answers 200 and discards the body;
#          the bytes it received are printed at the end.
#
# Without a configuration (`gateway-http-modern`) the gateway has none of these and logs at warn.
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
stop_all() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; pids=(); }
cleanup() { stop_all; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for() { for _ in $(seq 200); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done; cat "$1"; return 1; }
rss() { awk '/^VmRSS:/ { printf "%.1f MiB", $2 / 1024 }' "/proc/$1/status" 2>/dev/null || echo "-"; }

# The OTLP/HTTP sink: 200 to every POST, the body read and dropped; the total on SIGTERM.
otlp_sink='
import http.server, signal, sys
total = [0, 0]
class Sink(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        length = int(self.headers.get("content-length", 0))
        self.rfile.read(length)
        total[0] += 1; total[1] += length
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()
    def log_message(self, *args): pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink)
def stop(*_):
    print(f"otlp sink: {total[0]} posts, {total[1]} bytes", flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
print("sink ready", flush=True)
server.serve_forever()
'

failed=0
IFS=, read -r -a chosen <<<"$scenarios"
for scenario in "${chosen[@]}"; do
  IFS=- read -r kind transport era config <<<"$scenario"
  case "$kind" in server) config="$era" era="$transport" transport="" ;; esac
  config="${config:-}"
  if [ "$kind" = server ] && [ -n "$config" ]; then echo "$scenario: configurations are the gateway's" >&2; exit 2; fi
  case "$era" in modern | legacy) ;; *) echo "unknown scenario $scenario" >&2; exit 2 ;; esac
  echo "=== $scenario"
  echo_port="$(free_port)"
  "$bin/examples/echo" "127.0.0.1:$echo_port" 2>"$work/echo.log" & pids+=($!); echo_pid=$!
  wait_for "$work/echo.log" "serving"
  soak_flags=()
  case "$kind" in
    server) url="http://127.0.0.1:$echo_port/mcp"; watch="$echo_pid" ;;
    gateway)
      gateway_port="$(free_port)"
      url="http://127.0.0.1:$gateway_port/mcp"
      case "$transport" in
        http) upstream="url = \"http://127.0.0.1:$echo_port/mcp\"" ;;
        stdio) upstream="command = [\"$bin/examples/echo\"]" ;;
        *) echo "unknown scenario $scenario" >&2; exit 2 ;;
      esac
      printf 'listen = "127.0.0.1:%s"\n[[upstream]]\nname = "echo"\n%s\nprefix = ""\n' "$gateway_port" "$upstream" \
        >"$work/gateway.toml"
      gateway_env=(RUST_LOG=warn)
      redis_pid="" redis_port="" sink_pid=""
      IFS=+ read -r -a parts <<<"$config"
      for part in "${parts[@]}"; do
        case "$part" in
          auth)
            issuer_port="$(free_port)"
            "$bin/examples/soak" --issuer "127.0.0.1:$issuer_port" --audience "$url" >"$work/issuer.out" 2>&1 &
            pids+=($!)
            wait_for "$work/issuer.out" "\."
            soak_flags+=(--bearer "$(head -n 1 "$work/issuer.out")")
            printf '[authorization]\nresource = "%s"\nissuer = "http://127.0.0.1:%s"\nrequired_scopes = ["mcp:tools"]\n' \
              "$url" "$issuer_port" >>"$work/gateway.toml"
            ;;
          redis)
            redis_port="$(free_port)"
            redis-server --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no >"$work/redis.log" 2>&1 &
            pids+=($!); redis_pid=$!
            wait_for "$work/redis.log" "Ready to accept connections"
            printf '[redis]\nurl = "redis://127.0.0.1:%s"\nstate_secret = "soak-benchmark-state-secret-of-at-least-32-bytes"\n' \
              "$redis_port" >>"$work/gateway.toml"
            ;;
          otel)
            sink_port="$(free_port)"
            python3 -c "$otlp_sink" "$sink_port" >"$work/sink.log" 2>&1 & pids+=($!); sink_pid=$!
            wait_for "$work/sink.log" "sink ready"
            gateway_env=(RUST_LOG=info OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$sink_port"
              OTEL_METRIC_EXPORT_INTERVAL=5000 OTEL_SERVICE_NAME=mcp-gateway-soak)
            ;;
          "") ;;
          *) echo "unknown configuration $part in $scenario" >&2; exit 2 ;;
        esac
      done
      env "${gateway_env[@]}" "$bin/mcp-gateway" --config "$work/gateway.toml" 2>"$work/gateway.log" & pids+=($!); watch=$!
      wait_for "$work/gateway.log" "listening on"
      ;;
    *) echo "unknown scenario $scenario" >&2; exit 2 ;;
  esac
  "$bin/examples/soak" --url "$url" --era "$era" --calls "$calls" --clients "$clients" \
    --idle-secs "$idle" --watch "$watch" "${soak_flags[@]}" || { echo "$scenario: memory grew (or calls failed)"; failed=1; }
  if [ "$kind" = gateway ]; then
    [ "$transport" = http ] && echo "upstream echo: $(rss "$echo_pid")"
    echo "gateway log: $(wc -l <"$work/gateway.log") lines"
    grep -v "listening on" "$work/gateway.log" | tail -n 3 || true
    if [ -n "$redis_pid" ]; then
      echo "redis-server: $(rss "$redis_pid"), $(redis-cli -p "$redis_port" info memory | grep -m1 '^used_memory_human' | tr -d '\r'), $(redis-cli -p "$redis_port" dbsize | tr -d '\r') keys"
    fi
    if [ -n "$sink_pid" ]; then
      kill "$sink_pid" 2>/dev/null || true
      wait "$sink_pid" 2>/dev/null || true
      cat "$work/sink.log"
    fi
  fi
  stop_all
  sleep 0.5
done
exit "$failed"
