"""`compare.py MCP URL ERA LABEL LINES`: for each line the typed-bindings program
(tests/interop/cli/caller.rs) printed, makes the same call with `mcp --json --era ERA` and
compares: a tool's typed output with the result's structuredContent, a tool without an output
schema's content with the result's content, a failed tool with exit code 1 and isError; a
prompt's messages; a read's contents. Prints one PASS/FAIL line per call; exits 1 on a failure.

Before comparing, both sides are normalized: object members whose value is null are dropped (the
generated types skip a `None` when they encode an output again, where the server wrote null),
and clock times and UUIDs in text are masked (the everything server puts the time of day and the
session's id in some texts; each side is its own session).
"""
import json
import re
import subprocess
import sys

MCP, URL, ERA, LABEL, LINES = sys.argv[1:6]

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
CLOCK = re.compile(r"\b\d{1,2}:\d{2}:\d{2}(\s?[AP]M)?")


def normalize(value):
    if isinstance(value, dict):
        return {k: normalize(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [normalize(v) for v in value]
    if isinstance(value, str):
        return CLOCK.sub("<time>", UUID.sub("<uuid>", value))
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def mcp(*words):
    done = subprocess.run([MCP, "--json", "--era", ERA, *words], capture_output=True, text=True, timeout=60)
    try:
        out = json.loads(done.stdout)
    except ValueError:
        out = None
    return done.returncode, out, done.stderr


failed = 0
seen = {}
for text in open(LINES, encoding="utf-8"):
    call = json.loads(text)
    what = call.get("name") or call.get("uri")
    seen[what] = seen.get(what, 0) + 1
    name = f"{LABEL} typed {call['kind']} {what}" + (f" #{seen[what]}" if seen[what] > 1 else "")
    if call["kind"] == "tool":
        rc, out, err = mcp("call", URL, call["name"], "--args", json.dumps(call["args"]))
        if call["status"] == "error":
            texts = [b.get("text", "") for b in (out or {}).get("content", [])]
            ok = rc == 1 and out["isError"] is True and all(t in call["result"] for t in texts)
            got, want = (rc, texts), ("exit 1 with isError", call["result"])
        else:
            key = "structuredContent" if call["status"] == "structured" else "content"
            got = normalize((out or {}).get(key))
            want = normalize(call["result"])
            ok = rc == 0 and got == want
    elif call["kind"] == "prompt":
        words = [f"{k}={v}" for k, v in call["args"].items()]
        rc, out, err = mcp("prompt", URL, call["name"], *words)
        got, want = normalize((out or {}).get("messages")), normalize(call["result"])
        ok = rc == 0 and got == want
    else:
        rc, out, err = mcp("read", URL, call["uri"])
        got, want = normalize((out or {}).get("contents")), normalize(call["result"])
        ok = rc == 0 and got == want
    if ok:
        print(f"{name:<58} PASS  {call.get('status', '')}")
    else:
        failed = 1
        print(f"{name:<58} FAIL  mcp exited {rc}")
        print(f"    typed: {json.dumps(want)[:2000]}")
        print(f"    mcp:   {json.dumps(got)[:2000]}")
        print(f"    stderr: {err.strip()[:1000]}")
sys.exit(failed)
