#!/usr/bin/env bash
# Interop (OpenAPI upstreams, issue 46): a FastAPI application (PyPI `fastapi`, pinned, in a venv
# of its own) serves its own OpenAPI 3.1 document: path, query and body parameters, Pydantic models
# `$ref`ed (one inside another), a 404 and a 422. mcp-gateway fronts it as an `openapi` upstream
# (the document fetched by URL, calls sent to its origin), and the official clients use its
# operations as tools through the gateway, each in its era:
#   - typescript-sdk-v2: @modelcontextprotocol/client pinned to 2026-07-28 (openapi/ts_client.mjs)
#   - python-sdk: the Python SDK client, legacy era (openapi/py_client.py)
# Each lists the tools (names, expanded schemas, hints, output schemas), calls them (the SDKs check
# structuredContent against outputSchema) and gets the API's 404 and 422 as tool errors.
# Installs what it needs (idempotent, under target/interop): FastAPI and uvicorn, the Python SDK
# (run.sh's pin, in run.sh's venv) and the TypeScript client. Binds 127.0.0.1 only; exits non-zero
# on any failure.
set -euo pipefail

INTEROP_NAME=interop-openapi
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
LOGS="$CACHE/openapi"
fresh_logs "$LOGS"
find_node

# --- installs (idempotent) ---------------------------------------------------------------------
FASTAPI_VERSION="0.163.2"
UVICORN_VERSION="0.54.0"
API_VENV="$CACHE/openapi-venv"
API_PY="$API_VENV/bin/python"
if ! "$API_PY" -c "import importlib.metadata as m, sys
sys.exit(m.version('fastapi') != '$FASTAPI_VERSION' or m.version('uvicorn') != '$UVICORN_VERSION')" 2>/dev/null; then
  log "installing fastapi==$FASTAPI_VERSION and uvicorn==$UVICORN_VERSION into a venv of their own"
  python3 -m venv "$API_VENV"
  "$API_VENV/bin/pip" install --quiet --disable-pip-version-check \
    "fastapi==$FASTAPI_VERSION" "uvicorn==$UVICORN_VERSION" >&2
fi
# The Python SDK client: the version run.sh pins, in its venv.
PY_MCP_VERSION="$(sed -n 's/^PY_MCP_VERSION="\(.*\)"$/\1/p' "$ROOT/tests/interop/run.sh")"
[ -n "$PY_MCP_VERSION" ] || die "no PY_MCP_VERSION in tests/interop/run.sh"
PY="$CACHE/venv/bin/python"
if ! "$PY" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$PY_MCP_VERSION')" 2>/dev/null; then
  log "installing mcp==$PY_MCP_VERSION into a venv"
  python3 -m venv "$CACHE/venv"
  "$CACHE/venv/bin/pip" install --quiet --disable-pip-version-check "mcp==$PY_MCP_VERSION" >&2
fi
# The TypeScript SDK v2 client, as apps.sh pins it.
TS_NPM="$CACHE/openapi-npm"
TS_PACKAGES=(@modelcontextprotocol/client@2.4.0 @modelcontextprotocol/core@2.4.0 zod@4.6.7)
STAMP="$TS_NPM/.installed"
if [ "$(cat "$STAMP" 2>/dev/null)" != "${TS_PACKAGES[*]}" ]; then
  log "installing ${TS_PACKAGES[*]}"
  mkdir -p "$TS_NPM"
  npm_ install --prefix "$TS_NPM" --no-audit --no-fund --loglevel=error "${TS_PACKAGES[@]}" >&2
  printf '%s' "${TS_PACKAGES[*]}" > "$STAMP"
fi

# The same features as .ci/run's builds, so that CI reuses them.
(cd "$ROOT" && cargo build --quiet --workspace --all-features --bins --examples)

kill_on_exit

API_PORT=$(free_port)
"$API_PY" "$ROOT/tests/interop/openapi/app.py" "$API_PORT" > "$LOGS/api.log" 2>&1 & PIDS+=($!)
wait_port "$API_PORT"
GW_PORT=$(free_port)
cat > "$LOGS/gateway.toml" <<TOML
listen = "127.0.0.1:$GW_PORT"

[[upstream]]
name = "inv"
openapi = "http://127.0.0.1:$API_PORT/openapi.json"
TOML
"$TARGET_DIR/debug/mcp-gateway" --config "$LOGS/gateway.toml" > "$LOGS/gateway.log" 2>&1 & PIDS+=($!)
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
leg typescript-sdk-v2 env MCP_INTEROP_NODE_MODULES="$TS_NPM/node_modules" "$NODE" "$ROOT/tests/interop/openapi/ts_client.mjs" "$URL"
leg python-sdk "$PY" "$ROOT/tests/interop/openapi/py_client.py" "$URL"
if [ "$failed" != 0 ]; then
  log "the gateway's log:"
  sed 's/^/    /' "$LOGS/gateway.log" >&2
  log "the API's log:"
  sed 's/^/    /' "$LOGS/api.log" >&2
  # Again after the logs, so that a report keeping only the end of the output still says what failed.
  for failure in "${failures[@]}"; do log "FAILED $failure"; done
fi
exit "$failed"
