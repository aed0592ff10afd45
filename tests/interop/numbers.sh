#!/usr/bin/env bash
# Interop (numbers, issue 24): the official SDK clients call the `echo` example's tool with the
# floats their own serializers write (JSON.stringify, json.dumps: 6.02214076e+23, 1e+21, 5e-324,
# 1.7976931348623157e+308, -0.0 / 0) over stdio and Streamable HTTP, and check that the structured
# content they get back holds the same numbers; the Python leg also checks that an int beyond 64
# bits is refused with -32602 naming the member and the integer, never turned into a float.
#   - typescript-sdk: tests/interop/numbers/ts_client.mjs
#   - python-sdk: tests/interop/numbers/py_client.py
# Uses the SDKs tests/interop/auth.sh installs (same cache); run that first. Exits non-zero on
# any difference; binds 127.0.0.1 only.
# The same clients then call the tool through mcp-gateway (issue 48): one gateway in front of the
# example over Streamable HTTP and one in front of it over stdio. The result passes the gateway as
# the example spelled it (`Client::call_tool_raw`, `ToolSource::answer`), and the integer beyond
# 64 bits is refused by the gateway, as by the example, naming the member.
set -euo pipefail

INTEROP_NAME=interop-numbers
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
TS_MODULES="$CACHE/auth-npm/node_modules"
PY="$CACHE/venv/bin/python"
LOGS="$CACHE/numbers"
fresh_logs "$LOGS"
find_node
[ -f "$TS_MODULES/@modelcontextprotocol/sdk/package.json" ] && [ -x "$PY" ] ||
  die "the TypeScript and Python SDKs are not installed: run tests/interop/auth.sh first"

# The same features as .ci/run's example build (the whole workspace's), so that CI reuses it.
(cd "$ROOT" && cargo build --quiet --workspace --all-features --bins --examples)
ECHO="$TARGET_DIR/debug/examples/echo"

"$ECHO" 127.0.0.1:0 > /dev/null 2> "$LOGS/echo.err" &
kill_on_exit
PIDS+=($!)
URL=""
for _ in $(seq 1 100); do
  URL="$(sed -n 's/.*serving \(http[^ ]*\).*/\1/p' "$LOGS/echo.err" | head -n1)"
  [ -n "$URL" ] && break
  kill -0 "${PIDS[0]}" 2>/dev/null || break
  sleep 0.1
done
[ -n "$URL" ] || { cat "$LOGS/echo.err" >&2; die "the echo example did not start"; }

failed=0
leg() {
  local name="$1"
  shift
  if out="$("$@" 2> "$LOGS/$name.err")"; then
    printf '%-24s PASS  %s\n' "$name" "$out"
  else
    printf '%-24s FAIL  %s\n' "$name" "$(tail -n 5 "$LOGS/$name.err" | tr '\n' ' ')"
    failed=1
  fi
}
export MCP_INTEROP_NODE_MODULES="$TS_MODULES"
leg typescript-sdk-stdio "$NODE" "$ROOT/tests/interop/numbers/ts_client.mjs" stdio "$ECHO"
leg typescript-sdk-http "$NODE" "$ROOT/tests/interop/numbers/ts_client.mjs" http "$URL"
leg python-sdk-stdio "$PY" "$ROOT/tests/interop/numbers/py_client.py" stdio "$ECHO"
leg python-sdk-http "$PY" "$ROOT/tests/interop/numbers/py_client.py" http "$URL"

# Through the gateway: `echo` keeps its name (no prefix).
gateway() {
  local name="$1" upstream="$2" port
  port=$(free_port)
  printf 'listen = "127.0.0.1:%s"\n\n[[upstream]]\nname = "echo"\n%s\nprefix = ""\n' "$port" "$upstream" \
    > "$LOGS/gateway-$name.toml"
  "$TARGET_DIR/debug/mcp-gateway" --config "$LOGS/gateway-$name.toml" > "$LOGS/gateway-$name.log" 2>&1 &
  PIDS+=($!)
  wait_port "$port"
  GATEWAY_URL="http://127.0.0.1:$port/mcp"
}
gateway http "url = \"$URL\""
leg typescript-sdk-gw-http "$NODE" "$ROOT/tests/interop/numbers/ts_client.mjs" http "$GATEWAY_URL"
leg python-sdk-gw-http "$PY" "$ROOT/tests/interop/numbers/py_client.py" http "$GATEWAY_URL"
gateway stdio "command = [\"$ECHO\"]"
leg typescript-sdk-gw-stdio "$NODE" "$ROOT/tests/interop/numbers/ts_client.mjs" http "$GATEWAY_URL"
leg python-sdk-gw-stdio "$PY" "$ROOT/tests/interop/numbers/py_client.py" http "$GATEWAY_URL"
exit "$failed"
