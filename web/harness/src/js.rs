//! What the harness does in plain JavaScript: the floor's one raw IndexedDB put or get, and
//! the meter of the page's longest block.

use js_sys::{Promise, Uint8Array};
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

#[wasm_bindgen(inline_js = r#"
// The floor: one object store, one put or one get in one transaction, committed with the
// durability IndexedDbSaves commits with.
export function floor_open(name) {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open(name, 1);
    open.onupgradeneeded = () => open.result.createObjectStore("objects");
    open.onsuccess = () => resolve(open.result);
    open.onerror = () => reject(open.error);
  });
}
export function floor_put(db, key, bytes) {
  return new Promise((resolve, reject) => {
    const tx = db.transaction("objects", "readwrite", { durability: "strict" });
    tx.objectStore("objects").put(bytes, key);
    tx.oncomplete = () => resolve();
    tx.onabort = () => reject(tx.error);
  });
}
export function floor_get(db, key) {
  return new Promise((resolve, reject) => {
    const tx = db.transaction("objects", "readonly");
    const req = tx.objectStore("objects").get(key);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}
// The block meter: a timer task, set again each time it runs; the longest gap between two of
// them is at least as long as the longest the page's thread was busy with anything else (a
// frame waits as long). Browsers run a timer set again and again every 4 ms at the soonest,
// so a gap under about 5 ms means "not blocked". A timer, not a message posted to itself:
// that would keep one of the machine's cores busy, taken from the save worker.
export function meter_start() {
  const m = { last: performance.now(), longest: 0, on: true };
  const tick = () => {
    const now = performance.now();
    m.longest = Math.max(m.longest, now - m.last);
    m.last = now;
    if (m.on) m.timer = setTimeout(tick, 0);
  };
  m.timer = setTimeout(tick, 0);
  return m;
}
export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
// A worker that keeps a core busy for `ms` (as the save worker does while it seals), and
// nothing on the page: the control of what a busy worker alone costs the page's thread.
export function busy_worker(ms) {
  const src = `const end = performance.now() + ${ms}; let x = 0;
    while (performance.now() < end) x += Math.sqrt(x + 1); postMessage(x);`;
  const url = URL.createObjectURL(new Blob([src], { type: "text/javascript" }));
  const worker = new Worker(url);
  return new Promise((resolve) => {
    worker.onmessage = () => { worker.terminate(); URL.revokeObjectURL(url); resolve(); };
  });
}
// A report to the driver (the kill test's server keeps what the page says, in order).
export function report(path, body) {
  return fetch(path, { method: "POST", body: String(body) }).then(() => undefined);
}
// A blob of `n` bytes that do not compress, put in the database `name` (another database of
// the origin than the saves'): what fills the quota.
export function fill(name, key, n) {
  const bytes = new Uint8Array(n);
  for (let i = 0; i < n; i += 65536) crypto.getRandomValues(bytes.subarray(i, Math.min(n, i + 65536)));
  return floor_open(name).then((db) => floor_put(db, key, bytes).finally(() => db.close()));
}
export function drop_database(name) {
  return new Promise((resolve, reject) => {
    const req = indexedDB.deleteDatabase(name);
    req.onsuccess = () => resolve();
    req.onerror = () => reject(req.error);
    req.onblocked = () => resolve();
  });
}
export function meter_stop(m) {
  m.on = false;
  clearTimeout(m.timer);
  return Math.max(m.longest, performance.now() - m.last);
}
"#)]
extern "C" {
    fn floor_open(name: &str) -> Promise;
    fn floor_put(db: &JsValue, key: &str, bytes: &Uint8Array) -> Promise;
    fn floor_get(db: &JsValue, key: &str) -> Promise;
    fn meter_start() -> JsValue;
    fn meter_stop(meter: &JsValue) -> f64;
    fn report(path: &str, body: &str) -> Promise;
    fn sleep(ms: u32) -> Promise;
    fn busy_worker(ms: u32) -> Promise;
    fn fill(name: &str, key: &str, n: u32) -> Promise;
    fn drop_database(name: &str) -> Promise;
}

/// The timer's longest gap while the page does nothing for `ms` milliseconds: what the
/// machine alone (other processes, the browser's own threads) costs the page's thread.
pub async fn idle_block_ms(ms: u32) -> f64 {
    let meter = Meter::start();
    let _ = JsFuture::from(sleep(ms)).await;
    meter.stop()
}

/// The timer's longest gap while the page does nothing and a worker keeps a core busy for
/// `ms` milliseconds: what a busy worker alone costs the page's thread on this machine.
pub async fn busy_block_ms(ms: u32) -> f64 {
    let meter = Meter::start();
    let _ = JsFuture::from(busy_worker(ms)).await;
    meter.stop()
}

/// Posts `body` to the driver's `path`, and waits for its answer.
///
/// # Errors
/// What the browser threw.
pub async fn tell(path: &str, body: &str) -> Result<(), JsValue> {
    JsFuture::from(report(path, body)).await.map(drop)
}

/// Puts `n` random bytes under `key` in the database `name`, in one transaction.
///
/// # Errors
/// What the browser threw (`QuotaExceededError` when it does not fit).
pub async fn fill_with(name: &str, key: &str, n: u32) -> Result<(), JsValue> {
    JsFuture::from(fill(name, key, n)).await.map(drop)
}

/// Deletes the database `name`.
///
/// # Errors
/// What the browser threw.
pub async fn delete_database(name: &str) -> Result<(), JsValue> {
    JsFuture::from(drop_database(name)).await.map(drop)
}

/// A raw IndexedDB database for the floor.
pub struct Floor {
    db: JsValue,
}

impl Floor {
    /// Opens (creating) the database `name`.
    ///
    /// # Errors
    /// What the browser threw.
    pub async fn open(name: &str) -> Result<Floor, JsValue> {
        Ok(Floor {
            db: JsFuture::from(floor_open(name)).await?,
        })
    }

    /// One put of `bytes` in one transaction, awaited until it completed.
    ///
    /// # Errors
    /// What the browser threw.
    pub async fn put(&self, key: &str, bytes: &[u8]) -> Result<(), JsValue> {
        JsFuture::from(floor_put(&self.db, key, &Uint8Array::from(bytes))).await?;
        Ok(())
    }

    /// One get, its bytes copied into the module's memory.
    ///
    /// # Errors
    /// What the browser threw, or a missing object.
    pub async fn get(&self, key: &str) -> Result<Vec<u8>, JsValue> {
        let value = JsFuture::from(floor_get(&self.db, key)).await?;
        value
            .dyn_ref::<Uint8Array>()
            .map(Uint8Array::to_vec)
            .ok_or_else(|| JsValue::from_str("the floor's object is missing"))
    }
}

/// The meter of the page's longest block, running from [`Meter::start`].
pub struct Meter(JsValue);

impl Meter {
    /// Starts measuring.
    #[must_use]
    pub fn start() -> Meter {
        Meter(meter_start())
    }

    /// The longest the page's thread was blocked since the start, in milliseconds.
    #[must_use]
    pub fn stop(self) -> f64 {
        meter_stop(&self.0)
    }
}

/// `performance.now()`, in milliseconds.
#[must_use]
pub fn now() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map_or_else(js_sys::Date::now, |p| p.now())
}
