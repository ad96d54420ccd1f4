//! Changing a tenant settings document (its own push providers, its own file limits) the way the admin API does:
//! each top-level field of a change replaces the stored one and `null` removes it, so the node's value applies
//! again; the result must read as the document's type and fit the store's size bound, or nothing changes.

use crate::error::{ServiceError, ServiceResult};
use palaver_core::TenantId;
use palaver_core::ports::{MAX_SETTING_BYTES, SettingsStore};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// A change applied to the stored document `name`: the document as it would read, and what to store (`None`
/// when nothing of the tenant's own is left). `what` names the document in errors ("push settings").
pub(crate) async fn merged<T: DeserializeOwned>(
    store: &dyn SettingsStore,
    tenant: TenantId,
    name: &str,
    what: &str,
    change: &Value,
) -> ServiceResult<(T, Option<Value>)> {
    let Some(change) = change.as_object() else {
        return Err(ServiceError::Malformed(format!("{what} must be a JSON object")));
    };
    let mut doc = match store.get_setting(tenant, name).await? {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    for (k, v) in change {
        match v {
            Value::Null => doc.remove(k),
            v => doc.insert(k.clone(), v.clone()),
        };
    }
    let doc = Value::Object(doc);
    let typed = serde_json::from_value(doc.clone()).map_err(|e| ServiceError::Malformed(format!("{what}: {e}")))?;
    if doc.to_string().len() > MAX_SETTING_BYTES {
        return Err(ServiceError::TooLarge(format!("{what} are at most {MAX_SETTING_BYTES} bytes")));
    }
    let empty = doc.as_object().is_some_and(Map::is_empty);
    Ok((typed, (!empty).then_some(doc)))
}
