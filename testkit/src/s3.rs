//! A real S3-compatible server for the cloud tests and benchmark.
//!
//! - [`Server`]: a bucket of its own on moto's S3 server (`moto[server]`, installed by
//!   `scripts/test.sh` at [`MOTO_VERSION`]). moto keeps conditional writes atomic under
//!   concurrency (two `If-Match` PUTs naming one ETag: exactly one wins) and answers
//!   `If-Match` on a missing key with 404, as AWS does. One moto process serves every test of
//!   a test binary, each test in a bucket of its own; it listens on a port the OS chose, and
//!   exits when the process that started it does (it watches its standard input), so a killed
//!   test run leaves no server behind.
//!
//! The proxy in front of it, which injects faults, is [`proxy`](crate::proxy).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The access key clients use (moto accepts any).
pub const ACCESS_KEY: &str = "savegame-test";
/// The secret key clients use (moto accepts any).
pub const SECRET_KEY: &str = "savegame-test-secret";
/// The moto version `scripts/test.sh` installs.
pub const MOTO_VERSION: &str = "5.2.5";

/// Starts moto's S3 server on a port the OS picks, prints the port, and exits when its
/// standard input closes (the test process that started it is gone).
const MOTO_MAIN: &str = r#"
import logging, os, sys, threading
logging.getLogger("werkzeug").setLevel(logging.ERROR)
from werkzeug.serving import make_server
from moto.server import DomainDispatcherApplication, create_backend_app
server = make_server("127.0.0.1", 0, DomainDispatcherApplication(create_backend_app), threaded=True)
os.environ["MOTO_PORT"] = str(server.server_port)
def watch():
    sys.stdin.buffer.read()
    os._exit(0)
threading.Thread(target=watch, daemon=True).start()
print(server.server_port, flush=True)
server.serve_forever()
"#;

/// The moto process of this test binary.
struct Moto {
    port: u16,
    _child: Child,
    _stdin: ChildStdin,
}

static MOTO: OnceLock<Moto> = OnceLock::new();
static BUCKETS: AtomicU64 = AtomicU64::new(0);

impl Moto {
    fn start() -> Moto {
        // Its errors go to a file (a pipe nobody reads could fill and stop the server).
        let log = std::env::temp_dir().join(format!("savegame-moto-{}.log", std::process::id()));
        let stderr = std::fs::File::create(&log).expect("cannot create moto's log");
        let mut child = Command::new("python3")
            .args(["-c", MOTO_MAIN])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run python3 for moto's S3 server: {e}"));
        let stdin = child.stdin.take().expect("moto's stdin");
        let mut stdout = BufReader::new(child.stdout.take().expect("moto's stdout"));
        let mut line = String::new();
        let _ = stdout.read_line(&mut line);
        let Ok(port) = line.trim().parse::<u16>().inspect(|_| {
            let _ = std::fs::remove_file(&log);
        }) else {
            let _ = child.wait();
            let err = std::fs::read_to_string(&log).unwrap_or_default();
            panic!(
                "moto's S3 server did not start ({err}): the cloud tests need it, run \
                 `pip install 'moto[server]=={MOTO_VERSION}'` (scripts/test.sh does it)"
            );
        };
        Moto {
            port,
            _child: child,
            _stdin: stdin,
        }
    }
}

/// A bucket of its own on this test binary's moto server.
#[derive(Debug, Clone)]
pub struct Server {
    port: u16,
    bucket: String,
}

impl Server {
    /// A new, empty bucket (the server starts with the first one).
    pub fn start() -> Server {
        let port = MOTO.get_or_init(Moto::start).port;
        let bucket = format!(
            "saves-{}-{}",
            std::process::id(),
            BUCKETS.fetch_add(1, Ordering::SeqCst)
        );
        // CreateBucket: moto takes it unsigned.
        let answer = http_once(
            port,
            &format!(
                "PUT /{bucket} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            ),
        );
        assert!(
            answer.starts_with("HTTP/1.1 200"),
            "moto did not create the bucket: {answer}"
        );
        Server { port, bucket }
    }

    /// The bucket's server at `port` (a child process reaching its parent's server).
    pub fn at(port: u16, bucket: &str) -> Server {
        Server {
            port,
            bucket: bucket.to_owned(),
        }
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its address, for an S3 client's endpoint.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The bucket.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }
}

/// Sends one raw request and returns the whole answer as text.
fn http_once(port: u16, request: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("cannot reach moto");
    stream
        .write_all(request.as_bytes())
        .expect("cannot send to moto");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
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
