//! Parking: sessions that wait for the rest of the setup keep reading, so they answer the server's pings.
//!
//! The server closes a WebSocket that sends nothing for its idle timeout (55 s, like Tinode) and pings every
//! 25 s; tungstenite only answers a ping while the socket is being read. Signing up a thousand members takes
//! longer than that, so each finished session is handed to a small task that drains it until it is needed.

use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;

use crate::client::Conn;
use crate::stats::Anomalies;

/// How long a parked task may take to hand its session back once asked.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(10);

/// A session being drained by its own task; [`Parking::release`] gives it back.
pub(crate) struct Parked {
    task: JoinHandle<(Conn, Option<String>)>,
}

/// The stop signal shared by every parked session of one setup.
pub(crate) struct Parking {
    stop: watch::Sender<bool>,
}

impl Parking {
    /// A parking with nobody in it yet.
    pub(crate) fn new() -> Parking {
        Parking { stop: watch::channel(false).0 }
    }

    /// Hands `conn` to a task that reads and discards its frames until released.
    ///
    /// Nothing is published while sessions are parked, so a discarded frame is only presence or other
    /// side traffic; a close or a read error is remembered and reported on release.
    pub(crate) fn park(&self, mut conn: Conn) -> Parked {
        let mut stop = self.stop.subscribe();
        let task = tokio::spawn(async move {
            let problem = loop {
                tokio::select! {
                    biased;
                    // Any change, or the sender going away, means the session is wanted back.
                    _ = stop.changed() => break None,
                    frame = conn.ws.next() => match frame {
                        None => break Some(String::from("closed by the server")),
                        Some(Err(err)) => break Some(format!("read error: {err}")),
                        Some(Ok(Message::Close(frame))) => break Some(format!("close frame {frame:?}")),
                        Some(Ok(_)) => {}
                    },
                }
            };
            (conn, problem)
        });
        Parked { task }
    }

    /// Stops every parked task and returns the sessions still open, in the order given.
    ///
    /// The first call stops all tasks of this parking; later calls only collect the sessions.
    /// Sessions the server closed while parked are left out and described in the returned anomalies.
    pub(crate) async fn release(&self, parked: Vec<Parked>, what: &str) -> (Vec<Conn>, Anomalies) {
        // A send error means no task is listening any more, which is the state this asks for anyway.
        let _ = self.stop.send(true);
        let mut conns = Vec::with_capacity(parked.len());
        let mut problems = Anomalies::default();
        for (i, one) in parked.into_iter().enumerate() {
            match tokio::time::timeout(RELEASE_TIMEOUT, one.task).await {
                Ok(Ok((conn, None))) => conns.push(conn),
                Ok(Ok((conn, Some(problem)))) => problems.note(format!("{what} {i} ({}): {problem}", conn.user)),
                Ok(Err(err)) => problems.note(format!("{what} {i}: parked task failed: {err}")),
                Err(_) => problems.note(format!("{what} {i}: parked task did not stop")),
            }
        }
        (conns, problems)
    }
}
