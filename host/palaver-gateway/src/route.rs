//! The one shape of a route table entry, shared by the `/v1/im` and `/v1/admin` tables: method, path, what the
//! endpoint does (`Op`, which names its OpenAPI operation), its tag, summary, request and response schemas and
//! query parameters. The routers match requests against a table with [`find_in`], and the OpenAPI document reads
//! the same table through [`Endpoint`].

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// The JSON Schema of a body type, registered in the document's components.
pub(crate) type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

/// What an endpoint reads from its JSON body: the type's schema, and a check that a body parses as that type.
#[derive(Clone, Copy)]
pub(crate) struct RequestBody {
    pub(crate) schema: SchemaFn,
    pub(crate) check: fn(&Map<String, Value>) -> Result<(), String>,
}

impl std::fmt::Debug for RequestBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RequestBody")
    }
}

pub(crate) fn schema<T: JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    g.subschema_for::<T>()
}

fn check<T: DeserializeOwned>(body: &Map<String, Value>) -> Result<(), String> {
    T::deserialize(&Value::Object(body.clone())).map(drop).map_err(|e| e.to_string())
}

/// The body of type `T` (`palaver_api::bodies`).
pub(crate) const fn body<T: JsonSchema + DeserializeOwned>() -> RequestBody {
    RequestBody { schema: schema::<T>, check: check::<T> }
}

/// What an API's entries run, and what the API says of all of them.
pub(crate) trait Operation: Copy + std::fmt::Debug + Send + Sync + 'static {
    /// The path prefix of the API (`/v1/im`).
    const PREFIX: &'static str;
    /// The OpenAPI operation id.
    fn operation_id(self) -> &'static str;
    /// The security scheme of the OpenAPI document that every endpoint of the API requires.
    fn security() -> Value;
}

/// One endpoint.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Route<O> {
    pub(crate) method: &'static str,
    /// Path below the API's prefix, with `{name}` segments for parameters.
    pub(crate) path: &'static str,
    /// What it does; the router runs it.
    pub(crate) op: O,
    /// The OpenAPI tag.
    pub(crate) tag: &'static str,
    pub(crate) summary: &'static str,
    /// The JSON body it takes, if any.
    pub(crate) request: Option<RequestBody>,
    /// What it answers with 200 (`palaver_api::bodies`, which the service serializes).
    pub(crate) response: SchemaFn,
    /// Query parameters it reads.
    pub(crate) query: &'static [&'static str],
}

#[expect(clippy::too_many_arguments, reason = "one positional row per endpoint keeps the table one line per route")]
pub(crate) const fn r<O>(
    method: &'static str,
    path: &'static str,
    op: O,
    tag: &'static str,
    summary: &'static str,
    request: Option<RequestBody>,
    response: SchemaFn,
    query: &'static [&'static str],
) -> Route<O> {
    Route { method, path, op, tag, summary, request, response, query }
}

/// Path parameters by name, in path order.
pub(crate) type Params = Vec<(&'static str, String)>;

/// One entry of a route table, as the matcher and the OpenAPI document read it.
pub(crate) trait Endpoint: 'static {
    fn method(&self) -> &'static str;
    /// The full path, with `{name}` segments for parameters.
    fn path(&self) -> String;
    /// The path below the API's prefix, as the table writes it.
    fn local_path(&self) -> &'static str;
    fn operation_id(&self) -> &'static str;
    fn tag(&self) -> &'static str;
    fn summary(&self) -> &'static str;
    fn request(&self) -> Option<RequestBody>;
    fn response(&self) -> SchemaFn;
    fn query(&self) -> &'static [&'static str];
    /// The security scheme of the OpenAPI document that the endpoint requires.
    fn security(&self) -> serde_json::Value;
}

/// The entry of `table` matching `method` and `path` (below the table's prefix), with its path parameters.
/// A literal segment beats a parameter, so `/notifications/read-all` is not read as `/notifications/{id}`.
pub(crate) fn find_in<E: Endpoint>(table: &'static [E], method: &str, path: &str) -> Option<(&'static E, Params)> {
    let got: Vec<&str> = path.trim_matches('/').split('/').collect();
    let mut best: Option<(&'static E, Params, usize)> = None;
    for route in table.iter().filter(|r| r.method() == method) {
        let want: Vec<&str> = route.local_path().trim_matches('/').split('/').collect();
        if want.len() != got.len() {
            continue;
        }
        let mut params = Vec::new();
        let mut literals = 0;
        let fits = want.iter().zip(&got).all(|(w, g)| match w.strip_prefix('{').and_then(|w| w.strip_suffix('}')) {
            Some(name) if !g.is_empty() => {
                params.push((name, (*g).to_owned()));
                true
            }
            Some(_) => false,
            None => {
                literals += 1;
                w == g
            }
        });
        if fits && best.as_ref().is_none_or(|(_, _, l)| literals > *l) {
            best = Some((route, params, literals));
        }
    }
    best.map(|(r, p, _)| (r, p))
}

/// True if some entry of `table` has this path under another method (405 rather than 404).
pub(crate) fn path_exists_in<E: Endpoint>(table: &'static [E], path: &str) -> bool {
    ["GET", "POST", "PUT", "PATCH", "DELETE"].iter().any(|m| find_in(table, m, path).is_some())
}

impl<O: Operation> Endpoint for Route<O> {
    fn method(&self) -> &'static str {
        self.method
    }
    fn path(&self) -> String {
        format!("{}{}", O::PREFIX, self.path)
    }
    fn local_path(&self) -> &'static str {
        self.path
    }
    fn operation_id(&self) -> &'static str {
        self.op.operation_id()
    }
    fn tag(&self) -> &'static str {
        self.tag
    }
    fn summary(&self) -> &'static str {
        self.summary
    }
    fn request(&self) -> Option<RequestBody> {
        self.request
    }
    fn response(&self) -> SchemaFn {
        self.response
    }
    fn query(&self) -> &'static [&'static str] {
        self.query
    }
    fn security(&self) -> Value {
        O::security()
    }
}
