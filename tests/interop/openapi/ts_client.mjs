// Interop (OpenAPI upstreams, issue 46): the official TypeScript SDK v2 client
// (@modelcontextprotocol/client), pinned to the 2026-07-28 era, uses a FastAPI application's
// operations as tools through mcp-gateway (tests/interop/openapi.sh): it lists them (names from the
// operationIds, schemas with FastAPI's `$ref`s expanded, hints from the methods, an outputSchema
// where the response is an object), calls them with path, query and body arguments (the SDK checks
// each structuredContent against its outputSchema), and gets the API's 404 and 422 as tool errors.
//   MCP_INTEROP_NODE_MODULES=<node_modules with @modelcontextprotocol/client> node ts_client.mjs MCP_URL
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [url] = process.argv.slice(2);
const clientDir = join(process.env.MCP_INTEROP_NODE_MODULES, '@modelcontextprotocol/client');
const { Client, StreamableHTTPClientTransport } = await import(pathToFileURL(join(clientDir, 'dist/index.mjs')).href);

const client = new Client({ name: 'interop-openapi-ts', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
const fail = (what) => {
  console.error(`ts: FAIL: ${what}`);
  process.exit(1);
};
const check = (ok, what) => ok || fail(what);
const text = (result) => result.content?.[0]?.text ?? '';
const version = client.getNegotiatedProtocolVersion();
check(version === '2026-07-28', `negotiated ${version}`);

const { tools } = await client.listTools();
const byName = Object.fromEntries(tools.map((tool) => [tool.name, tool]));
const DELETE = 'inv_delete_item_items__item_id__delete';
for (const wanted of ['inv_list_items', 'inv_get_item', 'inv_create_item', DELETE]) {
  check(byName[wanted], `no ${wanted} in ${JSON.stringify(Object.keys(byName))}`);
}
check(!JSON.stringify(tools).includes('$ref'), 'a tool still has a $ref');
const get = byName.inv_get_item;
check(get.annotations?.readOnlyHint === true, `get_item's hints: ${JSON.stringify(get.annotations)}`);
check(JSON.stringify(get.inputSchema.required) === '["item_id"]', `get_item's input: ${JSON.stringify(get.inputSchema)}`);
for (const field of ['id', 'name', 'price', 'size']) {
  check(get.outputSchema?.properties?.[field], `get_item's outputSchema has no ${field}: ${JSON.stringify(get.outputSchema)}`);
}
const create = byName.inv_create_item;
const body = create.inputSchema.properties.body;
check(body?.properties?.size?.anyOf?.[0]?.properties?.width, `create_item's body: ${JSON.stringify(body)}`);
check(create.inputSchema.properties.dry_run?.type === 'boolean', `create_item's dry_run: ${JSON.stringify(create.inputSchema)}`);
check(create.inputSchema.required?.includes('body'), `create_item's required: ${JSON.stringify(create.inputSchema)}`);
check(!byName.inv_list_items.outputSchema, 'list_items (an array) has an outputSchema');
check(byName[DELETE].annotations?.destructiveHint === true, `delete's hints: ${JSON.stringify(byName[DELETE].annotations)}`);

const hammer = await client.callTool({ name: 'inv_get_item', arguments: { item_id: 1 } });
check(!hammer.isError && hammer.structuredContent?.name === 'hammer', `get_item 1 gave ${JSON.stringify(hammer)}`);
check(JSON.parse(text(hammer)).price === 9.5, `get_item 1's text: ${text(hammer)}`);
const missing = await client.callTool({ name: 'inv_get_item', arguments: { item_id: 999 } });
check(missing.isError === true && text(missing).startsWith('HTTP 404 Not Found') && text(missing).includes('no item 999'),
  `get_item 999 gave ${JSON.stringify(missing)}`);
const saw = { name: 'saw-ts', price: 12.5, tags: ['tools', 'sharp'], size: { width: 1, height: 2 } };
const created = await client.callTool({ name: 'inv_create_item', arguments: { body: saw, dry_run: false } });
const item = created.structuredContent;
check(!created.isError && item?.name === 'saw-ts' && item.size?.width === 1 && Number.isInteger(item.id),
  `create_item gave ${JSON.stringify(created)}`);
const listed = await client.callTool({ name: 'inv_list_items', arguments: { tag: 'sharp', limit: 5 } });
check(!listed.isError && JSON.parse(text(listed)).some((found) => found.name === 'saw-ts'), `list_items gave ${JSON.stringify(listed)}`);
const invalid = await client.callTool({ name: 'inv_create_item', arguments: { body: { name: 'x', price: -1 } } });
check(invalid.isError === true && text(invalid).startsWith('HTTP 422'), `a negative price gave ${JSON.stringify(invalid)}`);
const deleted = await client.callTool({ name: DELETE, arguments: { item_id: item.id } });
check(!deleted.isError && text(deleted) === 'HTTP 204 (no content)', `delete gave ${JSON.stringify(deleted)}`);
const gone = await client.callTool({ name: 'inv_get_item', arguments: { item_id: item.id } });
check(gone.isError === true && text(gone).includes('404'), `get_item after delete gave ${JSON.stringify(gone)}`);
await client.close();
console.log(
  `ts (protocol ${version}): ${tools.length} tools, no $ref left; get_item, create_item (nested model), list_items ` +
    '(query), delete; 404 and 422 as isError',
);
