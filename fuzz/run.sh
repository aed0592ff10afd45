#!/usr/bin/env bash
# Builds every fuzz target on stable Rust and runs each one for SECONDS (default 30), one after
# another, from the seed corpus (official examples, fixtures, hand-written sessions). Fails on
# the first finding; the input that triggered it is left in fuzz/artifacts/<target>/.
#
#   fuzz/run.sh [SECONDS] [TARGET...]      # e.g. fuzz/run.sh 600 server_session
#
# `cargo fuzz build -s none` passes the coverage instrumentation flags that need no nightly
# (sancov-module, inline 8-bit counters, pc table, trace-compares); the sanitizers are off.
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-30}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(decode_messages server_session client_sse header_codec)

command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --version 0.13.2 --locked
[ -d ../schema/2026-07-28/examples ] || (cd .. && cargo xtask schema sync)
python3 seed_corpus.py

build=(-s none --codegen-units 16)
cargo fuzz build "${build[@]}"
summary=()
for target in "${targets[@]}"; do
  mkdir -p "artifacts/$target"
  log="$(mktemp)"
  status=0
  # -timeout: one input running this long is a finding (a hang); -rss_limit_mb: so is this much memory.
  cargo fuzz run "${build[@]}" "$target" "corpus/$target" -- \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 2>"$log" || status=$?
  runs="$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -n1)"
  if [ "$status" -ne 0 ]; then
    tail -n 60 "$log"
    echo "fuzz: $target FOUND A PROBLEM (exit $status); the input is in fuzz/artifacts/$target/"
    exit 1
  fi
  summary+=("$target: ${runs:-?} runs in ${seconds}s, 0 findings")
  rm -f "$log"
done
printf 'fuzz: %s\n' "${summary[@]}"
