//! The use cases the handlers call: each method names the rule it enforces and is the only code that reaches the
//! ports for it, so a handler reads parse → authorize → use case → reply.
//!
//! The owners are views over the node's shared state, made per call and holding nothing of their own:
//! - [`accounts::Accounts`]: sign-up, credentials, logins and their throttle, profiles;
//! - [`credentials::Credentials`]: email addresses and phone numbers confirmed by code, required methods,
//!   password reset codes;
//! - [`identity`]: what an app backend asks of accounts (create, find, mint and revoke tokens);
//! - [`deletion`]: deleting an account (its sessions, names, devices and topics);
//! - [`eviction`]: the admin's evictions of sessions, and suspending or reactivating an account;
//! - [`presence::Presence`]: a session's online record, last seen, and the `{pres}` it causes;
//! - [`topics::Topics`]: creating groups and P2P conversations, what a reader may see, changes, deletion;
//! - [`subscriptions::Subscriptions`]: joining, leaving, removal, invitations, modes, read positions;
//! - [`messages::Messages`]: the publish hooks, storing under the next seq ([`pipeline`]: queued under the
//!   topic's lock, settled in seq order), history, deletion, review;
//! - [`devices::Devices`]: push tokens registered by `{hi dev}` and their removal;
//! - [`edits::Edits`]: who may edit (`head.replace`) or recall (`{del hard}`) a message, and until when;
//! - [`files::Files`]: uploads, downloads and who may read them, attachments, avatars, collection;
//! - [`calls`]: one-to-one calls (the record's transitions, signalling relays, timers, `[calls]`);
//! - [`rules`]: the publish gate and the timed ask of the tenant's business rules;
//! - [`relations::Relations`], [`governance::Governance`], [`notices::Notices`], [`reports::Reports`]: what the
//!   business commands of `/v1/im/` (`business/`) store: friendships and blocks, a group's governance and
//!   membership, system notifications, abuse reports.
//!
//! `Inner`'s own methods live in three folders only: here (the use cases), `delivery/` (how an event reaches
//! sessions, here and on other nodes) and `backbone/` (audit events and summaries into the outbox).
//!
//! Handlers and business commands keep what belongs to one connection (its attachments, the `{hi}` it sent, its replies) and what the
//! hub holds for it; everything stored goes through an owner here.

pub(crate) mod account_settings;
pub(crate) mod accounts;
pub(crate) mod calls;
pub(crate) mod credentials;
pub(crate) mod deletion;
pub(crate) mod devices;
pub(crate) mod edits;
pub(crate) mod eviction;
pub(crate) mod files;
pub(crate) mod governance;
pub(crate) mod identity;
pub(crate) mod messages;
pub(crate) mod notices;
pub(crate) mod pipeline;
pub(crate) mod presence;
pub(crate) mod relations;
pub(crate) mod reports;
pub(crate) mod rules;
pub(crate) mod settings;
pub(crate) mod subscriptions;
pub(crate) mod topics;

use crate::Inner;
use palaver_core::{TenantId, UserId};

impl Inner {
    /// The account use cases of `tenant`.
    pub(crate) fn accounts(&self, tenant: TenantId) -> accounts::Accounts<'_> {
        accounts::Accounts { svc: self, tenant }
    }

    /// The credential use cases of `tenant`.
    pub(crate) fn credentials(&self, tenant: TenantId) -> credentials::Credentials<'_> {
        credentials::Credentials { svc: self, tenant }
    }

    /// The push device use cases of `tenant`.
    pub(crate) fn devices(&self, tenant: TenantId) -> devices::Devices<'_> {
        devices::Devices { svc: self, tenant }
    }

    /// The edit and recall use cases of `tenant`.
    pub(crate) fn edits(&self, tenant: TenantId) -> edits::Edits<'_> {
        edits::Edits { svc: self, tenant }
    }

    /// The file use cases of `tenant`.
    pub(crate) fn files(&self, tenant: TenantId) -> files::Files<'_> {
        files::Files { svc: self, tenant }
    }

    /// The message use cases of `tenant`.
    pub(crate) fn messages(&self, tenant: TenantId) -> messages::Messages<'_> {
        messages::Messages { svc: self, tenant }
    }

    /// The presence use cases of `tenant`.
    pub(crate) fn presence(&self, tenant: TenantId) -> presence::Presence<'_> {
        presence::Presence { svc: self, tenant }
    }

    /// The topic use cases of `tenant`.
    pub(crate) fn stored_topics(&self, tenant: TenantId) -> topics::Topics<'_> {
        topics::Topics { svc: self, tenant }
    }

    /// The subscription use cases of `tenant`.
    pub(crate) fn subscriptions(&self, tenant: TenantId) -> subscriptions::Subscriptions<'_> {
        subscriptions::Subscriptions { svc: self, tenant }
    }

    /// The governance use cases of the group `topic` of `tenant`.
    pub(crate) fn governance<'a>(&'a self, tenant: TenantId, topic: &'a str) -> governance::Governance<'a> {
        governance::Governance { svc: self, tenant, topic }
    }

    /// The relation use cases (friends, blocks) of `tenant`.
    pub(crate) fn relations(&self, tenant: TenantId) -> relations::Relations<'_> {
        relations::Relations { svc: self, tenant }
    }

    /// The notification use cases of `user` of `tenant`.
    pub(crate) fn notices(&self, tenant: TenantId, user: UserId) -> notices::Notices<'_> {
        notices::Notices { svc: self, tenant, user }
    }

    /// The abuse report use cases of `tenant`.
    pub(crate) fn reports(&self, tenant: TenantId) -> reports::Reports<'_> {
        reports::Reports { svc: self, tenant }
    }
}
