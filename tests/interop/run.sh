#!/usr/bin/env bash
# Interop: runs the mcp-client `connect` example against MCP servers no one here wrote:
#   - the reference TypeScript "everything" server (npm @modelcontextprotocol/server-everything)
#     over stdio, over Streamable HTTP, and over the deprecated HTTP+SSE transport;
#   - a server built with the Python SDK (PyPI `mcp`) over stdio and Streamable HTTP;
#   - both behind mcp-gateway (the everything server over stdio, the Python one over HTTP in the
#     legacy era): through it, in each era, a tool of one, a resource of the other, and a prompt.
# Each leg lists and calls tools, reads a resource and gets a prompt. Exits non-zero on failure.
# Installs go to a cache under target/ (INTEROP_CACHE to override); servers bind 127.0.0.1 only.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CACHE="${INTEROP_CACHE:-$ROOT/target/interop}"
EVERYTHING_VERSION="2026.8.31"
PY_MCP_VERSION="2.3.0"
mkdir -p "$CACHE"

log() { printf 'interop: %s\n' "$*" >&2; }

# --- installs (idempotent) ---------------------------------------------------------------------
EVERYTHING="$CACHE/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
if ! grep -q "\"version\": \"$EVERYTHING_VERSION\"" "$CACHE/npm/node_modules/@modelcontextprotocol/server-everything/package.json" 2>/dev/null; then
  log "installing @modelcontextprotocol/server-everything@$EVERYTHING_VERSION"
  npm install --prefix "$CACHE/npm" --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" >&2
fi
PY="$CACHE/venv/bin/python"
if ! "$PY" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$PY_MCP_VERSION')" 2>/dev/null; then
  log "installing mcp==$PY_MCP_VERSION into a venv"
  python3 -m venv "$CACHE/venv"
  "$CACHE/venv/bin/pip" install --quiet --disable-pip-version-check "mcp==$PY_MCP_VERSION" >&2
fi

cat > "$CACHE/py_server.py" <<'PYEOF'
"""A small server built with the official Python SDK, for interop tests."""
import sys

from pydantic import BaseModel

from mcp.server import MCPServer
from mcp.server.mcpserver import Context

mcp = MCPServer("interop-python", version="1.0.0")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.resource("greeting://hello")
def hello() -> str:
    """A greeting."""
    return "Hello from Python"


@mcp.prompt()
def review(code: str) -> str:
    """Review some code."""
    return f"Please review:\n{code}"


class Name(BaseModel):
    name: str


@mcp.tool()
async def ask_name(ctx: Context) -> str:
    """Ask the caller for a name (elicitation)."""
    answer = await ctx.elicit("What is your name?", Name)
    if answer.action == "accept":
        return f"Hello, {answer.data.name}!"
    return f"No name: {answer.action}"


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        mcp.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        mcp.run()
PYEOF

# --- the client (dev profile by default: `cargo test` has usually built it already) -------------
PROFILE="${INTEROP_PROFILE:-debug}"
if [ "$PROFILE" = release ]; then
  (cd "$ROOT" && cargo build --release --quiet -p mcp-client --example connect)
else
  (cd "$ROOT" && cargo build --quiet --workspace --all-features --bins --examples)
fi
CONNECT="$ROOT/target/$PROFILE/examples/connect"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
wait_port() {
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  log "nothing listens on port $1"; return 1
}

PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT

PASSED=0; FAILED=0
leg() {
  local name="$1"; shift
  log "leg: $name"
  if timeout 120 "$CONNECT" "$@" > "$CACHE/$name.out" 2>&1; then
    PASSED=$((PASSED + 1)); sed 's/^/    /' "$CACHE/$name.out" | grep -v '^      ' >&2
  else
    FAILED=$((FAILED + 1)); log "FAILED: $name"; sed 's/^/    /' "$CACHE/$name.out" >&2
  fi
}
expect_era() { grep -q "era: $2," "$CACHE/$1.out" || { log "FAILED: $1 did not negotiate the $2 era"; FAILED=$((FAILED + 1)); PASSED=$((PASSED - 1)); }; }

EVERYTHING_ARGS=(--call echo --args '{"message":"hello"}' --read first --prompt simple-prompt)
PY_ARGS=(--call add --args '{"a":2,"b":3}' --read greeting://hello --prompt review --prompt-args '{"code":"x = 1"}')

leg everything-stdio "${EVERYTHING_ARGS[@]}" -- node "$EVERYTHING" stdio

PORT=$(free_port); PORT="$PORT" node "$EVERYTHING" streamableHttp > "$CACHE/everything-http.log" 2>&1 & PIDS+=($!)
wait_port "$PORT" && leg everything-streamable-http "${EVERYTHING_ARGS[@]}" "http://127.0.0.1:$PORT/mcp"

PORT=$(free_port); PORT="$PORT" node "$EVERYTHING" sse > "$CACHE/everything-sse.log" 2>&1 & PIDS+=($!)
wait_port "$PORT" && leg everything-http-sse "${EVERYTHING_ARGS[@]}" "http://127.0.0.1:$PORT/sse"

leg python-stdio "${PY_ARGS[@]}" -- "$PY" "$CACHE/py_server.py"
expect_era python-stdio Modern

PORT=$(free_port); "$PY" "$CACHE/py_server.py" http "$PORT" > "$CACHE/python-http.log" 2>&1 & PIDS+=($!)
wait_port "$PORT" && leg python-streamable-http "${PY_ARGS[@]}" "http://127.0.0.1:$PORT/mcp"
leg python-streamable-http-legacy --era legacy "${PY_ARGS[@]}" "http://127.0.0.1:$PORT/mcp"

# --- mcp-gateway: the everything server (Streamable HTTP; gateway.sh has it over stdio) and the
# Python server (HTTP, spoken to in the legacy era) behind one endpoint, called through it in
# either era ------------------------------------------------------------------------------------
if [ "$PROFILE" = release ]; then
  (cd "$ROOT" && cargo build --release --quiet -p mcp-gateway)
else
  (cd "$ROOT" && cargo build --quiet --workspace --all-features --bins --examples)
fi
PY_PORT=$(free_port); "$PY" "$CACHE/py_server.py" http "$PY_PORT" > "$CACHE/gateway-python.log" 2>&1 & PIDS+=($!)
wait_port "$PY_PORT"
EV_PORT=$(free_port); PORT="$EV_PORT" node "$EVERYTHING" streamableHttp > "$CACHE/gateway-everything.log" 2>&1 & PIDS+=($!)
wait_port "$EV_PORT"
GW_PORT=$(free_port)
cat > "$CACHE/gateway.toml" <<TOMLEOF
listen = "127.0.0.1:$GW_PORT"

[[upstream]]
name = "everything"
url = "http://127.0.0.1:$EV_PORT/mcp"

[[upstream]]
name = "py"
url = "http://127.0.0.1:$PY_PORT/mcp"
era = "legacy"
TOMLEOF
"$ROOT/target/$PROFILE/mcp-gateway" --config "$CACHE/gateway.toml" > "$CACHE/gateway.log" 2>&1 & PIDS+=($!)
expect_text() { grep -qF -- "$2" "$CACHE/$1.out" || { log "FAILED: $1 printed no \"$2\""; FAILED=$((FAILED + 1)); PASSED=$((PASSED - 1)); }; }
if wait_port "$GW_PORT"; then
  leg gateway-modern --era modern --call everything_echo --args '{"message":"through the gateway"}' \
    --read greeting://hello --prompt everything_simple-prompt "http://127.0.0.1:$GW_PORT/mcp"
  expect_era gateway-modern Modern
  expect_text gateway-modern "through the gateway"
  leg gateway-legacy --era legacy --call py_add --args '{"a":20,"b":22}' --read first \
    --prompt py_review --prompt-args '{"code":"x = 1"}' "http://127.0.0.1:$GW_PORT/mcp"
  expect_era gateway-legacy Legacy
  expect_text gateway-legacy "42"
else
  FAILED=$((FAILED + 1)); sed 's/^/    /' "$CACHE/gateway.log" >&2
fi

echo "interop: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
