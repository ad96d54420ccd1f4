//! The columns of the message history tables that are derived from a message rather than stored from it:
//! `group_id`, `msg_type`, `mentioned_user_ids`, `mention_all`, `reply_seqid`, `root_seqid`, `file_count` and
//! `content_size`. Reads never use them to rebuild a message; they exist for operators, pushes and partitioning.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use palaver_core::{Message, UserId};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The stable 64-bit id of a topic, for `group_id`.
///
/// A canonical group name (`grp` followed by the 11-character unpadded base64url of 8 bytes, as Palaver and Tinode
/// mint them) yields the id it encodes, read little-endian like user ids, so the column matches the number in the
/// name. Any other name (a `p2p…` name, which encodes two user ids; names from imports or tests) yields the first
/// 8 bytes of SHA-256 of the name, big-endian. Both are reinterpreted as signed for the `BIGINT` column. The
/// result depends on the name alone, never on the database, so every node and every rebuild agrees.
pub(crate) fn group_id(topic: &str) -> i64 {
    if let Some(body) = topic.strip_prefix("grp")
        && body.len() == 11
        && let Ok(bytes) = URL_SAFE_NO_PAD.decode(body)
        && let Ok(raw) = <[u8; 8]>::try_from(bytes.as_slice())
    {
        return u64::from_le_bytes(raw) as i64;
    }
    let digest = Sha256::digest(topic.as_bytes());
    let mut raw = [0u8; 8];
    raw.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(raw) as i64
}

/// What the derived columns of one message hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Derived {
    pub(crate) group_id: i64,
    pub(crate) msg_type: &'static str,
    /// A JSON array of user ids (as the signed `BIGINT` form), or `None` when nobody is mentioned.
    pub(crate) mentioned_user_ids: Option<String>,
    pub(crate) mention_all: bool,
    pub(crate) reply_seqid: Option<i64>,
    pub(crate) root_seqid: Option<i64>,
    pub(crate) file_count: i32,
    pub(crate) content_size: i32,
}

/// Derives the columns of `msg`, whose content serialises to `content_text`.
pub(crate) fn derive(msg: &Message, content_text: &str) -> Derived {
    let head = msg.head.as_ref();
    let entities = drafty_entities(&msg.content);
    let attachments: Vec<&str> = entities.iter().filter_map(|(tp, _)| attachment_type(tp)).collect();
    let (mut mentioned, mut mention_all) = head.map(head_mentions).unwrap_or_default();
    for (tp, data) in &entities {
        if *tp == "MN" {
            match data.and_then(|d| d.get("val")).and_then(Value::as_str) {
                Some(val) if is_everyone(val) => mention_all = true,
                Some(val) => mentioned.extend(UserId::parse(val).ok().map(|u| u.0 as i64)),
                None => {}
            }
        }
    }
    mentioned.sort_unstable();
    mentioned.dedup();
    Derived {
        group_id: group_id(&msg.topic),
        msg_type: attachments.first().copied().unwrap_or("text"),
        mentioned_user_ids: (!mentioned.is_empty()).then(|| Value::from(mentioned).to_string()),
        mention_all,
        reply_seqid: head.and_then(|h| seq_ref(h.get("reply"))),
        root_seqid: head.and_then(|h| seq_ref(h.get("thread"))),
        file_count: i32::try_from(attachments.len()).unwrap_or(i32::MAX),
        content_size: i32::try_from(content_text.len()).unwrap_or(i32::MAX),
    }
}

/// The `(tp, data)` of every entity of a Drafty document; plain-text content has none.
fn drafty_entities(content: &Value) -> Vec<(&str, Option<&Value>)> {
    let Some(ents) = content.get("ent").and_then(Value::as_array) else { return Vec::new() };
    ents.iter().filter_map(|e| Some((e.get("tp")?.as_str()?, e.get("data")))).collect()
}

/// The `msg_type` column value for a Drafty entity that is an attachment, `None` for inline formatting.
fn attachment_type(tp: &str) -> Option<&'static str> {
    match tp {
        "IM" => Some("image"),
        "VD" => Some("video"),
        "AU" => Some("audio"),
        "EX" => Some("file"),
        _ => None,
    }
}

/// The user ids in `head.mentions` (`usr…` strings or numbers) and whether it mentions everyone (`all`, `@all`
/// or `*` in the list, or `head.mention_all: true`).
fn head_mentions(head: &Map<String, Value>) -> (Vec<i64>, bool) {
    let mut all = head.get("mention_all").and_then(Value::as_bool).unwrap_or(false);
    let mut ids = Vec::new();
    for item in head.get("mentions").and_then(Value::as_array).into_iter().flatten() {
        match item {
            Value::String(s) if is_everyone(s) => all = true,
            Value::String(s) => ids.extend(UserId::parse(s).ok().map(|u| u.0 as i64)),
            Value::Number(n) => ids.extend(n.as_u64().map(|v| v as i64).or_else(|| n.as_i64())),
            _ => {}
        }
    }
    (ids, all)
}

fn is_everyone(s: &str) -> bool {
    matches!(s, "all" | "@all" | "*")
}

/// A seq referenced by `head.reply` or `head.thread`: a number, or a string such as `"12"` or Tinode's `":12"`.
fn seq_ref(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim_start_matches(':').parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use palaver_core::AuditStatus;
    use serde_json::json;

    fn message(topic: &str, content: Value, head: Value) -> Message {
        Message {
            topic: topic.to_owned(),
            seq: 1,
            created: 0,
            from: UserId(1),
            head: head.as_object().cloned(),
            content,
            client_mid: None,
            audit: AuditStatus::Pass,
            risk_flags: Vec::new(),
        }
    }

    #[test]
    fn canonical_group_names_yield_their_id() {
        let name = format!("grp{}", URL_SAFE_NO_PAD.encode(0x0102_0304_0506_0708u64.to_le_bytes()));
        assert_eq!(group_id(&name), 0x0102_0304_0506_0708);
        let high = format!("grp{}", URL_SAFE_NO_PAD.encode(u64::MAX.to_le_bytes()));
        assert_eq!(group_id(&high), -1, "reinterpreted, not truncated");
        assert_eq!(group_id("grpContract1"), group_id("grpContract1"), "hashed names are stable");
        assert_ne!(group_id("grpContract1"), group_id("grpContract2"));
        assert_ne!(group_id("grpabc"), group_id("grpABC"), "names are case-sensitive");
    }

    #[test]
    fn derives_mentions_type_and_sizes() {
        let bob = UserId(42).to_string();
        let drafty = json!({ "txt": "hi @bob", "fmt": [], "ent": [
            { "tp": "MN", "data": { "val": bob } }, { "tp": "IM", "data": {} }, { "tp": "EX", "data": {} }
        ]});
        let head = json!({ "mentions": ["usrAAAAAAAAAAA", 7, "@all"], "reply": ":12", "thread": 3 });
        let msg = message("grpX", drafty.clone(), head);
        let d = derive(&msg, &drafty.to_string());
        assert_eq!(d.mentioned_user_ids.as_deref(), Some("[7,42]"), "invalid ids dropped, sorted, deduplicated");
        assert!(d.mention_all);
        assert_eq!((d.msg_type, d.file_count), ("image", 2));
        assert_eq!((d.reply_seqid, d.root_seqid), (Some(12), Some(3)));
        assert_eq!(d.content_size, i32::try_from(drafty.to_string().len()).unwrap());

        let plain = message("grpX", json!("hello"), Value::Null);
        let d = derive(&plain, "\"hello\"");
        assert_eq!((d.msg_type, d.mentioned_user_ids, d.mention_all, d.content_size), ("text", None, false, 7));
    }
}
