//! APNs against a local HTTP/2 server over TLS whose certificate comes from a CA made in the test: the request is
//! checked as Apple documents it (HTTP/2, `POST /3/device/{token}`, an ES256 provider token with `kid` and
//! `iss`, `apns-topic`, `apns-push-type`, `apns-priority`, `apns-collapse-id`, the `aps` payload) and the
//! answers are mapped (`410 Unregistered` removes, 429 retries, `ExpiredProviderToken` renews the token).

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use palaver_core::ports::{Device, PushError, PushMessage, PushProvider};
use palaver_core::{TenantId, UserId};
use palaver_push::{ApnsConfig, ApnsProvider};
use std::collections::{BTreeMap, VecDeque};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

#[derive(Debug, Clone)]
struct Seen {
    version: String,
    path: String,
    headers: BTreeMap<String, String>,
    body: serde_json::Value,
}

type Script = Arc<Mutex<VecDeque<(u16, String)>>>;

/// Starts the HTTP/2 TLS server; returns its base URL and the test CA's PEM.
async fn server(seen: Arc<Mutex<Vec<Seen>>>, script: Script) -> (String, String) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, "palaver test CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert =
        rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap().signed_by(&key, &ca, &ca_key).unwrap();
    let mut tls = tokio_rustls::rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(cert.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .unwrap();
    tls.alpn_protocols = vec![b"h2".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("https://127.0.0.1:{}", listener.local_addr().unwrap().port());
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { return };
            let (acceptor, seen, script) = (acceptor.clone(), seen.clone(), script.clone());
            tokio::spawn(async move {
                let Ok(stream) = acceptor.accept(tcp).await else { return };
                let svc = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let (seen, script) = (seen.clone(), script.clone());
                    async move {
                        let version = format!("{:?}", req.version());
                        let path = req.uri().path().to_owned();
                        let headers = req
                            .headers()
                            .iter()
                            .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
                            .collect();
                        let bytes = req.into_body().collect().await.unwrap().to_bytes();
                        let body = serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
                        seen.lock().unwrap().push(Seen { version, path, headers, body });
                        let (status, text) = script.lock().unwrap().pop_front().unwrap_or((200, String::new()));
                        Ok::<_, Infallible>(
                            hyper::Response::builder().status(status).body(Full::new(Bytes::from(text))).unwrap(),
                        )
                    }
                });
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                    .serve_connection(io, svc)
                    .await;
            });
        }
    });
    (base, ca.pem())
}

fn message(silent: bool) -> PushMessage {
    let data =
        [("topic", "grpX"), ("seq", "9"), ("what", "msg")].into_iter().map(|(k, v)| (k.into(), v.into())).collect();
    PushMessage { data, silent, body: if silent { String::new() } else { "hi there".into() } }
}

#[tokio::test]
async fn apns_sends_over_http2_with_an_es256_token_and_maps_answers() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let script: Script = Arc::default();
    let (base, ca) = server(seen.clone(), script.clone()).await;
    let p8 = rcgen::KeyPair::generate().unwrap();
    let cfg = ApnsConfig {
        key_pem: p8.serialize_pem(),
        key_id: "KEY123".into(),
        team_id: "TEAM456".into(),
        topic: "com.example.chat".into(),
        endpoint: base,
    };
    let http = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(ca.as_bytes()).unwrap())
        .http2_prior_knowledge()
        .build()
        .unwrap();
    let apns = ApnsProvider::with_client(cfg, http).unwrap();
    let device = Device {
        user: UserId(5),
        device_id: "d".into(),
        platform: "ios".into(),
        provider: "apns".into(),
        token: "a1b2c3".into(),
        app: String::new(),
        language: String::new(),
        last_seen: 0,
    };
    apns.send(TenantId(1), &device, &message(false)).await.unwrap();
    apns.send(TenantId(1), &device, &message(true)).await.unwrap();
    let got = seen.lock().unwrap().clone();
    assert_eq!(got.len(), 2);
    let key = jsonwebtoken::DecodingKey::from_ec_pem(p8.public_key_pem().as_bytes()).unwrap();
    let mut tokens = Vec::new();
    for s in &got {
        assert_eq!(s.version, "HTTP/2.0");
        assert_eq!(s.path, "/3/device/a1b2c3");
        assert_eq!(s.headers["apns-topic"], "com.example.chat");
        assert_eq!(s.headers["apns-collapse-id"], "grpX:9");
        let jwt = s.headers["authorization"].strip_prefix("bearer ").expect("a bearer provider token");
        let header = jsonwebtoken::decode_header(jwt).unwrap();
        assert_eq!((header.alg, header.kid.as_deref()), (jsonwebtoken::Algorithm::ES256, Some("KEY123")));
        let mut v = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES256);
        v.required_spec_claims.clear();
        v.validate_exp = false;
        let claims = jsonwebtoken::decode::<serde_json::Value>(jwt, &key, &v).expect("signed with the .p8 key").claims;
        assert_eq!(claims["iss"], "TEAM456");
        assert!(claims["iat"].as_u64().unwrap() > 1_700_000_000);
        tokens.push(jwt.to_owned());
    }
    assert_eq!(tokens[0], tokens[1], "the provider token is reused");
    assert_eq!((got[0].headers["apns-push-type"].as_str(), got[0].headers["apns-priority"].as_str()), ("alert", "10"));
    assert_eq!(got[0].body["aps"]["alert"]["body"], "hi there");
    assert_eq!(got[0].body["topic"], "grpX");
    assert_eq!(
        (got[1].headers["apns-push-type"].as_str(), got[1].headers["apns-priority"].as_str()),
        ("background", "5")
    );
    assert_eq!(got[1].body["aps"]["content-available"], 1);

    script.lock().unwrap().extend([
        (410, r#"{"reason":"Unregistered","timestamp":1}"#.to_owned()),
        (429, r#"{"reason":"TooManyRequests"}"#.to_owned()),
        (403, r#"{"reason":"ExpiredProviderToken"}"#.to_owned()),
        (400, r#"{"reason":"PayloadEmpty"}"#.to_owned()),
    ]);
    assert_eq!(apns.send(TenantId(1), &device, &message(false)).await, Err(PushError::Unregistered));
    assert!(matches!(apns.send(TenantId(1), &device, &message(false)).await, Err(PushError::Retry { .. })));
    assert!(matches!(apns.send(TenantId(1), &device, &message(false)).await, Err(PushError::Retry { .. })));
    assert!(matches!(apns.send(TenantId(1), &device, &message(false)).await, Err(PushError::Failed { .. })));
}
