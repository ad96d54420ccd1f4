//! Domain records rendered as wire messages, and frames serialised once for every recipient.

use crate::delivery::hub::Frame;
use palaver_core::{AccessMode, DefaultAccess, UnixMillis};
use palaver_proto::{AccessTriple, Code, DefaultAccess as WireDefacs, MsgCtrl, ServerMsg, Timestamp, encode_server};
use serde_json::Value;

/// Serialises a server message into a shareable frame.
pub(crate) fn frame(msg: &ServerMsg) -> Frame {
    Frame::from(encode_server(msg).into_bytes())
}

/// A ctrl frame stamped `now`, with the canonical text of `code` unless `text` says more. Every ctrl Palaver
/// sends is built here: session replies and errors, evictions, shutdown notices, and the gateway's HTTP-level
/// refusals.
pub fn ctrl_frame(
    id: Option<&str>,
    topic: Option<&str>,
    code: Code,
    text: Option<&str>,
    now: UnixMillis,
    params: Option<Value>,
) -> Frame {
    let mut ctrl = MsgCtrl::new(id, topic, code, Timestamp(now));
    if let Some(text) = text {
        ctrl.text = text.to_owned();
    }
    ctrl.params = params;
    frame(&ServerMsg::Ctrl(ctrl))
}

/// `{want, given, mode}`.
pub(crate) fn acs(want: AccessMode, given: AccessMode) -> AccessTriple {
    AccessTriple { want: want.to_string(), given: given.to_string(), mode: want.and(given).to_string() }
}

/// `{auth, anon}`.
pub(crate) fn defacs(d: &DefaultAccess) -> WireDefacs {
    WireDefacs { auth: d.auth.to_string(), anon: d.anon.to_string() }
}

/// A timestamp for the wire, omitting zero (never set).
pub(crate) fn ts(ms: UnixMillis) -> Option<Timestamp> {
    (ms > 0).then_some(Timestamp(ms))
}
