"""Writes the seed corpora of the fuzz targets into fuzz/corpus/<target>/ (kept between runs).

Seeds come from the official examples (schema/<rev>/examples, filled by `cargo xtask schema
sync`), the fixture corpus (tests/fixtures) and the sessions and header cases written below.
"""
import hashlib
import json
import pathlib

FUZZ = pathlib.Path(__file__).resolve().parent
ROOT = FUZZ.parent
MODERN, LEGACY = "2026-07-28", "2025-11-25"


def compact(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def write(target, seeds):
    directory = FUZZ / "corpus" / target
    directory.mkdir(parents=True, exist_ok=True)
    for seed in seeds:
        data = seed if isinstance(seed, bytes) else seed.encode()
        (directory / hashlib.sha1(data).hexdigest()).write_bytes(data)
    return len(seeds)


def examples(revisions=None):
    """(revision, folder, parsed JSON) of every official example and fixture."""
    found = []
    for base in [ROOT / "schema", ROOT / "tests" / "fixtures"]:
        for path in sorted(base.glob("*/**/*.json")):
            parts = path.relative_to(base).parts
            revision, folder = parts[0], parts[-2]
            if revisions and revision not in revisions:
                continue
            if path.name == "schema.json":
                continue
            try:
                found.append((revision, folder, json.loads(path.read_text())))
            except ValueError:
                continue
    return found


def mirrors(message):
    params = message.get("params") or {}
    version = ((params.get("_meta") or {}).get("io.modelcontextprotocol/protocolVersion")) or MODERN
    spec = {"v": version, "m": message.get("method", "")}
    name = params.get("name") or params.get("uri")
    if isinstance(name, str):
        spec["n"] = name
    return "#" + compact(spec)


def request(id, method, params=None, meta=True):
    params = dict(params or {})
    if meta:
        params["_meta"] = {"io.modelcontextprotocol/protocolVersion": MODERN,
                           "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "sampling": {}, "roots": {}}}
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}


def server_sessions():
    seeds = []
    for _, folder, example in examples([MODERN, "draft"]):
        if folder.endswith(("Request", "Notification")) and isinstance(example, dict) and "method" in example:
            seeds.append(compact(example))
            seeds.append(mirrors(example) + "\n" + compact(example))
    caps = {"elicitation": {}, "sampling": {}, "roots": {}}
    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": caps, "clientInfo": {"name": "fuzz", "version": "1"}}}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    legacy = lambda id, method, params=None: request(id, method, params, meta=False)
    answer = lambda id, result: {"jsonrpc": "2.0", "id": id, "result": result}
    seeds.append("\n".join(compact(m) for m in [
        initialize, initialized,
        legacy(1, "tools/call", {"name": "ask"}),
        answer(1, {"action": "accept", "content": {"name": "Ada"}}),
        answer(2, {"roots": [{"uri": "file:///tmp"}]}),
        legacy(2, "tools/call", {"name": "sample"}),
        answer(3, {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}),
        legacy(3, "logging/setLevel", {"level": "debug"}),
        legacy(4, "tools/call", {"name": "progress", "_meta": {"progressToken": "p"}}),
        legacy(5, "resources/subscribe", {"uri": "test://static"}),
        legacy(6, "resources/read", {"uri": "test://items/7"}),
        legacy(7, "prompts/get", {"name": "greeting", "arguments": {"name": "Ada"}}),
        legacy(8, "completion/complete", {"ref": {"type": "ref/prompt", "name": "greeting"},
                                          "argument": {"name": "name", "value": "a"}}),
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 4}},
        legacy(9, "ping"),
    ]))
    batching = dict(initialize, params=dict(initialize["params"], protocolVersion="2025-03-26"))
    seeds.append("\n".join([compact(batching), compact(initialized), compact([
        legacy(1, "ping"), legacy(2, "tools/call", {"name": "echo", "arguments": {"text": "b"}}),
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}])]))
    regional = request(1, "tools/call", {"name": "regional", "arguments": {"region": "eu", "count": 3, "flag": True}})
    spec = {"v": MODERN, "m": "tools/call", "n": "regional", "p": [["Region", "eu"], ["Count", "3"], ["Flag", "true"]]}
    seeds.append("#" + compact(spec) + "\n" + compact(regional))
    ask = request(2, "tools/call", {"name": "ask"})
    retry = request(3, "tools/call", {"name": "ask", "inputResponses": {
        "first": {"action": "accept", "content": {"name": "Ada"}}, "roots": {"roots": []}}})
    seeds.append("\n".join([mirrors(ask), compact(ask), mirrors(retry), compact(retry)]))
    tasks = {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "build", "_meta": {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {},
                                                       "extensions": {"io.modelcontextprotocol/tasks": {}}}}}}
    task_meta = tasks["params"]["_meta"]
    task_request = lambda id, method, params: {"jsonrpc": "2.0", "id": id, "method": method,
                                               "params": dict(params, _meta=task_meta)}
    seeds.append("\n".join([mirrors(tasks), compact(tasks),
                            compact(task_request(7, "tasks/get", {"taskId": "0" * 32})),
                            compact(task_request(8, "tasks/update", {"taskId": "0" * 32, "inputResponses": {
                                "target": {"action": "accept", "content": {"target": "docs"}}}})),
                            compact(task_request(9, "tasks/cancel", {"taskId": "0" * 32}))]))
    skills = [request(10, "skills/list"), request(11, "skills/get", {"uri": "skill://team/notes/SKILL.md"}),
              request(12, "resources/read", {"uri": "skill://team/notes/data/a.txt"}),
              request(13, "resources/directory/read", {"uri": "skill://team/notes"}),
              request(14, "resources/read", {"uri": "skill://team/notes/../secret"})]
    seeds.append("\n".join(line for message in skills for line in (mirrors(message), compact(message))))
    # What this target found once: an error about a malformed response carried the response's id,
    # so a request with that id was answered twice. And a request that lost its method.
    seeds.append("\n".join(compact(m) for m in [
        initialize, initialized, legacy(1, "ping"), {"jsonrpc": "1.0", "id": 1, "result": {}},
        {"id": 1, "result": {}}, {"jsonrpc": "2.0", "id": 2, "params": {}}]))
    # And: an id written `-0` was answered `0`. Ids are answered as written.
    refused_early = compact(request(0, "tools/call", {"name": "ask"}, meta=False))
    odd_ids = [refused_early.replace('"id":0', '"id":' + id)
               for id in ["-0", "-0.0", "1.0", "1e3", "18446744073709551616"]]
    seeds.append("\n".join(odd_ids))
    seeds.append("\n".join([compact(initialize), compact(initialized)] + odd_ids))
    # A tool source's result written out as its text says (`verbatim`), in both eras.
    results = ['{"content":[],"structuredContent":{"n":1.0E2,"z":-0.0},"vendor":[1, 2]}',
               '{"resultType":"complete","content":[],"isError":true,"_meta":{"io.modelcontextprotocol/serverInfo":{}}}',
               '{"content":[],"_meta":5}', '{"content":[],"\\u0076endor":"v","ttlMs":1}']
    verbatim = [request(20 + n, "tools/call", {"name": "verbatim", "arguments": {"text": text}})
                for n, text in enumerate(results)]
    seeds.append("\n".join(line for message in verbatim for line in (mirrors(message), compact(message))))
    seeds.append("\n".join([compact(initialize), compact(initialized)] + [
        compact(legacy(20 + n, "tools/call", {"name": "verbatim", "arguments": {"text": text}}))
        for n, text in enumerate(results)]))
    listen = request(4, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    seeds.append("\n".join([compact(listen), compact(request(5, "server/discover"))]))
    return seeds


def extension_results():
    """Params and results of the tasks and skills extensions (no official examples exist)."""
    task = {"taskId": "786512e2-9e0d-44bd-8f29-789f320fe840", "status": "input_required",
            "createdAt": "2026-07-28T10:30:00Z", "lastUpdatedAt": "2026-07-28T10:31:00Z", "ttlMs": 60000,
            "pollIntervalMs": 500, "statusMessage": "waiting"}
    skill = {"uri": "skill://team/notes/SKILL.md", "frontmatter": {"name": "notes", "description": "Team notes"},
             "resources": [{"uri": "skill://team/notes/data/a.txt", "size": 1,
                            "digest": "sha256:ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"}]}
    # Integers a `serde_json::Value` respells or cannot hold (CI once found `6.000`).
    respelled = [compact(dict(task, ttlMs=0)).replace('"ttlMs":0', f'"ttlMs":{literal}')
                 for literal in ["6.000", "1.5e1", "1e400", "123456789012345678901234567890", "-0.0"]]
    return respelled + [compact(v) for v in [
        dict(task, resultType="task"),
        dict(task, resultType="complete", inputRequests={"target": {"method": "elicitation/create", "params": {
            "mode": "form", "message": "Target?", "requestedSchema": {"type": "object", "properties": {}}}}}),
        dict(task, status="completed", result={"content": [{"type": "text", "text": "built"}]}),
        dict(task, status="failed", error={"code": -32603, "message": "failed"}),
        {"resultType": "complete"},
        {"taskId": task["taskId"], "inputResponses": {"target": {"action": "decline"}}},
        {"skills": [skill, dict(skill, resources="dynamic")], "nextCursor": "b2Zmc2V0OjI"},
        {"skill": skill}, {"uri": "skill://team/notes", "cursor": "x"},
        {"resources": [{"uri": "skill://team/notes/data", "name": "data", "mimeType": "inode/directory"}]},
    ]]


def sse_streams():
    seeds = []
    for _, folder, example in examples([MODERN, LEGACY]):
        if isinstance(example, dict) and example.get("jsonrpc") == "2.0":
            text = compact(example)
            seeds.append(b"\x03" + ("id: 7:1\ndata: " + text + "\n\n").encode())
            seeds.append(b"\x00" + ("id: 0\r\nretry: 500\r\ndata:\r\n\r\nevent: message\r\ndata: " + text + "\r\n\r\n").encode())
    seeds.append(b"\x05: keep-alive\n\nevent: endpoint\ndata: /messages?session=1\n\ndata: {\"jsonrpc\":\"2.0\",\ndata: \"id\":1,\"result\":{}}\r\r")
    seeds.append(b"\x01" + b'{"jsonrpc":"2.0","id":"1","error":{"code":-32601,"message":"no"}}\n{"jsonrpc":"2.0","id":2,"method":"ping"}\n')
    return seeds


def header_cases():
    seeds = ["us-west1", "Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?=", " padded ", "a\tb", "=?base64?/w==?=",
             "=?base64?not base64!?=", "Mcp-Param-Region", "mcp-name", ""]
    schema = {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "count": {"type": "integer", "x-mcp-header": "Count"},
        "flag": {"type": "boolean", "x-mcp-header": "Flag"},
        "nested": {"type": "object", "properties": {"inner": {"type": "string", "x-mcp-header": "Inner"}}}}}
    for arguments in [{"region": "eu-west", "count": 3, "flag": False},
                      {"region": " édge ", "count": 4.0, "nested": {"inner": "=?base64?x?="}},
                      {"region": None, "count": -1e3, "flag": True}]:
        seeds.append(compact({"schema": schema, "arguments": arguments}))
    seeds.append(compact({"schema": {"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}}))
    for _, folder, example in examples([MODERN]):
        if folder in ("Tool", "CallToolRequestParams"):
            seeds.append(compact(example))
    return seeds


if __name__ == "__main__":
    counts = {
        "decode_messages": write("decode_messages", [compact(e) for _, _, e in examples()] + extension_results()),
        "server_session": write("server_session", server_sessions()),
        "client_sse": write("client_sse", sse_streams()),
        "header_codec": write("header_codec", header_cases()),
    }
    print("seeds: " + ", ".join(f"{target} {count}" for target, count in counts.items()))
