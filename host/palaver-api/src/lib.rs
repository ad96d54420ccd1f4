//! The contracts across Palaver's boundaries, as types instead of strings: the reasons table ([`Reason`]), the
//! commands table ([`CommandName`]), the typed facts the host gives the plugins' rules ([`Facts`]) and the one
//! HTTP error body ([`ErrorBody`]). Host crates and the plugin SDK (which re-exports this crate) use the same
//! definitions, so a name changed on one side fails to compile on the other. No I/O; builds for wasm32.

pub mod bodies;
mod body;
mod commands;
pub mod facts;
mod reasons;

pub use body::ErrorBody;
pub use commands::{CommandName, Facts, FactsError, Family};
pub use palaver_proto::Code;
pub use reasons::Reason;
