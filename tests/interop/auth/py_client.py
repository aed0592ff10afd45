"""Interop (auth): the official Python SDK's client, with an OAuth client of its own, against the
`notes` example served as an OAuth 2.1 resource server (tests/interop/auth.sh).

    VENV/bin/python tests/interop/auth/py_client.py MCP_URL REDIRECT_URL [--trace]

The SDK's `OAuthClientProvider` (an httpx2.Auth) does the MCP side of the flow: the 401 and its
WWW-Authenticate, Protected Resource Metadata, authorization server metadata, dynamic client
registration, PKCE, the resource indicator, the code exchange, step-up on 403 insufficient_scope.
This script supplies what the SDK leaves to the application: in-memory `TokenStorage`, and the
user agent: `redirect_handler` follows the authorization URL through the test authorization
server's headless login and consent (cookies kept, no automatic redirects) until a redirect to
REDIRECT_URL, and `callback_handler` hands back its code, state and iss. One line per step on
stdout; exits 1 on any mismatch. --trace logs every HTTP exchange (the auth flow's too) to stderr.
"""

from __future__ import annotations

import base64
import json
import sys
from importlib.metadata import version
from urllib.parse import parse_qs, urljoin, urlparse

import anyio
import httpx2

from mcp import ClientSession
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken


SCOPE_HINT = (
    " (the scope requested was not registered for this client: oidc-provider, in tests/auth/provider.mjs,"
    " holds a dynamically registered client to the `scope` it registered with)"
)


def fail(message: str) -> None:
    print(f"py_client: FAIL: {message}", file=sys.stderr)
    sys.exit(1)


class MemoryStorage(TokenStorage):
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class HeadlessUserAgent:
    """Plays the browser: follows the authorization URL, keeping cookies, until the redirect URI."""

    def __init__(self, redirect_url: str) -> None:
        self.redirect_url = redirect_url
        self.landed: dict[str, str] | None = None
        self.authorization_urls: list[str] = []

    async def redirect_handler(self, authorization_url: str) -> None:
        self.authorization_urls.append(authorization_url)
        url = authorization_url
        async with httpx2.AsyncClient(follow_redirects=False, timeout=30) as http:
            for _ in range(20):
                response = await http.get(url)  # the client's cookie jar keeps the AS's cookies
                location = response.headers.get("location")
                if not (300 <= response.status_code < 400 and location):
                    raise RuntimeError(
                        f"authorization stopped at {url} with HTTP {response.status_code}: {response.text[:500]}"
                    )
                url = urljoin(url, location)
                if url.startswith(self.redirect_url):
                    query = {key: values[0] for key, values in parse_qs(urlparse(url).query).items()}
                    if "error" in query:
                        raise RuntimeError(
                            f"authorization server answered error={query['error']}: {query.get('error_description')}"
                            + SCOPE_HINT * (query["error"] == "invalid_scope")
                        )
                    self.landed = query
                    return
        raise RuntimeError(f"no redirect to {self.redirect_url} after 20 hops")

    async def callback_handler(self) -> AuthorizationCodeResult:
        landed, self.landed = self.landed, None
        if not landed or "code" not in landed:
            raise RuntimeError("the SDK asked for the callback but no code came back")
        return AuthorizationCodeResult(code=landed["code"], state=landed.get("state"), iss=landed.get("iss"))


def token_scope(storage: MemoryStorage) -> str:
    if storage.tokens is None:
        return "(none)"
    try:
        payload = storage.tokens.access_token.split(".")[1]
        return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["scope"]
    except (IndexError, ValueError, KeyError):
        return "(not a JWT)"


def text_of(result) -> str:
    return "".join(getattr(part, "text", "") for part in result.content)


async def main(mcp_url: str, redirect_url: str) -> None:
    storage = MemoryStorage()
    agent = HeadlessUserAgent(redirect_url)
    oauth = OAuthClientProvider(
        server_url=mcp_url,
        client_metadata=OAuthClientMetadata(
            client_name="mcp interop (Python SDK)",
            redirect_uris=[redirect_url],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
            scope="notes:read notes:write",
        ),
        storage=storage,
        redirect_handler=agent.redirect_handler,
        callback_handler=agent.callback_handler,
    )

    # Step-up (403 insufficient_scope, for add_note's notes:write): the SDK registered the client
    # (RFC 7591) with the scope of the first challenge (notes:read, plus offline_access), not with
    # client_metadata.scope, and oidc-provider holds a client to its registered `scope`: the
    # step-up authorization request (notes:write added, SEP-2350) comes back `invalid_scope`. So on
    # such a 403 the registration is forgotten, before the SDK's auth flow sees the response (httpx2
    # runs response hooks first), and the SDK registers again with the wider scope.
    step_ups = 0

    async def on_response(response: httpx2.Response) -> None:
        nonlocal step_ups
        challenge = response.headers.get("www-authenticate", "")
        if "--trace" in sys.argv:
            request = response.request
            print(f"TRACE {request.method} {request.url} -> {response.status_code} {challenge}", file=sys.stderr)
        if response.status_code == 403 and "insufficient_scope" in challenge:
            step_ups += 1
            storage.client_info = None
            oauth.context.client_info = None

    hooks = {"response": [on_response]}
    async with httpx2.AsyncClient(auth=oauth, timeout=httpx2.Timeout(30, read=300), event_hooks=hooks) as http:
        async with streamable_http_client(mcp_url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                first = urlparse(agent.authorization_urls[0]) if agent.authorization_urls else None
                params = {k: v[0] for k, v in parse_qs(first.query).items()} if first else {}
                print(
                    f"connect: {init.server_info.name} {init.server_info.version}, protocol {init.protocol_version}, "
                    f"sdk mcp {version('mcp')}; client_id {storage.client_info.client_id if storage.client_info else None}, "
                    f"authorization resource={params.get('resource')} scope=\"{params.get('scope')}\", "
                    f"token scope \"{token_scope(storage)}\""
                )
                if not agent.authorization_urls:
                    fail("the SDK never asked for authorization")
                if params.get("resource") != mcp_url:
                    fail(f"resource indicator {params.get('resource')} is not the server URL {mcp_url}")

                tools = await session.list_tools()
                names = sorted(tool.name for tool in tools.tools)
                print(f"list_tools: {', '.join(names)}")
                for wanted in ("add_note", "list_notes"):
                    if wanted not in names:
                        fail(f"tools/list lacks {wanted}")

                title = "from-python"
                added = await session.call_tool("add_note", {"title": title, "body": "written by the Python SDK"})
                print(
                    f"add_note: {text_of(added)} (is_error: {added.is_error}; token scope now \"{token_scope(storage)}\")"
                )
                if added.is_error:
                    fail(f"add_note returned an error: {text_of(added)}")

                listed = await session.call_tool("list_notes", {})
                structured = listed.structured_content
                print(f"list_notes: {json.dumps(structured)}")
                if listed.is_error:
                    fail("list_notes returned an error")
                titles = (structured or {}).get("titles")
                if not isinstance(titles, list) or title not in titles:
                    fail(f"list_notes does not show {title}")
                if structured.get("count") != len(titles):
                    fail("list_notes: count does not match titles")
                print(f"authorizations: {len(agent.authorization_urls)}, step-ups: {step_ups}")


if __name__ == "__main__":
    args = [arg for arg in sys.argv[1:] if not arg.startswith("--")]
    if len(args) != 2:
        print("usage: py_client.py MCP_URL REDIRECT_URL [--trace]", file=sys.stderr)
        sys.exit(2)
    try:
        anyio.run(main, *args)
    except SystemExit:
        raise
    except BaseException as error:  # noqa: BLE001 - report anything, exception groups included
        import traceback

        traceback.print_exception(error)
        # The task groups wrap the cause in exception groups: name the innermost errors.
        leaves, pending = [], [error]
        while pending:
            current = pending.pop()
            if isinstance(current, BaseExceptionGroup):
                pending.extend(current.exceptions)
            else:
                leaves.append(current)
        fail("; ".join(f"{type(leaf).__name__}: {leaf}" for leaf in leaves))
