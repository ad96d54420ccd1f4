//! Export of the node's tracing spans to an OpenTelemetry collector over OTLP/HTTP (protobuf), when
//! `log.otlp.endpoint` is set.
//!
//! The spans are the ones the code already opens (`palaver.store.*`, the session and request spans); a
//! `tracing-opentelemetry` layer turns them into OpenTelemetry spans and a batch processor, on a thread of its
//! own, posts them to `{endpoint}/v1/traces`. Nothing on a request path waits for the collector: a full batch
//! queue drops spans, and an export that fails is logged by the SDK and forgotten. The HTTP client is the
//! workspace's own `reqwest` (rustls, the system roots), lent to the exporter, so that no second HTTP stack is
//! built for it.

use crate::config::OtlpConfig;
use opentelemetry::KeyValue;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{HttpClient, HttpError};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use std::time::Duration;

/// Why the exporter could not be built.
#[derive(Debug, thiserror::Error)]
pub enum OtlpError {
    #[error("the OTLP HTTP client: {0}")]
    Client(#[from] reqwest::Error),
    #[error("the OTLP span exporter: {0}")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
}

/// The running export: flushes what is batched and stops when shut down (or dropped).
pub struct Otlp {
    provider: SdkTracerProvider,
}

impl Otlp {
    /// Builds the exporter and its tracer provider for `cfg` (whose `endpoint` is set), naming the node
    /// `node_id`. Call outside any async runtime: the blocking client runs one of its own.
    pub fn start(cfg: &OtlpConfig, node_id: &str) -> Result<Otlp, OtlpError> {
        let timeout = Duration::from_millis(cfg.timeout_ms);
        let client = Client(reqwest::blocking::Client::builder().timeout(timeout).build()?);
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_endpoint(traces_url(&cfg.endpoint))
            .with_timeout(timeout)
            .with_headers(cfg.headers.clone().into_iter().collect())
            .build()?;
        let resource = Resource::builder()
            .with_service_name(cfg.service_name.clone())
            .with_attribute(KeyValue::new("service.instance.id", node_id.to_owned()))
            .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
            .build();
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(cfg.sample_ratio))))
            .with_resource(resource)
            .build();
        Ok(Otlp { provider })
    }

    /// The `tracing` layer that feeds this export.
    pub fn layer<S>(&self) -> impl tracing_subscriber::Layer<S> + use<S>
    where
        S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
    {
        tracing_opentelemetry::layer().with_tracer(self.provider.tracer("palaver"))
    }

    /// Exports what is still batched and stops. Call outside any async runtime.
    pub fn shutdown(self) {
        if let Err(err) = self.provider.shutdown() {
            eprintln!("palaver: the last OTLP export failed: {err}");
        }
    }
}

/// The traces URL of an OTLP/HTTP base URL (the exporter uses a configured endpoint as it is).
fn traces_url(endpoint: &str) -> String {
    let base = endpoint.trim_end_matches('/');
    if base.ends_with("/v1/traces") { base.to_owned() } else { format!("{base}/v1/traces") }
}

/// The workspace's blocking `reqwest` client as the exporter's HTTP client. The batch processor calls it on its
/// own thread, outside any async runtime, so blocking there stalls nothing else.
#[derive(Debug)]
struct Client(reqwest::blocking::Client);

#[async_trait::async_trait]
impl HttpClient for Client {
    async fn send_bytes(
        &self,
        request: http::Request<bytes::Bytes>,
    ) -> Result<http::Response<bytes::Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let response = self.0.request(parts.method, parts.uri.to_string()).headers(parts.headers).body(body).send()?;
        let (status, headers) = (response.status(), response.headers().clone());
        let mut answer = http::Response::new(response.bytes()?);
        *answer.status_mut() = status;
        *answer.headers_mut() = headers;
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::traces_url;

    #[test]
    fn the_traces_path_is_added_once() {
        assert_eq!(traces_url("http://c:4318"), "http://c:4318/v1/traces");
        assert_eq!(traces_url("http://c:4318/"), "http://c:4318/v1/traces");
        assert_eq!(traces_url("https://c/otlp/v1/traces"), "https://c/otlp/v1/traces");
    }
}
