// Interop (MCP Apps, issue 28): the official TypeScript SDK's client lists the `apps` example's
// tools and finds the interface its tool names in `_meta.ui.resourceUri` (tests/interop/apps.sh).
//   MCP_INTEROP_NODE_MODULES=<node_modules with @modelcontextprotocol/sdk> \
//     node ts_client.mjs stdio APPS_BINARY | http MCP_URL
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [mode, target] = process.argv.slice(2);
const sdkDir = join(process.env.MCP_INTEROP_NODE_MODULES, '@modelcontextprotocol/sdk');
const sdk = async (path) => import(pathToFileURL(join(sdkDir, 'dist/esm', path)).href);
const { Client } = await sdk('client/index.js');

let transport;
if (mode === 'stdio') {
  const { StdioClientTransport } = await sdk('client/stdio.js');
  transport = new StdioClientTransport({ command: target, args: [], env: process.env });
} else {
  const { StreamableHTTPClientTransport } = await sdk('client/streamableHttp.js');
  transport = new StreamableHTTPClientTransport(new URL(target));
}
const client = new Client(
  { name: 'interop-apps-ts', version: '1.0.0' },
  { capabilities: { extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: ['text/html;profile=mcp-app'] } } } },
);
await client.connect(transport);
const { tools } = await client.listTools();
const extensions = client.getServerCapabilities()?.extensions ?? {};
await client.close();
const tool = tools.find((t) => t.name === 'convert_temperature');
const uri = tool?._meta?.ui?.resourceUri;
if (uri !== 'ui://temperature/app.html' || !('io.modelcontextprotocol/ui' in extensions)) {
  console.error(`ts ${mode}: FAIL: tools ${JSON.stringify(tools)}, extensions ${JSON.stringify(extensions)}`);
  process.exit(1);
}
console.log(`ts ${mode}: convert_temperature names ${uri}; the server declares io.modelcontextprotocol/ui`);
