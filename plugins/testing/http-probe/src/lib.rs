//! A test plugin for the `http` import: `http-probe.run` with `{"requests": [{"method", "url", "headers":
//! [[name, value]], "body"}]}` makes each request in order and answers `{"results": [...]}`, each either
//! `{"status", "headers": {name: value}, "body"}` or `{"error": kind, "message"}`. With `"mark": key` it then
//! writes `key` in its key-value store, so that a test can make the call lose a key-value race and run again.

use palaver_plugin_sdk::http::Request;
use palaver_plugin_sdk::{Command, CommandHandler, CommandOutcome, Context, Host, Map, Value, json};

/// Sends what it is told to.
#[derive(Default)]
pub struct HttpProbe;

fn request(spec: &Value) -> Request {
    let text = |k: &str| spec.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
    let headers = spec
        .get("headers")
        .and_then(Value::as_array)
        .map(|hs| {
            hs.iter().filter_map(|h| Some((h.get(0)?.as_str()?.to_owned(), h.get(1)?.as_str()?.to_owned()))).collect()
        })
        .unwrap_or_default();
    let method = if spec.get("method").is_some() { text("method") } else { "GET".to_owned() };
    Request { method, url: text("url"), headers, body: text("body").into_bytes() }
}

impl CommandHandler for HttpProbe {
    fn on_command<H: Host>(&mut self, cx: &mut Context<'_, H>, cmd: &Command) -> CommandOutcome {
        let specs = cmd.args.get("requests").and_then(Value::as_array).cloned().unwrap_or_default();
        let mut results = Vec::new();
        for spec in &specs {
            let result = match cx.http().send(&request(spec)) {
                Ok(r) => {
                    let headers: Map<String, Value> =
                        r.headers.iter().map(|(k, v)| (k.clone(), Value::from(v.as_str()))).collect();
                    json!({ "status": r.status, "headers": headers, "body": r.text() })
                }
                Err(e) => {
                    let message = match &e {
                        palaver_plugin_sdk::http::HttpError::Timeout => String::new(),
                        other => other.to_string(),
                    };
                    json!({ "error": e.kind(), "message": message })
                }
            };
            results.push(result);
        }
        if let Some(key) = cmd.args.get("mark").and_then(Value::as_str)
            && let Err(e) = cx.kv().set(key, b"1", None)
        {
            return CommandOutcome::reject_other(500, "KV_FAILED", e.to_string());
        }
        CommandOutcome::ok(json!({ "results": results }))
    }
}

palaver_plugin_sdk::command_handler!(HttpProbe);
