"""Interop (gateway, issue 29): the official Python SDK's client (legacy era) uses mcp-gateway: it
lists the tools of every upstream, calls one of the everything server (stdio) and one of this
workspace's notes example (stdio), and gets the Python SDK server's prompt (HTTP)
(tests/interop/gateway.sh).

    python py_client.py MCP_URL
"""

import asyncio
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


def text(result) -> str:
    return result.content[0].text


async def main(url: str) -> None:
    async with streamable_http_client(url) as (read, write, *_):
        async with ClientSession(read, write) as session:
            initialized = await session.initialize()
            names = [t.name for t in (await session.list_tools()).tools]
            for wanted in ("everything_echo", "py_add", "notes_add_note"):
                if wanted not in names:
                    raise SystemExit(f"py: FAIL: no {wanted} in {names}")
            echo = await session.call_tool("everything_echo", {"message": "via the gateway"})
            if text(echo) != "Echo: via the gateway":
                raise SystemExit(f"py: FAIL: everything_echo gave {echo!r}")
            added = await session.call_tool("notes_add_note", {"title": "gateway", "body": "hello"})
            if added.is_error:
                raise SystemExit(f"py: FAIL: notes_add_note gave {added!r}")
            prompt = await session.get_prompt("py_review", {"code": "x = 1"})
            if "x = 1" not in prompt.messages[0].content.text:
                raise SystemExit(f"py: FAIL: py_review gave {prompt!r}")
            version = initialized.protocol_version
            print(f"py (protocol {version}): {len(names)} tools; everything_echo, notes_add_note and py_review through the gateway")


asyncio.run(main(sys.argv[1]))
