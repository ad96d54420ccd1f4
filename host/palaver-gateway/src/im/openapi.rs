//! The OpenAPI 3.1 document of the `/v1/im/` API, built from the route table so that it lists exactly the
//! endpoints the router serves. Request and response schemas are derived (schemars) from the types the gateway
//! parses bodies into and the service serializes answers from (`palaver_api::bodies`), and the error schema
//! from the one error body (`palaver_api::ErrorBody`), so the document cannot drift from the code.

use super::routes::ROUTES;
use crate::route::Endpoint;
use palaver_api::ErrorBody;
use schemars::SchemaGenerator;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

/// Where the schemas live in the document; every `$ref` points there.
const COMPONENTS: &str = "/components/schemas";

/// The whole document.
pub(crate) fn document() -> Value {
    let mut generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.definitions_path = COMPONENTS.into();
            s.meta_schema = None;
        })
        .into_generator();
    let error = generator.subschema_for::<ErrorBody>().to_value();
    let mut paths = Map::new();
    for route in ROUTES {
        add(&mut paths, route, &mut generator, &error);
    }
    for route in crate::admin::routes::ROUTES {
        add(&mut paths, route, &mut generator, &error);
    }
    // The plugin upload is a multipart form, which the route table's JSON bodies do not describe.
    if let Some(upload) = paths.get_mut("/v1/admin/plugins").and_then(|p| p.get_mut("post")) {
        upload["requestBody"] = json!({ "required": true, "content": { "multipart/form-data": { "schema": {
            "type": "object",
            "required": ["manifest", "component"],
            "properties": {
                "manifest": { "type": "string", "description": "the plugin's TOML manifest" },
                "component": { "type": "string", "format": "binary", "description": "the WebAssembly component" },
                "signature": { "type": "string", "description": "base64 ed25519 signature by a trusted key \
                    (`plugins.trusted_keys`) of `palaver-plugin-release:1\\n<sha256 of manifest>\\n<sha256 of component>\\n`" },
                "tenants": { "type": "string", "description": "comma-separated tenant ids: a canary for them first" }
            }
        }}}});
    }
    let schemas: Map<String, Value> = generator.take_definitions(true).into_iter().collect();
    json!({
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "info": {
            "title": "Palaver IM API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Business endpoints under `/v1/im` (friends, group governance, system notifications): \
                each runs a command a plugin handles, and changes are also pushed to the clients' sockets as \
                `{info}` events. The operator's endpoints under `/v1/admin` (plugins, admin commands, user \
                actions, abuse reports, held messages) take the admin bearer token. Every refusal is an \
                `ErrorBody` whose `reason` is one of the reasons table (docs/reasons.md)."
        },
        "servers": [{ "url": "/" }],
        "components": {
            "securitySchemes": {
                "apiKey": { "type": "apiKey", "in": "header", "name": "X-Tinode-APIKey" },
                "token": { "type": "apiKey", "in": "header", "name": "Authorization",
                           "description": "`Token <login token>`, as returned by `{login}`" },
                "adminToken": { "type": "http", "scheme": "bearer",
                                "description": "the node's admin token (`admin.token`)" }
            },
            "schemas": schemas
        },
        "paths": paths,
    })
}

/// Adds the commands plugins offer to clients, one path each (`/v1/im/plugins/{plugin}/commands/{command}`),
/// with the body and result schemas their manifests give (any JSON object and any JSON value otherwise).
pub(crate) fn add_plugin_commands(doc: &mut Value, commands: &[palaver_core::ports::ClientCommandDoc]) {
    let error = json!({ "$ref": format!("#{COMPONENTS}/ErrorBody") });
    let refused = json!({ "description": "refused", "content": { "application/json": { "schema": error } } });
    let Some(paths) = doc["paths"].as_object_mut() else { return };
    for c in commands {
        let path = format!("{}{}", <palaver_api::CommandName as crate::route::Operation>::PREFIX, super::PLUGIN_ROUTE)
            .replace("{plugin}", &c.plugin)
            .replace("{command}", &c.command);
        let args = c.args.clone().unwrap_or_else(|| json!({ "type": "object" }));
        let result = c.result.clone().unwrap_or_else(|| json!({}));
        paths.insert(
            path,
            json!({ "post": {
                "operationId": format!("plugin.{}.{}", c.plugin, c.command),
                "tags": [format!("plugin {}", c.plugin)],
                "summary": c.summary,
                "security": [{ "apiKey": [], "token": [] }],
                "requestBody": { "required": false, "content": { "application/json": { "schema": args } } },
                "responses": {
                    "200": { "description": "the command's result",
                             "content": { "application/json": { "schema": result } } },
                    "400": refused, "401": refused, "403": refused, "404": refused, "409": refused,
                    "413": refused, "429": refused, "500": refused, "503": refused
                }
            }}),
        );
    }
}

fn add<E: Endpoint>(paths: &mut Map<String, Value>, route: &E, generator: &mut SchemaGenerator, error: &Value) {
    let entry = paths.entry(route.path()).or_insert_with(|| json!({}));
    entry[route.method().to_lowercase()] = operation(route, generator, error);
}

fn operation<E: Endpoint>(route: &E, generator: &mut SchemaGenerator, error: &Value) -> Value {
    let mut params: Vec<Value> = route
        .local_path()
        .split('/')
        .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .map(|name| json!({ "name": name, "in": "path", "required": true, "schema": { "type": "string" } }))
        .collect();
    params.extend(route.query().iter().map(|name| {
        let schema =
            if *name == "limit" { json!({ "type": "integer", "minimum": 1 }) } else { json!({ "type": "string" }) };
        json!({ "name": name, "in": "query", "required": false, "schema": schema })
    }));
    let refused = json!({ "description": "refused", "content": { "application/json": { "schema": error } } });
    let ok = (route.response())(generator).to_value();
    let mut op = json!({
        "operationId": route.operation_id(),
        "tags": [route.tag()],
        "summary": route.summary(),
        "security": route.security(),
        "parameters": params,
        "responses": {
            "200": { "description": "the result", "content": { "application/json": { "schema": ok } } },
            "400": refused, "401": refused, "403": refused, "404": refused, "409": refused, "413": refused,
            "429": refused, "500": refused, "503": refused
        }
    });
    if let Some(request) = route.request() {
        op["requestBody"] = json!({
            "required": false,
            "content": { "application/json": { "schema": (request.schema)(generator).to_value() } }
        });
    }
    op
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The schema a `$ref` names, from the document's components.
    fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
        match schema["$ref"].as_str() {
            Some(r) => doc.pointer(r.trim_start_matches('#')).unwrap_or_else(|| panic!("dangling {r}")),
            None => schema,
        }
    }

    /// The route's operation has a typed 200 body, the one error body, and its request body if it takes one.
    fn check_operation<E: Endpoint>(doc: &Value, route: &E) {
        let path = route.path();
        let op = &doc["paths"][&path][route.method().to_lowercase()];
        let ok = resolve(doc, &op["responses"]["200"]["content"]["application/json"]["schema"]);
        // One typed body, or a choice of typed bodies (`evict`: a command's result, or what this node closed).
        let typed = |s: &Value| resolve(doc, s)["properties"].as_object().is_some_and(|p| !p.is_empty());
        let branches = ok["oneOf"].as_array().cloned().unwrap_or_else(|| vec![ok.clone()]);
        assert!(branches.iter().all(typed), "{path}: untyped 200 {ok}");
        let err = resolve(doc, &op["responses"]["404"]["content"]["application/json"]["schema"]);
        assert_eq!(err["required"], json!(["code", "reason", "message"]), "{path}");
        // A JSON body exactly where the route reads one; the plugin upload's multipart form is described apart.
        assert_eq!(op["requestBody"]["content"].get("application/json").is_some(), route.request().is_some());
        if route.request().is_some() {
            let body = resolve(doc, &op["requestBody"]["content"]["application/json"]["schema"]);
            assert!(body["properties"].as_object().is_some_and(|p| !p.is_empty()), "{path}: {body}");
            assert_eq!(body["additionalProperties"], false, "{path}: unknown fields are refused");
        }
        assert!(op["security"].as_array().is_some_and(|s| !s.is_empty()), "{path}: no security");
    }

    #[test]
    fn every_route_has_typed_bodies_and_the_error_schema() {
        let doc = document();
        for route in ROUTES {
            check_operation(&doc, route);
        }
        for route in crate::admin::routes::ROUTES {
            check_operation(&doc, route);
            let op = &doc["paths"][route.path()][route.method().to_lowercase()];
            assert_eq!(op["security"], json!([{ "adminToken": [] }]), "{}", route.path());
        }
        // Every `$ref` anywhere in the document resolves.
        let text = doc.to_string();
        for r in text.split("\"$ref\":\"").skip(1).map(|t| &t[..t.find('"').unwrap()]) {
            assert!(doc.pointer(r.trim_start_matches('#')).is_some(), "dangling {r}");
        }
        assert!(doc.pointer(&format!("{COMPONENTS}/ErrorBody")).is_some(), "plugin commands' error schema");
        let reasons = &doc["components"]["schemas"]["Reason"]["enum"];
        assert_eq!(reasons.as_array().map(Vec::len), Some(palaver_api::Reason::ALL.len()));
    }
}
