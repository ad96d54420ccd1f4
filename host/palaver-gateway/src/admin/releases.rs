//! `POST /v1/admin/plugins`: a plugin release uploaded as a multipart form. The gateway only reads the form,
//! bounded: `manifest` (the TOML manifest), `component` (the `.wasm`), optionally `signature` (the ed25519
//! signature, base64) and `tenants` (comma-separated tenant ids: roll it out to them first, as a canary). What a
//! release is and whether it may run is the [`Admin`](super::Admin)'s to decide.

use crate::http::{Body, error};
use futures_util::StreamExt;
use http::{Request, Response, header};
use http_body_util::BodyStream;
use hyper::body::Incoming;
use palaver_api::Reason;

/// A release as the form carried it.
#[derive(Debug, Clone, Default)]
pub struct PluginUpload {
    pub manifest: String,
    pub component: Vec<u8>,
    /// The decoded signature, if the form had one.
    pub signature: Option<Vec<u8>>,
    /// Tenants to run it first; `None`: everyone at once.
    pub canary: Option<Vec<u64>>,
}

/// Why an admin action was refused: a reason of the table and a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminRefusal {
    pub reason: Reason,
    pub message: String,
}

impl AdminRefusal {
    pub fn new(reason: Reason, message: impl Into<String>) -> AdminRefusal {
        AdminRefusal { reason, message: message.into() }
    }
}

/// The small text fields' bound; the component's is the admin's upload limit.
const MAX_TEXT: usize = 256 * 1024;

/// Reads the upload form, at most `limit` bytes in all.
pub(crate) async fn read(req: Request<Incoming>, limit: usize) -> Result<PluginUpload, Response<Body>> {
    read_form(req, limit).await.map_err(|r| error(r.reason, r.message))
}

async fn read_form(req: Request<Incoming>, limit: usize) -> Result<PluginUpload, AdminRefusal> {
    let bad = |m: String| AdminRefusal::new(Reason::BadUpload, m);
    let boundary = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| multer::parse_boundary(v).ok())
        .ok_or_else(|| bad("the upload must be multipart/form-data with `manifest` and `component`".into()))?;
    let constraints = multer::Constraints::new().size_limit(multer::SizeLimit::new().whole_stream(limit as u64));
    let body = BodyStream::new(req.into_body()).filter_map(|frame| async move {
        match frame {
            Ok(frame) => frame.into_data().ok().map(Ok),
            Err(e) => Some(Err(e)),
        }
    });
    let mut form = multer::Multipart::with_constraints(body, boundary, constraints);
    let (mut manifest, mut component, mut signature, mut canary) = (None, None, None, None);
    loop {
        let mut field = match form.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => break,
            Err(e) => return Err(form_error(e, limit)),
        };
        let name = field.name().unwrap_or_default().to_owned();
        let cap = if name == "component" { limit } else { MAX_TEXT };
        let mut bytes = Vec::new();
        loop {
            match field.chunk().await {
                Ok(Some(chunk)) if bytes.len() + chunk.len() <= cap => bytes.extend_from_slice(&chunk),
                Ok(Some(_)) => {
                    return Err(AdminRefusal::new(Reason::UploadTooLarge, format!("field {name} is over {cap} bytes")));
                }
                Ok(None) => break,
                Err(e) => return Err(form_error(e, limit)),
            }
        }
        let text = |bytes: Vec<u8>| String::from_utf8(bytes).map_err(|_| bad(format!("field {name} is not UTF-8")));
        let slot_taken = match name.as_str() {
            "manifest" => manifest.replace(text(bytes)?).is_some(),
            "component" => component.replace(bytes).is_some(),
            "signature" => {
                use base64::Engine as _;
                let t = text(bytes)?;
                let sig = base64::engine::general_purpose::STANDARD
                    .decode(t.trim())
                    .map_err(|_| bad("signature must be base64".into()))?;
                signature.replace(sig).is_some()
            }
            "tenants" => {
                let t = text(bytes)?;
                let ids = t
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|s| s.parse::<u64>().map_err(|_| bad(format!("tenants: {s:?} is not a tenant id"))))
                    .collect::<Result<Vec<u64>, _>>()?;
                if ids.is_empty() {
                    return Err(bad("tenants names no tenant".into()));
                }
                canary.replace(ids).is_some()
            }
            other => return Err(bad(format!("unknown field {other:?} (manifest, component, signature, tenants)"))),
        };
        if slot_taken {
            return Err(bad(format!("field {name} appears twice")));
        }
    }
    let (Some(manifest), Some(component)) = (manifest, component) else {
        return Err(bad("the form needs both `manifest` (TOML) and `component` (.wasm)".into()));
    };
    Ok(PluginUpload { manifest, component, signature, canary })
}

fn form_error(e: multer::Error, limit: usize) -> AdminRefusal {
    match e {
        multer::Error::StreamSizeExceeded { .. } | multer::Error::FieldSizeExceeded { .. } => AdminRefusal::new(
            Reason::UploadTooLarge,
            format!("an upload is at most {limit} bytes (plugins.max_upload_bytes)"),
        ),
        e => AdminRefusal::new(Reason::BadUpload, format!("bad multipart form: {e}")),
    }
}
