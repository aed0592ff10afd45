// A real OAuth 2.1 authorization server for the tests: oidc-provider (tests/auth/package.json pins
// the version), configured for MCP's authorization flows and completing every login and consent
// at once, without a user.
//
//   node tests/auth/provider.mjs [--port N] [--exit-with-stdin]
//
// --port N: 0, the default, picks a free port. --exit-with-stdin: exit when stdin closes (the
// Rust launcher, mcp_tests::oidc, holds it open, so a test process that dies takes the server along).
//
// `cargo xtask test` installs oidc-provider and exports the two variables this script needs:
//   MCP_TEST_OIDC_MODULES  the node_modules folder that holds oidc-provider (required)
//   MCP_TEST_OIDC_KEY_PEM  optional: a file to write the issuer's private signing key to (PKCS#8
//                          PEM, ES256, kid "test-key-1"), for tests that mint their own tokens
//   MCP_TEST_OIDC_TOKEN_TTL  optional: access token lifetime in seconds (default 600)
//
// It listens on 127.0.0.1 only, with the issuer `http://127.0.0.1:PORT`, and prints exactly one line
// to stdout once it accepts connections: `listening on http://127.0.0.1:PORT`. Everything else
// (oidc-provider's notices included) goes to stderr. SIGTERM and SIGINT end it.
//
// What it serves, beside oidc-provider's endpoints (/auth, /token, /reg, /jwks, /token/introspection,
// /token/revocation, /me) and both discovery documents (/.well-known/openid-configuration and, RFC
// 8414, /.well-known/oauth-authorization-server):
// * open dynamic client registration (RFC 7591), http loopback redirect URIs allowed, public
//   (`token_endpoint_auth_method: none`) and confidential clients; PKCE (S256) required for all;
// * resource indicators (RFC 8707): any http(s) resource on 127.0.0.1 or localhost, scopes
//   `notes:read notes:write admin`; a JWT access token (ES256, `typ: at+jwt`, `aud` = the resource)
//   unless the resource's path starts with `/opaque`, which gets an opaque token to introspect;
// * client credentials, introspection, revocation, refresh tokens (offline_access, or any
//   authorization_code grant of a client registered with the refresh_token grant type), DPoP;
// * static clients `rs-introspector` / `introspector-secret` (a resource server calling the
//   introspection endpoint), `test-cc` / `test-cc-secret` (client credentials) and `gateway` /
//   `gateway-secret` (client credentials and token exchange);
// * OAuth 2.0 Token Exchange (RFC 8693), through oidc-provider's `registerGrantType`: a client
//   allowed the grant trades an access token of this issuer (`subject_token`, of type
//   access_token: a JWT this issuer signed, or an opaque token it holds) for a JWT access token
//   of one resource (`resource` and/or `audience`, the same), whose `sub` is the subject's (a
//   user's: a client's own token is refused), whose scopes are those asked for (default: all
//   the subject holds) that the resource offers (asking for one the subject token lacks is
//   `invalid_scope`), whose `act` names the client (§4.1), which expires no later than the
//   subject token, and which is DPoP-bound when the request carries a proof;
// * GET /interaction/:uid finishes the interaction: login as the request's `login_hint` (else
//   `alice`), then consent to everything requested. A user agent that follows redirects and keeps
//   cookies ends at the client's redirect_uri with `code`, `state` and `iss`.

import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

// stdout carries the one ready line; oidc-provider prints notices with console.info. Two of its
// warnings are expected here (an in-memory store; Node 20 is not its preferred LTS) and dropped.
console.log = console.info = console.debug = (...args) => console.error(...args);
const warn = console.warn;
const EXPECTED_WARNINGS = ['Unsupported runtime', 'in-memory adapter'];
console.warn = (...args) => {
  const text = String(args[0]);
  if (!EXPECTED_WARNINGS.some((expected) => text.includes(expected))) warn(...args);
};

function fail(message) {
  console.error(`provider.mjs: ${message}`);
  process.exit(2);
}

let port = 0;
let exitWithStdin = false;
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--port' && i + 1 < argv.length) {
    port = Number(argv[++i]);
  } else if (argv[i].startsWith('--port=')) {
    port = Number(argv[i].slice('--port='.length));
  } else if (argv[i] === '--exit-with-stdin') {
    exitWithStdin = true;
  } else {
    fail(`unknown argument ${argv[i]} (usage: provider.mjs [--port N] [--exit-with-stdin])`);
  }
}
if (!Number.isInteger(port) || port < 0 || port > 65535) fail('--port must be 0..65535');

const modules = process.env.MCP_TEST_OIDC_MODULES;
if (!modules) fail('MCP_TEST_OIDC_MODULES is not set (`cargo xtask test` installs oidc-provider and sets it)');
const requireFrom = createRequire(`${modules.replace(/\/+$/, '')}/`);
async function load(name) {
  let path;
  try {
    path = requireFrom.resolve(name);
  } catch {
    fail(`cannot find ${name} in ${modules} (run \`cargo xtask test\` to install it)`);
  }
  return import(pathToFileURL(path).href);
}
const { default: Provider, errors } = await load('oidc-provider');
const jose = await load('jose');

const ttlText = process.env.MCP_TEST_OIDC_TOKEN_TTL;
const TOKEN_TTL = ttlText ? Number(ttlText) : 600;
if (!Number.isSafeInteger(TOKEN_TTL) || TOKEN_TTL <= 0) fail('MCP_TEST_OIDC_TOKEN_TTL must be a positive integer');

const KID = 'test-key-1';
const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
const RESOURCE_SCOPES = 'notes:read notes:write admin';

const { publicKey, privateKey } = await jose.generateKeyPair('ES256', { extractable: true });
const signingJwk = { ...(await jose.exportJWK(privateKey)), kid: KID, alg: 'ES256', use: 'sig' };
if (process.env.MCP_TEST_OIDC_KEY_PEM) {
  writeFileSync(process.env.MCP_TEST_OIDC_KEY_PEM, await jose.exportPKCS8(privateKey), { mode: 0o600 });
}

function resourceServerInfo(resourceIndicator) {
  const url = URL.parse(resourceIndicator);
  if (!url || !['http:', 'https:'].includes(url.protocol) || !['127.0.0.1', 'localhost'].includes(url.hostname)) {
    throw new errors.InvalidTarget('resource must be an http(s) URL on 127.0.0.1 or localhost');
  }
  if (url.pathname.startsWith('/opaque')) {
    return { scope: RESOURCE_SCOPES, audience: resourceIndicator, accessTokenFormat: 'opaque', accessTokenTTL: TOKEN_TTL };
  }
  return {
    scope: RESOURCE_SCOPES,
    audience: resourceIndicator,
    accessTokenFormat: 'jwt',
    accessTokenTTL: TOKEN_TTL,
    jwt: { sign: { alg: 'ES256' } },
  };
}

// The port is known only once the socket listens, and the issuer must carry it.
const server = createServer();
await new Promise((resolve, reject) => {
  server.once('error', reject);
  server.listen(port, '127.0.0.1', resolve);
});
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: 'rs-introspector',
      client_secret: 'introspector-secret',
      grant_types: [],
      response_types: [],
      redirect_uris: [],
    },
    {
      client_id: 'test-cc',
      client_secret: 'test-cc-secret',
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      scope: RESOURCE_SCOPES,
    },
    {
      client_id: 'gateway',
      client_secret: 'gateway-secret',
      grant_types: ['client_credentials', TOKEN_EXCHANGE],
      response_types: [],
      redirect_uris: [],
      scope: RESOURCE_SCOPES,
    },
  ],
  // OAuth 2.1: the code flow only (no implicit or hybrid response types).
  responseTypes: ['code'],
  clientDefaults: {
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
    // The only signing key is ES256 (oidc-provider's default here is RS256).
    id_token_signed_response_alg: 'ES256',
  },
  jwks: { keys: [signingJwk] },
  cookies: { keys: ['mcp-test-cookie-key'] },
  scopes: ['openid', 'offline_access', 'notes:read', 'notes:write', 'admin'],
  claims: { openid: ['sub'] },
  findAccount: (_ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  // An exchanged token names the client that acts for its subject (RFC 8693 §4.1).
  extraTokenClaims: async (_ctx, token) => (token.gty === TOKEN_EXCHANGE ? { act: { sub: token.clientId } } : undefined),
  pkce: { required: () => true },
  // Refresh tokens for offline_access, and for every code grant of a client that may refresh
  // (MCP clients rarely ask for offline_access).
  issueRefreshToken: async (ctx, client, source) =>
    client.grantTypeAllowed('refresh_token') &&
    (source.scopes.has('offline_access') || source.kind === 'AuthorizationCode' || source.kind === 'RefreshToken'),
  ttl: {
    AccessToken: (_ctx, token) => token.resourceServer?.accessTokenTTL || TOKEN_TTL,
    ClientCredentials: (_ctx, token) => token.resourceServer?.accessTokenTTL || TOKEN_TTL,
    AuthorizationCode: 60,
    IdToken: 3600,
    RefreshToken: 24 * 3600,
    Interaction: 3600,
    Session: 24 * 3600,
    Grant: 24 * 3600,
  },
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true, initialAccessToken: false },
    introspection: {
      enabled: true,
      // Confidential callers (rs-introspector) may introspect any client's tokens; public clients
      // only their own.
      allowedPolicy: async (ctx, client, token) => client.clientAuthMethod !== 'none' || token.clientId === client.clientId,
    },
    revocation: { enabled: true },
    clientCredentials: { enabled: true },
    dPoP: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async () => undefined,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (_ctx, resourceIndicator) => resourceServerInfo(resourceIndicator),
    },
  },
});
provider.on('server_error', (_ctx, error) => console.error('server_error:', error));

// RFC 8693 token exchange (see the header).
const { default: validateDpop } = await load('oidc-provider/lib/helpers/validate_dpop.js');
const { applyDpopBinding } = await load('oidc-provider/lib/helpers/grant_common.js');

// What a subject token says, if this issuer issued it and it is active.
async function subjectOf(token) {
  if (token.split('.').length === 3) {
    try {
      const { payload } = await jose.jwtVerify(token, publicKey, { issuer, typ: 'at+jwt' });
      return { sub: payload.sub, client: payload.client_id, scope: payload.scope ?? '', exp: payload.exp };
    } catch (error) {
      throw new errors.InvalidGrant(`subject_token: ${error.message}`);
    }
  }
  const stored = await provider.AccessToken.find(token);
  if (!stored) throw new errors.InvalidGrant('subject_token is not an active access token of this issuer');
  return { sub: stored.accountId, client: stored.clientId, scope: stored.scope ?? '', exp: stored.exp };
}

async function tokenExchange(ctx) {
  const { params, client } = ctx.oidc;
  if (params.subject_token_type !== ACCESS_TOKEN_TYPE) {
    throw new errors.InvalidRequest(`subject_token_type must be ${ACCESS_TOKEN_TYPE}`);
  }
  if (params.requested_token_type !== undefined && params.requested_token_type !== ACCESS_TOKEN_TYPE) {
    throw new errors.InvalidRequest(`requested_token_type must be ${ACCESS_TOKEN_TYPE}`);
  }
  if (params.actor_token !== undefined) throw new errors.InvalidRequest('actor_token is not supported');
  const targets = new Set([params.resource, params.audience].flat().filter(Boolean));
  if (targets.size !== 1) throw new errors.InvalidTarget('name one resource (resource and audience the same)');
  const [target] = targets;
  const subject = await subjectOf(params.subject_token);
  // A client's own token (client credentials: `sub` is its id) names no one to act for.
  if (!subject.sub || subject.sub === subject.client) throw new errors.InvalidGrant('subject_token names no user');
  const info = resourceServerInfo(target);
  const held = new Set(subject.scope.split(' ').filter(Boolean));
  const asked = params.scope ? params.scope.split(' ') : [...held];
  const lacking = asked.filter((scope) => !held.has(scope));
  if (lacking.length) throw new errors.InvalidScope(`the subject token does not hold ${lacking.join(' ')}`);
  const offered = new Set(info.scope.split(' '));
  const scope = asked.filter((scope) => offered.has(scope)).join(' ');
  // Never beyond the subject token's own life.
  const left = subject.exp ? subject.exp - Math.floor(Date.now() / 1000) : info.accessTokenTTL;
  if (left <= 0) throw new errors.InvalidGrant('subject_token has expired');
  info.accessTokenTTL = Math.min(info.accessTokenTTL, left);
  const token = new provider.AccessToken({ accountId: subject.sub, client, gty: TOKEN_EXCHANGE, scope: scope || undefined });
  token.resourceServer = new provider.ResourceServer(target, info);
  await applyDpopBinding(provider, ctx, await validateDpop(provider, ctx), token);
  ctx.oidc.entity('AccessToken', token);
  ctx.body = {
    access_token: await token.save(),
    issued_token_type: ACCESS_TOKEN_TYPE,
    token_type: token.tokenType,
    expires_in: token.expiration,
    scope: token.scope,
  };
}
provider.registerGrantType(
  TOKEN_EXCHANGE,
  tokenExchange,
  ['subject_token', 'subject_token_type', 'requested_token_type', 'actor_token', 'actor_token_type', 'audience', 'resource', 'scope'],
  ['audience', 'resource'],
);

// Headless login and consent.
async function finishInteraction(req, res) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session } = details;
  if (prompt.name === 'login') {
    const accountId = typeof params.login_hint === 'string' && params.login_hint ? params.login_hint : 'alice';
    await provider.interactionFinished(req, res, { login: { accountId } }, { mergeWithLastSubmission: false });
    return;
  }
  if (prompt.name === 'consent') {
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    const missing = prompt.details;
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    for (const [resource, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
      grant.addResourceScope(resource, scopes.join(' '));
    }
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
    return;
  }
  res.statusCode = 501;
  res.setHeader('content-type', 'text/plain');
  res.end(`prompt ${prompt.name} is not handled by provider.mjs\n`);
}

const callback = provider.callback();
server.on('request', (req, res) => {
  const path = (req.url ?? '/').split('?')[0];
  const interaction = /^\/interaction\/([^/]+)$/.exec(path);
  if (interaction && req.method === 'GET') {
    finishInteraction(req, res).catch((error) => {
      console.error('interaction failed:', error);
      if (!res.headersSent) {
        res.statusCode = 400;
        res.setHeader('content-type', 'text/plain');
      }
      res.end(`interaction failed: ${error.message}\n`);
    });
    return;
  }
  callback(req, res);
});

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    server.close();
    process.exit(0);
  });
}
// The test launcher holds our stdin open; if the test process dies without stopping us, it closes.
if (exitWithStdin) {
  process.stdin.on('end', () => process.exit(0));
  process.stdin.on('error', () => process.exit(0));
  process.stdin.resume();
}

process.stdout.write(`listening on ${issuer}\n`);
