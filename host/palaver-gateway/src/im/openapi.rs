//! The OpenAPI 3.1 document of the `/v1/im/` API, built from the route table so that it lists exactly the
//! endpoints the router serves.

use super::routes::{ROUTES, Route};
use serde_json::{Map, Value, json};

/// The whole document.
pub(crate) fn document() -> Value {
    let mut paths = Map::new();
    for route in ROUTES {
        let entry = paths.entry(format!("/v1/im{}", route.path)).or_insert_with(|| json!({}));
        entry[route.method.to_lowercase()] = operation(route);
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Palaver IM API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Business endpoints (friends, group governance, system notifications). Each runs a \
                command a plugin handles; changes are also pushed to the clients' sockets as `{info}` events."
        },
        "servers": [{ "url": "/" }],
        "security": [{ "apiKey": [], "token": [] }],
        "components": {
            "securitySchemes": {
                "apiKey": { "type": "apiKey", "in": "header", "name": "X-Tinode-APIKey" },
                "token": { "type": "apiKey", "in": "header", "name": "Authorization",
                           "description": "`Token <login token>`, as returned by `{login}`" }
            },
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["code", "message", "reason"],
                    "properties": {
                        "code": { "type": "integer", "description": "the HTTP status, a Tinode ctrl code" },
                        "message": { "type": "string" },
                        "reason": { "type": "string", "description": "stable, e.g. GROUP_MUTED, TOKEN_INVALID" }
                    }
                }
            }
        },
        "paths": paths,
    })
}

fn operation(route: &Route) -> Value {
    let mut params: Vec<Value> = route
        .path
        .split('/')
        .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .map(|name| json!({ "name": name, "in": "path", "required": true, "schema": { "type": "string" } }))
        .collect();
    params.extend(route.query.iter().map(|name| {
        let schema =
            if *name == "limit" { json!({ "type": "integer", "minimum": 1 }) } else { json!({ "type": "string" }) };
        json!({ "name": name, "in": "query", "required": false, "schema": schema })
    }));
    let error = json!({ "description": "refused", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } });
    let mut op = json!({
        "operationId": route.command,
        "tags": [route.tag],
        "summary": route.summary,
        "parameters": params,
        "responses": {
            "200": { "description": "the command's result", "content": { "application/json": { "schema": { "type": "object" } } } },
            "400": error, "401": error, "403": error, "404": error, "409": error, "503": error
        }
    });
    if route.body {
        op["requestBody"] = json!({
            "required": false,
            "content": { "application/json": { "schema": { "type": "object" } } }
        });
    }
    op
}
