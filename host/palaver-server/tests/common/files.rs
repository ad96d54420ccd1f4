//! Tinode's file routes over real HTTP, as the SDK's `LargeFileHelper` and the web app call them.

use super::KEY;
use serde_json::Value;
use std::net::SocketAddr;

const BOUNDARY: &str = "----palaver-test-boundary";

/// A multipart form as a browser's `FormData` sends it: the file first, then the SDK's `id`.
pub fn form(name: &str, mime: &str, bytes: &[u8], id: &str) -> Vec<u8> {
    let mut body = format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\nContent-Type: {mime}\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(bytes);
    body.extend_from_slice(
        format!("\r\n--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"id\"\r\n\r\n{id}\r\n--{BOUNDARY}--\r\n")
            .as_bytes(),
    );
    body
}

pub async fn upload(addr: SocketAddr, token: &str, name: &str, mime: &str, bytes: &[u8]) -> (u16, Value) {
    let resp = reqwest::Client::new()
        .post(format!("http://{addr}/v0/file/u/"))
        .header("X-Tinode-APIKey", KEY)
        .header("X-Tinode-Auth", format!("Token {token}"))
        .header("Content-Type", format!("multipart/form-data; boundary={BOUNDARY}"))
        .body(form(name, mime, bytes, "f1"))
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap())
}

pub async fn get(addr: SocketAddr, path: &str, token: Option<&str>, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut req = reqwest::Client::new().get(format!("http://{addr}{path}")).header("X-Tinode-APIKey", KEY);
    if let Some(token) = token {
        req = req.header("X-Tinode-Auth", format!("Token {token}"));
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.unwrap()
}

pub fn header(resp: &reqwest::Response, name: &str) -> String {
    resp.headers().get(name).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default()
}
