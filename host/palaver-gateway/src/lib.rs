//! HTTP, WebSocket and long-polling transports in front of the service, with API keys and limits.
