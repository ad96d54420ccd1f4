//! The palaver server as a library: the typed configuration and the wiring that starts a node, so that the
//! binary and the integration tests start servers the same way.

pub mod admin_cli;
mod backbone;
mod business;
mod call_sweep;
mod cluster;
pub mod config;
pub mod credentials;
mod every;
pub mod files;
pub mod jwt_keys;
pub mod otlp;
mod plugin_rollout;
mod plugins;
mod plugins_admin;
pub mod push;
pub mod tenants;
pub mod wiring;
