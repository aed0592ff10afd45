"""Interop (numbers, issue 24): the official Python SDK's client calls the `echo` example's tool
with numbers as its serializer writes them, and checks that the structured content it gets back
holds the same numbers (tests/interop/numbers.sh).

    python tests/interop/numbers/py_client.py stdio ECHO_BINARY
    python tests/interop/numbers/py_client.py http MCP_URL

Python writes an int as an integer literal: 123456789012345678901234567890 is beyond the 64 bits
a `serde_json::Value` holds, so the server refuses it naming the member (the rule allows a
refusal, never a silent float); that refusal is checked too. One line on stdout; exits 1 on any
difference.
"""

from __future__ import annotations

import math
import sys

import anyio

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

# json.dumps writes these as 6.02214076e+23, -0.0, 1e+21, 1.2345678901234568e+29, 5e-324.
SENT = {
    "avogadro": 6.02214076e23,
    "zero": -0.0,
    "big": 1e21,
    "huge": 1.2345678901234568e29,
    "tiny": 5e-324,
    "max": 1.7976931348623157e308,
}
HUGE_INT = 123456789012345678901234567890


def same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return type(a) is type(b) and a == b


async def run(mode: str, target: str) -> None:
    if mode == "stdio":
        connection = stdio_client(StdioServerParameters(command=target, args=[]))
    else:
        connection = streamable_http_client(target)
    async with connection as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            result = await session.call_tool("echo", SENT)
            got = result.structured_content or {}
            different = [key for key in SENT if not same(SENT[key], got.get(key))]
            if different or result.is_error:
                print(f"py {mode}: FAIL: sent {SENT}, got {result}", file=sys.stderr)
                sys.exit(1)
            try:
                refused = await session.call_tool("echo", {"huge": HUGE_INT})
                print(f"py {mode}: FAIL: the integer {HUGE_INT} was not refused: {refused}", file=sys.stderr)
                sys.exit(1)
            except MCPError as error:
                if error.code != -32602 or str(HUGE_INT) not in str(error) or "arguments.huge" not in str(error):
                    print(f"py {mode}: FAIL: the refusal names neither member nor integer: {error}", file=sys.stderr)
                    sys.exit(1)
    version = getattr(init, "protocolVersion", None) or getattr(init, "protocol_version", "negotiated")
    print(f"py {mode} (protocol {version}): {len(SENT)} numbers came back as written; {HUGE_INT} refused naming it")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("stdio", "http"):
        print("usage: py_client.py stdio|http ECHO_BINARY|MCP_URL", file=sys.stderr)
        sys.exit(2)
    anyio.run(run, sys.argv[1], sys.argv[2])
