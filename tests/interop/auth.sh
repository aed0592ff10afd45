#!/usr/bin/env bash
# Interop (auth): the official SDK clients, each with its own OAuth client, list and call tools on
# the `notes` example served as an OAuth 2.1 resource server (MCP authorization), with a real
# authorization server (tests/auth/provider.mjs, oidc-provider) as its issuer:
#   - unauthenticated: a POST without a token gets 401 and a WWW-Authenticate naming the Protected
#     Resource Metadata, which names the issuer (curl);
#   - typescript-sdk: @modelcontextprotocol/sdk's StreamableHTTPClientTransport with an
#     OAuthClientProvider (tests/interop/auth/ts_client.mjs);
#   - python-sdk: PyPI `mcp`'s OAuthClientProvider (httpx2.Auth) under streamable_http_client and
#     ClientSession (tests/interop/auth/py_client.py).
# Each SDK leg discovers, registers (RFC 7591), authorizes with PKCE and a resource indicator
# (login and consent are headless), lists tools, steps up to notes:write on add_note's 403
# insufficient_scope, and calls add_note and list_notes. Prints a table; exits non-zero on failure.
# Installs go to a cache under target/ (INTEROP_CACHE to override; the Python venv is run.sh's);
# oidc-provider is the one `cargo xtask test` installs (MCP_TEST_OIDC_MODULES), installed the same
# way when missing; everything binds 127.0.0.1 only.
set -euo pipefail

INTEROP_NAME=interop-auth
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
TS_SDK_VERSION="1.32.2"
PY_MCP_VERSION="2.3.0"
LOGS="$CACHE/auth"
fresh_logs "$LOGS"
find_node

# --- installs (idempotent) ---------------------------------------------------------------------
# oidc-provider, exactly as xtask/src/components.rs installs it (npm ci of tests/auth's lockfile).
if [ -n "${MCP_TEST_OIDC_MODULES:-}" ] && [ -f "$MCP_TEST_OIDC_MODULES/oidc-provider/package.json" ]; then
  OIDC_MODULES="$MCP_TEST_OIDC_MODULES"
else
  OIDC_DIR="$TARGET_DIR/test-components/oidc-provider"
  OIDC_MODULES="$OIDC_DIR/node_modules"
  wanted="$("$NODE" -p 'require(process.argv[1]).dependencies["oidc-provider"]' "$ROOT/tests/auth/package.json")"
  have="$("$NODE" -p 'require(process.argv[1]).version' "$OIDC_MODULES/oidc-provider/package.json" 2>/dev/null || true)"
  if [ "$have" != "$wanted" ] || ! cmp -s "$ROOT/tests/auth/package.json" "$OIDC_DIR/package.json" ||
    ! cmp -s "$ROOT/tests/auth/package-lock.json" "$OIDC_DIR/package-lock.json"; then
    log "installing oidc-provider@$wanted (npm ci) into $OIDC_DIR"
    mkdir -p "$OIDC_DIR"
    cp "$ROOT/tests/auth/package.json" "$ROOT/tests/auth/package-lock.json" "$OIDC_DIR/"
    (cd "$OIDC_DIR" && npm_ ci --no-audit --no-fund --loglevel=error --omit=dev >&2)
  fi
fi
TS_MODULES="$CACHE/auth-npm/node_modules"
if ! grep -q "\"version\": \"$TS_SDK_VERSION\"" "$TS_MODULES/@modelcontextprotocol/sdk/package.json" 2>/dev/null; then
  log "installing @modelcontextprotocol/sdk@$TS_SDK_VERSION"
  npm_ install --prefix "$CACHE/auth-npm" --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/sdk@$TS_SDK_VERSION" >&2
fi
PY="$CACHE/venv/bin/python"
if ! "$PY" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$PY_MCP_VERSION')" 2>/dev/null; then
  log "installing mcp==$PY_MCP_VERSION into a venv"
  python3 -m venv "$CACHE/venv"
  "$CACHE/venv/bin/pip" install --quiet --disable-pip-version-check "mcp==$PY_MCP_VERSION" >&2
fi

# --- the server: the notes example with the auth feature ------------------------------------------
# The same features as .ci/run's example build (the whole workspace's), so that CI reuses that build.
(cd "$ROOT" && cargo build --quiet --workspace --all-features --bins --examples)
NOTES="$TARGET_DIR/debug/examples/notes"

# The URL on the `listening on URL` line a process writes to FILE (PID must stay alive).
wait_listening() {
  local file="$1" pid="$2" url=""
  for _ in $(seq 1 150); do
    url="$(sed -n 's/.*listening on \(http[^ ]*\).*/\1/p' "$file" | head -n1)"
    [ -n "$url" ] && { printf '%s\n' "$url"; return 0; }
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  return 1
}

PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT

MCP_TEST_OIDC_MODULES="$OIDC_MODULES" "$NODE" "$ROOT/tests/auth/provider.mjs" --port 0 \
  > "$LOGS/provider.out" 2> "$LOGS/provider.err" & PIDS+=($!)
ISSUER="$(wait_listening "$LOGS/provider.out" "${PIDS[-1]}")" ||
  { cat "$LOGS/provider.err" >&2; die "the authorization server (tests/auth/provider.mjs) did not start"; }
"$NOTES" --http 127.0.0.1:0 --issuer "$ISSUER" > /dev/null 2> "$LOGS/notes.err" & PIDS+=($!)
MCP_URL="$(wait_listening "$LOGS/notes.err" "${PIDS[-1]}")" ||
  { cat "$LOGS/notes.err" >&2; die "the notes server (--features auth, --issuer $ISSUER) did not start"; }
log "authorization server $ISSUER, notes $MCP_URL"

# What each side publishes, shown when a leg fails.
diagnose() {
  log "  Protected Resource Metadata (from the 401's resource_metadata):"
  curl -sS --max-time 5 "${PRM_URL:-$MCP_URL}" 2>&1 | sed 's/^/      /' >&2 || true
  echo >&2
  log "  authorization server metadata:"
  curl -sS --max-time 5 "$ISSUER/.well-known/oauth-authorization-server" 2>&1 | head -c 3000 | sed 's/^/      /' >&2 || true
  echo >&2
  log "  authorization server stderr (tail):"; tail -n 30 "$LOGS/provider.err" | sed 's/^/      /' >&2
  log "  notes server stderr (tail):"; tail -n 30 "$LOGS/notes.err" | sed 's/^/      /' >&2
}

LEGS=(); RESULTS=()
record() { LEGS+=("$1"); RESULTS+=("$2"); }

# --- leg: unauthenticated request ------------------------------------------------------------------
PRM_URL=""
unauthenticated() {
  local headers="$LOGS/unauthenticated.headers" status challenge prm
  status="$(curl -sS --max-time 10 -o "$LOGS/unauthenticated.body" -D "$headers" -w '%{http_code}' -X POST "$MCP_URL" \
    -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}')" ||
    { log "  curl failed"; return 1; }
  challenge="$(tr -d '\r' < "$headers" | sed -n 's/^[Ww][Ww][Ww]-[Aa]uthenticate: *//p' | head -n1)"
  log "  HTTP $status, WWW-Authenticate: $challenge"
  [ "$status" = 401 ] || { log "  expected 401 without a token"; return 1; }
  printf '%s' "$challenge" | grep -q '^Bearer .*resource_metadata=' || { log "  no Bearer challenge with resource_metadata="; return 1; }
  PRM_URL="$(printf '%s' "$challenge" | sed -n 's/.*resource_metadata="\([^"]*\)".*/\1/p')"
  prm="$(curl -sS --max-time 10 --fail "$PRM_URL")" || { log "  GET $PRM_URL failed"; return 1; }
  log "  $PRM_URL: $prm"
  local mismatch
  mismatch="$(printf '%s' "$prm" | python3 -c '
import json, sys
prm, issuer, resource = json.load(sys.stdin), sys.argv[1], sys.argv[2]
servers = prm.get("authorization_servers") or []
if prm.get("resource") != resource:
    print("its resource is %r, not %r" % (prm.get("resource"), resource))
elif issuer not in servers:
    print("its authorization_servers %r lack %r" % (servers, issuer))
' "$ISSUER" "$MCP_URL" 2>&1)" || mismatch="unreadable: $mismatch"
  [ -z "$mismatch" ] || { log "  the Protected Resource Metadata does not match: $mismatch"; return 1; }
}
log "leg: unauthenticated"
if unauthenticated; then record unauthenticated PASS; else record unauthenticated FAIL; diagnose; fi

# --- SDK legs ----------------------------------------------------------------------------------------
sdk_leg() {
  local name="$1"; shift
  log "leg: $name"
  local rc=0
  timeout 90 "$@" > "$LOGS/$name.out" 2> "$LOGS/$name.err" || rc=$?
  if [ "$rc" = 0 ]; then
    record "$name" PASS; sed 's/^/    /' "$LOGS/$name.out" >&2
  else
    record "$name" FAIL
    log "FAILED: $name (exit $rc$([ "$rc" = 124 ] && echo ', timed out')); its output:"
    sed 's/^/    /' "$LOGS/$name.out" >&2
    grep -v 'unknown format "uint" ignored' "$LOGS/$name.err" | tail -n 60 | sed 's/^/    /' >&2
    diagnose
  fi
}
REDIRECT_URL="http://127.0.0.1:$(free_port)/callback"
MCP_INTEROP_NODE_MODULES="$TS_MODULES" sdk_leg typescript-sdk \
  "$NODE" "$ROOT/tests/interop/auth/ts_client.mjs" "$MCP_URL" "$REDIRECT_URL"
sdk_leg python-sdk "$PY" "$ROOT/tests/interop/auth/py_client.py" "$MCP_URL" "$REDIRECT_URL"

# --- summary -----------------------------------------------------------------------------------------
failed=0
echo "interop-auth: @modelcontextprotocol/sdk $TS_SDK_VERSION, mcp (PyPI) $PY_MCP_VERSION, notes --issuer $ISSUER"
for i in "${!LEGS[@]}"; do
  printf '  %-16s -> %s\n' "${LEGS[$i]}" "${RESULTS[$i]}"
  [ "${RESULTS[$i]}" = PASS ] || failed=$((failed + 1))
done
echo "interop-auth: $(( ${#LEGS[@]} - failed )) passed, $failed failed"
[ "$failed" -eq 0 ]
