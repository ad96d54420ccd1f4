//! What one device is sent: Tinode's push fields (`what`, `silent`, `topic`, `xfrom`, `seq`, `ts`, `mime`,
//! `webrtc`, `content`) and the minimal locating fields (`type`, `tenant_id`, `topic`, `seq`), all strings.

use palaver_core::ports::{PushMessage, PushTask};
use palaver_proto::Timestamp;
use serde_json::Value;
use std::collections::BTreeMap;

/// The longest preview, in characters (Tinode's limit); a longer text is cut and ends in `…`.
pub const PREVIEW_CHARS: usize = 128;

/// The text of a message's content for a preview: a plain string, or the `txt` of a Drafty document; at most
/// [`PREVIEW_CHARS`] characters. `None` for anything else or an empty text.
pub fn preview_of(content: &Value) -> Option<String> {
    let text = match content {
        Value::String(s) => s.as_str(),
        Value::Object(o) => o.get("txt").and_then(Value::as_str)?,
        _ => return None,
    };
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    if text.chars().count() <= PREVIEW_CHARS {
        return Some(text.to_owned());
    }
    let mut cut: String = text.chars().take(PREVIEW_CHARS - 1).collect();
    cut.push('…');
    Some(cut)
}

/// True if a push for `task` alerts nobody even when the recipient is not its sender: a call's progress past
/// ringing (`accepted`, `finished`, `declined`, `disconnected`), which apps use only to stop ringing on the
/// devices that did not answer. An incoming call (`started`) and a `missed` one alert, like a message.
pub(super) fn silent_for_all(task: &PushTask) -> bool {
    task.webrtc.as_deref().is_some_and(|state| state != "started" && state != "missed")
}

/// The message for `task` to a device whose user's name for the topic is `topic` (a P2P topic is named by
/// the other user). Silent pushes carry no text and no alert; a non-silent one is high priority at the
/// provider. A call's alert says so (`Incoming call`, `Missed call`) instead of showing the call message's text.
pub fn build_message(task: &PushTask, topic: &str, silent: bool) -> PushMessage {
    let kind = if task.topic.starts_with("p2p") { "p2p_message" } else { "group_message" };
    let mut data = BTreeMap::new();
    let mut put = |k: &str, v: String| {
        data.insert(k.to_owned(), v);
    };
    put("type", kind.to_owned());
    put("tenant_id", task.tenant.0.to_string());
    put("what", task.what.clone());
    put("silent", silent.to_string());
    put("topic", topic.to_owned());
    put("xfrom", task.from.to_string());
    put("seq", task.seq.to_string());
    put("ts", Timestamp(task.ts).to_string());
    put("mime", task.mime.clone().unwrap_or_else(|| "text/plain".to_owned()));
    if let Some(w) = &task.webrtc {
        put("webrtc", w.clone());
    }
    let call_alert = match task.webrtc.as_deref() {
        Some("started") => Some("Incoming call"),
        Some("missed") => Some("Missed call"),
        _ => None,
    };
    let body = match (silent, call_alert, &task.preview) {
        (true, _, _) => String::new(),
        (false, Some(alert), _) => alert.to_owned(),
        (false, None, Some(p)) => {
            put("content", p.clone());
            p.clone()
        }
        (false, None, None) => "New message".to_owned(),
    };
    PushMessage { data, silent, body }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn previews_are_cut_at_128_characters() {
        let long = "é".repeat(200);
        let p = preview_of(&json!(long)).unwrap();
        assert_eq!(p.chars().count(), PREVIEW_CHARS);
        assert!(p.ends_with('…'));
        assert_eq!(preview_of(&json!({"txt": " hi "})).as_deref(), Some("hi"));
        assert_eq!(preview_of(&json!(42)), None);
        assert_eq!(preview_of(&json!("")), None);
    }
}
