// Interop (numbers, issue 24): the official TypeScript SDK's client calls the `echo` example's
// tool with numbers as `JSON.stringify` writes them, and checks that the structured content it
// gets back holds the same numbers (tests/interop/numbers.sh).
//
//   MCP_INTEROP_NODE_MODULES=<node_modules with @modelcontextprotocol/sdk> \
//     node tests/interop/numbers/ts_client.mjs stdio ECHO_BINARY
//     node tests/interop/numbers/ts_client.mjs http MCP_URL
//
// One line on stdout; exits 1 on any difference.

import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [mode, target] = process.argv.slice(2);
const modules = process.env.MCP_INTEROP_NODE_MODULES;
if (!modules || !['stdio', 'http'].includes(mode) || !target) {
  console.error('usage: MCP_INTEROP_NODE_MODULES=... ts_client.mjs stdio|http ECHO_BINARY|MCP_URL');
  process.exit(2);
}
const sdkDir = join(modules, '@modelcontextprotocol/sdk');
const sdk = async (path) => import(pathToFileURL(join(sdkDir, 'dist/esm', path)).href);
const { Client } = await sdk('client/index.js');

// JSON.stringify writes these as 6.02214076e+23, 0 (it drops the sign of zero), 1e+21,
// 1.2345678901234568e+29, 5e-324 and 1.7976931348623157e+308: the numbers that come back must be
// what was on the wire.
const sent = {
  avogadro: 6.02214076e23,
  zero: -0.0,
  big: 1e21,
  huge: 123456789012345678901234567890,
  tiny: 5e-324,
  max: 1.7976931348623157e308,
};

let transport;
if (mode === 'stdio') {
  const { StdioClientTransport } = await sdk('client/stdio.js');
  transport = new StdioClientTransport({ command: target, args: [] });
} else {
  const { StreamableHTTPClientTransport } = await sdk('client/streamableHttp.js');
  transport = new StreamableHTTPClientTransport(new URL(target));
}
const client = new Client({ name: 'interop-numbers-ts', version: '1.0.0' });
await client.connect(transport);
const result = await client.callTool({ name: 'echo', arguments: sent });
await client.close();
const got = result.structuredContent ?? {};
const wire = JSON.parse(JSON.stringify(sent));
const different = Object.keys(wire).filter((key) => !Object.is(wire[key], got[key]));
if (different.length > 0 || result.isError) {
  console.error(`ts ${mode}: FAIL: sent ${JSON.stringify(sent)}, got ${JSON.stringify(result)}`);
  process.exit(1);
}
console.log(`ts ${mode}: ${Object.keys(wire).length} numbers came back as written`);
