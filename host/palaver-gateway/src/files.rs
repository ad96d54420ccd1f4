//! Tinode's out-of-band files: `POST /v0/file/u/` takes a `multipart/form-data` upload (field `file`, and the
//! SDK's `id`, echoed in the reply) and answers `{ctrl code:200 params:{url:"/v0/file/s/<id>.<ext>"}}`;
//! `GET`/`HEAD /v0/file/s/<id>.<ext>` serves it, with ranges, validators and caching headers. Both take the
//! API key (`X-Tinode-APIKey` or `apikey=`) and a login token (`X-Tinode-Auth: Token …`, or `auth=token` with
//! `secret=…` as the SDK's `authorizeURL` writes it). Errors are `{ctrl}` bodies with the HTTP status of
//! their code, as Tinode answers. Bodies stream both ways: the server never holds a whole file.

use crate::Shared;
use crate::http::{Body, bad_key, empty, json, query_param, tenant_of};
use futures_util::StreamExt;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, BodyStream, StreamBody};
use hyper::body::{Frame, Incoming};
use palaver_core::ports::{BlobError, ByteStream};
use palaver_core::{TenantId, UserId};
use palaver_proto::Code;
use palaver_service::{ByteRange, ServiceError, UploadMeta};

/// The longest text field of an upload form (`id`, `topic`).
const MAX_TEXT_FIELD: u64 = 1024;

/// Handles a request under `/v0/file/`.
pub(crate) async fn handle(shared: &Shared, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path().to_owned();
    if req.method() == Method::OPTIONS {
        return cors(empty(StatusCode::NO_CONTENT));
    }
    let route = match (req.method(), path.as_str()) {
        (&Method::POST, "/v0/file/u" | "/v0/file/u/") => Route::Upload,
        (&Method::GET | &Method::HEAD, p) if p.starts_with("/v0/file/s/") => Route::Download,
        (_, "/v0/file/u" | "/v0/file/u/") => return reply(None, &ServiceError::NotAllowed),
        (_, p) if p.starts_with("/v0/file/s/") => return reply(None, &ServiceError::NotAllowed),
        _ => return reply(None, &ServiceError::NotFound),
    };
    let Some(tenant) = tenant_of(shared, &req).await else {
        return cors(bad_key());
    };
    let user = match authenticate(shared, tenant, &req).await {
        Ok(user) => user,
        Err(e) => return reply(None, &e),
    };
    match route {
        Route::Upload => upload(shared, tenant, user, req).await,
        Route::Download => download(shared, tenant, user, req).await,
    }
}

enum Route {
    Upload,
    Download,
}

/// The user whose login token the request carries.
async fn authenticate(shared: &Shared, tenant: TenantId, req: &Request<Incoming>) -> Result<UserId, ServiceError> {
    let header_token = req
        .headers()
        .get("x-tinode-auth")
        .or_else(|| req.headers().get(header::AUTHORIZATION))
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Token "))
        .map(|t| t.trim().to_owned());
    let query_token =
        || (query_param(req, "auth").as_deref() == Some("token")).then(|| query_param(req, "secret")).flatten();
    let token = header_token.or_else(query_token).filter(|t| !t.is_empty()).ok_or(ServiceError::AuthRequired)?;
    match shared.service.authenticate_token(tenant, &token).await {
        Ok(user) => Ok(user),
        Err(e @ ServiceError::Unavailable { .. }) => Err(e),
        Err(_) => Err(ServiceError::AuthFailed),
    }
}

async fn upload(shared: &Shared, tenant: TenantId, user: UserId, req: Request<Incoming>) -> Response<Body> {
    let boundary = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| multer::parse_boundary(v).ok());
    let Some(boundary) = boundary else {
        return reply(None, &ServiceError::Malformed("the upload must be multipart/form-data".into()));
    };
    let limit = shared.service.config().files.max_upload_size;
    // The whole form may carry the file and a few small fields; a larger body is cut off by the parser. The
    // file's own bound is the service's, which counts its bytes as they are stored and stops one past it.
    let constraints =
        multer::Constraints::new().size_limit(multer::SizeLimit::new().whole_stream(limit.saturating_add(64 * 1024)));
    let body = BodyStream::new(req.into_body()).filter_map(|frame| async move {
        match frame {
            Ok(frame) => frame.into_data().ok().map(Ok),
            Err(e) => Some(Err(e)),
        }
    });
    let mut form = multer::Multipart::with_constraints(body, boundary, constraints);
    let (mut stored, mut id) = (None, None::<String>);
    loop {
        let field = match form.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => break,
            Err(e) => return reply(id.as_deref(), &form_error(e, limit)),
        };
        match field.name() {
            Some("file") if stored.is_none() => {
                let meta = UploadMeta {
                    name: field.file_name().unwrap_or_default().to_owned(),
                    mime: field.content_type().map(|m| m.essence_str().to_owned()).unwrap_or_default(),
                };
                let chunks: ByteStream = Box::pin(field.map(|c| c.map_err(|e| BlobError::Aborted(e.to_string()))));
                match shared.service.upload_file(tenant, user, meta, chunks).await {
                    Ok(file) => stored = Some(file),
                    Err(e) => return reply(id.as_deref(), &e),
                }
            }
            Some("file") => return reply(id.as_deref(), &ServiceError::Malformed("one file per upload".into())),
            Some("id") => match small_text(field).await {
                Ok(text) => id = Some(text),
                Err(e) => return reply(None, &e),
            },
            // `topic` names what an avatar is for; the avatar is recognised when a profile names the file.
            _ => {
                if let Err(e) = small_text(field).await {
                    return reply(id.as_deref(), &e);
                }
            }
        }
    }
    let Some(file) = stored else {
        return reply(id.as_deref(), &ServiceError::Malformed("no field named `file` in the form".into()));
    };
    let params = serde_json::json!({ "url": palaver_service::file_url(&file) });
    let body =
        palaver_service::ctrl_frame(id.as_deref(), None, Code::Ok, None, palaver_core::now_millis(), Some(params));
    cors(json(StatusCode::OK, body))
}

/// A text field of the form, bounded.
async fn small_text(mut field: multer::Field<'static>) -> Result<String, ServiceError> {
    let mut text = Vec::new();
    while let Some(chunk) = field.chunk().await.map_err(|e| ServiceError::Malformed(e.to_string()))? {
        if text.len() as u64 + chunk.len() as u64 > MAX_TEXT_FIELD {
            return Err(ServiceError::TooLarge(format!("a form field is at most {MAX_TEXT_FIELD} bytes")));
        }
        text.extend_from_slice(&chunk);
    }
    String::from_utf8(text).map_err(|_| ServiceError::Malformed("a form field is not UTF-8".into()))
}

/// A form the parser refused: too large (413) or not a form (400).
fn form_error(e: multer::Error, limit: u64) -> ServiceError {
    match e {
        multer::Error::StreamSizeExceeded { .. } | multer::Error::FieldSizeExceeded { .. } => {
            ServiceError::TooLarge(format!("a file is at most {limit} bytes"))
        }
        e => ServiceError::Malformed(format!("bad multipart form: {e}")),
    }
}

async fn download(shared: &Shared, tenant: TenantId, user: UserId, req: Request<Incoming>) -> Response<Body> {
    let name = req.uri().path().trim_start_matches("/v0/file/s/");
    let id = name.split('.').next().unwrap_or_default().to_owned();
    let range = match req.headers().get(header::RANGE).map(|v| parse_range(v.to_str().unwrap_or(""))) {
        None => None,
        Some(Some(range)) => Some(range),
        // A range we cannot read is ignored, as RFC 9110 lets a server do: the whole file is sent.
        Some(None) => None,
    };
    let as_attachment = query_param(&req, "asatt").is_some_and(|v| v == "1" || v == "true");
    let head = req.method() == Method::HEAD;
    let download = match shared.service.open_file(tenant, user, &id, range).await {
        Ok(download) => download,
        Err(e @ ServiceError::RangeNotSatisfiable { size }) => {
            let mut resp = reply(None, &e);
            insert(resp.headers_mut(), header::CONTENT_RANGE, &format!("bytes */{size}"));
            return resp;
        }
        Err(e) => return reply(None, &e),
    };
    let (file, read) = (download.file, download.read);
    let etag = format!("\"{}\"", file.sha256);
    if req
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag))
    {
        let mut resp = cors(empty(StatusCode::NOT_MODIFIED));
        insert(resp.headers_mut(), header::ETAG, &etag);
        return resp;
    }
    let partial = range.is_some();
    let status = if partial { StatusCode::PARTIAL_CONTENT } else { StatusCode::OK };
    let body = if head {
        http_body_util::Empty::new().map_err(|never| match never {}).boxed_unsync()
    } else {
        let frames = read.body.map(|chunk| chunk.map(Frame::data).map_err(std::io::Error::other));
        StreamBody::new(frames).boxed_unsync()
    };
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    insert(h, header::CONTENT_TYPE, &file.mime);
    insert(h, header::CONTENT_LENGTH, &(read.end - read.start).to_string());
    insert(h, header::ACCEPT_RANGES, "bytes");
    insert(h, header::ETAG, &etag);
    // The id never names other bytes, but the reader's right to them can end: private, and re-checked daily.
    insert(h, header::CACHE_CONTROL, "private, max-age=86400");
    insert(h, header::CONTENT_DISPOSITION, &disposition(&file.name, as_attachment || actively_rendered(&file.mime)));
    // Served from the chat's own origin: nothing in a file may run as the app or be sniffed into HTML.
    insert(h, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    insert(h, header::CONTENT_SECURITY_POLICY, "default-src 'none'; sandbox");
    if partial {
        insert(h, header::CONTENT_RANGE, &format!("bytes {}-{}/{}", read.start, read.end.saturating_sub(1), read.size));
    }
    cors(resp)
}

/// A `Range` header of one range (`bytes=a-b`, `bytes=a-`, `bytes=-n`); `None` for anything else.
fn parse_range(value: &str) -> Option<ByteRange> {
    let spec = value.trim().strip_prefix("bytes=")?;
    if spec.contains(',') {
        return None;
    }
    let (a, b) = spec.trim().split_once('-')?;
    let num = |s: &str| s.trim().parse::<u64>().ok();
    match (a.trim().is_empty(), b.trim().is_empty()) {
        (true, false) => Some(ByteRange::Suffix(num(b)?)),
        (false, true) => Some(ByteRange::From(num(a)?)),
        (false, false) => Some(ByteRange::Bounded(num(a)?, num(b)?)),
        (true, true) => None,
    }
}

/// Types a browser would render with script or markup of their own: always downloaded, never shown inline.
fn actively_rendered(mime: &str) -> bool {
    matches!(mime, "text/html" | "application/xhtml+xml" | "image/svg+xml" | "text/xml" | "application/xml")
        || mime.ends_with("+xml")
        || mime.starts_with("text/javascript")
        || mime == "application/javascript"
}

/// `Content-Disposition` with the file name percent-encoded (RFC 8187), so no name can break the header.
fn disposition(name: &str, attachment: bool) -> String {
    let kind = if attachment { "attachment" } else { "inline" };
    if name.is_empty() {
        return kind.to_owned();
    }
    let mut encoded = String::with_capacity(name.len() * 3);
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&b) {
            encoded.push(b as char);
        } else {
            encoded.push_str(&format!("%{b:02X}"));
        }
    }
    format!("{kind}; filename*=UTF-8''{encoded}")
}

fn insert(h: &mut HeaderMap, name: header::HeaderName, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        h.insert(name, v);
    }
}

/// A refusal as Tinode answers one on these routes: a `{ctrl}` body with the code as the HTTP status.
fn reply(id: Option<&str>, e: &ServiceError) -> Response<Body> {
    let code = e.code();
    // The client sees only the code and a short text: the operator needs the reason behind a 5xx.
    match code {
        Code::InternalError => tracing::error!(error = %e, "file request failed"),
        Code::ServiceUnavailable if !matches!(e, ServiceError::FilePending) => {
            tracing::warn!(error = %e, "file request refused")
        }
        _ => {}
    }
    let body = palaver_service::ctrl_frame(id, None, code, Some(&e.text()), palaver_core::now_millis(), e.params());
    let status = StatusCode::from_u16(code.code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut resp = json(status, body);
    let retry_after_ms = match e {
        ServiceError::Unavailable { retry_after_ms, .. } | ServiceError::RateLimited { retry_after_ms, .. } => {
            Some(*retry_after_ms)
        }
        // A scan takes seconds: a client that waits this long and asks again usually gets the file.
        ServiceError::FilePending => Some(2000),
        _ => None,
    };
    if let Some(ms) = retry_after_ms {
        resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(ms.div_ceil(1000).max(1)));
    }
    cors(resp)
}

/// Open to any origin, as Tinode's file handler is: the request authenticates with its own headers, never
/// with cookies.
fn cors(mut resp: Response<Body>) -> Response<Body> {
    let h = resp.headers_mut();
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, HEAD, POST, OPTIONS"));
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("X-Tinode-APIKey, X-Tinode-Auth, Authorization, Content-Type, Range, If-None-Match"),
    );
    h.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("Content-Disposition, Content-Range, Content-Length, ETag"),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_as_one_span() {
        assert_eq!(parse_range("bytes=0-99"), Some(ByteRange::Bounded(0, 99)));
        assert_eq!(parse_range("bytes=100-"), Some(ByteRange::From(100)));
        assert_eq!(parse_range("bytes=-5"), Some(ByteRange::Suffix(5)));
        assert_eq!(parse_range("bytes=0-1,5-6"), None);
        assert_eq!(parse_range("items=0-1"), None);
        assert_eq!(parse_range("bytes=x-1"), None);
        assert_eq!(parse_range("bytes=-"), None);
    }

    #[test]
    fn dispositions_encode_any_name() {
        assert_eq!(disposition("", false), "inline");
        assert_eq!(disposition("a b\".txt", true), "attachment; filename*=UTF-8''a%20b%22.txt");
        assert_eq!(disposition("ü.png", false), "inline; filename*=UTF-8''%C3%BC.png");
        assert!(
            actively_rendered("text/html") && actively_rendered("image/svg+xml") && !actively_rendered("image/png")
        );
    }
}
