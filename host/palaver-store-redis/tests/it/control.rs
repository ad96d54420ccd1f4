//! Session-control counters against a real Redis: per-user and per-device versions, tenants apart, and the
//! documented key names with their TTL.

use crate as common;
use palaver_core::ports::{ControlScope, ControlVersions, SessionControlStore};
use palaver_core::{TenantId, UserId};
use palaver_store_redis::RedisControl;

#[tokio::test]
async fn bumps_count_per_scope_and_tenant() {
    let Some(client) = common::client("control").await else { return };
    let control = RedisControl::new(client.clone());
    let (t, u) = (TenantId(1), UserId(42));
    let web = ControlScope::Device("web-1".into());
    let devices = ["web-1".to_owned(), "ios".to_owned()];
    assert_eq!(control.versions(t, u, &devices).await.unwrap(), ControlVersions { user: 0, devices: vec![0, 0] });
    assert_eq!(control.bump(t, u, &ControlScope::User).await.unwrap(), 1);
    assert_eq!(control.bump(t, u, &ControlScope::User).await.unwrap(), 2);
    assert_eq!(control.bump(t, u, &web).await.unwrap(), 1);
    assert_eq!(control.versions(t, u, &devices).await.unwrap(), ControlVersions { user: 2, devices: vec![1, 0] });
    assert_eq!(control.versions(t, u, &[]).await.unwrap(), ControlVersions { user: 2, devices: vec![] });
    let apart = ControlVersions { user: 0, devices: vec![0] };
    assert_eq!(control.versions(TenantId(2), u, &devices[..1]).await.unwrap(), apart, "tenants apart");
    assert_eq!(control.versions(t, UserId(43), &devices[..1]).await.unwrap(), apart, "users apart");

    let prefix = &client.config().key_prefix;
    let user_key = format!("{prefix}:1:session_control:user:42:version");
    let device_key = format!("{prefix}:1:session_control:device:42:web-1:version");
    let (user_value, device_value): (String, String) =
        common::raw(&client, redis::cmd("MGET").arg(&user_key).arg(&device_key)).await;
    assert_eq!((user_value.as_str(), device_value.as_str()), ("2", "1"));
    for key in [user_key, device_key] {
        let ttl: i64 = common::raw(&client, redis::cmd("TTL").arg(&key)).await;
        assert!(ttl > 604_700 && ttl <= 604_800, "{key}: {ttl}");
    }
}
