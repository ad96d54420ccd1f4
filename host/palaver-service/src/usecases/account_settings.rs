//! What kind of account one is (its identities), and a tenant's own account rules: the `accounts` settings document the admin API writes (`GET`/`PUT
//! /v1/admin/tenants/{t}/accounts`), read where a rule applies, so every node applies a change at once.

use super::accounts::Accounts;
use crate::error::{ServiceError, ServiceResult};
use palaver_api::bodies::admin::{AccountSettings, TenantAccounts};

/// The settings document of a tenant's own account rules.
const ACCOUNTS_SETTING: &str = "accounts";

impl Accounts<'_> {
    /// The tenant's own account rules (none stored: every default).
    pub(crate) async fn own_settings(&self) -> ServiceResult<AccountSettings> {
        match self.svc.ports.settings.get_setting(self.tenant, ACCOUNTS_SETTING).await? {
            None => Ok(AccountSettings::default()),
            Some(doc) => {
                serde_json::from_value(doc).map_err(|e| ServiceError::Internal(format!("account settings: {e}")))
            }
        }
    }

    /// How the account is known besides its id: its login and external id. An account with neither is an
    /// anonymous one, whose token is all it has.
    pub(crate) async fn identity(&self, user: palaver_core::UserId) -> ServiceResult<palaver_core::ports::Identity> {
        Ok(self.svc.ports.users.identity_of(self.tenant, user).await?)
    }

    /// True if the tenant lets clients create anonymous accounts (off unless it said so).
    pub(crate) async fn anonymous_allowed(&self) -> ServiceResult<bool> {
        Ok(self.own_settings().await?.anonymous.unwrap_or(false))
    }

    /// The rules in force and the tenant's own settings, as the admin API shows them.
    pub(crate) async fn settings(&self) -> ServiceResult<TenantAccounts> {
        let own = self.own_settings().await?;
        Ok(TenantAccounts {
            tenant: self.tenant.0,
            anonymous: own.anonymous.unwrap_or(false),
            required_credentials: self.svc.cfg.credentials.required.clone(),
            credential_methods: self.svc.ports.code_senders.keys().cloned().collect(),
            settings: own,
        })
    }

    /// Changes the tenant's own account rules: each top-level field of `change` replaces the stored one, and
    /// `null` removes it. The result must read as [`AccountSettings`], or nothing changes.
    pub(crate) async fn set_settings(&self, change: &serde_json::Value) -> ServiceResult<TenantAccounts> {
        let store = &self.svc.ports.settings;
        let (_, doc): (AccountSettings, _) = crate::usecases::settings::merged(
            store.as_ref(),
            self.tenant,
            ACCOUNTS_SETTING,
            "account settings",
            change,
        )
        .await?;
        store.put_setting(self.tenant, ACCOUNTS_SETTING, doc.as_ref()).await?;
        self.settings().await
    }
}
