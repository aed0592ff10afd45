// Serves the test host (host.html and its bundle) on 127.0.0.1 and forwards `/mcp` to the MCP
// server under test, so that the page and the server share an origin (tests/interop/apps.sh).
//   node serve.mjs STATIC_DIR MCP_URL   -> prints "listening http://127.0.0.1:PORT/"
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

const [dir, upstream] = process.argv.slice(2);
const types = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8' };

const server = createServer(async (req, res) => {
  try {
    const url = new URL(req.url, 'http://localhost');
    if (url.pathname === '/mcp') {
      const body = await new Promise((resolve) => {
        const chunks = [];
        req.on('data', (c) => chunks.push(c));
        req.on('end', () => resolve(Buffer.concat(chunks)));
      });
      const headers = { ...req.headers };
      delete headers.host;
      delete headers.origin; // the server checks Origin against its own host
      const answer = await fetch(upstream, {
        method: req.method,
        headers,
        body: ['GET', 'HEAD'].includes(req.method) ? undefined : body,
      });
      res.writeHead(answer.status, Object.fromEntries(answer.headers));
      if (answer.body) {
        for await (const chunk of answer.body) res.write(chunk);
      }
      res.end();
      return;
    }
    const name = url.pathname === '/' ? 'host.html' : url.pathname.slice(1);
    if (!/^[\w.-]+$/.test(name)) throw new Error('not found');
    const file = await readFile(join(dir, name));
    res.writeHead(200, { 'content-type': types[name.slice(name.lastIndexOf('.'))] ?? 'text/plain' });
    res.end(file);
  } catch (error) {
    res.writeHead(404);
    res.end(String(error));
  }
});
server.listen(0, '127.0.0.1', () => {
  console.log(`listening http://127.0.0.1:${server.address().port}/`);
});
