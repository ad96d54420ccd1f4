//! Contract cases for the audit log: every field stored, one row per event id, tenants isolated.
//! [`crate::audit_contract_tests!`] runs them against any `AuditStore`.

use crate::Fixture;
use palaver_core::TenantId;
use palaver_core::ports::{AuditEvent, AuditStore};
use serde_json::json;

fn event(tenant: TenantId, id: &str, action: &str) -> AuditEvent {
    AuditEvent {
        event_id: id.to_owned(),
        tenant,
        actor_kind: "user".into(),
        actor_id: Some(-42),
        action: action.into(),
        target_kind: "message".into(),
        target_id: "grpX:7".into(),
        topic: Some("grpX".into()),
        seq: Some(7),
        detail: json!({"reason": "spam", "n": 1}),
        client_ip: Some("2001:db8::1".into()),
        at: 1_764_000_000_123,
    }
}

/// Every field reads back as written, the newest first; optional fields may be empty.
pub async fn audit_round_trips<S: AuditStore>(f: Fixture<S>) {
    let s = &f.store;
    let full = event(f.tenant, "e1", "message.release");
    let bare = AuditEvent {
        actor_id: None,
        topic: None,
        seq: None,
        detail: serde_json::Value::Null,
        client_ip: None,
        ..event(f.tenant, "e2", "login.failure")
    };
    assert!(s.record_audit(f.tenant, &full).await.unwrap());
    assert!(s.record_audit(f.tenant, &bare).await.unwrap());
    assert_eq!(s.list_audit(f.tenant, 10).await.unwrap(), [bare.clone(), full]);
    assert_eq!(s.list_audit(f.tenant, 1).await.unwrap(), [bare]);
}

/// A repeated event id stores nothing more, even with other content.
pub async fn audit_event_id_stored_once<S: AuditStore>(f: Fixture<S>) {
    let s = &f.store;
    assert!(s.record_audit(f.tenant, &event(f.tenant, "dup", "a")).await.unwrap());
    assert!(!s.record_audit(f.tenant, &event(f.tenant, "dup", "b")).await.unwrap());
    let rows = s.list_audit(f.tenant, 10).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].action, "a");
}

/// One tenant's rows are not another's.
pub async fn audit_tenants_are_isolated<S: AuditStore>(f: Fixture<S>) {
    let s = &f.store;
    assert!(s.record_audit(f.tenant, &event(f.tenant, "same", "mine")).await.unwrap());
    assert!(s.record_audit(f.other_tenant, &event(f.other_tenant, "same", "theirs")).await.unwrap());
    assert_eq!(s.list_audit(f.tenant, 10).await.unwrap()[0].action, "mine");
    assert_eq!(s.list_audit(f.other_tenant, 10).await.unwrap()[0].action, "theirs");
}
