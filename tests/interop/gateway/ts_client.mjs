// Interop (gateway, issue 29): the official TypeScript SDK v2 client (@modelcontextprotocol/client),
// pinned to the 2026-07-28 era (no `initialize`), uses mcp-gateway: it lists the tools of every upstream, calls
// one of the everything server (stdio, legacy era behind the gateway) and one of the Python SDK
// server (HTTP, `era = "auto"`: 2026-07-28 until its `ask_name` refuses to elicit there, legacy
// after), and reads the Python server's resource (tests/interop/gateway.sh).
// The Python server's `ask_name` elicits a name: the legacy server's `elicitation/create` request
// reaches this client as an input request of the 2026-07-28 wire, and its answer gets back.
//   MCP_INTEROP_NODE_MODULES=<node_modules with @modelcontextprotocol/client> node ts_client.mjs MCP_URL
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [url] = process.argv.slice(2);
const clientDir = join(process.env.MCP_INTEROP_NODE_MODULES, '@modelcontextprotocol/client');
const { Client, StreamableHTTPClientTransport } = await import(pathToFileURL(join(clientDir, 'dist/index.mjs')).href);

const client = new Client(
  { name: 'interop-gateway-ts', version: '1.0.0' },
  { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: { elicitation: { form: {} } } },
);
const asked = [];
client.setRequestHandler('elicitation/create', async (request) => {
  asked.push(request.params.message);
  return { action: 'accept', content: { name: 'Ada' } };
});
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
const fail = (what) => {
  console.error(`ts: FAIL: ${what}`);
  process.exit(1);
};
const version = client.getNegotiatedProtocolVersion();
if (version !== '2026-07-28') fail(`negotiated ${version}`);
const { tools } = await client.listTools();
const names = tools.map((t) => t.name);
for (const wanted of ['everything_echo', 'py_add', 'notes_add_note']) {
  if (!names.includes(wanted)) fail(`no ${wanted} in ${JSON.stringify(names)}`);
}
const echo = await client.callTool({ name: 'everything_echo', arguments: { message: 'via the gateway' } });
if (echo.content?.[0]?.text !== 'Echo: via the gateway') fail(`everything_echo gave ${JSON.stringify(echo)}`);
const sum = await client.callTool({ name: 'py_add', arguments: { a: 20, b: 22 } });
if (sum.content?.[0]?.text !== '42') fail(`py_add gave ${JSON.stringify(sum)}`);
const read = await client.readResource({ uri: 'greeting://hello' });
if (read.contents?.[0]?.text !== 'Hello from Python') fail(`greeting://hello gave ${JSON.stringify(read)}`);
const greeted = await client.callTool({ name: 'py_ask_name', arguments: {} });
if (greeted.content?.[0]?.text !== 'Hello, Ada!') fail(`py_ask_name gave ${JSON.stringify(greeted)}`);
if (JSON.stringify(asked) !== JSON.stringify(['What is your name?'])) fail(`asked ${JSON.stringify(asked)}`);
await client.close();
console.log(
  `ts (protocol ${version}): ${tools.length} tools; everything_echo, py_add, greeting://hello and py_ask_name ` +
    `(the legacy server's elicitation answered as an input request) through the gateway`,
);
