#!/usr/bin/env bash
# Builds every fuzz target on stable Rust and runs each one for SECONDS (default 30), as many at
# once as there are CPUs, from the seed corpus (official examples, fixtures, hand-written
# sessions). Fails on a finding; the input that triggered it is left in fuzz/artifacts/<target>/.
#
#   fuzz/run.sh [SECONDS] [TARGET...]      # e.g. fuzz/run.sh 600 server_session
#   fuzz/run.sh build                      # only build; prints where the binaries are
#
# Plain cargo with the coverage instrumentation flags `cargo fuzz build -s none` passes, all of
# which work without nightly (sancov-module, inline 8-bit counters, pc table, trace-compares,
# stack depth); the sanitizers are off. `--target` keeps the flags off build scripts and proc
# macros. Nothing to install beyond the toolchain: libfuzzer-sys builds libFuzzer itself.
set -euo pipefail
cd "$(dirname "$0")"
build_only=false
if [ "${1:-}" = build ]; then
  build_only=true
  shift
fi
seconds="${1:-30}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(decode_messages server_session client_sse header_codec)

triple="$(rustc -vV | sed -n 's/^host: //p')"
# Beside the workspace's own build output (a separate triple directory, so nothing is shared
# with the uninstrumented builds), unless CARGO_TARGET_DIR says otherwise.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/../target/fuzz}"
flags=(-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4
  -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table
  -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing
  -Cllvm-args=-simplifycfg-branch-fold-threshold=0 -Ccodegen-units=16)
case "$triple" in *-linux-*) flags+=(-Cllvm-args=-sanitizer-coverage-stack-depth) ;; esac
RUSTFLAGS="${flags[*]} ${RUSTFLAGS:-}" cargo build --release --target "$triple" --bins
bin="$CARGO_TARGET_DIR/$triple/release"
if $build_only; then
  echo "fuzz: targets built in $bin"
  exit 0
fi

[ -d ../schema/2026-07-28/examples ] || (cd .. && cargo xtask schema sync)
python3 seed_corpus.py
# One target per CPU at a time (libFuzzer runs on one thread), each for SECONDS.
jobs="$(nproc 2>/dev/null || echo 1)"
failed=0
summary=()
run_target() {
  local target="$1" log="$2"
  mkdir -p "artifacts/$target" "corpus/$target"
  # -timeout: one input running this long is a finding (a hang); -rss_limit_mb: so is this much memory.
  "$bin/$target" "corpus/$target" -artifact_prefix="artifacts/$target/" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 2>"$log"
}
for ((first = 0; first < ${#targets[@]}; first += jobs)); do
  batch=("${targets[@]:first:jobs}")
  pids=() logs=()
  for target in "${batch[@]}"; do
    logs+=("$(mktemp)")
    run_target "$target" "${logs[-1]}" &
    pids+=($!)
  done
  for i in "${!batch[@]}"; do
    target="${batch[$i]}" log="${logs[$i]}" status=0
    wait "${pids[$i]}" || status=$?
    runs="$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -n1)"
    if [ "$status" -ne 0 ]; then
      tail -n 60 "$log"
      echo "fuzz: $target FOUND A PROBLEM (exit $status); the input is in fuzz/artifacts/$target/"
      failed=1
    else
      summary+=("$target: ${runs:-?} runs in ${seconds}s, 0 findings")
    fi
    rm -f "$log"
  done
  [ "$failed" = 0 ] || exit 1
done
printf 'fuzz: %s\n' "${summary[@]}"
