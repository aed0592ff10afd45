"""Interop (gateway, issue 29): the official Python SDK's client (legacy era) uses mcp-gateway: it
lists the tools of every upstream, calls one of the everything server (stdio) and one of this
workspace's notes example (stdio), gets the Python SDK server's prompt (HTTP), and answers the
elicitation of the Python server's `ask_name`, which the gateway passes on
(tests/interop/gateway.sh).

    python py_client.py MCP_URL
"""

import asyncio
import sys

from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client


def text(result) -> str:
    return result.content[0].text


async def main(url: str) -> None:
    asked = []

    async def elicit(context, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async with streamable_http_client(url) as (read, write, *_):
        async with ClientSession(read, write, elicitation_callback=elicit) as session:
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
            greeted = await session.call_tool("py_ask_name", {})
            if text(greeted) != "Hello, Ada!" or asked != ["What is your name?"]:
                raise SystemExit(f"py: FAIL: py_ask_name gave {greeted!r}, asked {asked}")
            version = initialized.protocol_version
            print(
                f"py (protocol {version}): {len(names)} tools; everything_echo, notes_add_note, py_review "
                "and py_ask_name (the upstream's elicitation answered) through the gateway"
            )


asyncio.run(main(sys.argv[1]))
