//! A real S3-compatible server for the cloud tests and benchmark: `s3s-fs` (installed by
//! `scripts/test.sh`), started on a free localhost port over a temporary folder with fixed
//! credentials, and killed when dropped; and a TCP proxy in front of it that can cut
//! connections off after a number of bytes, or call a hook once that many have passed.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The access key the server is started with.
pub const ACCESS_KEY: &str = "savegame-test";
/// The secret key the server is started with.
pub const SECRET_KEY: &str = "savegame-test-secret";
/// The bucket every server has.
pub const BUCKET: &str = "saves";
/// The s3s-fs version scripts/test.sh installs.
pub const S3S_FS_VERSION: &str = "0.14.1";

/// An `s3s-fs` process serving one bucket from a folder of its own.
#[derive(Debug)]
pub struct Server {
    child: Child,
    port: u16,
    root: PathBuf,
    _dir: Option<tempfile_dir::Dir>,
}

/// A temporary folder removed on drop (std only: the testkit has no tempfile).
mod tempfile_dir {
    use std::path::PathBuf;

    #[derive(Debug)]
    pub struct Dir(pub PathBuf);

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Where the `s3s-fs` binary is: `$S3S_FS`, else on the `PATH`, else in `~/.cargo/bin`.
fn binary() -> PathBuf {
    if let Some(path) = std::env::var_os("S3S_FS") {
        return PathBuf::from(path);
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("s3s-fs"))
            .find(|p| p.is_file())
    });
    let cargo_bin = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo/bin/s3s-fs"));
    on_path
        .or(cargo_bin.filter(|p| p.is_file()))
        .unwrap_or_else(|| {
            panic!(
                "the cloud tests need a real S3-compatible server, and s3s-fs is not installed: \
                 run `cargo install s3s-fs@{S3S_FS_VERSION} --features binary --locked` \
                 (scripts/test.sh does it), or point $S3S_FS at the binary"
            )
        })
}

/// A port nobody listens on now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("no free localhost port")
}

impl Server {
    /// Starts a server over a new temporary folder.
    pub fn start() -> Server {
        let dir = std::env::temp_dir().join(format!(
            "savegame-s3-{}-{}",
            std::process::id(),
            free_port()
        ));
        std::fs::create_dir_all(dir.join(BUCKET)).expect("cannot create the server's folder");
        let mut server = Server::start_at(&dir);
        server._dir = Some(tempfile_dir::Dir(dir));
        server
    }

    /// Starts a server over `root` (which keeps its objects: a restart after a kill).
    pub fn start_at(root: &Path) -> Server {
        let bin = binary();
        for _ in 0..5 {
            let port = free_port();
            let child = Command::new(&bin)
                .args(["--host", "127.0.0.1", "--port", &port.to_string()])
                .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
                .arg(root)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
            let mut server = Server {
                child,
                port,
                root: root.to_owned(),
                _dir: None,
            };
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return server;
                }
                if let Ok(Some(_)) = server.child.try_wait() {
                    break; // lost the port to someone else: try another
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            server.kill();
        }
        panic!("s3s-fs did not start listening");
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its address, for an S3 client's endpoint.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The folder it serves (the bucket is a folder inside it).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Kills the process (SIGKILL) and waits for it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A TCP proxy on localhost in front of a server: it forwards every connection, counts the
/// bytes clients send, and can cut connections off or run a hook once enough have passed.
pub struct Proxy {
    port: u16,
    state: Arc<ProxyState>,
}

type Hook = Box<dyn FnOnce() + Send>;

struct ProxyState {
    target: AtomicU16,
    /// Cut a connection once it has carried this many bytes from the client (0: never).
    cut_after: AtomicU64,
    /// Bytes sent by clients through the proxy, all connections together.
    sent: AtomicU64,
    /// Run the hook once `sent` passes this (0: never).
    hook_after: AtomicU64,
    hook: Mutex<Option<Hook>>,
    /// Run before the next PUT request is forwarded.
    before_put: Mutex<Option<Hook>>,
    stop: AtomicBool,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy").field("port", &self.port).finish()
    }
}

impl Proxy {
    /// A proxy forwarding to `target_port` on localhost.
    pub fn start(target_port: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("cannot bind the proxy");
        let port = listener.local_addr().expect("proxy address").port();
        let state = Arc::new(ProxyState {
            target: AtomicU16::new(target_port),
            cut_after: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            hook_after: AtomicU64::new(0),
            hook: Mutex::new(None),
            before_put: Mutex::new(None),
            stop: AtomicBool::new(false),
        });
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if shared.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                let shared = Arc::clone(&shared);
                std::thread::spawn(move || forward(client, &shared));
            }
        });
        Proxy { port, state }
    }

    /// Its address, for an S3 client's endpoint.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Forwards new connections to another port (a restarted server).
    pub fn retarget(&self, port: u16) {
        self.state.target.store(port, Ordering::SeqCst);
    }

    /// Cuts every connection off once it has carried `bytes` from the client; 0 stops cutting.
    pub fn cut_after(&self, bytes: u64) {
        self.state.cut_after.store(bytes, Ordering::SeqCst);
    }

    /// Runs `hook` once clients have sent `bytes` more through the proxy, from now.
    pub fn on_bytes(&self, bytes: u64, hook: impl FnOnce() + Send + 'static) {
        *self.state.hook.lock().unwrap() = Some(Box::new(hook));
        let now = self.state.sent.load(Ordering::SeqCst);
        self.state
            .hook_after
            .store(now + bytes.max(1), Ordering::SeqCst);
    }
}

impl Proxy {
    /// Runs `hook` once, before the next PUT request is forwarded to the server (HTTP/1.1
    /// sends one request at a time, so a request starts a read of its own): the place to make
    /// another device write first, for a race that always goes the same way.
    pub fn before_put(&self, hook: impl FnOnce() + Send + 'static) {
        *self.state.before_put.lock().unwrap() = Some(Box::new(hook));
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn forward(client: TcpStream, state: &Arc<ProxyState>) {
    let Ok(server) = TcpStream::connect(("127.0.0.1", state.target.load(Ordering::SeqCst))) else {
        return;
    };
    let (Ok(mut client_r), Ok(mut server_w)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    let (mut server_r, mut client_w) = (server, client);
    let back = std::thread::spawn(move || {
        let _ = std::io::copy(&mut server_r, &mut client_w);
        let _ = client_w.shutdown(Shutdown::Both);
    });
    let mut buf = [0u8; 16 * 1024];
    let mut carried = 0u64;
    loop {
        let n = match client_r.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if buf[..n].starts_with(b"PUT ") {
            let hook = state.before_put.lock().unwrap().take();
            if let Some(hook) = hook {
                hook();
            }
        }
        let cut = state.cut_after.load(Ordering::SeqCst);
        if cut > 0 && carried + n as u64 > cut {
            // Send what fits under the limit, then drop the connection both ways.
            let fits = (cut - carried) as usize;
            let _ = server_w.write_all(&buf[..fits]);
            break;
        }
        if server_w.write_all(&buf[..n]).is_err() {
            break;
        }
        carried += n as u64;
        let total = state.sent.fetch_add(n as u64, Ordering::SeqCst) + n as u64;
        let at = state.hook_after.load(Ordering::SeqCst);
        if at > 0 && total >= at {
            state.hook_after.store(0, Ordering::SeqCst);
            if let Some(hook) = state.hook.lock().unwrap().take() {
                hook();
            }
        }
    }
    let _ = server_w.shutdown(Shutdown::Both);
    let _ = client_r.shutdown(Shutdown::Both);
    let _ = back.join();
}

/// `len` bytes that do not compress (xorshift from `seed`): saves whose size is what it says.
pub fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
