#!/usr/bin/env bash
# Horizontal scale, for real: one redis-server, three scale-server instances sharing it (the
# conformance fixture on mcp-server-redis's stores and change bus) and haproxy in front, all on
# 127.0.0.1 and free ports. Through the load balancer it runs both server legs of the official
# conformance suite (with the tasks-* scenarios), then scale-check: multi-round exchanges across
# instances, a key rotation mid-exchange, subscriptions/listen across instances, a task across
# instances, and 64 clients while one instance is kill -9'd and restarted. Prints a table
# scenario -> PASS/FAIL and exits non-zero on any failure.
#
# Installs redis-server and haproxy from Debian's packages when missing (as root, as CI runs).
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
cargo build --quiet --workspace --all-features --example scale-server --example scale-check
SERVER="$TARGET/debug/examples/scale-server"
CHECK="$TARGET/debug/examples/scale-check"

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

used_ports=" "
free_port() {
  local port
  while :; do
    port=$((20000 + RANDOM % 40000))
    case "$used_ports" in *" $port "*) continue ;; esac
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      used_ports+="$port "
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

frontend mcp
  bind 127.0.0.1:$LB_PORT
  default_backend instances

backend instances
  balance roundrobin
  # Legacy sessions stay on the instance that opened them while it lives; when it is down the
  # request goes to another, which loads the session from Redis.
  stick-table type string len 128 size 100k expire 30m
  stick match req.hdr(mcp-session-id)
  stick store-response res.hdr(mcp-session-id)
  http-response set-header X-Served-By %[srv_name]
  default-server check inter 250ms fall 1 rise 1
EOF
for name in "${NAMES[@]}"; do
  echo "  server $name 127.0.0.1:${PORT[$name]}" >>"$WORK/haproxy.cfg"
done
haproxy -f "$WORK/haproxy.cfg" -db >"$WORK/haproxy.log" 2>&1 &
echo $! >"$WORK/haproxy.pid"
wait_port "$LB_PORT" haproxy
LB="http://127.0.0.1:$LB_PORT/mcp"
log "redis 127.0.0.1:$REDIS_PORT; instances ${PORT[one]} ${PORT[two]} ${PORT[three]}; haproxy $LB"

# --- the checks --------------------------------------------------------------------------------
declare -A RESULT DETAIL
ORDER=()
record() { ORDER+=("$1"); RESULT[$1]="$2"; DETAIL[$1]="$3"; }

tasks_scenarios=(tasks-lifecycle tasks-capability-negotiation tasks-wire-fields tasks-request-state-removal
  tasks-mrtr-input tasks-request-headers tasks-dispatch-and-envelope tasks-required-task-error tasks-mrtr-composition)
conformance_leg() {
  local revision="$1" out verdict=PASS
  out="$(../shared/tools/conformance/run.sh server "$LB" "$revision" 2>&1 || true)"
  printf '%s\n' "$out" | grep -v '^      ' >&2
  printf '%s\n' "$out" | tail -n 1 | grep -qE ' \(0 failed\)$' || verdict=FAIL
  if [ "$revision" = 2026-07-28 ]; then
    for scenario in "${tasks_scenarios[@]}"; do
      printf '%s\n' "$out" | grep -qE "^  PASS  ${scenario}( |\$)" || { verdict=FAIL; log "$scenario did not pass"; }
    done
  fi
  record "conformance-server-$revision" "$verdict" "$(printf '%s\n' "$out" | tail -n 1)"
}
if [ -z "${SCALE_SKIP_CONFORMANCE:-}" ]; then
  conformance_leg 2026-07-28
  conformance_leg 2025-11-25
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
check_out="$WORK/check.out"
set +e
"$CHECK" --lb "$LB" --instances "$instances" --keys-file "$WORK/keys.txt" --killed two \
  --kill-cmd "$WORK/kill-two.sh" --restart-cmd "'$WORK/start-two.sh'" \
  --clients 64 --seconds "$SECONDS_OF_KILL_TEST" ${SCALE_ONLY:+--only "$SCALE_ONLY"} | tee "$check_out" >&2
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
