//! Real sockets for simulated workers: pod IPs from a CIDR, and the
//! `/ready` listener a registered worker opens on `podIP:readinessPort`
//! (the engine's OpenAI server on `podIP:enginePort` is `engine.rs`'s).
//! The prober reaches them with [`infera_sim_core::net::http_get`].

use std::collections::{BTreeSet, HashMap};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::task::JoinHandle;

/// An IPv4 range such as `10.244.0.0/16`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cidr {
    base: u32,
    bits: u8,
}

impl Cidr {
    /// Parse `A.B.C.D/N` (N from 8 to 30).
    pub fn parse(s: &str) -> Result<Cidr, String> {
        let (addr, bits) = s
            .split_once('/')
            .ok_or_else(|| format!("pod CIDR `{s}` is not of the form A.B.C.D/N"))?;
        let addr: Ipv4Addr = addr
            .parse()
            .map_err(|_| format!("pod CIDR `{s}`: `{addr}` is not an IPv4 address"))?;
        let bits: u8 = bits
            .parse()
            .ok()
            .filter(|b| (8..=30).contains(b))
            .ok_or_else(|| format!("pod CIDR `{s}`: the prefix length must be 8..30"))?;
        let mask = u32::MAX << (32 - u32::from(bits));
        Ok(Cidr {
            base: u32::from(addr) & mask,
            bits,
        })
    }

    fn size(&self) -> u32 {
        1u32 << (32 - u32::from(self.bits))
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", Ipv4Addr::from(self.base), self.bits)
    }
}

/// The loopback range the embedded simulator gives pods (Linux routes all of
/// 127.0.0.0/8 to `lo` without configuration).
pub const LOOPBACK_POD_CIDR: &str = "127.77.0.0/16";

/// Addresses are leased to a process a block at a time, so that
/// simulations in different processes on one machine (parallel test
/// binaries, `infera sim serve` next to a test) never hand out the same
/// pod IP: two listeners on one `podIP:port` would fail with "Address
/// already in use".
const BLOCK: u32 = 256;

/// The addresses of one CIDR this process may hand out: the blocks it
/// leased, each held by an advisory lock on a file of its own
/// ([`lease_block`]), released when the process exits.
#[derive(Default)]
struct Pool {
    /// Leased blocks, in the order they were leased, with the lock file
    /// that holds each (`None`: every block was leased elsewhere; taken
    /// unlocked as the last resort).
    leases: Vec<(u32, Option<std::fs::File>)>,
    /// Where the next search starts, in the leased addresses: issued
    /// addresses rotate, so one just released is not reused at once.
    cursor: usize,
    used: BTreeSet<u32>,
}

/// Pools are per process, so several simulations in one process (tests)
/// never hand out the same address; across processes, the block leases
/// keep them apart.
fn pools() -> &'static Mutex<HashMap<Cidr, Pool>> {
    static POOLS: OnceLock<Mutex<HashMap<Cidr, Pool>>> = OnceLock::new();
    POOLS.get_or_init(Mutex::default)
}

/// A pod IP, returned to its pool when dropped.
#[derive(Debug)]
pub struct PodIp {
    cidr: Cidr,
    offset: u32,
}

impl PodIp {
    pub fn addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.cidr.base + self.offset)
    }
}

impl Drop for PodIp {
    fn drop(&mut self) {
        let mut pools = pools()
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(pool) = pools.get_mut(&self.cidr) {
            pool.used.remove(&self.offset);
        }
    }
}

/// The usable offsets of block `block` of `cidr` (never the network or
/// broadcast address).
fn block_offsets(cidr: Cidr, block: u32) -> impl Iterator<Item = u32> {
    let size = cidr.size();
    let start = block * BLOCK;
    (start..(start + BLOCK).min(size)).filter(move |&o| o >= 1 && o < size - 1)
}

/// The lock file of one block: in the temporary directory, named after the
/// CIDR and the block.
fn lock_path(cidr: Cidr, block: u32) -> std::path::PathBuf {
    let base = Ipv4Addr::from(cidr.base);
    std::env::temp_dir()
        .join("infera-sim-pod-ips")
        .join(format!("{base}-{}-{block}.lock", cidr.bits))
}

/// Lease a block of `cidr` that no other process holds: the first, from a
/// random start, whose lock file this process can lock. `held` are the
/// blocks this process leased already. A block leased elsewhere is taken
/// unlocked only when every block is (or no lock file can be written),
/// which is how addresses were shared before leases.
fn lease_block(cidr: Cidr, held: &[u32]) -> Option<(u32, Option<std::fs::File>)> {
    use rand::Rng;
    let blocks = cidr.size().div_ceil(BLOCK);
    let first = rand::rng().random_range(0..blocks);
    let free: Vec<u32> = (0..blocks)
        .map(|i| (first + i) % blocks)
        .filter(|b| !held.contains(b))
        .collect();
    let lock = |block: u32| {
        let path = lock_path(cidr, block);
        std::fs::create_dir_all(path.parent()?).ok()?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .ok()?;
        file.try_lock().ok().map(|()| file)
    };
    free.iter()
        .find_map(|&b| lock(b).map(|f| (b, Some(f))))
        .or_else(|| free.first().map(|&b| (b, None)))
}

/// The next free address of `pool`'s leased blocks, after its cursor.
fn take(cidr: Cidr, pool: &mut Pool) -> Option<u32> {
    let leased: Vec<u32> = pool
        .leases
        .iter()
        .flat_map(|&(b, _)| block_offsets(cidr, b))
        .collect();
    for i in 0..leased.len() {
        let at = (pool.cursor + i) % leased.len();
        if pool.used.insert(leased[at]) {
            pool.cursor = at + 1;
            return Some(leased[at]);
        }
    }
    None
}

/// The next free address of `cidr` (never the network or broadcast
/// address), or `None` when every one is taken.
pub fn allocate(cidr: Cidr) -> Option<PodIp> {
    let mut pools = pools()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let pool = pools.entry(cidr).or_default();
    loop {
        if let Some(offset) = take(cidr, pool) {
            return Some(PodIp { cidr, offset });
        }
        let held: Vec<u32> = pool.leases.iter().map(|&(b, _)| b).collect();
        pool.leases.push(lease_block(cidr, &held)?);
    }
}

/// The paths the worker's readiness port answers 200 on.
pub const READY_PATHS: &[&str] = &[infera_model::worker::READY_PATH];

/// An open port of a worker: `GET` on one of its paths answers 200 (any
/// other path 404) until dropped, after which connections are refused.
pub struct Listener {
    task: JoinHandle<()>,
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Listener {
    /// Listen on `addr` (address reuse on, so a port closed a moment ago
    /// with connections in TIME_WAIT opens again), answering 200 on `paths`.
    pub fn open(addr: SocketAddr, paths: &'static [&'static str]) -> std::io::Result<Listener> {
        let socket = TcpSocket::new_v4()?;
        socket.set_reuseaddr(true)?;
        socket.bind(addr)?;
        let listener = socket.listen(128)?;
        Ok(Listener {
            task: tokio::spawn(serve(listener, paths)),
        })
    }
}

async fn serve(listener: TcpListener, paths: &'static [&'static str]) {
    // Connections live in this set: aborting the task closes them too.
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => { connections.spawn(answer(stream, paths)); }
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// One request per connection (`Connection: close`), as probes send.
async fn answer(mut stream: TcpStream, paths: &[&str]) {
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 512];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let line = String::from_utf8_lossy(&buf);
    let path = line.split_whitespace().nth(1).unwrap_or("/");
    let path = path.split('?').next().unwrap_or(path);
    let (status, body) = if paths.contains(&path) {
        ("200 OK", "ok")
    } else {
        ("404 Not Found", "not found")
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use infera_sim_core::net::http_get;

    #[test]
    fn cidr_parses_and_rejects() {
        let c = Cidr::parse("10.244.3.7/16").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.to_string(), "10.244.0.0/16");
        assert!(Cidr::parse("10.244.0.0").is_err());
        assert!(Cidr::parse("10.244.0.0/31").is_err());
        assert!(Cidr::parse("nope/16").is_err());
    }

    #[test]
    fn allocation_never_repeats_a_live_address() {
        let cidr = Cidr::parse("127.78.0.0/29").unwrap_or_else(|e| panic!("{e}"));
        let ips: Vec<PodIp> = (0..6).filter_map(|_| allocate(cidr)).collect();
        assert_eq!(ips.len(), 6, "a /29 has 6 usable addresses");
        assert!(allocate(cidr).is_none());
        let set: BTreeSet<Ipv4Addr> = ips.iter().map(PodIp::addr).collect();
        assert_eq!(set.len(), 6);
        drop(ips);
        assert!(allocate(cidr).is_some());
    }

    /// A block another process holds (its lock file locked through another
    /// open file: flock locks belong to the open file, so this stands in
    /// for a second process) is not leased while a free one is left.
    #[test]
    fn blocks_leased_elsewhere_are_skipped() {
        let cidr = Cidr::parse("127.79.0.0/23").unwrap_or_else(|e| panic!("{e}"));
        let path = lock_path(cidr, 0);
        std::fs::create_dir_all(path.parent().unwrap_or_else(|| panic!("no parent")))
            .unwrap_or_else(|e| panic!("{e}"));
        let other = std::fs::File::create(&path).unwrap_or_else(|e| panic!("{e}"));
        other.try_lock().unwrap_or_else(|e| panic!("{e}"));
        for _ in 0..8 {
            let lease = lease_block(cidr, &[]).unwrap_or_else(|| panic!("no block"));
            assert_eq!(lease.0, 1, "block 0 is held by another open file");
            assert!(lease.1.is_some(), "block 1 is leased under its lock");
        }
        // With every block held, one is still handed out, unlocked.
        let held = lease_block(cidr, &[]).unwrap_or_else(|| panic!("no block"));
        let last = lease_block(cidr, &[held.0]).unwrap_or_else(|| panic!("no block"));
        assert_eq!((last.0, last.1.is_none()), (0, true));
    }

    #[test]
    fn a_pool_leases_another_block_when_its_own_is_full() {
        let cidr = Cidr::parse("127.80.0.0/23").unwrap_or_else(|e| panic!("{e}"));
        let ips: Vec<PodIp> = (0..300).filter_map(|_| allocate(cidr)).collect();
        let set: BTreeSet<Ipv4Addr> = ips.iter().map(PodIp::addr).collect();
        assert_eq!((ips.len(), set.len()), (300, 300));
    }

    /// The readiness port answers `/ready` and 404 on anything else, then
    /// refuses once closed.
    #[tokio::test]
    async fn listeners_answer_their_paths_then_refuse() {
        let cases: [(u16, &[&str], &str, &str); 1] = [(30090, READY_PATHS, "/ready", "/health")];
        let cidr = Cidr::parse(LOOPBACK_POD_CIDR).unwrap_or_else(|e| panic!("{e}"));
        let t = Duration::from_secs(2);
        for (port, paths, ok_path, other_path) in cases {
            let ip = allocate(cidr).unwrap_or_else(|| panic!("no address"));
            let addr = SocketAddr::from((ip.addr(), port));
            let listener = Listener::open(addr, paths).unwrap_or_else(|e| panic!("{e}"));
            let ok = http_get(addr, &format!("{ok_path}?x=1"), t)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(
                (ok.status, ok.body.as_slice()),
                (200, b"ok".as_slice()),
                "{ok_path}"
            );
            let other = http_get(addr, other_path, t)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(other.status, 404, "{other_path} on {port}");
            drop(listener);
            tokio::task::yield_now().await;
            let refused = http_get(addr, ok_path, t).await;
            assert!(refused.is_err(), "{refused:?}");
        }
    }
}
