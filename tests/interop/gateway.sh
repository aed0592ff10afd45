#!/usr/bin/env bash
# Interop (gateway, issue 29): mcp-gateway in front of three upstreams nobody at the gateway wrote
# or built for it: the TypeScript everything server (stdio, legacy era), a Python SDK server
# (Streamable HTTP, the default `era = "auto"`) and this workspace's notes example (stdio); used
# by the official clients in either era:
#   - typescript-sdk-v2: @modelcontextprotocol/client pinned to 2026-07-28 (gateway/ts_client.mjs)
#   - python-sdk: the Python SDK client, 2025-11-25 (gateway/py_client.py)
# Both answer the elicitation of the Python server's `ask_name`: the legacy server's request
# reaches the modern client as an input request (the era bridge), the legacy one as a request.
# The Python server speaks 2026-07-28 too, but refuses to elicit in it (issue 44, item 4): the
# gateway's first `ask_name` is refused there, and `auto` moves that upstream to the legacy era
# and sends the call again; the log has to say so once.
# Uses what run.sh (the everything server, the Python venv and its server) and apps.sh (the v2
# client) install; run those first. Binds 127.0.0.1 only; exits non-zero on any failure.
set -euo pipefail

INTEROP_NAME=interop-gateway
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
EVERYTHING="$CACHE/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
PY="$CACHE/venv/bin/python"
V2_MODULES="$CACHE/apps-npm/node_modules"
LOGS="$CACHE/gateway"
fresh_logs "$LOGS"
find_node
[ -f "$EVERYTHING" ] && [ -x "$PY" ] && [ -f "$CACHE/py_server.py" ] ||
  die "the everything server and the Python SDK are not installed: run tests/interop/run.sh first"
[ -f "$V2_MODULES/@modelcontextprotocol/client/package.json" ] ||
  die "the TypeScript SDK v2 client is not installed: run tests/interop/apps.sh first"

# The same features as .ci/run's example build, so that CI reuses it.
(cd "$ROOT" && cargo build --quiet --workspace --all-features --bins --examples)

kill_on_exit

PY_PORT=$(free_port)
"$PY" "$CACHE/py_server.py" http "$PY_PORT" > "$LOGS/python.log" 2>&1 & PIDS+=($!)
wait_port "$PY_PORT"
GW_PORT=$(free_port)
cat > "$LOGS/gateway.toml" <<TOML
listen = "127.0.0.1:$GW_PORT"

[[upstream]]
name = "everything"
command = ["$NODE", "$EVERYTHING", "stdio"]

[[upstream]]
name = "py"
url = "http://127.0.0.1:$PY_PORT/mcp"

[[upstream]]
name = "notes"
command = ["$TARGET_DIR/debug/examples/notes"]
TOML
# Its metrics on a Prometheus exposition endpoint (mcp_server::otel), checked after the clients ran.
METRICS_PORT=$(free_port)
OTEL_METRICS_EXPORTER=prometheus OTEL_EXPORTER_PROMETHEUS_HOST=127.0.0.1 OTEL_EXPORTER_PROMETHEUS_PORT="$METRICS_PORT" \
  OTEL_TRACES_EXPORTER=none "$TARGET_DIR/debug/mcp-gateway" --config "$LOGS/gateway.toml" > "$LOGS/gateway.log" 2>&1 &
PIDS+=($!)
wait_port "$GW_PORT"
URL="http://127.0.0.1:$GW_PORT/mcp"

failed=0
failures=()
leg() {
  local name="$1"
  shift
  if out="$("$@" 2> "$LOGS/$name.err")"; then
    printf '%-20s PASS  %s\n' "$name" "$out"
  else
    printf '%-20s FAIL  %s\n' "$name" "$(tail -n 5 "$LOGS/$name.err" | tr '\n' ' ')"
    failures+=("$name: $(tail -n 40 "$LOGS/$name.err")")
    failed=1
  fi
}
leg typescript-sdk-v2 env MCP_INTEROP_NODE_MODULES="$V2_MODULES" "$NODE" "$ROOT/tests/interop/gateway/ts_client.mjs" "$URL"
leg python-sdk "$PY" "$ROOT/tests/interop/gateway/py_client.py" "$URL"
# Each upstream's requests and state, by name.
metrics="$(curl -sf "http://127.0.0.1:$METRICS_PORT/metrics" || true)"
for wanted in 'mcp_gateway_upstream_duration_seconds_count{.*mcp_gateway_upstream="py"' \
  'mcp_gateway_upstream_duration_seconds_count{.*mcp_gateway_upstream="everything"' \
  'mcp_gateway_upstream_up{.*mcp_gateway_upstream="notes".*} 1'; do
  # A here-string, not a pipe: with pipefail, grep -q quitting at its match would fail printf
  # (SIGPIPE) once the exposition outgrows the pipe's buffer.
  if grep -qE "$wanted" <<<"$metrics"; then
    printf '%-20s PASS  %s\n' metrics "$wanted"
  else
    printf '%-20s FAIL  no %s in:\n%s\n' metrics "$wanted" "$(printf '%s\n' "$metrics" | grep mcp_gateway | head -20)"
    failures+=("metrics: no $wanted")
    failed=1
  fi
done
# `auto` chose the legacy era for the Python upstream, once, saying why.
switched="$(grep -c 'now speaks the legacy era to this upstream.*upstream="py".*elicitation/create' "$LOGS/gateway.log" || true)"
if [ "$switched" = 1 ]; then
  printf '%-20s PASS  %s\n' era-auto 'py moved to the legacy era once (it cannot elicit in 2026-07-28)'
else
  printf '%-20s FAIL  %s\n' era-auto "the gateway logged the move of py to the legacy era $switched times, not once"
  failures+=("era-auto: logged $switched times")
  failed=1
fi
if [ "$failed" != 0 ]; then
  log "the gateway's log:"
  sed 's/^/    /' "$LOGS/gateway.log" >&2
  # Again after the log, so that a report keeping only the end of the output still says what failed.
  for failure in "${failures[@]}"; do log "FAILED $failure"; done
fi
exit "$failed"
