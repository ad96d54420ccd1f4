//! Session-control versions as Redis counters: `session_control:user:{uid}:version` and
//! `session_control:device:{uid}:{device_id}:version` per tenant, each living `control_ttl_seconds` after its
//! last bump.
//!
//! A bump is `INCR` plus `EXPIRE` in one transaction; reading a session's versions is one `MGET`. A counter
//! that expired reads as zero, which is safe only because a session older than the TTL is rare: the design
//! accepts that window (one to seven days) for not keeping counters forever.

use crate::client::RedisClient;
use async_trait::async_trait;
use palaver_core::ports::{ControlScope, ControlVersions, SessionControlStore};
use palaver_core::{StoreError, StoreResult, TenantId, UserId};

/// The control counters of every tenant on one client. Cloning is cheap.
#[derive(Clone, Debug)]
pub struct RedisControl {
    client: RedisClient,
}

impl RedisControl {
    /// Counters on `client`, living `control_ttl_seconds`.
    pub fn new(client: RedisClient) -> Self {
        Self { client }
    }

    fn key(&self, tenant: TenantId, user: UserId, scope: &ControlScope) -> String {
        let keys = self.client.keys();
        match scope {
            ControlScope::User => keys.control_user_version(tenant, user),
            ControlScope::Device(device) => keys.control_device_version(tenant, user, device),
        }
    }
}

#[async_trait]
impl SessionControlStore for RedisControl {
    async fn bump(&self, tenant: TenantId, user: UserId, scope: &ControlScope) -> StoreResult<u64> {
        let key = self.key(tenant, user, scope);
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("INCR")
            .arg(&key)
            .cmd("EXPIRE")
            .arg(&key)
            .arg(self.client.config().control_ttl_seconds)
            .ignore();
        let (version,): (u64,) = self.client.pipeline(&pipe).await?;
        Ok(version)
    }

    async fn versions(&self, tenant: TenantId, user: UserId, devices: &[String]) -> StoreResult<ControlVersions> {
        let keys = self.client.keys();
        let mut cmd = redis::cmd("MGET");
        cmd.arg(keys.control_user_version(tenant, user));
        for device in devices {
            cmd.arg(keys.control_device_version(tenant, user, device));
        }
        // MGET answers a list even for one key, so the reply is always a vector.
        let values: Vec<Option<u64>> = self.client.query(&cmd).await?;
        if values.len() != devices.len() + 1 {
            return Err(StoreError::Internal(format!("MGET of {} keys answered {}", devices.len() + 1, values.len())));
        }
        let mut values = values.into_iter().map(Option::unwrap_or_default);
        let user_version = values.next().unwrap_or_default();
        let device_versions = values.collect();
        Ok(ControlVersions { user: user_version, devices: device_versions })
    }
}
