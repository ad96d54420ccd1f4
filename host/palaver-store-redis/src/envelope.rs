//! The bus's wire form of an [`Envelope`]: one JSON object with the documented field names, the
//! payload embedded as the JSON document it is rather than as a string.
//!
//! ```text
//! {"event_id":"…","tenant_id":"7","tenant_code":null,"kind":"message","target_type":"topic","target":"grpX",
//!  "from":"usrAAAAAAAAAAA","source_node":"n1","skip_sid":null,"dedup_key":null,
//!  "occurred_at":"2026-09-08T10:00:00.000Z","payload":{…}}
//! ```
//!
//! `target` is a user id string (`User`), an array of them (`Users`, also `target_type` `user`), an object
//! `{"user","device"}` (`Device`), a topic name (`Topic`) or an object `{"node","session"}` (`Session`). User
//! ids travel in their Tinode form (`usr…`), the tenant id as a decimal string.

use crate::codec::rfc3339_millis;
use palaver_core::ports::{BusTarget, Envelope, EventKind};
use palaver_core::{TenantId, UnixMillis, UserId};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// An envelope that could not be encoded or decoded.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum EnvelopeError {
    #[error("envelope payload is not a JSON document: {0}")]
    Payload(String),
    #[error("malformed bus envelope: {0}")]
    Malformed(String),
}

#[derive(Serialize)]
struct WireOut<'a> {
    event_id: &'a str,
    tenant_id: String,
    tenant_code: Option<&'a str>,
    kind: &'static str,
    target_type: &'static str,
    target: TargetOut<'a>,
    from: Option<String>,
    source_node: &'a str,
    skip_sid: Option<&'a str>,
    dedup_key: Option<&'a str>,
    occurred_at: String,
    payload: &'a RawValue,
}

#[derive(Serialize)]
#[serde(untagged)]
enum TargetOut<'a> {
    Name(String),
    Users(Vec<String>),
    Device { user: String, device: &'a str },
    Session { node: &'a str, session: &'a str },
}

#[derive(Deserialize)]
struct WireIn {
    event_id: String,
    tenant_id: String,
    tenant_code: Option<String>,
    kind: String,
    target_type: String,
    target: TargetIn,
    from: Option<String>,
    source_node: String,
    skip_sid: Option<String>,
    dedup_key: Option<String>,
    occurred_at: String,
    payload: Box<RawValue>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum TargetIn {
    Name(String),
    Users(Vec<String>),
    Device { user: String, device: String },
    Session { node: String, session: String },
}

/// The wire form of `envelope`. Fails only if its payload is not a JSON document.
pub fn encode(envelope: &Envelope) -> Result<String, EnvelopeError> {
    let payload: &RawValue =
        serde_json::from_str(&envelope.payload).map_err(|e| EnvelopeError::Payload(e.to_string()))?;
    let target = match &envelope.target {
        BusTarget::User(u) => TargetOut::Name(u.to_string()),
        BusTarget::Users(us) => TargetOut::Users(us.iter().map(UserId::to_string).collect()),
        BusTarget::Device { user, device } => TargetOut::Device { user: user.to_string(), device },
        BusTarget::Topic(t) => TargetOut::Name(t.clone()),
        BusTarget::Session { node_id, session } => TargetOut::Session { node: node_id, session },
    };
    let wire = WireOut {
        event_id: &envelope.event_id,
        tenant_id: envelope.tenant.0.to_string(),
        tenant_code: envelope.tenant_code.as_deref(),
        kind: envelope.kind.as_str(),
        target_type: envelope.target.kind(),
        target,
        from: envelope.from.map(|u| u.to_string()),
        source_node: &envelope.source_node,
        skip_sid: envelope.skip_session.as_deref(),
        dedup_key: envelope.dedup_key.as_deref(),
        occurred_at: rfc3339_millis(envelope.occurred_at),
        payload,
    };
    serde_json::to_string(&wire).map_err(|e| EnvelopeError::Payload(e.to_string()))
}

/// Parses the wire form back into an envelope, refusing anything the encoder could not have written.
pub fn decode(text: &str) -> Result<Envelope, EnvelopeError> {
    let bad = |what: &str| EnvelopeError::Malformed(what.to_owned());
    let wire: WireIn = serde_json::from_str(text).map_err(|e| EnvelopeError::Malformed(e.to_string()))?;
    let tenant = wire.tenant_id.parse::<u64>().map_err(|_| bad("tenant_id"))?;
    let kind = EventKind::parse(&wire.kind).ok_or_else(|| bad("kind"))?;
    let user = |s: &str| UserId::parse(s).map_err(|_| bad("user id"));
    let target = match (wire.target_type.as_str(), wire.target) {
        ("user", TargetIn::Name(u)) => BusTarget::User(user(&u)?),
        ("user", TargetIn::Users(us)) => BusTarget::Users(us.iter().map(|u| user(u)).collect::<Result<_, _>>()?),
        ("device", TargetIn::Device { user: u, device }) => BusTarget::Device { user: user(&u)?, device },
        ("topic", TargetIn::Name(t)) if !t.is_empty() => BusTarget::Topic(t),
        ("session", TargetIn::Session { node, session }) => BusTarget::Session { node_id: node, session },
        _ => return Err(bad("target")),
    };
    let from = wire.from.as_deref().map(user).transpose()?;
    Ok(Envelope {
        event_id: wire.event_id,
        tenant: TenantId(tenant),
        tenant_code: wire.tenant_code,
        kind,
        target,
        from,
        source_node: wire.source_node,
        skip_session: wire.skip_sid,
        dedup_key: wire.dedup_key,
        occurred_at: parse_millis(&wire.occurred_at).ok_or_else(|| bad("occurred_at"))?,
        payload: wire.payload.get().to_owned(),
    })
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Parses RFC 3339 (`Z` or a numeric offset, any number of fraction digits, kept to milliseconds): the
/// inverse of [`rfc3339_millis`], lenient enough for another writer's timestamps.
fn parse_millis(s: &str) -> Option<UnixMillis> {
    let b = s.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let part = s.get(from..from + len)?;
        part.bytes().all(|c| c.is_ascii_digit()).then(|| part.parse().ok())?
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't') || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, mo, d, h, mi, sec) = (num(0, 4)?, num(5, 2)?, num(8, 2)?, num(11, 2)?, num(14, 2)?, num(17, 2)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut millis = 0;
    if b.get(i) == Some(&b'.') {
        let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        let frac = &s[i + 1..i + 1 + digits.min(3)];
        millis = frac.parse::<i64>().ok()? * 10_i64.pow(3 - u32::try_from(frac.len()).ok()?);
        i += 1 + digits;
    }
    let offset_min = match b.get(i..)? {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let minutes = num(i + 1, 2)? * 60 + num(i + 4, 2)?;
            if *sign == b'+' { minutes } else { -minutes }
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo, d);
    Some(((days * 24 + h) * 60 + mi - offset_min) * 60_000 + sec * 1000 + millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(target: BusTarget) -> Envelope {
        Envelope {
            event_id: "ev-1".into(),
            tenant: TenantId(7),
            tenant_code: Some("acme".into()),
            kind: EventKind::Message,
            target,
            from: Some(UserId(42)),
            source_node: "n1".into(),
            skip_session: Some("s-9".into()),
            dedup_key: Some("message:grpX:12".into()),
            occurred_at: 1_788_861_600_000,
            payload: r#"{"data":{"topic":"grpX","seq":12,"content":"hi \"there\""}}"#.into(),
        }
    }

    #[test]
    fn every_target_round_trips() {
        let targets = [
            BusTarget::User(UserId(42)),
            BusTarget::Users(vec![UserId(1), UserId(2)]),
            BusTarget::Users(Vec::new()),
            BusTarget::Device { user: UserId(3), device: "platform:ios".into() },
            BusTarget::Topic("grpX".into()),
            BusTarget::Session { node_id: "n2".into(), session: "s1".into() },
        ];
        for target in targets {
            let e = envelope(target);
            assert_eq!(decode(&encode(&e).unwrap()).unwrap(), e);
        }
        let bare = Envelope {
            tenant_code: None,
            from: None,
            skip_session: None,
            dedup_key: None,
            ..envelope(BusTarget::Topic("grpX".into()))
        };
        assert_eq!(decode(&encode(&bare).unwrap()).unwrap(), bare);
    }

    #[test]
    fn the_wire_uses_the_documented_field_names_and_embeds_the_payload() {
        let e = envelope(BusTarget::Device { user: UserId(3), device: "d1".into() });
        let v: serde_json::Value = serde_json::from_str(&encode(&e).unwrap()).unwrap();
        assert_eq!(v["tenant_id"], "7");
        assert_eq!(v["kind"], "message");
        assert_eq!(v["target_type"], "device");
        assert_eq!(v["target"], serde_json::json!({"user": UserId(3).to_string(), "device": "d1"}));
        assert_eq!(v["from"], UserId(42).to_string());
        assert_eq!(v["skip_sid"], "s-9");
        assert_eq!(v["occurred_at"], "2026-09-08T10:00:00.000Z");
        assert_eq!(v["payload"]["data"]["seq"], 12, "payload is a document, not a string");
        let users = encode(&envelope(BusTarget::Users(vec![UserId(1)]))).unwrap();
        assert!(users.contains(&format!(r#""target_type":"user","target":["{}"]"#, UserId(1))), "{users}");
    }

    #[test]
    fn timestamps_format_and_parse() {
        for ms in [0, 1, 999, 951_782_400_123, 1_788_861_600_000, -1, -86_400_001, 4_102_444_800_000] {
            assert_eq!(parse_millis(&rfc3339_millis(ms)), Some(ms), "{}", rfc3339_millis(ms));
        }
        assert_eq!(rfc3339_millis(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(parse_millis("2026-09-08T12:00:00.5+02:00"), Some(1_788_861_600_500));
        assert_eq!(parse_millis("2026-09-08T10:00:00Z"), Some(1_788_861_600_000));
        for bad in ["", "2026-09-08", "2026-09-08T10:00:00", "2026-13-08T10:00:00Z", "2026-09-08T10:00:00.Z"] {
            assert_eq!(parse_millis(bad), None, "{bad}");
        }
    }

    #[test]
    fn malformed_input_is_refused() {
        assert!(matches!(
            encode(&Envelope { payload: "not json".into(), ..envelope(BusTarget::Topic("t".into())) }),
            Err(EnvelopeError::Payload(_))
        ));
        let good: serde_json::Value =
            serde_json::from_str(&encode(&envelope(BusTarget::User(UserId(42)))).unwrap()).unwrap();
        let spoil = |field: &str, value: serde_json::Value| {
            let mut v = good.clone();
            v[field] = value;
            decode(&v.to_string())
        };
        assert!(decode("{").is_err());
        assert!(decode("[]").is_err());
        assert!(spoil("tenant_id", serde_json::json!(7)).is_err(), "tenant id must be a string");
        assert!(spoil("tenant_id", serde_json::json!("seven")).is_err());
        assert!(spoil("kind", serde_json::json!("gossip")).is_err());
        assert!(spoil("target", serde_json::json!("grpX")).is_err(), "a user target must be a user id");
        assert!(spoil("target_type", serde_json::json!("session")).is_err());
        assert!(spoil("from", serde_json::json!("42")).is_err());
        assert!(spoil("occurred_at", serde_json::json!("yesterday")).is_err());
        let mut missing = good.clone();
        missing.as_object_mut().unwrap().remove("payload");
        assert!(decode(&missing.to_string()).is_err());
        assert!(decode(&good.to_string()).is_ok());
    }
}
