//! An HTTP proxy on localhost in front of the S3 server of [`s3`](crate::s3), which injects
//! the faults a network and a store can have: it reads the HTTP/1.1 requests and answers
//! passing through (the S3 client speaks plain HTTP to a local endpoint), counts requests by
//! kind, and can strip request headers, refuse requests, lose an answer after the server acted
//! on the request, hold requests back until several are waiting, cut a connection after a
//! number of bytes, or go down altogether.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// What an S3 request does, from its method and target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A listing (`GET /bucket?list-type=2...`).
    List,
    /// A download of an object, whole or ranged.
    Get,
    /// An object's metadata.
    Head,
    /// An upload.
    Put,
    /// A deletion.
    Delete,
    /// Anything else.
    Other,
}

impl Kind {
    fn of(method: &str, target: &str) -> Kind {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let object = path.trim_start_matches('/').contains('/');
        match method {
            "GET" if !object && query.contains("list-type") => Kind::List,
            "GET" if !object && query.contains("prefix") => Kind::List,
            "GET" => Kind::Get,
            "HEAD" => Kind::Head,
            "PUT" => Kind::Put,
            "DELETE" => Kind::Delete,
            // A bulk delete (DeleteObjects), as object_store sends one.
            "POST"
                if query
                    .split('&')
                    .any(|q| q == "delete" || q.starts_with("delete=")) =>
            {
                Kind::Delete
            }
            _ => Kind::Other,
        }
    }
}

/// Requests that passed the proxy, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Listings.
    pub list: u64,
    /// Downloads (whole or ranged).
    pub get: u64,
    /// HEADs.
    pub head: u64,
    /// Uploads.
    pub put: u64,
    /// Deletions (one object, or a bulk DeleteObjects).
    pub delete: u64,
    /// Anything else.
    pub other: u64,
}

impl Counts {
    /// Every request.
    pub fn total(&self) -> u64 {
        self.list + self.get + self.head + self.put + self.delete + self.other
    }

    fn add(&mut self, kind: Kind) {
        *match kind {
            Kind::List => &mut self.list,
            Kind::Get => &mut self.get,
            Kind::Head => &mut self.head,
            Kind::Put => &mut self.put,
            Kind::Delete => &mut self.delete,
            Kind::Other => &mut self.other,
        } += 1;
    }
}

type Hook = Box<dyn FnOnce() + Send>;

/// An answer to lose: after `skip` more requests of `kind` (any kind for `None`), the server's
/// answer to the next one is dropped, once `hook` has run.
struct LostAnswer {
    kind: Option<Kind>,
    skip: u64,
    hook: Option<Hook>,
}

/// Requests of `kind` held back until `need` of them wait, then let go together.
struct Gate {
    kind: Kind,
    need: usize,
    waiting: usize,
    open: bool,
}

#[derive(Default)]
struct ProxyState {
    target: AtomicU16,
    /// Cut a connection once it has carried this many bytes from the client (0: never).
    cut_after: AtomicU64,
    /// Bytes sent by clients through the proxy, all connections together.
    sent: AtomicU64,
    /// Run `hook` once `sent` passes this (0: never).
    hook_after: AtomicU64,
    hook: Mutex<Option<Hook>>,
    /// Run before the next PUT request is forwarded.
    before_put: Mutex<Option<Hook>>,
    /// Every connection is dropped, and no request forwarded.
    down: AtomicBool,
    /// Go down once `sent` passes this (0: never).
    down_after: AtomicU64,
    /// Request headers removed before forwarding (lower case).
    strip: Mutex<Vec<String>>,
    /// Kinds of request refused: the connection is dropped before the server sees them.
    refuse: Mutex<Vec<Kind>>,
    lost: Mutex<VecDeque<LostAnswer>>,
    gate: Mutex<Option<Gate>>,
    gate_moved: Condvar,
    counts: Mutex<Counts>,
    stop: AtomicBool,
}

/// An HTTP/1.1 proxy on localhost in front of a server; see the [module docs](self). Clones
/// share one proxy; it stops when the last is dropped.
#[derive(Clone)]
pub struct Proxy {
    port: u16,
    state: Arc<ProxyState>,
    _listener: Arc<Listening>,
}

/// Stops the proxy's listener when dropped.
struct Listening {
    port: u16,
    state: Arc<ProxyState>,
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
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
        let state = Arc::new(ProxyState::default());
        state.target.store(target_port, Ordering::SeqCst);
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if shared.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                let shared = Arc::clone(&shared);
                std::thread::spawn(move || serve(client, &shared));
            }
        });
        Proxy {
            port,
            state: Arc::clone(&state),
            _listener: Arc::new(Listening { port, state }),
        }
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its address, for an S3 client's endpoint.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
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

    /// Runs `hook` once, before the next PUT request is forwarded to the server (HTTP/1.1
    /// sends one request at a time on a connection): the place to make another device write
    /// first, for a race that always goes the same way.
    pub fn before_put(&self, hook: impl FnOnce() + Send + 'static) {
        *self.state.before_put.lock().unwrap() = Some(Box::new(hook));
    }

    /// Goes down (`true`): every connection is dropped at its next request or answer, new ones
    /// at once, as when a server is gone. `false` brings it back.
    pub fn set_down(&self, down: bool) {
        self.state.down_after.store(0, Ordering::SeqCst);
        self.state.down.store(down, Ordering::SeqCst);
    }

    /// Goes down once clients have sent `bytes` more through the proxy, from now.
    pub fn down_after(&self, bytes: u64) {
        let now = self.state.sent.load(Ordering::SeqCst);
        self.state
            .down_after
            .store(now + bytes.max(1), Ordering::SeqCst);
    }

    /// Removes the request header `name` (any case) from every request from now on: a store
    /// that ignores it, as far as the client can tell.
    pub fn strip_header(&self, name: &str) {
        self.state
            .strip
            .lock()
            .unwrap()
            .push(name.to_ascii_lowercase());
    }

    /// Refuses every request of `kind` from now on: the connection is dropped before the
    /// server sees it. `None` lets them all through again.
    pub fn refuse(&self, kind: Option<Kind>) {
        let mut refuse = self.state.refuse.lock().unwrap();
        refuse.clear();
        refuse.extend(kind);
    }

    /// Once the server has answered the request of `kind` (any kind for `None`) after `skip`
    /// more of them, runs `hook` and drops the connection without passing the answer on: the
    /// server acted on the request and the client never hears of it. Several losses queue up.
    pub fn lose_answer(&self, kind: Option<Kind>, skip: u64, hook: impl FnOnce() + Send + 'static) {
        self.state.lost.lock().unwrap().push_back(LostAnswer {
            kind,
            skip,
            hook: Some(Box::new(hook)),
        });
    }

    /// Holds requests of `kind` back until `need` of them are waiting, then lets them all go
    /// at once (for requests that must reach the server at the same moment). Once only.
    pub fn gate(&self, kind: Kind, need: usize) {
        *self.state.gate.lock().unwrap() = Some(Gate {
            kind,
            need,
            waiting: 0,
            open: false,
        });
    }

    /// The requests forwarded since the last [`take_counts`](Self::take_counts).
    pub fn counts(&self) -> Counts {
        *self.state.counts.lock().unwrap()
    }

    /// The requests forwarded since the last call, and starts counting again.
    pub fn take_counts(&self) -> Counts {
        std::mem::take(&mut *self.state.counts.lock().unwrap())
    }

    /// Disarms every fault: no cuts, hooks, losses, refusals, stripped headers or gate, and up.
    pub fn reset(&self) {
        let state = &self.state;
        state.cut_after.store(0, Ordering::SeqCst);
        state.hook_after.store(0, Ordering::SeqCst);
        state.down_after.store(0, Ordering::SeqCst);
        state.down.store(false, Ordering::SeqCst);
        *state.hook.lock().unwrap() = None;
        *state.before_put.lock().unwrap() = None;
        state.strip.lock().unwrap().clear();
        state.refuse.lock().unwrap().clear();
        state.lost.lock().unwrap().clear();
        let mut gate = state.gate.lock().unwrap();
        if let Some(g) = gate.as_mut() {
            g.open = true;
        }
        *gate = None;
        state.gate_moved.notify_all();
    }

    /// Whether every armed answer loss has happened.
    pub fn answers_lost(&self) -> bool {
        self.state.lost.lock().unwrap().is_empty()
    }
}

impl ProxyState {
    fn down(&self) -> bool {
        self.down.load(Ordering::SeqCst)
    }

    /// Counts `n` bytes sent by a client; runs the byte hook and goes down when they are due.
    fn carried(&self, n: usize) {
        let total = self.sent.fetch_add(n as u64, Ordering::SeqCst) + n as u64;
        let at = self.hook_after.load(Ordering::SeqCst);
        if at > 0 && total >= at {
            self.hook_after.store(0, Ordering::SeqCst);
            let hook = self.hook.lock().unwrap().take();
            if let Some(hook) = hook {
                hook();
            }
        }
        let at = self.down_after.load(Ordering::SeqCst);
        if at > 0 && total >= at {
            self.down_after.store(0, Ordering::SeqCst);
            self.down.store(true, Ordering::SeqCst);
        }
    }

    /// The hook of an answer to lose, if the answer to this request (of `kind`) is one.
    fn lose(&self, kind: Kind) -> Option<Hook> {
        let mut lost = self.lost.lock().unwrap();
        let first = lost.front_mut()?;
        if first.kind.is_some_and(|k| k != kind) {
            return None;
        }
        if first.skip > 0 {
            first.skip -= 1;
            return None;
        }
        let hook = first.hook.take();
        lost.pop_front();
        Some(hook.unwrap_or_else(|| Box::new(|| ())))
    }

    /// Waits at the gate, if one is set for `kind` (at most 60 s, then lets the request go).
    fn pass_gate(&self, kind: Kind) {
        let mut gate = self.gate.lock().unwrap();
        let Some(g) = gate.as_mut() else { return };
        if g.kind != kind || g.open {
            return;
        }
        g.waiting += 1;
        if g.waiting >= g.need {
            g.open = true;
            self.gate_moved.notify_all();
            return;
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        while gate.as_ref().is_some_and(|g| !g.open) && Instant::now() < deadline {
            gate = self
                .gate_moved
                .wait_timeout(gate, Duration::from_millis(100))
                .unwrap()
                .0;
        }
    }
}

/// One side of a connection, with what was read from it and not yet used.
struct Peer {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Peer {
    fn new(stream: TcpStream) -> Peer {
        Peer {
            stream,
            buf: Vec::new(),
        }
    }

    /// Reads more bytes into the buffer: how many (0 at the end of the stream).
    fn fill(&mut self) -> std::io::Result<usize> {
        let mut chunk = [0u8; 64 * 1024];
        let n = self.stream.read(&mut chunk)?;
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n)
    }

    /// A message head, up to and with its empty line; `None` at a clean end of the stream.
    fn head(&mut self) -> std::io::Result<Option<Vec<u8>>> {
        loop {
            if let Some(at) = find(&self.buf, b"\r\n\r\n") {
                return Ok(Some(self.buf.drain(..at + 4).collect()));
            }
            if self.buf.len() > 1 << 20 {
                return Err(std::io::Error::other("a message head over 1 MiB"));
            }
            if self.fill()? == 0 {
                return if self.buf.is_empty() {
                    Ok(None)
                } else {
                    Err(std::io::ErrorKind::UnexpectedEof.into())
                };
            }
        }
    }

    /// Up to `max` bytes: those buffered first.
    fn some(&mut self, max: usize) -> std::io::Result<Vec<u8>> {
        if self.buf.is_empty() && self.fill()? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let n = self.buf.len().min(max);
        Ok(self.buf.drain(..n).collect())
    }

    /// One line, with its CRLF.
    fn line(&mut self) -> std::io::Result<Vec<u8>> {
        loop {
            if let Some(at) = find(&self.buf, b"\r\n") {
                return Ok(self.buf.drain(..at + 2).collect());
            }
            if self.fill()? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A parsed message head: its first line and its header lines.
struct Head {
    first: String,
    headers: Vec<(String, String)>,
}

/// How a message's body is delimited.
enum Body {
    None,
    Length(u64),
    Chunked,
    UntilClose,
}

impl Head {
    fn parse(bytes: &[u8]) -> Option<Head> {
        let text = std::str::from_utf8(bytes).ok()?;
        let mut lines = text.split("\r\n");
        let first = lines.next()?.to_owned();
        let headers = lines
            .filter(|l| !l.is_empty())
            .map(|l| {
                let (name, value) = l.split_once(':')?;
                Some((name.trim().to_owned(), value.trim().to_owned()))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Head { first, headers })
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = format!("{}\r\n", self.first);
        for (name, value) in &self.headers {
            out.push_str(&format!("{name}: {value}\r\n"));
        }
        out.push_str("\r\n");
        out.into_bytes()
    }

    /// The body of a request (`response` false) or of the answer to a `method` request.
    fn body(&self, response: Option<&str>) -> Body {
        if let Some(method) = response {
            let status: u16 = self
                .first
                .split(' ')
                .nth(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            if method == "HEAD" || status < 200 || status == 204 || status == 304 {
                return Body::None;
            }
        }
        if self
            .header("transfer-encoding")
            .is_some_and(|t| t.to_ascii_lowercase().contains("chunked"))
        {
            return Body::Chunked;
        }
        match self.header("content-length").and_then(|l| l.parse().ok()) {
            Some(0) => Body::None,
            Some(n) => Body::Length(n),
            None if response.is_some() => Body::UntilClose,
            None => Body::None,
        }
    }

    fn closes(&self) -> bool {
        self.header("connection")
            .is_some_and(|c| c.eq_ignore_ascii_case("close"))
    }
}

/// Copies a body from `from` to `to`, handing each piece to `send` (false: stop, cut off).
/// Whether the whole body went.
fn copy_body(
    from: &mut Peer,
    body: &Body,
    send: &mut dyn FnMut(&[u8]) -> bool,
) -> std::io::Result<bool> {
    match *body {
        Body::None => Ok(true),
        Body::Length(mut left) => {
            while left > 0 {
                let piece = from.some(left.min(64 * 1024) as usize)?;
                left -= piece.len() as u64;
                if !send(&piece) {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        Body::Chunked => loop {
            let line = from.line()?;
            let size_text = std::str::from_utf8(&line).unwrap_or("").trim();
            let size_text = size_text.split(';').next().unwrap_or("");
            let size = u64::from_str_radix(size_text, 16)
                .map_err(|_| std::io::Error::other("a bad chunk size"))?;
            if !send(&line) {
                return Ok(false);
            }
            if size == 0 {
                // Trailers, up to the empty line.
                loop {
                    let line = from.line()?;
                    if !send(&line) {
                        return Ok(false);
                    }
                    if line == b"\r\n" {
                        return Ok(true);
                    }
                }
            }
            let mut left = size + 2; // the data and its CRLF
            while left > 0 {
                let piece = from.some(left.min(64 * 1024) as usize)?;
                left -= piece.len() as u64;
                if !send(&piece) {
                    return Ok(false);
                }
            }
        },
        Body::UntilClose => loop {
            match from.some(64 * 1024) {
                Ok(piece) => {
                    if !send(&piece) {
                        return Ok(false);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(true),
                Err(e) => return Err(e),
            }
        },
    }
}

/// Serves one client connection: request by request, each forwarded and its answer passed
/// back, with the faults armed at the time.
fn serve(client: TcpStream, state: &Arc<ProxyState>) {
    let Ok(client_w) = client.try_clone() else {
        return;
    };
    let mut client_w = client_w;
    let mut client = Peer::new(client);
    let mut server: Option<(Peer, TcpStream)> = None;
    // Bytes this connection carried from the client.
    let mut carried = 0u64;
    let _ = (|| -> std::io::Result<()> {
        loop {
            if state.down() {
                return Ok(());
            }
            let Some(raw) = client.head()? else {
                return Ok(());
            };
            let Some(mut request) = Head::parse(&raw) else {
                return Ok(());
            };
            let mut first = request.first.split(' ');
            let method = first.next().unwrap_or("").to_owned();
            let target = first.next().unwrap_or("").to_owned();
            let kind = Kind::of(&method, &target);
            if state.down() || state.refuse.lock().unwrap().contains(&kind) {
                return Ok(());
            }
            {
                let strip = state.strip.lock().unwrap();
                request
                    .headers
                    .retain(|(n, _)| !strip.contains(&n.to_ascii_lowercase()));
            }
            if kind == Kind::Put {
                let hook = state.before_put.lock().unwrap().take();
                if let Some(hook) = hook {
                    hook();
                }
            }
            state.pass_gate(kind);
            if server.is_none() {
                let port = state.target.load(Ordering::SeqCst);
                let stream = TcpStream::connect(("127.0.0.1", port))?;
                let writer = stream.try_clone()?;
                server = Some((Peer::new(stream), writer));
            }
            let Some((server_r, server_w)) = server.as_mut() else {
                return Ok(());
            };
            state.counts.lock().unwrap().add(kind);
            // The request, head and body, counted and cut as the faults say.
            let mut send = |piece: &[u8]| -> bool {
                let cut = state.cut_after.load(Ordering::SeqCst);
                if cut > 0 && carried + piece.len() as u64 > cut {
                    let fits = (cut.saturating_sub(carried)) as usize;
                    let _ = server_w.write_all(&piece[..fits]);
                    return false;
                }
                if state.down() || server_w.write_all(piece).is_err() {
                    return false;
                }
                carried += piece.len() as u64;
                state.carried(piece.len());
                true
            };
            if !send(&request.bytes()) || !copy_body(&mut client, &request.body(None), &mut send)? {
                return Ok(());
            }
            // The answer.
            let Some(raw) = server_r.head()? else {
                return Ok(());
            };
            let Some(answer) = Head::parse(&raw) else {
                return Ok(());
            };
            if let Some(hook) = state.lose(kind) {
                hook();
                return Ok(());
            }
            if state.down() {
                return Ok(());
            }
            client_w.write_all(&raw)?;
            let mut back = |piece: &[u8]| !state.down() && client_w.write_all(piece).is_ok();
            if !copy_body(server_r, &answer.body(Some(&method)), &mut back)? {
                return Ok(());
            }
            if answer.closes() || request.closes() {
                return Ok(());
            }
        }
    })();
    if let Some((_, server_w)) = server {
        let _ = server_w.shutdown(Shutdown::Both);
    }
    let _ = client_w.shutdown(Shutdown::Both);
}
