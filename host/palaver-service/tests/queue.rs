//! A session's outbound queue is bounded in bytes as well as in frames: fanout beyond the cap drops, a reply
//! beyond it closes the session, and taking frames gives the room back.

mod harness;

use harness::{Client, service_with};
use palaver_service::{Outbound, ServiceConfig};
use serde_json::json;

fn frame(len: usize) -> bytes::Bytes {
    bytes::Bytes::from(vec![b'x'; len])
}

#[tokio::test]
async fn fanout_beyond_the_byte_cap_drops_and_taking_frames_gives_room_back() {
    let svc = service_with(ServiceConfig { session_queue_bytes: 10_000, ..ServiceConfig::default() });
    let mut c = Client::connect(&svc);
    let handle = svc.hub().all_sessions().pop().unwrap();
    assert!(handle.push(frame(3000)) && handle.push(frame(3000)) && handle.push(frame(3000)));
    assert!(!handle.push(frame(3000)), "a fourth frame would take the queue to 12,000 bytes");
    assert_eq!(handle.dropped(), 1);
    assert_eq!(handle.queued_bytes(), 9000);
    assert_eq!(c.rx.queued_bytes(), 9000);
    assert!(matches!(c.rx.recv().await, Some(Outbound::Frame(f)) if f.len() == 3000));
    assert_eq!(handle.queued_bytes(), 6000, "the writer taking a frame releases its bytes");
    assert!(handle.push(frame(3000)), "room again");
    while c.rx.try_recv().is_ok() {}
    assert_eq!(handle.queued_bytes(), 0);
    assert!(handle.push(frame(50_000)), "one frame larger than the cap still goes into an empty queue");
}

#[tokio::test]
async fn a_reply_beyond_the_byte_cap_closes_the_session_instead_of_waiting() {
    let svc = service_with(ServiceConfig { session_queue_bytes: 10_000, ..ServiceConfig::default() });
    let mut c = Client::connect(&svc);
    let handle = svc.hub().all_sessions().pop().unwrap();
    assert!(handle.push(frame(9000)));
    handle.send(frame(3000)).await;
    assert!(c.rx.recv().await.is_none(), "the session's queue reports closed, so its transport disconnects");
    assert!(!handle.push(frame(10)), "nothing more is queued for it");
    assert!(svc.render_metrics().contains("palaver_session_queue_overflows_total 1"));
}

#[tokio::test]
async fn a_client_that_asks_for_more_history_than_it_reads_is_closed() {
    let svc = service_with(ServiceConfig { session_queue_bytes: 16 * 1024, ..ServiceConfig::default() });
    let mut c = Client::connect(&svc);
    c.signup("hoarder", "secret1").await;
    let grp = c.new_group("history").await;
    for i in 0..20 {
        assert_eq!(c.publish(&grp, json!(format!("{i:04}{}", "m".repeat(2000)))).await["code"], 202);
    }
    // One page of 20 messages of 2 KB is more than the 16 KiB the session may have queued, and this client
    // reads nothing while the page is produced.
    let id = c.id();
    c.session
        .as_mut()
        .unwrap()
        .handle_frame(
            json!({ "get": { "id": id, "topic": grp, "what": "data", "data": { "limit": 20 } } })
                .to_string()
                .as_bytes(),
        )
        .await;
    assert!(c.rx.recv().await.is_none(), "closed instead of holding the whole page");
    assert!(svc.hub().all_sessions()[0].queued_bytes() <= 16 * 1024, "never more than the cap was queued");
}
