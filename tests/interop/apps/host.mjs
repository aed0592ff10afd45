// The host side of an MCP App, as a chat client would run it, in a real browser (bundled by
// esbuild; tests/interop/apps.sh): the official TypeScript client (v2) lists the tools of the
// server behind `/mcp`, finds the one with `_meta.ui.resourceUri`, reads that interface and runs
// it in a sandboxed iframe with the official `AppBridge`, which relays the app's own tool calls
// to the server. The model's call is made here and its result pushed to the app; what the app
// says back (`ui/message`) is written into this page, where the test reads it.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { AppBridge, PostMessageTransport } from '@modelcontextprotocol/ext-apps/app-bridge';

const MIME = 'text/html;profile=mcp-app';
const status = (text) => {
  document.getElementById('status').textContent = text;
};

try {
  const client = new Client(
    { name: 'apps-test-host', version: '1.0.0' },
    { capabilities: { extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: [MIME] } } } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', location.href)));
  const { tools } = await client.listTools();
  const tool = tools.find((t) => t._meta?.ui?.resourceUri);
  if (!tool) throw new Error(`no tool names an interface: ${JSON.stringify(tools)}`);
  const uri = tool._meta.ui.resourceUri;
  const read = await client.readResource({ uri });
  const contents = read.contents.find((c) => c.uri === uri);
  if (contents?.mimeType !== MIME) throw new Error(`${uri}: MIME type ${contents?.mimeType}`);

  const iframe = document.createElement('iframe');
  iframe.sandbox = 'allow-scripts';
  iframe.style = 'width: 480px; height: 240px; border: 1px solid #888';
  iframe.srcdoc = contents.text;
  document.getElementById('frame').append(iframe);

  const bridge = new AppBridge(
    client,
    { name: 'apps-test-host', version: '1.0.0' },
    { serverTools: {}, message: {}, logging: {} },
  );
  bridge.onmessage = async (params) => {
    document.getElementById('app-says').textContent = params.content.map((c) => c.text).join(' ');
    status('done');
    return {};
  };
  bridge.oninitialized = async () => {
    // The model's call: its arguments, then its result, pushed to the app.
    const args = { celsius: 100 };
    await bridge.sendToolInput({ arguments: args });
    const result = await client.callTool({ name: tool.name, arguments: args });
    await bridge.sendToolResult(result);
    status('result sent');
  };
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  status('app connecting');
} catch (error) {
  status(`error: ${error?.stack ?? error}`);
}
