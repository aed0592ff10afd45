// Interop (auth): the official TypeScript SDK's client, with an OAuthClientProvider of its own,
// against the `notes` example served as an OAuth 2.1 resource server (tests/interop/auth.sh).
//
//   MCP_INTEROP_NODE_MODULES=<node_modules with @modelcontextprotocol/sdk> \
//     node tests/interop/auth/ts_client.mjs MCP_URL REDIRECT_URL
//
// The SDK does the MCP side of the flow: the 401 and its WWW-Authenticate, Protected Resource
// Metadata, authorization server metadata, dynamic client registration, PKCE, the resource
// indicator, the code exchange. The provider below only stores what the SDK hands it and plays
// the user agent: it follows the authorization URL through the test authorization server's
// headless login and consent (keeping cookies) until a redirect to REDIRECT_URL, and keeps the
// code. Then, as the SDK's own examples do: catch UnauthorizedError, `transport.finishAuth(code)`,
// connect again. One line per step on stdout; exits 1 on any mismatch. TRACE=1 logs every HTTP
// exchange of the transport (and of the SDK's auth() it drives) to stderr.

import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [mcpUrl, redirectUrl] = process.argv.slice(2);
if (!mcpUrl || !redirectUrl) {
  console.error('usage: ts_client.mjs MCP_URL REDIRECT_URL');
  process.exit(2);
}
const modules = process.env.MCP_INTEROP_NODE_MODULES;
if (!modules) {
  console.error('ts_client.mjs: MCP_INTEROP_NODE_MODULES is not set');
  process.exit(2);
}
// The SDK's ESM build, from the cache the script installed it into (not from this folder).
const sdkDir = join(modules, '@modelcontextprotocol/sdk');
const sdk = async (path) => import(pathToFileURL(join(sdkDir, 'dist/esm', path)).href);
const { Client } = await sdk('client/index.js');
const { StreamableHTTPClientTransport } = await sdk('client/streamableHttp.js');
const { UnauthorizedError } = await sdk('client/auth.js');
const { version: sdkVersion } = createRequire(import.meta.url)(join(sdkDir, 'package.json'));

function fail(message) {
  console.error(`ts_client: FAIL: ${message}`);
  process.exit(1);
}

/** Follows `url` as a browser would (GET, cookies kept) until a redirect to `redirectUrl`. */
async function userAgent(url) {
  const cookies = new Map();
  let next = new URL(url);
  for (let hop = 0; hop < 20; hop++) {
    const headers = {};
    if (cookies.size) headers.cookie = [...cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    const response = await fetch(next, { redirect: 'manual', headers });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair.indexOf('=');
      if (eq > 0) cookies.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
    }
    const location = response.headers.get('location');
    if (response.status < 300 || response.status >= 400 || !location) {
      const body = await response.text().catch(() => '');
      throw new Error(`authorization stopped at ${next} with HTTP ${response.status}: ${body.slice(0, 500)}`);
    }
    await response.body?.cancel();
    next = new URL(location, next);
    if (next.href.startsWith(redirectUrl)) return next;
  }
  throw new Error(`no redirect to ${redirectUrl} after 20 hops`);
}

/** The SDK's OAuthClientProvider interface, in memory. */
class InMemoryOAuthProvider {
  constructor(redirect) {
    this._redirect = redirect;
    this._clientInformation = undefined;
    this._tokens = undefined;
    this._codeVerifier = undefined;
    this._state = undefined;
    this.code = undefined;
    this.authorizations = 0;
    this.lastAuthorizationUrl = undefined;
    this.stepUps = 0;
  }
  get redirectUrl() {
    return this._redirect;
  }
  get clientMetadata() {
    return {
      client_name: 'mcp interop (TypeScript SDK)',
      redirect_uris: [this._redirect],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      scope: 'notes:read notes:write',
    };
  }
  state() {
    this._state = crypto.randomUUID();
    return this._state;
  }
  clientInformation() {
    return this._clientInformation;
  }
  saveClientInformation(information) {
    this._clientInformation = information;
  }
  tokens() {
    return this._tokens;
  }
  saveTokens(tokens) {
    this._tokens = tokens;
  }
  /** On a 403 insufficient_scope: see transportFetch below. */
  forgetForStepUp() {
    this._clientInformation = undefined;
    if (this._tokens?.refresh_token) {
      const { refresh_token: _dropped, ...rest } = this._tokens;
      this._tokens = rest;
    }
  }
  saveCodeVerifier(verifier) {
    this._codeVerifier = verifier;
  }
  codeVerifier() {
    if (!this._codeVerifier) throw new Error('no code verifier saved');
    return this._codeVerifier;
  }
  invalidateCredentials(scope) {
    if (scope === 'all' || scope === 'client') this._clientInformation = undefined;
    if (scope === 'all' || scope === 'tokens') this._tokens = undefined;
    if (scope === 'all' || scope === 'verifier') this._codeVerifier = undefined;
  }
  async redirectToAuthorization(authorizationUrl) {
    this.authorizations += 1;
    this.lastAuthorizationUrl = new URL(authorizationUrl);
    const landed = await userAgent(authorizationUrl);
    const params = landed.searchParams;
    if (params.get('error')) {
      const hint =
        params.get('error') === 'invalid_scope'
          ? ' (the scope requested was not registered for this client: oidc-provider, in tests/auth/provider.mjs,' +
            ' holds a dynamically registered client to the `scope` it registered with)'
          : '';
      throw new Error(`authorization server answered error=${params.get('error')}: ${params.get('error_description')}${hint}`);
    }
    if (params.get('state') !== this._state) throw new Error(`state mismatch: sent ${this._state}, got ${params.get('state')}`);
    if (!params.get('code')) throw new Error(`no code in ${landed}`);
    this.code = params.get('code');
  }
  /** The code of the last redirect, once. */
  takeCode() {
    const code = this.code;
    this.code = undefined;
    if (!code) throw new Error('the SDK asked for authorization but no code came back');
    return code;
  }
}

const provider = new InMemoryOAuthProvider(redirectUrl);
// Step-up (403 insufficient_scope, for add_note's notes:write) needs two client-side workarounds:
// * SDK 1.x (modelcontextprotocol/typescript-sdk#2255): the transport calls auth() with the
//   challenged scope, but auth() prefers a refresh when a refresh token is stored, and a refresh
//   cannot widen scope (RFC 6749 §6): the same token comes back, the same 403 follows, and the
//   transport gives up ("Server returned 403 after trying upscoping"). The fix (SEP-2350,
//   typescript-sdk#2356) is not in 1.x. So the refresh token is forgotten on such a 403.
// * The SDK registered the client (RFC 7591) with the scope of the first challenge (notes:read),
//   not with clientMetadata.scope, and oidc-provider holds a client to its registered `scope`: an
//   authorization request for notes:write comes back `invalid_scope`. So the registration is
//   forgotten too, and auth() registers again with the wider scope before it authorizes.
async function transportFetch(url, init) {
  const response = await fetch(url, init);
  const challenge = response.headers.get('www-authenticate') ?? '';
  if (process.env.TRACE) console.error(`TRACE ${init?.method ?? 'GET'} ${url} -> ${response.status} ${challenge}`);
  if (response.status === 403 && /error="?insufficient_scope/.test(challenge)) {
    provider.stepUps += 1;
    provider.forgetForStepUp();
  }
  return response;
}
const client = new Client({ name: 'mcp-interop-auth-ts', version: '1.0.0' });
let transport;

/** connect(), and after UnauthorizedError the standard finishAuth + connect on a new transport. */
async function connect() {
  for (let attempt = 0; attempt < 3; attempt++) {
    transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider: provider, fetch: transportFetch });
    try {
      await client.connect(transport);
      return;
    } catch (error) {
      if (!(error instanceof UnauthorizedError)) throw error;
      await transport.finishAuth(provider.takeCode());
    }
  }
  throw new Error('still unauthorized after 3 authorizations');
}

/** A request; after UnauthorizedError (a new authorization, e.g. for more scope) finishAuth and retry. */
async function withAuth(what, request) {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await request();
    } catch (error) {
      if (!(error instanceof UnauthorizedError)) throw new Error(`${what}: ${error.message}`, { cause: error });
      await transport.finishAuth(provider.takeCode());
    }
  }
  throw new Error(`${what}: still unauthorized after 3 authorizations`);
}

function scopeOf(accessToken) {
  try {
    return JSON.parse(Buffer.from(accessToken.split('.')[1], 'base64url').toString()).scope;
  } catch {
    return '(not a JWT)';
  }
}

try {
  await connect();
  const server = client.getServerVersion();
  const tokens = provider.tokens();
  const authUrl = provider.lastAuthorizationUrl;
  console.log(
    `connect: ${server?.name} ${server?.version}, protocol ${transport.protocolVersion ?? '?'}, sdk ${sdkVersion}; ` +
      `client_id ${provider.clientInformation()?.client_id}, authorization resource=${authUrl?.searchParams.get('resource')} ` +
      `scope="${authUrl?.searchParams.get('scope')}", token scope "${scopeOf(tokens.access_token)}"`,
  );
  if (provider.authorizations < 1) fail('the SDK never asked for authorization');
  if (authUrl.searchParams.get('resource') !== mcpUrl) {
    fail(`resource indicator ${authUrl.searchParams.get('resource')} is not the server URL ${mcpUrl}`);
  }

  const { tools } = await withAuth('tools/list', () => client.listTools());
  const names = tools.map((tool) => tool.name).sort();
  console.log(`listTools: ${names.join(', ')}`);
  for (const wanted of ['add_note', 'list_notes']) if (!names.includes(wanted)) fail(`tools/list lacks ${wanted}`);

  const title = 'from-typescript';
  const added = await withAuth('add_note', () =>
    client.callTool({ name: 'add_note', arguments: { title, body: 'written by the TypeScript SDK' } }),
  );
  const addedText = added.content?.map((part) => part.text ?? '').join('') ?? '';
  console.log(`add_note: ${addedText} (isError: ${added.isError ?? false}; token scope now "${scopeOf(provider.tokens().access_token)}")`);
  if (added.isError) fail(`add_note returned an error: ${addedText}`);

  const listed = await withAuth('list_notes', () => client.callTool({ name: 'list_notes', arguments: {} }));
  console.log(`list_notes: ${JSON.stringify(listed.structuredContent)}`);
  if (listed.isError) fail('list_notes returned an error');
  const titles = listed.structuredContent?.titles;
  if (!Array.isArray(titles) || !titles.includes(title)) fail(`list_notes does not show ${title}`);
  if (listed.structuredContent.count !== titles.length) fail('list_notes: count does not match titles');
  console.log(`authorizations: ${provider.authorizations}, step-ups: ${provider.stepUps}`);
  await client.close();
} catch (error) {
  fail(error.stack ?? String(error));
}
