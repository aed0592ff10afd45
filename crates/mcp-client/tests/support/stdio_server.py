"""A scripted stdio MCP server for the client's negotiation tests.

Usage: stdio_server.py MODE LOGFILE. Every line received is appended to LOGFILE (so tests can
assert what the client sent); MODE picks the behaviour:
  modern          answers server/discover and tools/* statelessly (2026-07-28)
  modern-32022    like modern, but refuses the first request with -32022 {supported}
  legacy-error    answers requests before initialize with -32601 (a typical legacy server)
  legacy-silent   never answers requests before initialize (the probe must time out)
  legacy-late     answers server/discover with a DiscoverResult, but only after 700 ms
  legacy-exit     exits when the first message is server/discover (must be restarted)
  legacy-nested   like legacy-error, but nests capabilities inside serverInfo
  legacy-asks     like legacy-error; tools/call first asks the client (elicitation, roots, ping)
  modern-slow     like modern, but starts 5 s late (silent until then) and refuses initialize with
                  -32022 {supported}
  dual-slow       starts 5 s late (silent), then serves both eras: server/discover and _meta
                  requests as modern, initialize and the requests after it as legacy
  modern-no-discover  never answers server/discover; refuses initialize with -32022 {supported}
  (the modern modes refuse initialize with -32022 {supported})
"""
import json
import sys
import threading
import time

mode, logfile = sys.argv[1], sys.argv[2]
out_lock = threading.Lock()
state = {"initialized": False, "refused": False, "next_id": 1000, "waiting": {}}


def send(msg):
    with out_lock:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()


def log(line):
    with open(logfile, "a") as f:
        f.write(line.rstrip("\n") + "\n")


TOOLS = [{"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
         {"name": "slow", "inputSchema": {"type": "object"}}]


EXACT_RESULT = ('{"structuredContent": {"n": 1.0E2, "big": 123456789012345678901234567890, "z": 0, "a": -0.0}, '
                '"content": [{"type": "text", "text": "exact"}], "x-vendor": {"b": [1, 2], "a": null}}')


def result(msg, body):
    send({"jsonrpc": "2.0", "id": msg["id"], "result": body})


def error(msg, code, message, data=None):
    err = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    send({"jsonrpc": "2.0", "id": msg["id"], "error": err})


def ask(method, params):
    """Sends a server-to-client request and waits for its answer (legacy only)."""
    state["next_id"] += 1
    rid = state["next_id"]
    event = threading.Event()
    state["waiting"][rid] = [event, None]
    send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    event.wait(10)
    return state["waiting"].pop(rid)[1]


def tools(msg, modern):
    method = msg["method"]
    extra = {"resultType": "complete", "ttlMs": 0, "cacheScope": "public"} if modern else {}
    if method == "tools/list":
        result(msg, dict(tools=TOOLS, **extra))
    elif method == "tools/call":
        name = msg["params"]["name"]
        if name == "slow":
            return  # never answers: the client cancels
        if name == "crash":
            sys.exit(3)
        if name == "exact":
            # Written by hand: member order, spacing and number spellings a re-encoding would change.
            body = EXACT_RESULT if not modern else EXACT_RESULT[:-1] + ', "resultType": "complete"}'
            with out_lock:
                sys.stdout.write('{"jsonrpc": "2.0", "id": %s, "result": %s}\n' % (json.dumps(msg["id"]), body))
                sys.stdout.flush()
            return
        if name == "touch" and not modern:
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            send({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"})
        if mode == "legacy-asks":
            def work():
                elicited = ask("elicitation/create", {"message": "name?", "requestedSchema": {
                    "type": "object", "properties": {"name": {"type": "string", "default": "Ann"}}}})
                roots = ask("roots/list", {})
                pong = ask("ping", {})
                text = json.dumps({"elicited": elicited, "roots": roots, "ping": pong})
                result(msg, {"content": [{"type": "text", "text": text}]})
            threading.Thread(target=work).start()
            return
        args = msg["params"].get("arguments", {})
        body = {"content": [{"type": "text", "text": args.get("text", "")}]}
        if modern:
            body["resultType"] = "complete"
        result(msg, body)
    else:
        error(msg, -32601, "Method not found")


def discover_result():
    return {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
            "ttlMs": 0, "cacheScope": "public",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "scripted-modern", "version": "1.0"}}}


def handle(msg):
    method = msg.get("method")
    if method is None:  # a response to one of our requests
        waiting = state["waiting"].get(msg.get("id"))
        if waiting:
            waiting[1] = msg.get("result", msg.get("error"))
            waiting[0].set()
        return
    if "id" not in msg:
        return  # notification
    if mode == "dual-slow":
        if method == "server/discover":
            return result(msg, discover_result())
        if method != "initialize" and "_meta" in msg.get("params", {}):
            return tools(msg, True)
    elif mode.startswith("modern"):
        if method == "initialize":
            return error(msg, -32022, "Unsupported protocol version",
                         {"supported": ["2026-07-28"], "requested": msg["params"]["protocolVersion"]})
        if mode == "modern-no-discover" and method == "server/discover":
            return
        if mode == "modern-32022" and not state["refused"]:
            state["refused"] = True
            requested = msg["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
            return error(msg, -32022, "Unsupported protocol version",
                         {"supported": ["2026-07-28"], "requested": requested})
        if method == "server/discover":
            return result(msg, discover_result())
        if method == "subscriptions/listen":
            meta = {"io.modelcontextprotocol/subscriptionId": msg["id"]}
            send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                  "params": {"notifications": msg["params"]["notifications"], "_meta": meta}})
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {"_meta": meta}})
            return  # stays open until the client cancels
        return tools(msg, True)
    # legacy modes
    if method == "initialize":
        state["initialized"] = True
        caps = {"tools": {"listChanged": True}}
        info = {"name": "scripted-legacy", "version": "0.9"}
        body = {"protocolVersion": msg["params"]["protocolVersion"], "serverInfo": info}
        if mode == "legacy-nested":
            info["capabilities"] = caps
        else:
            body["capabilities"] = caps
        return result(msg, body)
    if not state["initialized"]:
        if mode == "legacy-silent":
            return
        if mode == "legacy-late":
            def late():
                time.sleep(0.7)
                result(msg, discover_result())
            threading.Thread(target=late).start()
            return
        return error(msg, -32601, "Method not found")
    tools(msg, False)


if mode.endswith("-slow"):
    time.sleep(5)

for line in sys.stdin:
    log(line)
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if mode == "legacy-exit" and msg.get("method") == "server/discover":
        sys.exit(1)
    handle(msg)
