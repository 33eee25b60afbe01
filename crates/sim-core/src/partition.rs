//! The network between the cluster's clients and its API server, and its
//! partitions.
//!
//! Clients (kubectl, `infera`, `sim attach`) reach the API server through a
//! front door: a TCP forwarder on the address the kubeconfig names. The
//! simulated world inside the cluster (kubelet, operator) talks to the API
//! server directly, so a partition cuts infera off while the cluster goes
//! on, as a real one does. Two faults, each for a duration:
//!
//! * **cut**: every open connection is reset and new ones are refused
//!   (the listener is closed);
//! * **blackhole**: connections stay open and new ones are accepted, but
//!   nothing is forwarded either way until it ends; then everything held
//!   is delivered.

use std::net::SocketAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::watch;

/// The kind of a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PartitionKind {
    Cut,
    Blackhole,
}

/// The network's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Net {
    Open,
    Cut,
    Blackhole,
}

impl From<PartitionKind> for Net {
    fn from(k: PartitionKind) -> Net {
        match k {
            PartitionKind::Cut => Net::Cut,
            PartitionKind::Blackhole => Net::Blackhole,
        }
    }
}

/// A TCP forwarder from a public address to the API server.
#[derive(Debug, Clone)]
pub struct FrontDoor {
    addr: SocketAddr,
    state: watch::Sender<Net>,
}

fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

impl FrontDoor {
    /// Listen on 127.0.0.1:`port` (0: a free port) and forward to `backend`.
    pub fn start(port: u16, backend: SocketAddr) -> std::io::Result<FrontDoor> {
        let listener = bind(SocketAddr::from(([127, 0, 0, 1], port)))?;
        let addr = listener.local_addr()?;
        let (state, _) = watch::channel(Net::Open);
        let door = FrontDoor { addr, state };
        tokio::spawn(accept_loop(
            Some(listener),
            addr,
            backend,
            door.state.subscribe(),
        ));
        Ok(door)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Partition the network for `duration` (returns at once; a partition
    /// already under way is replaced).
    pub fn partition(&self, kind: PartitionKind, duration: Duration) {
        let _ = self.state.send(kind.into());
        let state = self.state.clone();
        let net: Net = kind.into();
        tokio::spawn(async move {
            tokio::time::sleep(duration).await;
            state.send_if_modified(|s| {
                let ours = *s == net;
                if ours {
                    *s = Net::Open;
                }
                ours
            });
        });
    }

    /// Whether a partition is under way.
    pub fn partitioned(&self) -> bool {
        *self.state.borrow() != Net::Open
    }
}

async fn accept_loop(
    mut listener: Option<TcpListener>,
    addr: SocketAddr,
    backend: SocketAddr,
    mut state: watch::Receiver<Net>,
) {
    loop {
        let net = *state.borrow_and_update();
        match (net, listener.is_some()) {
            // A cut closes the listener: new connections are refused.
            (Net::Cut, true) => listener = None,
            (Net::Open | Net::Blackhole, false) => listener = rebind(addr).await,
            _ => {}
        }
        let accepted = match listener.as_ref() {
            Some(l) => tokio::select! {
                a = l.accept() => Some(a),
                changed = state.changed() => { if changed.is_err() { return; } None }
            },
            None => {
                if state.changed().await.is_err() {
                    return;
                }
                None
            }
        };
        if let Some(Ok((client, _))) = accepted {
            tokio::spawn(forward(client, backend, state.clone()));
        }
    }
}

async fn rebind(addr: SocketAddr) -> Option<TcpListener> {
    for _ in 0..50 {
        if let Ok(l) = bind(addr) {
            return Some(l);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    eprintln!("infera sim: cannot listen on {addr} again after a cut");
    None
}

/// One client connection: forwarded both ways until either side closes or
/// a cut resets it.
async fn forward(client: TcpStream, backend: SocketAddr, state: watch::Receiver<Net>) {
    let _ = client.set_nodelay(true);
    let Ok(server) = TcpStream::connect(backend).await else {
        return;
    };
    let _ = server.set_nodelay(true);
    // On a cut, the client sees a reset, not a clean close. (Deprecated
    // because a non-zero linger blocks the dropping thread; zero never does.)
    #[allow(deprecated)]
    let _ = client.set_linger(Some(Duration::ZERO));
    let (cr, cw) = client.into_split();
    let (sr, sw) = server.into_split();
    tokio::select! {
        _ = pump(cr, sw, state.clone()) => {}
        _ = pump(sr, cw, state.clone()) => {}
        _ = cut(state) => {}
    }
}

async fn cut(mut state: watch::Receiver<Net>) {
    while *state.borrow_and_update() != Net::Cut {
        if state.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Copy `from` to `to`, holding every chunk while the network is
/// blackholed.
async fn pump(
    mut from: impl AsyncReadExt + Unpin,
    mut to: impl AsyncWriteExt + Unpin,
    mut state: watch::Receiver<Net>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        loop {
            let net = *state.borrow_and_update();
            match net {
                Net::Open => break,
                Net::Cut => return,
                Net::Blackhole => {
                    if state.changed().await.is_err() {
                        return;
                    }
                }
            }
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

/// A partition the scenario (or `sim serve --cut/--blackhole`) schedules:
/// `at` after the start (wall clock), for `for`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduledPartition {
    pub kind: PartitionKind,
    #[serde(with = "duration_text")]
    pub at: Duration,
    #[serde(rename = "for", with = "duration_text")]
    pub lasting: Duration,
}

impl ScheduledPartition {
    /// `AT:FOR` as the flags write it (`30s:55s`).
    pub fn parse(kind: PartitionKind, text: &str) -> Result<ScheduledPartition, String> {
        let (at, lasting) = text
            .split_once(':')
            .ok_or_else(|| format!("`{text}`: expected AT:FOR, e.g. 30s:55s"))?;
        let d = |s: &str| {
            infera_model::duration::parse_duration(s).map_err(|e| format!("`{text}`: {e}"))
        };
        Ok(ScheduledPartition {
            kind,
            at: d(at)?,
            lasting: d(lasting)?,
        })
    }
}

mod duration_text {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{}s", d.as_secs_f64()))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Seconds(f64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Seconds(s) if s.is_finite() && s >= 0.0 => Ok(Duration::from_secs_f64(s)),
            Raw::Seconds(s) => Err(serde::de::Error::custom(format!("`{s}` is not a duration"))),
            Raw::Text(t) => {
                infera_model::duration::parse_duration(&t).map_err(serde::de::Error::custom)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_cut_refuses_and_a_blackhole_holds_then_delivers() {
        let backend = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let backend_addr = backend.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = backend.accept().await {
                tokio::spawn(async move {
                    let mut b = [0u8; 64];
                    while let Ok(n) = s.read(&mut b).await {
                        if n == 0 || s.write_all(&b[..n]).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        let door = FrontDoor::start(0, backend_addr).unwrap();
        let mut c = TcpStream::connect(door.addr()).await.unwrap();
        c.write_all(b"ping").await.unwrap();
        let mut b = [0u8; 4];
        c.read_exact(&mut b).await.unwrap();
        assert_eq!(&b, b"ping");
        door.partition(PartitionKind::Blackhole, Duration::from_millis(300));
        c.write_all(b"held").await.unwrap();
        let quick = tokio::time::timeout(Duration::from_millis(150), c.read_exact(&mut b)).await;
        assert!(quick.is_err(), "nothing passes a blackhole");
        c.read_exact(&mut b).await.unwrap();
        assert_eq!(&b, b"held");
        door.partition(PartitionKind::Cut, Duration::from_millis(300));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            TcpStream::connect(door.addr()).await.is_err(),
            "a cut refuses"
        );
        let mut rest = Vec::new();
        assert!(matches!(c.read_to_end(&mut rest).await, Err(_) | Ok(0)));
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert!(TcpStream::connect(door.addr()).await.is_ok(), "open again");
    }

    #[test]
    fn flags_parse_at_and_for() {
        let p = ScheduledPartition::parse(PartitionKind::Cut, "30s:55s").unwrap();
        assert_eq!(
            (p.at, p.lasting),
            (Duration::from_secs(30), Duration::from_secs(55))
        );
        assert!(ScheduledPartition::parse(PartitionKind::Cut, "30s").is_err());
    }
}
