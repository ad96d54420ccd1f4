//! The handlers of each client message kind, as `impl Session` blocks split by area.

pub(crate) mod account;
mod call;
mod credentials;
mod delete;
mod meta;
mod publish;
mod subscribe;
