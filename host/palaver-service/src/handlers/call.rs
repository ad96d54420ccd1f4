//! `{note what:"call"}`: one party's call event (ringing, accept, offer, answer, ice-candidate, hang-up) on a P2P
//! topic, handed to the call use cases. Like every note it has no reply; an invalid one is dropped.

use crate::error::{ServiceError, ServiceResult};
use crate::session::Session;
use palaver_proto::MsgNote;

impl Session {
    pub(crate) async fn on_call_note(&mut self, stored: String, m: MsgNote) -> ServiceResult<()> {
        let me = self.me()?;
        let seq =
            m.seq.filter(|s| *s > 0).ok_or_else(|| ServiceError::Malformed("note.seq must be positive".into()))?;
        let event = m.event.as_deref().ok_or_else(|| ServiceError::Malformed("note.event is required".into()))?;
        self.svc.call_event(self.tenant(), stored, seq, me, self.handle.sid, event, m.payload).await
    }
}
