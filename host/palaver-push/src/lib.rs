//! Push provider adapters for the `PushProvider` port: [`FcmProvider`] (FCM HTTP v1 with a service account's
//! OAuth2 JWT-bearer grant), [`ApnsProvider`] (APNs over HTTP/2 with an ES256 provider token), [`JpushProvider`] (JPush REST v3) and [`WebhookProvider`] (an HMAC-SHA256 signed
//! JSON POST to the tenant's own push service). Each speaks HTTPS through one `reqwest` client (rustls); the
//! endpoints default to the providers' real ones and are overridden only for tests and self-hosted gateways.
//!
//! Every adapter maps the provider's answer to a `PushError` the same way: 2xx is success, the provider's "token
//! gone" answer is `Unregistered` (the worker removes the device), 429 and 5xx and network failures are `Retry`
//! with the `Retry-After` the provider sent, anything else is `Failed` with the provider's reason.

mod apns;
mod fcm;
mod http;
mod jpush;
mod webhook;

pub use apns::{APNS_ENDPOINT, ApnsConfig, ApnsProvider};
pub use fcm::{FCM_ENDPOINT, FCM_SCOPE, FcmConfig, FcmProvider, ServiceAccount};
pub use http::SetupError;
pub use jpush::{JPUSH_ENDPOINT, JpushConfig, JpushProvider};
pub use webhook::{SIGNATURE_HEADER, TIMESTAMP_HEADER, WebhookConfig, WebhookProvider, signature};
