#!/usr/bin/env python3
"""The timing half of benches/cli/run.sh: one `tools/call` made by whole client processes.

Each measured run is one whole process (its startup, its connection and its exit included),
timed from just before the spawn to just after the wait (time.perf_counter) and started through
GNU time, whose %M is the wait4(2) ru_maxrss: the client process's own peak RSS, or that of a
descendant it reaped if one peaked higher (Linux reports the largest single process, never a
sum). For the stdio legs the server is such a descendant; its own peak
for the same call is measured separately (`server_peak`) so that the table can say the figure
is the client's. Every run's answer is checked; one wrong answer fails the whole benchmark.

Run through run.sh, which builds, installs and starts what this needs.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


TIME = "/usr/bin/time"  # GNU time; set from --time


def run_once(argv, cwd, env, stdin_bytes=None):
    """(wall seconds, peak RSS KiB, exit status, stdout, stderr) of one whole process."""
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile(mode="r") as rusage:
        if stdin_bytes is not None:
            stdin.write(stdin_bytes)
            stdin.seek(0)
        # Started by GNU time, not by this Python: a process's ru_maxrss starts from that of the
        # process that forked it (Linux carries the old image's high-water mark across exec), so
        # a child of this interpreter never reads below the interpreter's ~15 MiB, and one of
        # `time` (~2 MiB) reads its own. `time` adds about a millisecond to every leg alike.
        start = time.perf_counter()
        child = subprocess.run(
            [TIME, "-f", "%M", "-o", rusage.name, "--"] + argv, cwd=cwd, env=env, stdout=out, stderr=err,
            stdin=stdin if stdin_bytes is not None else subprocess.DEVNULL,
        )
        wall = time.perf_counter() - start
        lines = rusage.read().split()
        kib = int(lines[-1]) if lines and lines[-1].isdigit() else 0
        out.seek(0)
        err.seek(0)
        return wall, kib, child.returncode, out.read(), err.read()


def answer(stdout):
    """The echoed `msg`, from either client's JSON output."""
    document = json.loads(stdout)
    result = document.get("result", document)  # the Inspector wraps the result in {"result": …}
    return result["structuredContent"]["msg"]


def server_peak(server, cwd, env):
    """The stdio server's own peak RSS (KiB) for one legacy session carrying the same call."""
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "echo", "arguments": {"msg": "calibration"}}},
    ]
    stdin = "".join(json.dumps(m) + "\n" for m in messages).encode()
    peaks = []
    for _ in range(5):
        _, rss, code, out, err = run_once([server], cwd, env, stdin)
        if b"calibration" not in out:
            sys.exit(f"bench: the stdio server did not answer the calibration call: {err.decode()[-300:]}")
        peaks.append(rss)
    return statistics.median(peaks)


def p90(values):
    ordered = sorted(values)
    return ordered[max(0, -(-len(ordered) * 9 // 10) - 1)]  # nearest rank


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--mcp", required=True)
    parser.add_argument("--server", required=True, help="the echo example (stdio when given no argument)")
    parser.add_argument("--url", required=True, help="the same example serving Streamable HTTP")
    parser.add_argument("--node", required=True)
    parser.add_argument("--inspector", required=True, help="the Inspector's bin script")
    parser.add_argument("--npm-dir", required=True, help="where the Inspector is installed (npx runs there)")
    parser.add_argument("--npx", default=None, help="npx, to time the Inspector as `npx` starts it too")
    parser.add_argument("--home", required=True, help="HOME for every client (nothing of the real one read)")
    parser.add_argument("--time", default="/usr/bin/time", help="GNU time, which measures the peak RSS")
    parser.add_argument("--json-out", default=None)
    args = parser.parse_args()
    global TIME
    TIME = args.time

    env = dict(os.environ, HOME=args.home, NO_COLOR="1", npm_config_update_notifier="false")
    env.pop("MCP_CONFIG", None)
    npx_env = dict(env, npm_config_offline="true")  # resolve the local install, ask no registry
    inspector_cli = ["--cli", "--format", "json"]

    def mcp(transport, msg):
        if transport == "stdio":
            return [args.mcp, "--json", "call", "echo", f"msg={msg}", "--", args.server]
        return [args.mcp, "--json", "call", args.url, "echo", f"msg={msg}"]

    def inspector_words(transport, msg):
        call = ["--method", "tools/call", "--tool-name", "echo", "--tool-arg", f"msg={msg}"]
        if transport == "stdio":
            return inspector_cli + call + ["--", args.server]
        return inspector_cli + ["--transport", "http"] + call + ["--", args.url]

    clients = {
        "mcp": (mcp, env),
        "inspector": (lambda t, m: [args.node, args.inspector] + inspector_words(t, m), env),
    }
    if args.npx:
        clients["inspector (npx)"] = (
            lambda t, m: [args.npx, "--no-install", "@modelcontextprotocol/inspector"] + inspector_words(t, m),
            npx_env,
        )
    transports = ["stdio", "http"]
    names = list(clients)
    samples = {(t, c): [] for t in transports for c in names}

    # One unmeasured warm-up call per leg (page cache, node's compile cache if any), checked too.
    for iteration in range(-1, args.runs):
        msg = f"bench-{iteration + 1}-ok"
        # Rotate the order every iteration, so that no client always runs first or after another.
        order = names[iteration % len(names):] + names[:iteration % len(names)]
        for transport in transports:
            for name in order:
                build, client_env = clients[name]
                argv = build(transport, msg)
                wall, rss, code, out, err = run_once(argv, args.npm_dir, client_env)
                try:
                    got = answer(out) if code == 0 else None
                except (ValueError, KeyError, TypeError, AttributeError):
                    got = None
                if got != msg:
                    sys.exit(
                        f"bench: {name} over {transport} answered {got!r}, not {msg!r} (exit {code}): "
                        f"{(out + err).decode(errors='replace').strip()[-400:]}\n  command: {' '.join(argv)}"
                    )
                if iteration >= 0:
                    samples[(transport, name)].append((wall, rss))

    server_kib = server_peak(args.server, args.npm_dir, env)
    results = []
    for transport in transports:
        base = None
        for name in names:
            walls = [w * 1000 for w, _ in samples[(transport, name)]]
            rsss = [r / 1024 for _, r in samples[(transport, name)]]
            row = {
                "transport": transport, "client": name, "runs": len(walls),
                "median_ms": statistics.median(walls), "p90_ms": p90(walls),
                "min_ms": min(walls), "median_rss_mib": statistics.median(rsss),
                "max_rss_mib": max(rsss),
            }
            if name == "mcp":
                base = row
            row["wall_ratio"] = row["median_ms"] / base["median_ms"]
            row["rss_ratio"] = row["median_rss_mib"] / base["median_rss_mib"]
            results.append(row)

    print(f"\n{args.runs} calls per leg, alternating, after one warm-up call each (all answers checked)\n")
    print("| leg | client | median wall | p90 wall | median peak RSS | wall ÷ mcp | RSS ÷ mcp |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in results:
        print(
            f"| {r['transport']} | {r['client']} | {r['median_ms']:.1f} ms | {r['p90_ms']:.1f} ms "
            f"| {r['median_rss_mib']:.1f} MiB | {r['wall_ratio']:.1f}× | {r['rss_ratio']:.1f}× |"
        )
    print(f"\nThe stdio server's own peak RSS for the same call: {server_kib / 1024:.1f} MiB", end="")
    stdio_mcp = next(r for r in results if r["transport"] == "stdio" and r["client"] == "mcp")
    if server_kib / 1024 < stdio_mcp["median_rss_mib"]:
        print(" (below every client's, so each stdio figure above is the client's own).")
    else:
        print(" — NOT below mcp's stdio figure, which may therefore be the server's peak, not mcp's.")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"runs": args.runs, "server_peak_mib": server_kib / 1024, "legs": results}, f, indent=1)


if __name__ == "__main__":
    main()
