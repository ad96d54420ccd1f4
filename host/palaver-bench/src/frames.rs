//! Hot-path parsing of server frames: only the fields the load shapes read, borrowed from the frame text.
//!
//! Deliveries are parsed into these small structs instead of a `serde_json::Value` so that the load
//! generator, which shares two cores with the server, spends as little CPU per frame as possible.

use std::borrow::Cow;

use serde::Deserialize;

/// A server message reduced to `{data}` and `{ctrl}`; `{pres}`, `{meta}` and `{info}` are skipped.
#[derive(Debug, Deserialize)]
pub(crate) struct Frame<'a> {
    #[serde(borrow, default)]
    pub(crate) data: Option<Data<'a>>,
    #[serde(borrow, default)]
    pub(crate) ctrl: Option<CtrlLite<'a>>,
}

/// The parts of `{data}` that latency and loss accounting need.
#[derive(Debug, Deserialize)]
pub(crate) struct Data<'a> {
    #[serde(borrow, default)]
    pub(crate) from: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(crate) seq: i64,
    #[serde(default)]
    pub(crate) content: Option<Stamp>,
}

/// The content every bench message carries: send time, index and run number.
#[derive(Debug, Deserialize, Default, Clone, Copy)]
pub(crate) struct Stamp {
    /// Send time in Unix microseconds.
    #[serde(default)]
    pub(crate) t: u64,
    /// Message index within the run.
    #[serde(default)]
    pub(crate) i: u64,
    /// Run number, so that late deliveries of an earlier run are not counted in the next one.
    #[serde(default)]
    pub(crate) r: u32,
}

/// The parts of `{ctrl}` that publish acknowledgements need.
#[derive(Debug, Deserialize)]
pub(crate) struct CtrlLite<'a> {
    #[serde(borrow, default)]
    pub(crate) id: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(crate) code: u16,
    #[serde(default)]
    pub(crate) params: Option<AckParams>,
}

/// `params` of a `ctrl 202`: the seq the message was stored under.
#[derive(Debug, Deserialize, Default)]
pub(crate) struct AckParams {
    #[serde(default)]
    pub(crate) seq: Option<i64>,
}

/// Parses a frame, or returns `None` for text that is not a JSON object of the expected shape.
pub(crate) fn parse(text: &str) -> Option<Frame<'_>> {
    serde_json::from_str(text).ok()
}

/// The text of one `{pub}` carrying a stamp; built with `format!` because it is on the hot path.
pub(crate) fn pub_text(id: &str, topic: &str, stamp: Stamp) -> String {
    pub_text_with_mid(id, topic, None, stamp)
}

/// Like [`pub_text`], with an optional `client_mid` idempotency key; ids, topics and keys are bench-made, so
/// they never need JSON escaping.
pub(crate) fn pub_text_with_mid(id: &str, topic: &str, client_mid: Option<&str>, stamp: Stamp) -> String {
    let mid = client_mid.map(|mid| format!(r#","client_mid":"{mid}""#)).unwrap_or_default();
    format!(
        r#"{{"pub":{{"id":"{id}","topic":"{topic}"{mid},"noecho":true,"content":{{"t":{},"i":{},"r":{}}}}}}}"#,
        stamp.t, stamp.i, stamp.r
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_data_and_ctrl() {
        let text = r#"{"data":{"topic":"grpX","from":"usrA","ts":"2020-01-01T00:00:00.000Z","seq":7,"content":{"t":5,"i":2,"r":1}}}"#;
        let frame = parse(text).expect("data frame");
        let data = frame.data.expect("data");
        assert_eq!(data.seq, 7);
        assert_eq!(data.from.as_deref(), Some("usrA"));
        assert_eq!(data.content.expect("stamp").i, 2);
        let text = r#"{"ctrl":{"id":"p1","topic":"grpX","code":202,"text":"accepted","params":{"seq":1},"ts":"x"}}"#;
        let ctrl = parse(text).expect("ctrl frame").ctrl.expect("ctrl");
        assert_eq!((ctrl.id.as_deref(), ctrl.code), (Some("p1"), 202));
        assert_eq!(ctrl.params.and_then(|p| p.seq), Some(1));
        assert!(parse(r#"{"pres":{"topic":"me","src":"grpX","what":"on"}}"#).is_some());
    }

    #[test]
    fn foreign_content_is_rejected_not_miscounted() {
        // Plain-string content is valid Tinode but carries no stamp, so it must not parse as a delivery.
        assert!(parse(r#"{"data":{"topic":"grpX","seq":1,"content":"hi"}}"#).is_none());
        let frame = parse(r#"{"data":{"topic":"grpX","seq":1}}"#).expect("frame");
        assert!(frame.data.expect("data").content.is_none());
        assert!(parse("not json").is_none());
    }

    #[test]
    fn pub_text_is_valid_json() {
        let text = pub_text("p3", "grpX", Stamp { t: 9, i: 3, r: 2 });
        let value: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert_eq!(value["pub"]["content"]["i"], 3);
        assert_eq!(value["pub"]["noecho"], true);
        assert!(value["pub"].get("client_mid").is_none());
        let text = pub_text_with_mid("p4", "grpX", Some("k-4"), Stamp { t: 9, i: 4, r: 2 });
        let value: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert_eq!(value["pub"]["client_mid"], "k-4");
    }
}
