//! Tinode's JSON wire protocol as Rust types: what clients send, what the server answers, and how to decode it.
//!
//! This crate does no I/O and knows no runtime. It only turns bytes into [`ClientMsg`] values and
//! [`ServerMsg`] values into bytes, exactly as the Tinode server and `tinode-sdk` expect them.

mod client;
mod codec;
mod codes;
mod server;
mod time;

pub use client::*;
pub use codec::{DecodeError, DecodeErrorKind, decode_client, encode_server};
pub use codes::Code;
pub use server::*;
pub use time::{Timestamp, TimestampParseError};

/// The protocol version this server speaks, as reported in the `{hi}` reply.
pub const PROTOCOL_VERSION: &str = "0.25";

/// The oldest client protocol version accepted in `{hi}`.
pub const MIN_CLIENT_VERSION: &str = "0.20";

/// The string a client sends to clear a field (Tinode's "delete" marker, U+2421).
pub const NULL_VALUE: &str = "\u{2421}";
