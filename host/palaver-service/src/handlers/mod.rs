//! The handlers of each client message kind, as `impl Session` blocks split by area.

mod account;
mod delete;
mod meta;
mod notify;
mod publish;
mod subscribe;
