"""A hostile stdio MCP server for the client's resource tests (tests/resources.rs).

Usage: hostile_stdio_server.py MODE COUNT
  stderr-flood  a working 2026-07-28 server (server/discover, tools/list, tools/call echo) that
                also writes COUNT bytes to stderr without a newline, then `flood done` on a line
  ping-flood    answers server/discover, then sends COUNT server-to-client pings and never reads
                stdin again (the client's answers pile up)
"""
import json
import sys
import threading
import time

mode, count = sys.argv[1], int(sys.argv[2])


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def discover(msg):
    send({"jsonrpc": "2.0", "id": msg["id"], "result": {
        "resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
        "ttlMs": 0, "cacheScope": "public",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "hostile", "version": "1.0"}}}})


def flood_stderr():
    chunk = b"x" * 65536
    left = count
    while left > 0:
        n = min(left, len(chunk))
        sys.stderr.buffer.write(chunk[:n])
        sys.stderr.buffer.flush()
        left -= n
    sys.stderr.buffer.write(b"\nflood done\n")
    sys.stderr.buffer.flush()


if mode == "stderr-flood":
    threading.Thread(target=flood_stderr, daemon=True).start()
    for line in sys.stdin:
        msg = json.loads(line)
        method = msg.get("method")
        if "id" not in msg or method is None:
            continue
        if method == "server/discover":
            discover(msg)
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "resultType": "complete", "ttlMs": 0, "cacheScope": "public",
                "tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}})
        else:
            text = msg["params"].get("arguments", {}).get("text", "")
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "resultType": "complete", "content": [{"type": "text", "text": text}]}})
elif mode == "ping-flood":
    discover(json.loads(sys.stdin.readline()))
    for n in range(count):
        sys.stdout.write('{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % n)
    sys.stdout.flush()
    time.sleep(3600)
