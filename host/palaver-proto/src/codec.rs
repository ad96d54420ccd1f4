//! Decoding client frames and encoding server messages.
//!
//! Decoding is one typed `serde_json` pass on the hot path. Only when it fails do we parse the frame a second
//! time as a loose `Value`, so that the error reply can still echo the request `id` the client is waiting on.

use crate::client::*;
use crate::server::ServerMsg;
use serde::Deserialize;
use serde_json::Value;

/// Why a frame could not be decoded. Every kind is answered with ctrl 400.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeErrorKind {
    /// Not JSON at all, or not a JSON object.
    NotJson,
    /// JSON, but a field has the wrong type or a required field is missing.
    WrongShape(String),
    /// No known message kind (`hi`, `acc`, …) in the object.
    UnknownKind,
    /// More than one message kind in one object.
    Ambiguous,
}

/// A frame that is not a valid client message, with whatever request id could be recovered from it.
#[derive(Debug, Clone, thiserror::Error)]
#[error("malformed client message: {kind:?}")]
pub struct DecodeError {
    pub kind: DecodeErrorKind,
    pub id: Option<String>,
    pub topic: Option<String>,
}

#[derive(Deserialize)]
struct Envelope {
    hi: Option<MsgHi>,
    acc: Option<MsgAcc>,
    login: Option<MsgLogin>,
    sub: Option<MsgSub>,
    leave: Option<MsgLeave>,
    #[serde(rename = "pub")]
    publish: Option<MsgPub>,
    get: Option<MsgGet>,
    set: Option<MsgSet>,
    del: Option<MsgDel>,
    note: Option<MsgNote>,
    extra: Option<Extra>,
}

/// Decodes one client frame.
pub fn decode_client(frame: &[u8]) -> Result<ClientMsg, DecodeError> {
    let env: Envelope = match serde_json::from_slice(frame) {
        Ok(env) => env,
        Err(e) => return Err(recover(frame, e)),
    };
    let mut found: Vec<ClientMsg> = Vec::with_capacity(1);
    let Envelope { hi, acc, login, sub, leave, publish, get, set, del, note, extra } = env;
    let publish = publish.map(|mut p| {
        p.attachments = extra.map(|e| e.attachments).unwrap_or_default();
        p
    });
    found.extend(hi.map(ClientMsg::Hi));
    found.extend(acc.map(ClientMsg::Acc));
    found.extend(login.map(ClientMsg::Login));
    found.extend(sub.map(ClientMsg::Sub));
    found.extend(leave.map(ClientMsg::Leave));
    found.extend(publish.map(ClientMsg::Pub));
    found.extend(get.map(ClientMsg::Get));
    found.extend(set.map(ClientMsg::Set));
    found.extend(del.map(ClientMsg::Del));
    found.extend(note.map(ClientMsg::Note));
    match found.len() {
        1 => Ok(found.pop().expect("one element")),
        0 => Err(DecodeError { kind: DecodeErrorKind::UnknownKind, id: None, topic: None }),
        _ => {
            let first = &found[0];
            Err(DecodeError {
                kind: DecodeErrorKind::Ambiguous,
                id: first.id().map(str::to_owned),
                topic: first.topic().map(str::to_owned),
            })
        }
    }
}

/// The slow path: find the id and topic of a frame that failed typed decoding.
fn recover(frame: &[u8], err: serde_json::Error) -> DecodeError {
    let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(frame) else {
        return DecodeError { kind: DecodeErrorKind::NotJson, id: None, topic: None };
    };
    let inner = map.values().find_map(Value::as_object);
    let field = |name: &str| inner.and_then(|o| o.get(name)).and_then(Value::as_str).map(str::to_owned);
    DecodeError { kind: DecodeErrorKind::WrongShape(err.to_string()), id: field("id"), topic: field("topic") }
}

/// Encodes one server message as the JSON text of a WebSocket frame or long-poll body.
pub fn encode_server(msg: &ServerMsg) -> String {
    // Serialising our own types into a String cannot fail: every map key is a string and no
    // custom Serialize impl returns an error.
    serde_json::to_string(msg).expect("server messages always serialise")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pub_takes_the_frames_attachments() {
        let frame = r#"{"pub":{"id":"1","topic":"grpX","content":"x"},"extra":{"attachments":["/v0/file/s/a.jpg"]}}"#;
        let Ok(ClientMsg::Pub(p)) = decode_client(frame.as_bytes()) else { panic!("a pub") };
        assert_eq!(p.attachments, ["/v0/file/s/a.jpg"]);
        let Ok(ClientMsg::Pub(p)) = decode_client(br#"{"pub":{"topic":"grpX","content":"x"}}"#) else { panic!() };
        assert!(p.attachments.is_empty());
        assert!(decode_client(br#"{"pub":{"topic":"t","content":"x"},"extra":{"attachments":[1]}}"#).is_err());
    }

    #[test]
    fn decodes_each_kind() {
        let cases = [
            (r#"{"hi":{"id":"1","ver":"0.25.3"}}"#, "hi"),
            (r#"{"acc":{"id":"1","user":"new","secret":"YTpi"}}"#, "acc"),
            (r#"{"login":{"id":"1","scheme":"basic","secret":"YTpi"}}"#, "login"),
            (r#"{"sub":{"id":"1","topic":"me","get":{"what":"desc sub"}}}"#, "sub"),
            (r#"{"leave":{"id":"1","topic":"grpX","unsub":true}}"#, "leave"),
            (r#"{"pub":{"id":"1","topic":"grpX","content":"hi","noecho":true}}"#, "pub"),
            (r#"{"get":{"id":"1","topic":"grpX","what":"data","data":{"limit":5}}}"#, "get"),
            (r#"{"set":{"id":"1","topic":"grpX","tags":["a"]}}"#, "set"),
            (r#"{"del":{"id":"1","topic":"grpX","delseq":[{"low":1,"hi":3}]}}"#, "del"),
            // tinode-sdk's delCurrentUser names no topic.
            (r#"{"del":{"id":"1","what":"user","hard":true}}"#, "del"),
            (r#"{"note":{"topic":"grpX","what":"read","seq":3}}"#, "note"),
        ];
        for (json, kind) in cases {
            let msg = decode_client(json.as_bytes()).unwrap_or_else(|e| panic!("{json}: {e:?}"));
            assert_eq!(msg.kind(), kind);
        }
    }

    #[test]
    fn flattened_get_query_is_read() {
        let ClientMsg::Get(g) =
            decode_client(br#"{"get":{"id":"7","topic":"grpX","what":"data","data":{"since":3,"limit":2}}}"#).unwrap()
        else {
            panic!("not a get")
        };
        assert_eq!(g.query.what, "data");
        assert_eq!(g.query.data.unwrap().since, Some(3));
    }

    #[test]
    fn errors_keep_the_request_id() {
        let e = decode_client(br#"{"pub":{"id":"42","topic":"grpX","noecho":"yes"}}"#).unwrap_err();
        assert!(matches!(e.kind, DecodeErrorKind::WrongShape(_)));
        assert_eq!(e.id.as_deref(), Some("42"));
        assert_eq!(e.topic.as_deref(), Some("grpX"));

        let e = decode_client(b"{not json").unwrap_err();
        assert_eq!(e.kind, DecodeErrorKind::NotJson);

        let e = decode_client(br#"{"bogus":{"id":"1"}}"#).unwrap_err();
        assert_eq!(e.kind, DecodeErrorKind::UnknownKind);

        let e = decode_client(br#"{"hi":{"id":"1"},"login":{"id":"2"}}"#).unwrap_err();
        assert_eq!(e.kind, DecodeErrorKind::Ambiguous);

        let e = decode_client(b"[1,2]").unwrap_err();
        assert_eq!(e.kind, DecodeErrorKind::NotJson);
    }
}
