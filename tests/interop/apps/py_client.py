"""Interop (MCP Apps, issue 28): the official Python SDK's client reads the interface that the
`apps` example's tool names, and checks its MIME type and that it is the app's HTML
(tests/interop/apps.sh).

    python py_client.py stdio APPS_BINARY | http MCP_URL
"""

import asyncio
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

MIME = "text/html;profile=mcp-app"


async def check(session: ClientSession, mode: str) -> None:
    await session.initialize()
    tools = (await session.list_tools()).tools
    tool = next(t for t in tools if t.name == "convert_temperature")
    uri = (tool.meta or {}).get("ui", {}).get("resourceUri")
    if uri != "ui://temperature/app.html":
        raise SystemExit(f"py {mode}: FAIL: _meta of the tool: {tool.meta!r}")
    contents = (await session.read_resource(uri)).contents
    content = contents[0]
    if content.mime_type != MIME or "new App(" not in content.text:
        raise SystemExit(f"py {mode}: FAIL: {content.mime_type!r}, {len(getattr(content, 'text', ''))} chars")
    print(f"py {mode}: read {uri} as {content.mime_type} ({len(content.text)} chars of HTML)")


async def main() -> None:
    mode, target = sys.argv[1], sys.argv[2]
    if mode == "stdio":
        connection = stdio_client(StdioServerParameters(command=target, args=[], env=dict(os.environ)))
    else:
        connection = streamable_http_client(target)
    async with connection as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await check(session, mode)


asyncio.run(main())
