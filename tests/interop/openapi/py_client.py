"""Interop (OpenAPI upstreams, issue 46): the official Python SDK's client (legacy era) uses a
FastAPI application's operations as tools through mcp-gateway (tests/interop/openapi.sh): it lists
them (names from the operationIds, schemas with FastAPI's `$ref`s expanded, hints from the methods,
an outputSchema where the response is an object), calls them with path, query and body arguments
(the SDK checks each structuredContent against its outputSchema), and gets the API's 404 and 422
as tool errors.

    python py_client.py MCP_URL
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

DELETE = "inv_delete_item_items__item_id__delete"


def text(result) -> str:
    return result.content[0].text if result.content else ""


def check(ok: bool, what: str) -> None:
    if not ok:
        raise SystemExit(f"py: FAIL: {what}")


async def main(url: str) -> None:
    async with streamable_http_client(url) as (read, write, *_):
        async with ClientSession(read, write) as session:
            initialized = await session.initialize()
            tools = (await session.list_tools()).tools
            by_name = {tool.name: tool for tool in tools}
            for wanted in ("inv_list_items", "inv_get_item", "inv_create_item", DELETE):
                check(wanted in by_name, f"no {wanted} in {sorted(by_name)}")
            listed = json.dumps([tool.model_dump(mode="json", by_alias=True) for tool in tools])
            check("$ref" not in listed, "a tool still has a $ref")
            get = by_name["inv_get_item"]
            check(get.annotations is not None and get.annotations.read_only_hint is True, f"get_item's hints: {get.annotations}")
            check(get.input_schema.get("required") == ["item_id"], f"get_item's input: {get.input_schema}")
            properties = (get.output_schema or {}).get("properties", {})
            check({"id", "name", "price", "size"} <= set(properties), f"get_item's outputSchema: {get.output_schema}")
            create = by_name["inv_create_item"]
            body = create.input_schema["properties"]["body"]
            check("width" in body["properties"]["size"]["anyOf"][0]["properties"], f"create_item's body: {body}")
            check("body" in create.input_schema.get("required", []), f"create_item's input: {create.input_schema}")
            check(by_name["inv_list_items"].output_schema is None, "list_items (an array) has an outputSchema")
            check(by_name[DELETE].annotations.destructive_hint is True, f"delete's hints: {by_name[DELETE].annotations}")

            hammer = await session.call_tool("inv_get_item", {"item_id": 1})
            check(not hammer.is_error and hammer.structured_content["name"] == "hammer", f"get_item 1 gave {hammer!r}")
            missing = await session.call_tool("inv_get_item", {"item_id": 999})
            check(
                missing.is_error and text(missing).startswith("HTTP 404 Not Found") and "no item 999" in text(missing),
                f"get_item 999 gave {missing!r}",
            )
            saw = {"name": "saw-py", "price": 7.25, "tags": ["sharp"], "size": {"width": 3, "height": 4}}
            created = await session.call_tool("inv_create_item", {"body": saw})
            item = created.structured_content or {}
            check(
                not created.is_error and item.get("name") == "saw-py" and item["size"]["height"] == 4,
                f"create_item gave {created!r}",
            )
            found = await session.call_tool("inv_list_items", {"tag": "sharp", "limit": 5})
            check(
                not found.is_error and any(i["name"] == "saw-py" for i in json.loads(text(found))),
                f"list_items gave {found!r}",
            )
            invalid = await session.call_tool("inv_create_item", {"body": {"name": "x", "price": -1}})
            check(invalid.is_error and text(invalid).startswith("HTTP 422"), f"a negative price gave {invalid!r}")
            deleted = await session.call_tool(DELETE, {"item_id": item["id"]})
            check(not deleted.is_error and text(deleted) == "HTTP 204 (no content)", f"delete gave {deleted!r}")
            gone = await session.call_tool("inv_get_item", {"item_id": item["id"]})
            check(gone.is_error and "404" in text(gone), f"get_item after delete gave {gone!r}")
            print(
                f"py (protocol {initialized.protocol_version}): {len(tools)} tools, no $ref left; get_item, "
                "create_item (nested model), list_items (query), delete; 404 and 422 as isError"
            )


asyncio.run(main(sys.argv[1]))
