//! A TCP proxy for fault tests: it forwards to a real service (MariaDB, Redis) until it is cut, when it drops
//! every open connection and refuses new ones, and forwards again once restored. Cutting the proxy is how a test
//! makes a dependency "go down" mid-test without touching the shared server.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

pub struct Proxy {
    pub addr: SocketAddr,
    up: Arc<AtomicBool>,
    generation: Arc<AtomicU64>,
    cut_tx: watch::Sender<u64>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Starts forwarding 127.0.0.1:<random> to `target`.
    pub async fn start(target: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let up = Arc::new(AtomicBool::new(true));
        let generation = Arc::new(AtomicU64::new(0));
        let (cut_tx, cut_rx) = watch::channel(0u64);
        let task = tokio::spawn({
            let up = up.clone();
            async move {
                loop {
                    let Ok((client, _)) = listener.accept().await else { return };
                    if !up.load(Ordering::SeqCst) {
                        drop(client);
                        continue;
                    }
                    let mut cut = cut_rx.clone();
                    // Only cuts after this connection was accepted may end it.
                    cut.mark_unchanged();
                    tokio::spawn(async move {
                        let Ok(server) = TcpStream::connect(target).await else { return };
                        let (mut cr, mut cw) = client.into_split();
                        let (mut sr, mut sw) = server.into_split();
                        tokio::select! {
                            _ = tokio::io::copy(&mut cr, &mut sw) => {}
                            _ = tokio::io::copy(&mut sr, &mut cw) => {}
                            _ = cut.changed() => {}
                        }
                    });
                }
            }
        });
        Proxy { addr, up, generation, cut_tx, task }
    }

    /// Drops every forwarded connection and refuses new ones.
    pub fn cut(&self) {
        self.up.store(false, Ordering::SeqCst);
        let g = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        let _ = self.cut_tx.send(g);
    }

    /// Forwards again.
    pub fn restore(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}
