//! A code sender for tests: it keeps what it would have sent, so a test reads the code an address got, and it
//! can be told to refuse an address or fail, as a provider does.

use palaver_core::ports::{CodeMessage, CodePurpose, CodeSender, SendError};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One code as it would have gone out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    pub method: String,
    pub to: String,
    pub code: String,
    pub purpose: CodePurpose,
}

/// Every code any test's services sent, in order. Tests use addresses of their own, so they never read
/// another's.
static SENT: Mutex<Vec<Sent>> = Mutex::new(Vec::new());

/// Addresses whose sends fail: `Refused` for those starting with `refused`, `Unavailable` for `down`.
struct Recorder;

#[async_trait::async_trait]
impl CodeSender for Recorder {
    async fn send(&self, msg: &CodeMessage<'_>) -> Result<(), SendError> {
        if msg.to.starts_with("refused") {
            return Err(SendError::Refused("550 no such mailbox".into()));
        }
        if msg.to.starts_with("down") {
            return Err(SendError::Unavailable("connection refused".into()));
        }
        SENT.lock().push(Sent {
            method: msg.method.to_owned(),
            to: msg.to.to_owned(),
            code: msg.code.to_owned(),
            purpose: msg.purpose,
        });
        Ok(())
    }
}

/// Senders for `email` and `tel` that record.
pub fn senders() -> BTreeMap<String, Arc<dyn CodeSender>> {
    let recorder: Arc<dyn CodeSender> = Arc::new(Recorder);
    BTreeMap::from([("email".to_owned(), recorder.clone()), ("tel".to_owned(), recorder)])
}

/// The codes sent to `to`, oldest first.
pub fn sent_to(to: &str) -> Vec<Sent> {
    SENT.lock().iter().filter(|s| s.to == to).cloned().collect()
}

/// The last code sent to `to`.
pub fn last_code(to: &str) -> String {
    sent_to(to).last().map(|s| s.code.clone()).unwrap_or_else(|| panic!("no code was sent to {to}"))
}
