//! OpenAPI upstreams (issue 46, item 3): a real HTTP API (axum) that serves its own OpenAPI 3.0
//! document, behind the gateway: its operations listed as tools (names, schemas with their
//! `$ref`s expanded, annotations, output schemas), called with path, query, header and body
//! arguments and the upstream's credentials, its errors as tool errors; a bad document refused
//! naming where it is wrong; the document loaded again when the API comes back.

use std::time::Duration;

use axum::Json;
use axum::extract::{Path, RawQuery, Request};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use mcp_client::{Client, EraPreference};
use mcp_gateway::Gateway;
use mcp_server::types::{CallToolResult, ContentBlock, Tool};
use serde_json::{Value, json};

use crate::common;
use common::{Upstream, client, config, eventually, serve};

const KEY: &str = "secret-key-1234";

/// The API's document (OpenAPI 3.0: `nullable`, a server URL with a variable, relative to the
/// document's).
fn document() -> Value {
    let pet = json!({ "$ref": "#/components/responses/Pet" });
    let json_schema = |schema: Value| json!({ "application/json": { "schema": schema } });
    json!({
        "openapi": "3.0.3",
        "info": { "title": "Pets", "version": "1" },
        "servers": [{ "url": "/{version}", "variables": { "version": { "default": "v1" } } }],
        "paths": {
            "/pets": {
                "get": {
                    "operationId": "listPets",
                    "summary": "List pets",
                    "parameters": [
                        { "name": "limit", "in": "query", "schema": { "type": "integer", "minimum": 1 } },
                        { "name": "tag", "in": "query", "schema": { "type": "array", "items": { "type": "string" } } }
                    ],
                    "responses": { "200": {
                        "description": "the pets",
                        "content": json_schema(json!({ "$ref": "#/components/schemas/PetList" }))
                    } }
                },
                "post": {
                    "operationId": "createPet",
                    "summary": "Add a pet",
                    "description": "Stores a new pet.",
                    "parameters": [{ "$ref": "#/components/parameters/RequestId" }],
                    "requestBody": {
                        "required": true,
                        "content": json_schema(json!({ "$ref": "#/components/schemas/NewPet" }))
                    },
                    "responses": { "201": pet, "422": { "description": "invalid" } }
                }
            },
            "/pets/{petId}": {
                "parameters": [{ "name": "petId", "in": "path", "required": true, "schema": { "type": "integer" } }],
                "get": { "operationId": "get pet!", "responses": { "200": pet, "404": { "description": "none" } } },
                "delete": { "operationId": "deletePet", "responses": { "204": { "description": "gone" } } },
                "put": {
                    "parameters": [{ "name": "petId", "in": "query", "schema": { "type": "string" } }],
                    "requestBody": { "content": json_schema(json!({ "type": "array", "items": { "type": "string" } })) },
                    "responses": { "200": {
                        "description": "what it got",
                        "content": json_schema(json!({ "type": "array", "items": { "type": "string" } }))
                    } }
                }
            },
            "/files/{path}": { "get": {
                "operationId": "readFile",
                "parameters": [{ "name": "path", "in": "path", "required": true, "schema": { "type": "string" } }],
                "responses": { "200": { "description": "its path", "content": { "text/plain": {} } } }
            } },
            "/big": { "get": { "operationId": "big", "responses": { "200": {
                "description": "too much", "content": json_schema(json!({ "type": "object" }))
            } } } },
            "/leak": { "get": { "operationId": "leak", "responses": { "default": { "description": "an error" } } } },
            "/slow": { "get": { "operationId": "slow", "responses": { "200": { "description": "never" } } } },
            "/upload": { "post": {
                "operationId": "upload",
                "requestBody": { "required": true, "content": { "multipart/form-data": {} } },
                "responses": { "200": { "description": "stored" } }
            } },
            "/tree": { "get": { "operationId": "tree", "responses": { "200": {
                "description": "a tree", "content": json_schema(json!({ "$ref": "#/components/schemas/Node" }))
            } } } }
        },
        "components": {
            "schemas": {
                "NewPet": {
                    "type": "object",
                    "required": ["name"],
                    "properties": { "name": { "type": "string" }, "tag": { "type": "string", "nullable": true } },
                    "x-internal": "dropped"
                },
                "Pet": {
                    "type": "object",
                    "allOf": [
                        { "$ref": "#/components/schemas/NewPet" },
                        { "type": "object", "required": ["id"], "properties": { "id": { "type": "integer" } } }
                    ]
                },
                "PetList": { "type": "object", "properties": {
                    "pets": { "type": "array", "items": { "$ref": "#/components/schemas/Pet" } },
                    "query": { "type": "string" }
                } },
                "Node": { "type": "object", "properties": {
                    "name": { "type": "string" },
                    "children": { "type": "array", "items": { "$ref": "#/components/schemas/Node" } }
                } }
            },
            "parameters": {
                "RequestId": { "name": "X-Request-Id", "in": "header", "description": "Echoed back", "schema": { "type": "string" } }
            },
            "responses": { "Pet": {
                "description": "a pet", "content": json_schema(json!({ "$ref": "#/components/schemas/Pet" }))
            } }
        }
    })
}

/// The API: its document at `/openapi.json` (no key needed), its operations under `/v1` (the key
/// needed, in `X-Api-Key`; they see their paths without `/v1`).
fn pets_api() -> axum::Router {
    async fn keyed(headers: HeaderMap, request: Request, next: Next) -> Response {
        match headers.get("x-api-key").and_then(|v| v.to_str().ok()) {
            Some(KEY) => next.run(request).await,
            _ => (StatusCode::UNAUTHORIZED, "no key").into_response(),
        }
    }
    let v1 = axum::Router::new()
        .route(
            "/pets",
            get(|RawQuery(query): RawQuery| async move {
                Json(json!({ "pets": [{ "id": 1, "name": "Rex", "tag": null }], "query": query.unwrap_or_default() }))
            })
            .post(|headers: HeaderMap, Json(mut pet): Json<Value>| async move {
                pet["id"] = json!(7);
                pet["requestId"] = json!(headers.get("x-request-id").and_then(|v| v.to_str().ok()));
                (StatusCode::CREATED, Json(pet))
            }),
        )
        .route(
            "/pets/{id}",
            get(|Path(id): Path<u64>| async move {
                match id {
                    1 => Json(json!({ "id": 1, "name": "Rex", "tag": "dog" })).into_response(),
                    _ => (StatusCode::NOT_FOUND, Json(json!({ "detail": format!("no pet {id}") }))).into_response(),
                }
            })
            .delete(|| async { StatusCode::NO_CONTENT })
            .put(|uri: Uri, Json(mut tags): Json<Vec<String>>| async move {
                tags.push(uri.to_string());
                Json(tags)
            }),
        )
        .route("/files/{path}", get(|uri: Uri| async move { uri.path().to_owned() }))
        .route("/big", get(|| async { Json(json!({ "data": "x".repeat(5000) })) }))
        .route(
            "/leak",
            get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, format!("the key {KEY} is not welcome here")) }),
        )
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(60)).await;
                "late"
            }),
        )
        .layer(axum::middleware::from_fn(keyed));
    axum::Router::new().route("/openapi.json", get(|| async { Json(document()) })).nest("/v1", v1)
}

/// A gateway in front of the API at `port`, and a client of it.
async fn gateway(port: u16) -> (Gateway, Client) {
    let gateway = Gateway::start(&config(&format!(
        r#"
        [[upstream]]
        name = "pets"
        openapi = "http://127.0.0.1:{port}/openapi.json"
        headers = {{ X-Api-Key = "{KEY}" }}
        max_response_bytes = 2000
        timeout_secs = 2
        "#
    )))
    .await
    .unwrap();
    let url = serve(&gateway).await;
    (gateway, client(&url, EraPreference::Modern).await)
}

fn tool<'a>(tools: &'a [Tool], name: &str) -> &'a Tool {
    tools.iter().find(|tool| tool.name == name).unwrap_or_else(|| panic!("no {name}"))
}

fn text(result: &CallToolResult) -> &str {
    match &result.content[..] {
        [ContentBlock::Text(text)] => &text.text,
        other => panic!("{other:?}"),
    }
}

/// A call that the API answered: its result, whether an error or not.
async fn call(client: &Client, name: &str, arguments: Value) -> CallToolResult {
    client.call_tool(name, arguments).await.unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_operation_is_a_tool_with_its_references_expanded_and_its_methods_hints() {
    let api = Upstream::start_router(pets_api(), 0);
    let (_gateway, client) = gateway(api.port()).await;
    let tools = client.all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
    names.sort_unstable();
    // `get pet!` sanitized; the PUT has no operationId: named after its method and path; the
    // upload takes only multipart bodies: left out.
    assert_eq!(
        names,
        [
            "pets_big",
            "pets_createPet",
            "pets_deletePet",
            "pets_get_pet_",
            "pets_leak",
            "pets_listPets",
            "pets_put_pets_petId",
            "pets_readFile",
            "pets_slow",
            "pets_tree"
        ]
    );
    let schema = |tool: &Tool| tool.input_schema.to_value();
    let output = |tool: &Tool| tool.output_schema.as_ref().map(|schema| schema.to_value());
    let hints = |tool: &Tool| serde_json::to_value(&tool.annotations).unwrap();

    let get = tool(&tools, "pets_get_pet_");
    assert_eq!(
        schema(get),
        json!({
            "type": "object",
            "properties": { "petId": { "type": "integer" } },
            "required": ["petId"],
            "additionalProperties": false
        })
    );
    assert_eq!(get.description.as_deref(), Some("GET /pets/{petId}"));
    assert_eq!(hints(get), json!({ "readOnlyHint": true }));
    // The response `$ref` → the schema `$ref` → an `allOf` with another `$ref`, all expanded;
    // 3.0's `nullable` as 2020-12 says it; the `x-` extension left out.
    let new_pet = json!({
        "type": "object",
        "required": ["name"],
        "properties": { "name": { "type": "string" }, "tag": { "type": ["string", "null"] } }
    });
    let pet = json!({
        "type": "object",
        "allOf": [new_pet, { "type": "object", "required": ["id"], "properties": { "id": { "type": "integer" } } }]
    });
    assert_eq!(output(get), Some(pet.clone()));

    let create = tool(&tools, "pets_createPet");
    assert_eq!(create.title.as_deref(), Some("Add a pet"));
    assert_eq!(create.description.as_deref(), Some("Add a pet\n\nStores a new pet."));
    assert_eq!(
        schema(create),
        json!({
            "type": "object",
            "properties": {
                "X-Request-Id": { "type": "string", "description": "Echoed back" },
                "body": new_pet
            },
            "required": ["body"],
            "additionalProperties": false
        })
    );
    assert!(create.annotations.is_none());
    assert_eq!(output(create), Some(pet));

    // A query parameter named like a path parameter takes its location's prefix; the body is an
    // array, and so is the answer: no outputSchema (MCP's must be an object's).
    let put = tool(&tools, "pets_put_pets_petId");
    assert_eq!(
        schema(put)["properties"],
        json!({
            "petId": { "type": "integer" },
            "query_petId": { "type": "string", "description": "The query parameter `petId`." },
            "body": { "type": "array", "items": { "type": "string" } }
        })
    );
    assert_eq!(schema(put)["required"], json!(["petId"]));
    assert_eq!(hints(put), json!({ "idempotentHint": true }));
    assert!(put.output_schema.is_none());
    assert_eq!(hints(tool(&tools, "pets_deletePet")), json!({ "destructiveHint": true, "idempotentHint": true }));

    // A schema that contains itself is expanded once.
    let tree = output(tool(&tools, "pets_tree")).unwrap();
    let again = &tree["properties"]["children"]["items"];
    assert_eq!(again, &json!({ "$comment": "#/components/schemas/Node again (recursive): not expanded" }));
    let list = tool(&tools, "pets_listPets");
    assert_eq!(
        schema(list)["properties"],
        json!({
            "limit": { "type": "integer", "minimum": 1 },
            "tag": { "type": "array", "items": { "type": "string" } }
        })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_carry_their_arguments_where_the_document_says_and_errors_are_tool_errors() {
    let api = Upstream::start_router(pets_api(), 0);
    let (_gateway, client) = gateway(api.port()).await;

    // Query parameters, an array exploded; the JSON answer is the text and the structured content.
    let listed = call(&client, "pets_listPets", json!({ "limit": 2, "tag": ["a b", "c&d"] })).await;
    assert_eq!(listed.is_error, None, "{listed:?}");
    let structured = listed.structured_content.clone().unwrap();
    assert_eq!(structured["query"], "limit=2&tag=a+b&tag=c%26d");
    assert_eq!(serde_json::from_str::<Value>(text(&listed)).unwrap(), structured);

    let rex = call(&client, "pets_get_pet_", json!({ "petId": 1 })).await;
    assert_eq!(rex.structured_content, Some(json!({ "id": 1, "name": "Rex", "tag": "dog" })));
    // A 404 is the tool's error, with the status and the API's own words.
    let missing = call(&client, "pets_get_pet_", json!({ "petId": 9 })).await;
    assert_eq!(missing.is_error, Some(true));
    assert_eq!(text(&missing), r#"HTTP 404 Not Found: {"detail":"no pet 9"}"#);

    // The body under `body`, a header parameter.
    let created = call(&client, "pets_createPet", json!({ "body": { "name": "Tom" }, "X-Request-Id": "r-1" })).await;
    assert_eq!(created.structured_content, Some(json!({ "id": 7, "name": "Tom", "requestId": "r-1" })));
    let no_body = call(&client, "pets_createPet", json!({})).await;
    assert_eq!((no_body.is_error, text(&no_body)), (Some(true), "missing required argument `body`"));
    let unknown = call(&client, "pets_createPet", json!({ "body": {}, "name": "Tom" })).await;
    assert_eq!(text(&unknown), "unknown argument `name` (the tool takes: X-Request-Id, body)");

    // A path parameter cannot leave its segment.
    let file = call(&client, "pets_readFile", json!({ "path": "../a/b c?d#e" })).await;
    assert_eq!(text(&file), "/files/..%2Fa%2Fb%20c%3Fd%23e");
    let up = call(&client, "pets_readFile", json!({ "path": ".." })).await;
    assert_eq!((up.is_error, text(&up)), (Some(true), r#"the path parameter `path` cannot be "..""#));
    let put = call(&client, "pets_put_pets_petId", json!({ "petId": 3, "query_petId": "q", "body": ["x"] })).await;
    assert_eq!(serde_json::from_str::<Value>(text(&put)).unwrap(), json!(["x", "/pets/3?petId=q"]));
    assert_eq!(put.structured_content, None);
    let deleted = call(&client, "pets_deletePet", json!({ "petId": 1 })).await;
    assert_eq!((deleted.is_error, text(&deleted)), (None, "HTTP 204 (no content)"));

    // Over `max_response_bytes`: a tool error naming it.
    let big = call(&client, "pets_big", json!({})).await;
    assert_eq!(big.is_error, Some(true));
    assert_eq!(text(&big), "the API's response is larger than 2000 bytes (`max_response_bytes`): not returned");
    // An error page that repeats the upstream's credentials: quoted without them.
    let leak = call(&client, "pets_leak", json!({})).await;
    assert_eq!(text(&leak), "HTTP 500 Internal Server Error: the key [redacted] is not welcome here");
    // Past `timeout_secs`: the call fails naming the upstream.
    let slow = client.call_tool("pets_slow", json!({})).await.unwrap_err().to_string();
    assert!(slow.contains("upstream `pets` failed the call to slow: timeout after 2s"), "{slow}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_document_keeps_its_upstream_down_saying_where_and_a_yaml_file_with_base_url_serves() {
    let api = Upstream::start_router(pets_api(), 0);
    let dir = std::env::temp_dir().join(format!("mcp-gateway-openapi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut broken = document();
    broken["paths"]["/pets"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"] =
        json!("#/components/schemas/Gone");
    std::fs::write(dir.join("broken.json"), broken.to_string()).unwrap();
    // The same document in YAML, without its servers: `base_url` says where calls go.
    let mut yaml = document();
    yaml.as_object_mut().unwrap().remove("servers");
    std::fs::write(dir.join("pets.yaml"), serde_norway::to_string(&yaml).unwrap()).unwrap();
    std::fs::write(dir.join("swagger.json"), r#"{"swagger": "2.0", "paths": {}}"#).unwrap();
    let (port, dir_text) = (api.port(), dir.display());
    let gateway = Gateway::start(&config(&format!(
        r#"
        [[upstream]]
        name = "broken"
        openapi = "{dir_text}/broken.json"
        base_url = "http://127.0.0.1:{port}/v1"
        [[upstream]]
        name = "old"
        openapi = "{dir_text}/swagger.json"
        base_url = "http://127.0.0.1:{port}/v1"
        [[upstream]]
        name = "yaml"
        openapi = "{dir_text}/pets.yaml"
        base_url = "http://127.0.0.1:{port}/v1"
        headers = {{ X-Api-Key = "{KEY}" }}
        "#
    )))
    .await
    .unwrap();
    let states = gateway.upstreams();
    let broken_why = states[0].1.clone().unwrap_err();
    assert!(
        broken_why.contains(
            "is invalid: `#/paths/~1pets/get/responses/200/content/application~1json/schema/$ref`: \
             `#/components/schemas/Gone` points at nothing"
        ),
        "{broken_why}"
    );
    let old_why = states[1].1.clone().unwrap_err();
    assert!(old_why.contains("`#/swagger`: Swagger 2.0 is not supported"), "{old_why}");
    assert_eq!(states[2].1, Ok(()));
    let client = client(&serve(&gateway).await, EraPreference::Legacy).await;
    let tools = client.all_tools().await.unwrap();
    assert!(tools.iter().all(|tool| tool.name.starts_with("yaml_")), "{tools:?}");
    let rex = call(&client, "yaml_get_pet_", json!({ "petId": 1 })).await;
    assert_eq!(rex.structured_content, Some(json!({ "id": 1, "name": "Rex", "tag": "dog" })));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_that_goes_away_takes_its_tools_with_it_until_its_document_loads_again() {
    let api = Upstream::start_router(pets_api(), 0);
    let port = api.port();
    let (gateway, client) = gateway(port).await;
    assert_eq!(gateway.connected(), ["pets"]);
    drop(api);
    let failed = client.call_tool("pets_get_pet_", json!({ "petId": 1 })).await.unwrap_err().to_string();
    assert!(failed.contains("upstream `pets` failed the call to get_pet_"), "{failed}");
    // The failed call had the document fetched again, which fails too: down, its tools gone.
    eventually("pets is down", async || gateway.connected().is_empty()).await;
    eventually("its tools are gone", async || {
        client.clear_cache();
        client.all_tools().await.unwrap().is_empty()
    })
    .await;
    let _api = Upstream::start_router(pets_api(), port);
    eventually("pets is back", async || gateway.connected() == ["pets"]).await;
    let rex = call(&client, "pets_get_pet_", json!({ "petId": 1 })).await;
    assert_eq!(rex.structured_content, Some(json!({ "id": 1, "name": "Rex", "tag": "dog" })));
}
