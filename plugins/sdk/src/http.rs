//! Outbound HTTP (the `http` import, since `palaver:plugin@0.1.3`): [`Request`], [`Response`], [`HttpError`], the
//! [`crate::Context::http`] handle that sends them, and HMAC-SHA256 signing for webhooks.
//!
//! The manifest must grant `"http"` and list the hosts the plugin may reach in `[http] allow` (an operator's
//! decision; a tenant may only narrow it through the admin API). The host refuses anything else with
//! [`HttpError::Denied`] before sending a byte, follows no redirect (a 3xx comes back as it is), and caps the
//! requests per call, their size, the response's size and the time they take (never past the call's deadline).
//!
//! ```ignore
//! let resp = cx.http().post_json("https://hooks.example.com/in", &json!({ "hi": 1 }), &[("x-token", "t")])?;
//! if !resp.is_success() { return Err(format!("status {}", resp.status)); }
//! ```

use hmac::{Hmac, Mac};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::Sha256;

/// A request: an absolute `http` or `https` URL, a method of `GET`, `POST`, `PUT`, `PATCH`, `DELETE` or `HEAD`,
/// headers (not `host`, `content-length`, `connection`, `transfer-encoding`, nor other hop-by-hop ones: the host
/// sets those) and a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    /// A request without headers or body.
    pub fn new(method: &str, url: &str) -> Request {
        Request { method: method.to_owned(), url: url.to_owned(), headers: Vec::new(), body: Vec::new() }
    }

    /// A `GET` of `url`.
    pub fn get(url: &str) -> Request {
        Request::new("GET", url)
    }

    /// A `POST` of `body` to `url`.
    pub fn post(url: &str, body: impl Into<Vec<u8>>) -> Request {
        Request { body: body.into(), ..Request::new("POST", url) }
    }

    /// This request with one more header.
    pub fn header(mut self, name: &str, value: &str) -> Request {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// This request with `value` as its JSON body and `content-type: application/json`.
    pub fn json(mut self, value: &impl Serialize) -> Result<Request, HttpError> {
        self.body = serde_json::to_vec(value).map_err(|e| HttpError::Invalid(format!("body is not JSON: {e}")))?;
        self.headers.push(("content-type".to_owned(), "application/json".to_owned()));
        Ok(self)
    }
}

/// A response, whatever its status: a 3xx is returned, never followed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// Names lower-case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// A response with `status` and `body` and no headers, as tests build them.
    pub fn new(status: u16, body: impl Into<Vec<u8>>) -> Response {
        Response { status, headers: Vec::new(), body: body.into() }
    }

    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The body as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body decoded from JSON.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, HttpError> {
        serde_json::from_slice(&self.body).map_err(|e| HttpError::Invalid(format!("response is not JSON: {e}")))
    }
}

/// Why a request got no response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpError {
    /// The host, port, scheme or method is not allowed for this plugin and tenant: nothing was sent.
    Denied(String),
    /// The request is malformed (a bad URL, method or header, or a header the host sets).
    Invalid(String),
    /// A cap was reached (requests per call, request or response size): nothing more is sent in this call.
    Limit(String),
    /// No answer in the time left.
    Timeout,
    /// The connection failed (refused, reset, TLS).
    Failed(String),
}

impl HttpError {
    /// The error's kind: `denied`, `invalid`, `limit`, `timeout` or `failed`.
    pub fn kind(&self) -> &'static str {
        match self {
            HttpError::Denied(_) => "denied",
            HttpError::Invalid(_) => "invalid",
            HttpError::Limit(_) => "limit",
            HttpError::Timeout => "timeout",
            HttpError::Failed(_) => "failed",
        }
    }
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HttpError::Timeout => f.write_str("timeout"),
            HttpError::Denied(m) | HttpError::Invalid(m) | HttpError::Limit(m) | HttpError::Failed(m) => {
                write!(f, "{}: {m}", self.kind())
            }
        }
    }
}

impl std::error::Error for HttpError {}

/// Sends requests through the host: [`crate::Context::http`].
pub struct Http<'a, H: crate::Host> {
    pub(crate) host: &'a mut H,
}

impl<H: crate::Host> Http<'_, H> {
    /// Sends `req` and waits for the response.
    pub fn send(&mut self, req: &Request) -> Result<Response, HttpError> {
        self.host.http_send(req)
    }

    /// `GET`s `url`.
    pub fn get(&mut self, url: &str) -> Result<Response, HttpError> {
        self.send(&Request::get(url))
    }

    /// `POST`s `value` as JSON to `url`, with `headers` besides `content-type`.
    pub fn post_json(
        &mut self,
        url: &str,
        value: &impl Serialize,
        headers: &[(&str, &str)],
    ) -> Result<Response, HttpError> {
        let mut req = Request::new("POST", url).json(value)?;
        req.headers.extend(headers.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
        self.send(&req)
    }
}

/// HMAC-SHA256 of `message` under `key`.
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    // HMAC takes a key of any length.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key) else { unreachable!("HMAC keys have no length limit") };
    mac.update(message);
    mac.finalize().into_bytes().into()
}

/// `bytes` as lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    bytes.iter().flat_map(|b| [DIGITS[usize::from(b >> 4)] as char, DIGITS[usize::from(b & 15)] as char]).collect()
}

/// The webhook signature of `body` sent at `timestamp` (Unix seconds): `sha256=` and the hex HMAC-SHA256 under
/// `secret` of `"<timestamp>.<body>"`. A receiver recomputes it over the raw body and the timestamp header and
/// refuses a timestamp too far from its clock, so a captured delivery cannot be replayed later.
pub fn sign_webhook(secret: &[u8], timestamp: u64, body: &[u8]) -> String {
    let mut signed = timestamp.to_string().into_bytes();
    signed.push(b'.');
    signed.extend_from_slice(body);
    format!("sha256={}", hex(&hmac_sha256(secret, &signed)))
}

/// Whether `signature` is [`sign_webhook`]'s for these inputs, compared in constant time.
pub fn verify_webhook(secret: &[u8], timestamp: u64, body: &[u8], signature: &str) -> bool {
    let expected = sign_webhook(secret, timestamp, body);
    expected.len() == signature.len()
        && expected.bytes().zip(signature.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231() {
        // RFC 4231, test case 2.
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(hex(&mac), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    }

    #[test]
    fn webhook_signatures_cover_the_timestamp_and_the_body() {
        let sig = sign_webhook(b"s3cret", 1_700_000_000, b"{\"a\":1}");
        assert!(sig.starts_with("sha256=") && sig.len() == 7 + 64, "{sig}");
        assert_eq!(sig, format!("sha256={}", hex(&hmac_sha256(b"s3cret", b"1700000000.{\"a\":1}"))));
        assert!(verify_webhook(b"s3cret", 1_700_000_000, b"{\"a\":1}", &sig));
        assert!(!verify_webhook(b"s3cret", 1_700_000_001, b"{\"a\":1}", &sig), "another timestamp");
        assert!(!verify_webhook(b"s3cret", 1_700_000_000, b"{\"a\":2}", &sig), "another body");
        assert!(!verify_webhook(b"other", 1_700_000_000, b"{\"a\":1}", &sig), "another secret");
        assert!(!verify_webhook(b"s3cret", 1_700_000_000, b"{\"a\":1}", "sha256=00"));
    }

    #[test]
    fn requests_and_responses_read_easily() {
        let req = Request::post("https://h.example/x", "b").header("x-a", "1").json(&serde_json::json!([1])).unwrap();
        assert_eq!(req.body, b"[1]");
        assert_eq!(req.headers, [("x-a".into(), "1".into()), ("content-type".into(), "application/json".into())]);
        let resp = Response { status: 204, headers: vec![("Location".into(), "/y".into())], body: b"{}".to_vec() };
        assert!(resp.is_success());
        assert_eq!(resp.header("location"), Some("/y"));
        assert_eq!(resp.json::<serde_json::Value>().unwrap(), serde_json::json!({}));
        assert!(!Response::new(302, "").is_success());
        assert_eq!(HttpError::Limit("x".into()).to_string(), "limit: x");
    }
}
