//! What the adapters share: the HTTP client and the mapping of an HTTP answer to a `PushError`.

use palaver_core::ports::PushError;
use std::time::Duration;

/// How long one request to a provider may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// A provider that cannot be built from its configuration.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("reading {path}: {err}")]
    Read { path: String, err: std::io::Error },
    #[error("invalid credentials: {0}")]
    Credentials(String),
    #[error("building the HTTP client: {0}")]
    Client(#[from] reqwest::Error),
    #[error("{what} is not a URL: {err}")]
    Url { what: &'static str, err: String },
}

/// `text` as a URL, parsed once when the provider is made: a bad endpoint is refused then rather than at every
/// push, and a push does not parse it again.
pub(crate) fn parse_url(what: &'static str, text: &str) -> Result<reqwest::Url, SetupError> {
    reqwest::Url::parse(text).map_err(|err| SetupError::Url { what, err: err.to_string() })
}

/// The client every adapter uses: rustls, HTTP/1.1 or HTTP/2 as the server offers, bounded time per request.
pub(crate) fn client() -> Result<reqwest::Client, SetupError> {
    Ok(reqwest::Client::builder().timeout(REQUEST_TIMEOUT).connect_timeout(REQUEST_TIMEOUT).build()?)
}

/// The most of a provider's answer read: far more than any provider's error JSON. The endpoints may be a
/// tenant's (its own webhook or gateway), so an answer is never read whole into memory on trust.
const MAX_ANSWER: usize = 64 * 1024;

/// The text of an answer (a failed send's, or the token grant's), its first [`MAX_ANSWER`] bytes at most (the rest
/// is not read; the connection is then closed rather than reused).
pub(crate) async fn answer_text(mut resp: reqwest::Response) -> String {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = resp.chunk().await {
        let room = MAX_ANSWER - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if chunk.len() >= room {
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// `Retry-After` in ms: delta seconds (an HTTP date is not honoured and falls back to the worker's backoff).
pub(crate) fn retry_after(resp: &reqwest::Response) -> Option<u64> {
    let v = resp.headers().get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    v.trim().parse::<u64>().ok().map(|s| s.saturating_mul(1000))
}

/// A network failure is worth retrying.
pub(crate) fn network(err: reqwest::Error) -> PushError {
    PushError::Retry { reason: format!("network: {err}"), after_ms: None }
}

/// The generic mapping of a non-success status: 429 and 5xx retry, the rest fail.
pub(crate) fn status_error(status: reqwest::StatusCode, after_ms: Option<u64>, body: &str) -> PushError {
    let reason = format!("HTTP {}: {}", status.as_u16(), body.chars().take(200).collect::<String>());
    if status.as_u16() == 429 || status.is_server_error() {
        PushError::Retry { reason, after_ms }
    } else {
        PushError::Failed { reason }
    }
}
