#!/usr/bin/env bash
# Interop (MCP Apps, issue 28) on the `apps` example (crates/mcp-server/examples/apps.rs):
#   - a real browser: headless Chromium (Debian's `chromium`) loads tests/interop/apps/host.html,
#     whose script (bundled with esbuild) uses the official TypeScript client (v2) and the official
#     `@modelcontextprotocol/ext-apps/app-bridge` to read the tool's interface and run it in a
#     sandboxed iframe; the app (the official `App` class) shows the result the host pushes, calls
#     its tool through the host, and says what it shows; the page must end with both conversions
#     (screenshot: $CACHE/apps/screenshot.png);
#   - the official TypeScript SDK client lists the tool and sees `_meta.ui.resourceUri` (stdio, HTTP);
#   - the Python SDK client reads the interface with its MIME type (stdio, HTTP).
# Uses the SDKs tests/interop/auth.sh installs (same cache); installs chromium (as root, when
# missing) and the npm packages of the browser leg. Binds 127.0.0.1 only.
set -euo pipefail

INTEROP_NAME=interop-apps
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
TS_MODULES="$CACHE/auth-npm/node_modules"
PY="$CACHE/venv/bin/python"
APPS_NPM="$CACHE/apps-npm"
LOGS="$CACHE/apps"
fresh_logs "$LOGS"
find_node
[ -f "$TS_MODULES/@modelcontextprotocol/sdk/package.json" ] && [ -x "$PY" ] ||
  die "the TypeScript and Python SDKs are not installed: run tests/interop/auth.sh first"

if ! command -v chromium > /dev/null; then
  [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null || die "chromium is missing: run \`apt-get install chromium\` as root"
  log "installing chromium from Debian's packages"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq > /dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium > /dev/null
fi
CHROMIUM="$(command -v chromium)"

# The host side and the app library, pinned (ext-apps 2.0.4 is the package the pinned schema
# comes from; the TypeScript SDK v2 is its peer).
PACKAGES=(@modelcontextprotocol/ext-apps@2.0.4 @modelcontextprotocol/client@2.4.0 @modelcontextprotocol/core@2.4.0
  zod@4.6.7 esbuild@0.25.12 puppeteer-core@24.43.1)
STAMP="$APPS_NPM/.installed"
if [ "$(cat "$STAMP" 2>/dev/null)" != "${PACKAGES[*]}" ]; then
  log "installing ${PACKAGES[*]}"
  mkdir -p "$APPS_NPM"
  npm_ install --prefix "$APPS_NPM" --no-audit --no-fund --loglevel=error "${PACKAGES[@]}" >&2
  printf '%s' "${PACKAGES[*]}" > "$STAMP"
fi
MODULES="$APPS_NPM/node_modules"
export MCP_EXT_APPS_LIBRARY="$MODULES/@modelcontextprotocol/ext-apps/dist/src/app-with-deps.js"

# The same features as .ci/run's example build (the whole workspace's), so that CI reuses it.
(cd "$ROOT" && cargo build --quiet --workspace --all-features --bins --examples)
APPS="$TARGET_DIR/debug/examples/apps"

pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
# Waits for `pattern` (a sed capture) in `file` from process `pid`; prints the capture.
wait_for() {
  local file="$1" pattern="$2" pid="$3" found=""
  for _ in $(seq 1 100); do
    found="$(sed -n "s/$pattern/\1/p" "$file" | head -n1)"
    [ -n "$found" ] && break
    kill -0 "$pid" 2> /dev/null || break
    sleep 0.1
  done
  [ -n "$found" ] || { cat "$file" >&2; die "$file: nothing matched $pattern"; }
  printf '%s' "$found"
}
"$APPS" 127.0.0.1:0 > /dev/null 2> "$LOGS/apps.err" &
pids+=($!)
URL="$(wait_for "$LOGS/apps.err" '.*serving \(http[^ ]*\).*' "${pids[-1]}")"

mkdir -p "$LOGS/site"
cp "$ROOT/tests/interop/apps/host.html" "$LOGS/site/"
NODE_PATH="$MODULES" PATH="$NODE_DIR:$PATH" "$MODULES/.bin/esbuild" "$ROOT/tests/interop/apps/host.mjs" --bundle \
  --format=esm --platform=browser --target=chrome120 --log-level=warning --outfile="$LOGS/site/host.js"
"$NODE" "$ROOT/tests/interop/apps/serve.mjs" "$LOGS/site" "$URL" > "$LOGS/serve.out" 2> "$LOGS/serve.err" &
pids+=($!)
HOST="$(wait_for "$LOGS/serve.out" 'listening \(http.*\)' "${pids[-1]}")"

failed=0
leg() {
  local name="$1" expected="$2"
  shift 2
  if out="$("$@" 2> "$LOGS/$name.err")" && [[ "$out" == *"$expected"* ]]; then
    printf '%-22s PASS  %s\n' "$name" "$out"
  else
    printf '%-22s FAIL  %s %s\n' "$name" "${out:-}" "$(tail -n 5 "$LOGS/$name.err" | tr '\n' ' ')"
    failed=1
  fi
}
leg chromium 'shown: 100 °C = 212 °F; 37 °C = 98.6 °F' env MCP_INTEROP_NODE_MODULES="$MODULES" \
  "$NODE" "$ROOT/tests/interop/apps/browser.mjs" "$CHROMIUM" "$HOST" "$LOGS/screenshot.png"
export MCP_INTEROP_NODE_MODULES="$TS_MODULES"
leg typescript-sdk-stdio 'names ui://temperature/app.html' "$NODE" "$ROOT/tests/interop/apps/ts_client.mjs" stdio "$APPS"
leg typescript-sdk-http 'names ui://temperature/app.html' "$NODE" "$ROOT/tests/interop/apps/ts_client.mjs" http "$URL"
leg python-sdk-stdio 'as text/html;profile=mcp-app' "$PY" "$ROOT/tests/interop/apps/py_client.py" stdio "$APPS"
leg python-sdk-http 'as text/html;profile=mcp-app' "$PY" "$ROOT/tests/interop/apps/py_client.py" http "$URL"
[ "$failed" = 0 ] && log "screenshot of the browser leg: $LOGS/screenshot.png"
exit "$failed"
