#!/usr/bin/env bash
# Interop (the `mcp` command, issue 45): `mcp` against servers nobody here wrote:
#   - the reference TypeScript everything server (npm @modelcontextprotocol/server-everything)
#     over stdio and Streamable HTTP;
#   - a Python SDK server (PyPI `mcp`, tests/interop/cli/py_server.py: a pydantic model argument
#     with nested models, optional arguments, Literal and Enum arguments, a list argument,
#     structured output from a model, a TypedDict and an int, a failing tool, a prompt with
#     arguments, a resource and a resource template) over stdio and Streamable HTTP.
# For each server, transport and era it speaks (2026-07-28 only where `mcp --json info` says the
# server speaks it; 2025-11-25 always): info, tools, call (typed key=value arguments: numbers,
# booleans, JSON objects and lists, enums; --args), resources, templates, read, prompts, prompt
# and ping, as text and --json, with their exit codes (a bad enum or number: 2, naming the
# argument; a tool that fails: 1). The checks that do not depend on the transport (more usage
# errors, variants of a call) run on Streamable HTTP only: each stdio run starts the server.
# Then `mcp codegen` for both servers: the files are built in a throwaway crate under
# $TARGET_DIR/interop/cli-bindings (cargo clippy -D warnings, offline, the workspace's lock file,
# the target directory of mcp-cli's bindings_compile test, kept between runs) whose program
# (tests/interop/cli/caller.rs) calls every tool that needs no person through the typed handles;
# each typed result is compared with what `mcp --json call` gives for the same arguments
# (tests/interop/cli/compare.py). Last, `codegen --check` passes on the files just written and
# fails (exit 1), naming the tool, against a variant of the Python server whose `add` gained an
# argument.
#
# Not exercised, and why:
#   - the everything server's trigger-elicitation-request and trigger-url-elicitation (a person
#     answers a form or opens a URL) and trigger-sampling-request (an LLM answers);
#     simulate-research-query is called only as a plain call: it requires a 2025-11-25
#     task-augmented call, which mcp-client does not speak (it has the tasks extension), so it
#     fails the same way in `mcp call` and in the bindings, and `mcp call --task` refuses it with
#     exit 2 before sending anything.
#   - the everything server's deprecated HTTP+SSE transport (run.sh covers it for mcp-client).
# Workarounds: compare.py drops null members before comparing (a typed output encodes a `None`
# by leaving the member out where the server wrote null) and masks clock times and UUIDs (the
# everything server writes them into some texts).
#
# Known bugs of `mcp` are checked as expected failures: set KNOWN to a description before a check
# (`t`), which is then reported XFAIL, and XPASS (a failure) once it passes. None is known now.
#
# Installs as run.sh does, into the same cache (INTEROP_CACHE, default target/interop); builds
# `mcp` in the workspace's target directory, with the features `cargo xtask test` uses (so that CI
# reuses that build). Servers bind 127.0.0.1 only. Prints one PASS/FAIL line per check; exits
# non-zero on any failure.
set -euo pipefail

INTEROP_NAME=interop-cli
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
EVERYTHING_VERSION="2026.8.31"
PY_MCP_VERSION="2.3.0"
HERE="$ROOT/tests/interop/cli"
WORK="$CACHE/cli"
BINDINGS="$CACHE/cli-bindings"
# The target directory of mcp-cli's bindings_compile test, whose project has the same dependencies
# (mcp-client with `http`, serde, serde_json, tokio) and the same lock file: after `cargo xtask
# test`, only the bindings themselves are built here.
BINDINGS_TARGET="$TARGET_DIR/tmp/bindings-caller-target"
mkdir -p "$WORK" "$BINDINGS/src"
started=$SECONDS
find_node

# --- the servers run.sh installs ----------------------------------------------------------------
EVERYTHING="$CACHE/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
PY="$CACHE/venv/bin/python"
grep -q "\"version\": \"$EVERYTHING_VERSION\"" "$CACHE/npm/node_modules/@modelcontextprotocol/server-everything/package.json" 2>/dev/null &&
  "$PY" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$PY_MCP_VERSION')" 2>/dev/null ||
  die "the everything server $EVERYTHING_VERSION and the Python SDK $PY_MCP_VERSION are not installed: run tests/interop/run.sh first"
PY_SERVER="$HERE/py_server.py"

(cd "$ROOT" && cargo build --quiet --workspace --all-features --bins --examples)
MCP="$TARGET_DIR/debug/mcp"
export NO_COLOR=1

kill_on_exit

# Sets URL: the everything server over Streamable HTTP (on 127.0.0.1: loopback.cjs).
start_everything_http() {
  local port
  port=$(free_port)
  PORT="$port" "$NODE" --require "$HERE/loopback.cjs" "$EVERYTHING" streamableHttp > "$WORK/$1.log" 2>&1 &
  PIDS+=($!)
  wait_port "$port"
  URL="http://127.0.0.1:$port/mcp"
}
# Sets URL: the Python server over Streamable HTTP; extra words are environment assignments.
start_python_http() {
  local name="$1" port
  shift
  port=$(free_port)
  env "$@" "$PY" "$PY_SERVER" http "$port" > "$WORK/$name.log" 2>&1 &
  PIDS+=($!)
  wait_port "$port"
  URL="http://127.0.0.1:$port/mcp"
}

# --- checks ------------------------------------------------------------------------------------
PASSED=0
FAILED=0
FAILURES=()
KNOWN=""
# Where `t` keeps a check's output: each leg run in the background has its own.
RUN="$WORK"
# t NAME EXIT CHECK MCP-WORDS…: runs `mcp MCP-WORDS…`; passes when it exits EXIT and CHECK (a
# Python expression over out, err and j: see cli/check.py) holds. With KNOWN set: an expected
# failure, reported XFAIL, and XPASS (a failure) once it passes.
t() {
  local name="$1" want="$2" check="$3" rc=0 ok=0
  shift 3
  timeout 120 "$MCP" "$@" > "$RUN/out" 2> "$RUN/err" < /dev/null || rc=$?
  if [ "$rc" = "$want" ] && python3 "$HERE/check.py" "$RUN/out" "$RUN/err" "$check" 2> "$RUN/why"; then ok=1; fi
  if [ -n "$KNOWN" ]; then
    if [ "$ok" = 1 ]; then
      printf '%-58s FAIL  XPASS: fixed? remove the known-bug mark (%s)\n' "$name" "$KNOWN"
      FAILED=$((FAILED + 1)); FAILURES+=("$name (XPASS)")
    else
      printf '%-58s XFAIL %s\n' "$name" "$KNOWN"
    fi
    KNOWN=""
    return 0
  fi
  if [ "$ok" = 1 ]; then
    printf '%-58s PASS\n' "$name"
    PASSED=$((PASSED + 1))
  else
    printf '%-58s FAIL  exit %s (wanted %s)\n' "$name" "$rc" "$want"
    [ "$rc" != "$want" ] || sed 's/^/  /' "$RUN/why"
    printf '    command: mcp'; printf ' %q' "$@"; printf '\n'
    head -c 1500 "$RUN/out" | sed 's/^/    out: /'
    head -c 1500 "$RUN/err" | sed 's/^/    err: /'
    FAILED=$((FAILED + 1)); FAILURES+=("$name")
  fi
}
# x t …: a check that does not depend on the transport (usage errors, variants), made only where
# FULL=1 (the Streamable HTTP legs): each stdio run starts the server again, seconds each.
FULL=1
x() { if [ "$FULL" = 1 ]; then "$@"; else KNOWN=""; fi; }
# The target: TP before a command's own words (a URL), TS after them (`-- COMMAND…`).
TP=()
TS=()

# The era `mcp --era auto --json info` negotiates with the target: sets ERAS (modern first).
eras_of() {
  local label="$1" era
  era="$(timeout 120 "$MCP" --json info "${TP[@]}" "${TS[@]}" 2>/dev/null < /dev/null |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["era"])' || echo none)"
  case "$era" in
    modern) ERAS=(modern legacy) ;;
    legacy) ERAS=(legacy) ;;
    *) ERAS=(); printf '%-58s FAIL  `mcp --json info` did not answer\n' "$label era"; FAILED=$((FAILED + 1)); FAILURES+=("$label era") ;;
  esac
  printf '%-58s ----  auto negotiates %s: checking %s (at %s s)\n' "$label" "$era" "${ERAS[*]}" "$((SECONDS - started))"
}

version_of() { [ "$1" = modern ] && echo 2026-07-28 || echo 2025-11-25; }

EVERYTHING_TOOLS='{"echo","get-annotated-message","get-env","get-resource-links","get-resource-reference",
  "get-structured-content","get-sum","get-tiny-image","gzip-file-as-resource","toggle-simulated-logging",
  "toggle-subscriber-updates","trigger-long-running-operation","get-roots-list","trigger-elicitation-request",
  "trigger-url-elicitation","trigger-sampling-request","simulate-research-query"}'

everything_leg() {
  local L="$1" era="$2" version
  version="$(version_of "$era")"
  local E=(--era "$era")
  t "$L info" 0 "'mcp-servers/everything 2.0.0' in out and '$era, $version over' in out" info "${E[@]}" "${TP[@]}" "${TS[@]}"
  t "$L info --json" 0 "j['era'] == '$era' and j['protocolVersion'] == '$version' and j['serverInfo']['name'] == 'mcp-servers/everything' and 'tools' in j['capabilities']" \
    info --json "${E[@]}" "${TP[@]}" "${TS[@]}"
  t "$L tools" 0 "'get-sum (a: number, b: number)' in out and 'get-annotated-message (includeImage?: boolean, messageType: \"error\"|\"success\"|\"debug\")' in out" \
    tools "${E[@]}" "${TP[@]}" "${TS[@]}"
  t "$L tools --json" 0 "{t['name'] for t in j['tools']} == $EVERYTHING_TOOLS and [t for t in j['tools'] if t['name'] == 'get-structured-content'][0]['outputSchema']['required'] == ['temperature', 'conditions', 'humidity']" \
    tools --json "${E[@]}" "${TP[@]}" "${TS[@]}"
  x t "$L tools --schema" 0 "'output: {' in out and '\"Choose city\"' in out" tools --schema "${E[@]}" "${TP[@]}" "${TS[@]}"
  # Numbers: an integer and a fraction.
  t "$L call get-sum a=2 b=3.5" 0 "out.strip() == 'The sum of 2 and 3.5 is 5.5.'" call "${E[@]}" "${TP[@]}" get-sum a=2 b=3.5 "${TS[@]}"
  # An enum and a boolean.
  t "$L call --json get-annotated-message (enum, boolean)" 0 "j['content'][0]['text'] == 'Operation completed successfully' and [b['type'] for b in j['content']] == ['text', 'image'] and j.get('isError') is not True" \
    call --json "${E[@]}" "${TP[@]}" get-annotated-message messageType=success includeImage=true "${TS[@]}"
  x t "$L call --task: no tasks extension, exit 2" 2 "'does not offer the tasks extension' in err and out == ''" \
    call "${E[@]}" "${TP[@]}" simulate-research-query topic=x --task "${TS[@]}"
  x t "$L call get-annotated-message includeImage=false" 0 "out.strip() == 'Operation completed successfully'" \
    call "${E[@]}" "${TP[@]}" get-annotated-message messageType=success includeImage=false "${TS[@]}"
  t "$L call --json get-structured-content (enum with a space)" 0 "set(j['structuredContent']) == {'temperature', 'conditions', 'humidity'} and json.loads(j['content'][0]['text']) == j['structuredContent']" \
    call --json "${E[@]}" "${TP[@]}" get-structured-content "location=Los Angeles" "${TS[@]}"
  # --args as a JSON object, and a key=value word over it.
  x t "$L call echo --args JSON message=…" 0 "out.strip() == 'Echo: from a word'" \
    call --args '{"message":"from --args"}' "${E[@]}" "${TP[@]}" echo "message=from a word" "${TS[@]}"
  t "$L call echo --args JSON" 0 "out.strip() == 'Echo: from --args'" \
    call --args '{"message":"from --args"}' "${E[@]}" "${TP[@]}" echo "${TS[@]}"
  # Usage errors (exit 2, naming the argument; nothing is sent) and a tool's error (exit 1).
  t "$L call bad enum: exit 2" 2 "'\`messageType\`' in err and 'bogus' in err and out == ''" \
    call "${E[@]}" "${TP[@]}" get-annotated-message messageType=bogus "${TS[@]}"
  x t "$L call not a number: exit 2" 2 "'\`a\`' in err and 'number' in err" call "${E[@]}" "${TP[@]}" get-sum a=two b=1 "${TS[@]}"
  x t "$L call missing argument: exit 2" 2 "'\`b\`' in err" call "${E[@]}" "${TP[@]}" get-sum a=1 "${TS[@]}"
  x t "$L call unknown argument: exit 2" 2 "'\`c\`' in err" call "${E[@]}" "${TP[@]}" get-sum a=1 b=2 c=3 "${TS[@]}"
  x t "$L call unknown tool: exit 2" 2 "'no tool \`no-such-tool\`' in err" call "${E[@]}" "${TP[@]}" no-such-tool "${TS[@]}"
  t "$L call tool error (count > maximum): exit 1" 1 "'Too big' in out and 'reported an error' in err" \
    call "${E[@]}" "${TP[@]}" get-resource-links count=20 "${TS[@]}"
  x t "$L call --json tool error: exit 1, isError" 1 "j['isError'] is True" call --json "${E[@]}" "${TP[@]}" get-resource-links count=20 "${TS[@]}"
  t "$L resources" 0 "'demo://resource/static/document/architecture.md' in out and 'text/markdown' in out" resources "${E[@]}" "${TP[@]}" "${TS[@]}"
  t "$L resources --json" 0 "'demo://resource/static/document/features.md' in [r['uri'] for r in j['resources']]" resources --json "${E[@]}" "${TP[@]}" "${TS[@]}"
  t "$L templates" 0 "'demo://resource/dynamic/text/{resourceId}' in out" templates "${E[@]}" "${TP[@]}" "${TS[@]}"
  t "$L templates --json" 0 "{r['uriTemplate'] for r in j['resourceTemplates']} == {'demo://resource/dynamic/text/{resourceId}', 'demo://resource/dynamic/blob/{resourceId}'}" \
    templates --json "${E[@]}" "${TP[@]}" "${TS[@]}"
  t "$L read (text)" 0 "out.startswith('Resource 5: This is a plaintext resource')" read "${E[@]}" "${TP[@]}" demo://resource/dynamic/text/5 "${TS[@]}"
  t "$L read --json (blob)" 0 "j['contents'][0]['uri'] == 'demo://resource/dynamic/blob/2' and len(j['contents'][0]['blob']) > 0" \
    read --json "${E[@]}" "${TP[@]}" demo://resource/dynamic/blob/2 "${TS[@]}"
  x t "$L read a listed document" 0 "'#' in out" read "${E[@]}" "${TP[@]}" demo://resource/static/document/features.md "${TS[@]}"
  t "$L prompts" 0 "'args-prompt' in out and 'city [state]' in out" prompts "${E[@]}" "${TP[@]}" "${TS[@]}"
  t "$L prompts --json" 0 "{p['name'] for p in j['prompts']} == {'simple-prompt', 'args-prompt', 'completable-prompt', 'resource-prompt'}" \
    prompts --json "${E[@]}" "${TP[@]}" "${TS[@]}"
  t "$L prompt args-prompt city=… state=…" 0 "'Paris' in out and 'Texas' in out" prompt "${E[@]}" "${TP[@]}" args-prompt city=Paris state=Texas "${TS[@]}"
  t "$L prompt --json resource-prompt" 0 "j['messages'][1]['content']['resource']['uri'] == 'demo://resource/dynamic/text/4'" \
    prompt --json "${E[@]}" "${TP[@]}" resource-prompt resourceType=Text resourceId=4 "${TS[@]}"
  x t "$L prompt missing argument: exit 2" 2 "'\`city\`' in err" prompt "${E[@]}" "${TP[@]}" args-prompt "${TS[@]}"
  t "$L ping" 0 "out.startswith('alive')" ping "${E[@]}" "${TP[@]}" "${TS[@]}"
  t "$L ping --json" 0 "j['ok'] is True" ping --json "${E[@]}" "${TP[@]}" "${TS[@]}"
}

TRIP='{"title":"Alps","stops":[{"name":"Bern","at":{"lat":46.95,"lon":7.45},"nights":2},{"name":"Zermatt","at":{"lat":46.02,"lon":7.75},"nights":3}],"budget":1200}'
PY_TOOLS="{'plan_trip', 'mix_paint', 'add', 'stats', 'shout', 'fail'}"

python_leg() {
  local L="$1" era="$2" version
  version="$(version_of "$era")"
  local E=(--era "$era")
  t "$L info" 0 "'interop-cli-python 1.0.0' in out and '$era, $version over' in out" info "${E[@]}" "${TP[@]}" "${TS[@]}"
  t "$L info --json" 0 "j['era'] == '$era' and j['protocolVersion'] == '$version' and j['serverInfo']['name'] == 'interop-cli-python' and set(j['capabilities']) >= {'tools', 'prompts', 'resources'}" \
    info --json "${E[@]}" "${TP[@]}" "${TS[@]}"
  t "$L tools" 0 "'mode?: \"car\"|\"train\"|\"plane\"' in out and 'values: number[]' in out and 'travelers?: integer' in out" \
    tools "${E[@]}" "${TP[@]}" "${TS[@]}"
  t "$L tools --json" 0 "{t['name'] for t in j['tools']} == $PY_TOOLS and {t['name'] for t in j['tools'] if t.get('outputSchema')} == $PY_TOOLS - {'shout'}" \
    tools --json "${E[@]}" "${TP[@]}" "${TS[@]}"
  # A nested JSON object, an enum, a number, a list and an optional text.
  t "$L call --json plan_trip (object, enum, number, list)" 0 "j['structuredContent'] == {'title': 'Alps', 'mode': 'plane', 'travelers': 3, 'total_nights': 5, 'stop_names': ['Bern', 'Zermatt'], 'tags': ['hiking', 'snow'], 'budget_per_traveler': 400.0, 'notes': 'window seats'}" \
    call --json "${E[@]}" "${TP[@]}" plan_trip "trip=$TRIP" mode=plane travelers=3 'tags=["snow","hiking"]' "notes=window seats" "${TS[@]}"
  x t "$L call plan_trip (defaults)" 0 "json.loads(out)['mode'] == 'train' and json.loads(out)['travelers'] == 1 and json.loads(out)['budget_per_traveler'] is None" \
    call "${E[@]}" "${TP[@]}" plan_trip 'trip={"title":"Short","stops":[{"name":"Basel","at":{"lat":47.56,"lon":7.59}}]}' "${TS[@]}"
  # An Enum ($ref in the schema) and a boolean.
  t "$L call mix_paint (Enum, boolean)" 0 "json.loads(out) == {'color': 'green', 'shade': 'dark', 'hex': '#126024', 'glossy': True}" \
    call "${E[@]}" "${TP[@]}" mix_paint color=green shade=dark glossy=true "${TS[@]}"
  t "$L call --json stats (list of numbers)" 0 "j['structuredContent'] == {'count': 3, 'mean': 2.5, 'minimum': 1.0, 'maximum': 4.5}" \
    call --json "${E[@]}" "${TP[@]}" stats 'values=[1,2,4.5]' "${TS[@]}"
  t "$L call --json add (int output)" 0 "j['structuredContent'] == {'result': 42} and j['content'][0]['text'] == '42'" \
    call --json "${E[@]}" "${TP[@]}" add a=2 b=40 "${TS[@]}"
  t "$L call shout (no output schema)" 0 "out.strip() == 'HI HI HI'" call "${E[@]}" "${TP[@]}" shout text=hi times=3 "${TS[@]}"
  t "$L call fail: exit 1" 1 "'Error executing tool fail' in out and 'reported an error' in err" call "${E[@]}" "${TP[@]}" fail reason=x "${TS[@]}"
  x t "$L call --json fail: exit 1, isError" 1 "j['isError'] is True" call --json "${E[@]}" "${TP[@]}" fail reason=x "${TS[@]}"
  t "$L call bad Literal: exit 2" 2 "'\`mode\`' in err and 'boat' in err and out == ''" \
    call "${E[@]}" "${TP[@]}" plan_trip 'trip={"title":"x","stops":[]}' mode=boat "${TS[@]}"
  x t "$L call bad Enum: exit 2" 2 "'\`shade\`' in err and 'purple' in err and out == ''" \
    call "${E[@]}" "${TP[@]}" mix_paint color=red shade=purple "${TS[@]}"
  x t "$L call not an integer: exit 2" 2 "'\`travelers\`' in err" \
    call "${E[@]}" "${TP[@]}" plan_trip 'trip={"title":"x","stops":[]}' travelers=2.5 "${TS[@]}"
  x t "$L call not a boolean: exit 2" 2 "'\`glossy\`' in err" call "${E[@]}" "${TP[@]}" mix_paint color=red shade=dark glossy=perhaps "${TS[@]}"
  x t "$L call object not JSON: exit 2" 2 "'\`trip\`' in err" call "${E[@]}" "${TP[@]}" plan_trip 'trip={title' "${TS[@]}"
  x t "$L call missing argument: exit 2" 2 "'\`trip\`' in err" call "${E[@]}" "${TP[@]}" plan_trip mode=car "${TS[@]}"
  t "$L resources" 0 "'greeting://hello' in out" resources "${E[@]}" "${TP[@]}" "${TS[@]}"
  t "$L resources --json" 0 "j['resources'] == [{'uri': 'greeting://hello', 'name': 'hello', 'description': 'A greeting.', 'mimeType': 'text/plain'}]" \
    resources --json "${E[@]}" "${TP[@]}" "${TS[@]}"
  t "$L templates" 0 "'users://{user_id}/profile' in out" templates "${E[@]}" "${TP[@]}" "${TS[@]}"
  t "$L templates --json" 0 "[r['uriTemplate'] for r in j['resourceTemplates']] == ['users://{user_id}/profile']" templates --json "${E[@]}" "${TP[@]}" "${TS[@]}"
  t "$L read" 0 "out.strip() == 'Hello from Python'" read "${E[@]}" "${TP[@]}" greeting://hello "${TS[@]}"
  t "$L read --json (template)" 0 "json.loads(j['contents'][0]['text']) == {'user': 'ada'} and j['contents'][0]['mimeType'] == 'application/json'" \
    read --json "${E[@]}" "${TP[@]}" users://ada/profile "${TS[@]}"
  t "$L prompts" 0 "'review' in out and 'code [language]' in out" prompts "${E[@]}" "${TP[@]}" "${TS[@]}"
  t "$L prompts --json" 0 "j['prompts'][0]['arguments'] == [{'name': 'code', 'required': True}, {'name': 'language', 'required': False}]" \
    prompts --json "${E[@]}" "${TP[@]}" "${TS[@]}"
  t "$L prompt review code=… language=…" 0 "'Please review this rust:' in out and 'x = 1' in out" \
    prompt "${E[@]}" "${TP[@]}" review "code=x = 1" language=rust "${TS[@]}"
  t "$L prompt --json review" 0 "j['messages'] == [{'role': 'user', 'content': {'type': 'text', 'text': 'Please review this python:\\nx = 1'}}]" \
    prompt --json "${E[@]}" "${TP[@]}" review "code=x = 1" "${TS[@]}"
  x t "$L prompt unknown argument: exit 2" 2 "'\`bogus\`' in err" prompt "${E[@]}" "${TP[@]}" review code=1 bogus=2 "${TS[@]}"
  t "$L ping" 0 "out.startswith('alive')" ping "${E[@]}" "${TP[@]}" "${TS[@]}"
  t "$L ping --json" 0 "j['ok'] is True" ping --json "${E[@]}" "${TP[@]}" "${TS[@]}"
}

# --- the legs ----------------------------------------------------------------------------------
# Each stdio check starts its server again (seconds each, most of them spent waiting on Node or
# Python): the two stdio legs run in the background, each with its own files and report, while
# the Streamable HTTP legs run here; their reports follow, and their counts are added.
STDIO_LEGS=()
stdio_leg() {
  local label="$1" kind="$2"
  shift 2
  # A report or count left by an earlier run (the cache is kept) must not stand for this one.
  rm -rf "$WORK/$label"
  mkdir -p "$WORK/$label"
  (
    RUN="$WORK/$label" PASSED=0 FAILED=0 FAILURES=() FULL=0 TP=() TS=(-- "$@")
    eras_of "$label"
    for era in "${ERAS[@]}"; do "${kind}_leg" "$label $era" "$era"; done
    echo "$PASSED $FAILED" > "$RUN/counts"
    printf '%s\n' "${FAILURES[@]}" > "$RUN/failures"
  ) > "$WORK/$label/report" 2>&1 &
  STDIO_LEGS+=("$label:$!")
  PIDS+=($!)
}
stdio_leg everything-stdio everything "$NODE" "$EVERYTHING" stdio
stdio_leg python-stdio python "$PY" "$PY_SERVER"

start_everything_http everything-http
EVERYTHING_URL="$URL"
FULL=1; TP=("$URL"); TS=()
eras_of everything-http
for era in "${ERAS[@]}"; do everything_leg "everything-http $era" "$era"; done
t "everything-http modern info: a legacy-only server" 5 "'2026-07-28' in err" info --era modern "$URL"

start_python_http python-http
PYTHON_URL="$URL"
FULL=1; TP=("$URL"); TS=()
eras_of python-http
for era in "${ERAS[@]}"; do python_leg "python-http $era" "$era"; done
PYTHON_ERAS=("${ERAS[@]}")

for leg in "${STDIO_LEGS[@]}"; do
  label="${leg%%:*}"
  wait "${leg#*:}" || true
  cat "$WORK/$label/report"
  if read -r leg_passed leg_failed < "$WORK/$label/counts" 2>/dev/null; then
    PASSED=$((PASSED + leg_passed)); FAILED=$((FAILED + leg_failed))
    while IFS= read -r failure; do [ -z "$failure" ] || FAILURES+=("$failure"); done < "$WORK/$label/failures"
  else
    printf '%-58s FAIL  the leg stopped before its end\n' "$label"
    FAILED=$((FAILED + 1)); FAILURES+=("$label")
  fi
done

printf '%-58s ----  at %s s\n' codegen "$((SECONDS - started))"
# --- codegen: bindings of both servers, built and called ---------------------------------------
# From stdio, so that the command line each file records is the same on every run and a rerun
# leaves the files (and the build) untouched.
t "codegen everything" 0 "'everything.rs' in out and '17 tools, 4 prompts, 2 templates' in out" \
  codegen --out "$BINDINGS/src/everything.rs" -- "$NODE" "$EVERYTHING" stdio
t "codegen python" 0 "'python.rs' in out and '6 tools, 1 prompt, 1 template' in out" \
  codegen --out "$BINDINGS/src/python.rs" -- "$PY" "$PY_SERVER"
t "codegen --check everything (stdio)" 0 "'matches' in out" codegen --check --out "$BINDINGS/src/everything.rs" -- "$NODE" "$EVERYTHING" stdio
t "codegen --check python (stdio)" 0 "'matches' in out" codegen --check --out "$BINDINGS/src/python.rs" -- "$PY" "$PY_SERVER"
# The same contract over HTTP, in each era.
t "codegen --check everything (http)" 0 "'matches' in out" codegen --check --out "$BINDINGS/src/everything.rs" "$EVERYTHING_URL"
for era in "${PYTHON_ERAS[@]}"; do
  t "codegen --check python (http $era)" 0 "'matches' in out" codegen --check --era "$era" --out "$BINDINGS/src/python.rs" "$PYTHON_URL"
done

# The crate: the generated files as its library, caller.rs as its program; mcp-client from this
# workspace, its dependencies at the workspace's locked versions (offline).
cat > "$WORK/Cargo.toml" <<TOML
[package]
name = "cli-bindings"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
mcp-client = { path = "$ROOT/crates/mcp-client", default-features = false, features = ["http"] }
serde = { version = "1", features = ["derive"] }
serde_json = "1"
tokio = { version = "1", features = ["rt", "macros"] }

[profile.dev]
debug = false

[workspace]
TOML
printf '//! Bindings `mcp codegen` wrote for two servers (tests/interop/cli.sh).\n\npub mod everything;\npub mod python;\n' > "$WORK/lib.rs"
# Copied only when they differ, so that a rerun does not rebuild.
for pair in "$WORK/Cargo.toml:Cargo.toml" "$HERE/caller.rs:src/main.rs" "$WORK/lib.rs:src/lib.rs" "$ROOT/Cargo.lock:Cargo.lock.workspace"; do
  cmp -s "${pair%%:*}" "$BINDINGS/${pair#*:}" || cp "${pair%%:*}" "$BINDINGS/${pair#*:}"
done
# The workspace's lock file, again whenever the workspace's changed.
[ -f "$BINDINGS/Cargo.lock" ] && [ "$BINDINGS/Cargo.lock" -nt "$BINDINGS/Cargo.lock.workspace" ] ||
  cp "$ROOT/Cargo.lock" "$BINDINGS/Cargo.lock"
build_step() {
  local name="$1" rc=0
  shift
  (cd "$BINDINGS" && env -u RUSTFLAGS -u CARGO_ENCODED_RUSTFLAGS CARGO_TARGET_DIR="$BINDINGS_TARGET" \
    cargo "$@") > "$WORK/build.out" 2>&1 || rc=$?
  if [ "$rc" = 0 ]; then
    printf '%-58s PASS\n' "$name"; PASSED=$((PASSED + 1))
  else
    printf '%-58s FAIL  cargo %s exited %s\n' "$name" "$*" "$rc"; sed 's/^/    /' "$WORK/build.out" | head -200
    FAILED=$((FAILED + 1)); FAILURES+=("$name")
  fi
  return "$rc"
}
clippy_lints=(-D warnings)
if build_step "bindings: cargo clippy ${clippy_lints[*]}" clippy --offline --quiet -- "${clippy_lints[@]}" &&
  build_step "bindings: cargo build" build --offline --quiet; then
  CALLER="$BINDINGS_TARGET/debug/cli-bindings"
  caller_leg() {
    local label="$1" server="$2" url="$3" era="$4" rc=0
    timeout 120 "$CALLER" "$server" "$url" "$era" > "$WORK/$label.lines" 2> "$WORK/$label.err" || rc=$?
    if [ "$rc" != 0 ]; then
      printf '%-58s FAIL  the typed program exited %s\n' "$label typed calls" "$rc"; sed 's/^/    /' "$WORK/$label.err"
      FAILED=$((FAILED + 1)); FAILURES+=("$label typed calls")
      return
    fi
    if python3 "$HERE/compare.py" "$MCP" "$url" "$era" "$label" "$WORK/$label.lines" > "$WORK/$label.compare"; then :; else
      FAILED=$((FAILED + 1)); FAILURES+=("$label typed calls")
    fi
    cat "$WORK/$label.compare"
    PASSED=$((PASSED + $(grep -c ' PASS ' "$WORK/$label.compare" || true)))
  }
  caller_leg everything-http everything "$EVERYTHING_URL" legacy
  for era in "${PYTHON_ERAS[@]}"; do caller_leg "python-http-$era" python "$PYTHON_URL" "$era"; done
fi

# --- codegen --check against a server that changed ---------------------------------------------
start_python_http python-variant MCP_CLI_INTEROP_VARIANT=1
t "codegen --check python variant: exit 1 naming add" 1 \
  "'tool \`add\` changed' in err and err.count('tool \`') == 1 and '(1 entry)' in err" \
  codegen --check --out "$BINDINGS/src/python.rs" "$URL"
t "codegen --check python variant (stdio): exit 1" 1 "'tool \`add\` changed' in err" \
  codegen --check --out "$BINDINGS/src/python.rs" -- env MCP_CLI_INTEROP_VARIANT=1 "$PY" "$PY_SERVER"

echo "$INTEROP_NAME: $PASSED passed, $FAILED failed ($((SECONDS - started)) s)"
if [ "$FAILED" != 0 ]; then
  for failure in "${FAILURES[@]}"; do log "FAILED $failure"; done
  exit 1
fi
