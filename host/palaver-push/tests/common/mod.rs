//! A local HTTP server standing in for a push provider: it records every request (method, path, headers, body)
//! and answers each with the next scripted response, so a test can check the request exactly as the provider
//! documents it and play the provider's errors.

#![allow(dead_code, unreachable_pub)]

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Request, Response};
use std::collections::{BTreeMap, VecDeque};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

/// One request as the server saw it; header names lower-cased.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub headers: BTreeMap<String, String>,
    pub body: Vec<u8>,
}

impl Seen {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).map(String::as_str).unwrap_or("")
    }
}

/// A scripted answer: status, headers, body. When the script runs out the server answers 200 `{}`.
pub type Answer = (u16, Vec<(&'static str, String)>, String);

#[derive(Clone, Default)]
pub struct Provider {
    pub seen: Arc<Mutex<Vec<Seen>>>,
    script: Arc<Mutex<VecDeque<Answer>>>,
    /// Answers by path prefix, used before the script (e.g. the token endpoint).
    fixed: Arc<Mutex<Vec<(String, Answer)>>>,
    pub base: String,
}

impl Provider {
    /// Starts a server on a free local port.
    pub async fn start() -> Provider {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let p = Provider { base: format!("http://{}", listener.local_addr().unwrap()), ..Provider::default() };
        let server = p.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { return };
                let server = server.clone();
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(move |req| {
                        let server = server.clone();
                        async move { Ok::<_, Infallible>(server.answer(req).await) }
                    });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, svc).await;
                });
            }
        });
        p
    }

    /// Queues answers for the next requests (after the fixed ones).
    pub fn then(&self, answers: impl IntoIterator<Item = Answer>) {
        self.script.lock().unwrap().extend(answers);
    }

    /// Answers every request whose path starts with `prefix` with `answer`.
    pub fn always(&self, prefix: &str, answer: Answer) {
        self.fixed.lock().unwrap().push((prefix.to_owned(), answer));
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// The requests to paths starting with `prefix`.
    pub fn to(&self, prefix: &str) -> Vec<Seen> {
        self.requests().into_iter().filter(|s| s.path.starts_with(prefix)).collect()
    }

    async fn answer(&self, req: Request<hyper::body::Incoming>) -> Response<Full<Bytes>> {
        let method = req.method().to_string();
        let path = req.uri().path().to_owned();
        let headers =
            req.headers().iter().map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned())).collect();
        let body = req.into_body().collect().await.map(|b| b.to_bytes().to_vec()).unwrap_or_default();
        self.seen.lock().unwrap().push(Seen { method, path: path.clone(), headers, body });
        let fixed =
            self.fixed.lock().unwrap().iter().find(|(p, _)| path.starts_with(p.as_str())).map(|(_, a)| a.clone());
        let (status, headers, body) =
            fixed.or_else(|| self.script.lock().unwrap().pop_front()).unwrap_or((200, vec![], "{}".into()));
        let mut resp = Response::builder().status(status).header("content-type", "application/json");
        for (k, v) in headers {
            resp = resp.header(k, v);
        }
        resp.body(Full::new(Bytes::from(body))).unwrap()
    }
}
