//! Saves off the page's thread: a dedicated Web Worker running the same module, which frames,
//! seals and commits each save while the page goes on drawing frames.
//!
//! See [`SaveWorker`].

pub(crate) mod pieces;
pub(crate) mod wire;

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::fmt;
use std::rc::Rc;

use js_sys::{Array, Function, Object, Promise, Reflect};
use savegame::{SaveLoadManager, SaveReport, Snapshot};
use wasm_bindgen::prelude::{Closure, wasm_bindgen};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    Blob, BlobPropertyBag, ErrorEvent, MessageEvent, Url, Worker, WorkerOptions, WorkerType,
};

pub use self::pieces::{SLICE_MS, Slices};
use self::wire::{Reply, Request, Settings, WireError};
use crate::error::{Error, Result};
use crate::idb::browser_error;

#[wasm_bindgen]
extern "C" {
    /// The URL of this module's JS glue: what the worker imports.
    #[wasm_bindgen(thread_local_v2, js_namespace = ["import", "meta"], js_name = url)]
    static GLUE_URL: JsValue;
}

/// The worker's first script: it imports the page's glue, instantiates the page's compiled
/// module, and calls the game's entry, which answers with `{ready}` once it serves.
const BOOTSTRAP: &str = r#"
self.onmessage = async (event) => {
  self.onmessage = null;
  const { glue, module, entry } = event.data;
  try {
    const m = await import(glue);
    await m.default({ module_or_path: module });
    if (typeof m[entry] !== "function") throw new Error(`the module exports no function ${entry}`);
    m[entry]();
  } catch (e) {
    self.postMessage({ failed: String((e && e.stack) || e) });
  }
};
"#;

const STARTING: &str = "starting the save worker";

/// A dedicated worker that saves for [`IndexedDbSaves`](crate::IndexedDbSaves): attach it
/// with [`with_worker`](crate::IndexedDbSaves::with_worker). Cloning shares the one worker.
///
/// # How a save goes
///
/// 1. On the page, [`IndexedDbSaves::save`](crate::IndexedDbSaves::save) encodes each memento
///    of the snapshot that is not encoded yet (a [`capture`](savegame::Snapshot::capture)
///    defers it to here) and copies its bytes into an `ArrayBuffer` of its own, one memento at
///    a time, yielding to the event loop every few milliseconds (in [`Slices`]).
/// 2. The buffers go to the worker in one message, transferred (not copied).
/// 3. The worker rebuilds the snapshot from them and runs the manager's save, exactly as the
///    page would: it reads the slot's records, checks the previous save before keeping it as
///    a backup, seals the new file (compression, AES-256-GCM, CRC) and commits everything in
///    one IndexedDB transaction with strict durability.
/// 4. Its answer (the [`SaveReport`], or the error, typed as on the page) comes back, and
///    only then does the page's `save(..).await` end.
///
/// The page's thread never runs more than one memento's encoding, or one slice of
/// [`SLICE_MS`], at a time: a world of many small mementos (chunks, entities)
/// never stalls a frame; one huge memento is encoded in one piece, on the page.
///
/// # The worker's entry
///
/// The worker loads the page's own module (its JS glue, from the glue's URL, and the compiled
/// `WebAssembly.Module`, posted to it), then calls a function the game exports, which calls
/// [`serve`](crate::serve()) with the game's manager builder:
///
/// ```no_run
/// use savegame::{Codec, ManagerBuilder, SaveLoadManager};
/// use wasm_bindgen::prelude::wasm_bindgen;
///
/// fn saves() -> ManagerBuilder {
///     SaveLoadManager::builder().codec(Codec::MessagePack)
/// }
///
/// /// The save worker's entry (its name is what the page passes to `SaveWorker::spawn`).
/// #[wasm_bindgen]
/// pub fn save_worker() -> Result<(), String> {
///     savegame_web::serve(saves).map_err(|e| e.to_string())
/// }
///
/// # async fn page() -> savegame_web::Result<()> {
/// // On the page:
/// let worker = savegame_web::SaveWorker::spawn("save_worker").await?;
/// let saves = savegame_web::IndexedDbSaves::open("my-game", saves()).await?.with_worker(worker);
/// # Ok(()) }
/// ```
///
/// The module must be built with wasm-bindgen's `web` target (ES modules; what
/// `wasm-bindgen --target web` and `wasm-pack build --target web` make). A module with a
/// `#[wasm_bindgen(start)]` function runs it in the worker too: keep it from touching the
/// page there (or start the page from an exported function, as the demo does).
#[derive(Clone)]
pub struct SaveWorker {
    link: Rc<Link>,
}

struct Link {
    worker: Worker,
    next: Cell<u32>,
    /// The longest stretch of the last save on the page's thread, in milliseconds.
    longest_ms: Cell<f64>,
    /// The resolve function of each save waiting for its answer, by request id.
    waiting: Rc<RefCell<BTreeMap<u32, Function>>>,
    /// Why the worker stopped, once it did: every later save fails with it.
    failed: Rc<RefCell<Option<String>>>,
    _on_message: Closure<dyn Fn(MessageEvent)>,
    _on_error: Closure<dyn Fn(ErrorEvent)>,
}

impl fmt::Debug for SaveWorker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SaveWorker")
            .field("waiting", &self.link.waiting.borrow().len())
            .field("failed", &self.link.failed.borrow())
            .finish_non_exhaustive()
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.worker.terminate();
    }
}

/// A reply that says the worker failed, for the saves still waiting when it did.
fn failed_reply(id: u32, reason: &str) -> JsValue {
    let reply = Reply {
        id,
        result: Err(WireError::Worker {
            reason: reason.to_owned(),
        }),
    };
    serde_json::to_string(&reply).unwrap_or_default().into()
}

impl SaveWorker {
    /// Starts a dedicated worker on this page's own module and waits until it serves: the
    /// worker calls the module's exported function `entry`, which must call [`serve`](crate::serve()).
    ///
    /// # Errors
    /// [`Error::Unavailable`] when the worker cannot be made or its module cannot start
    /// there (the reason says what the worker said); the browser's error.
    pub async fn spawn(entry: &str) -> Result<SaveWorker> {
        let e = |thrown: JsValue| browser_error(STARTING, &thrown);
        let parts = Array::of1(&BOOTSTRAP.into());
        let options = BlobPropertyBag::new();
        options.set_type("text/javascript");
        let blob = Blob::new_with_str_sequence_and_options(&parts, &options).map_err(e)?;
        let url = Url::create_object_url_with_blob(&blob).map_err(e)?;
        let worker_options = WorkerOptions::new();
        worker_options.set_type(WorkerType::Module);
        let worker = Worker::new_with_options(&url, &worker_options);
        let _ = Url::revoke_object_url(&url);
        let worker = worker.map_err(e)?;

        // Started: `{ready}` from serve, or `{failed}` from the bootstrap, or an error event.
        let started = Promise::new(&mut |resolve: Function, _reject: Function| {
            worker.set_onmessage(Some(&resolve));
            worker.set_onerror(Some(&resolve));
        });
        let glue = GLUE_URL.with(JsValue::clone);
        let first = Object::new();
        Reflect::set(&first, &"glue".into(), &glue).map_err(e)?;
        Reflect::set(&first, &"module".into(), &wasm_bindgen::module()).map_err(e)?;
        Reflect::set(&first, &"entry".into(), &entry.into()).map_err(e)?;
        worker.post_message(&first).map_err(e)?;
        let answer = JsFuture::from(started).await.map_err(e)?;
        worker.set_onmessage(None);
        worker.set_onerror(None);
        let unavailable = |reason: String| Error::Unavailable {
            operation: STARTING,
            reason,
        };
        if let Some(event) = answer.dyn_ref::<ErrorEvent>() {
            return Err(unavailable(event.message()));
        }
        let data = Reflect::get(&answer, &"data".into()).unwrap_or(JsValue::UNDEFINED);
        if Reflect::get(&data, &"ready".into()).ok() != Some(JsValue::TRUE) {
            let said = Reflect::get(&data, &"failed".into())
                .ok()
                .and_then(|f| f.as_string())
                .unwrap_or_else(|| format!("{data:?}"));
            return Err(unavailable(said));
        }
        Ok(SaveWorker {
            link: Rc::new(Link::new(worker)),
        })
    }

    /// Saves `snapshot` through the worker (to `slot`'s file, or to the autosave rotation when
    /// `None`), for the manager `manager` of the database `db`.
    pub(crate) async fn save(
        &self,
        db: String,
        slot: Option<String>,
        manager: &SaveLoadManager,
        snapshot: &Snapshot,
    ) -> Result<SaveReport> {
        let link = &self.link;
        if let Some(reason) = link.failed.borrow().clone() {
            return Err(Error::Worker { reason });
        }
        let mut pieces = pieces::pieces(snapshot).await?;
        let sending = pieces::now();
        let id = link.next.get();
        link.next.set(id.wrapping_add(1));
        let request = pieces::request(id, db, slot, Settings::of(manager), snapshot, &mut pieces);
        let head = serde_json::to_string(&Request::Save(request)).map_err(|e| Error::Worker {
            reason: e.to_string(),
        })?;
        let e = |thrown: JsValue| browser_error("saving", &thrown);
        let message = Object::new();
        Reflect::set(&message, &"head".into(), &head.into()).map_err(e)?;
        Reflect::set(&message, &"pieces".into(), &pieces.buffers).map_err(e)?;
        Reflect::set(&message, &"thumbnail".into(), &pieces::thumbnail(snapshot)).map_err(e)?;
        let answered = Promise::new(&mut |resolve: Function, _reject: Function| {
            link.waiting.borrow_mut().insert(id, resolve);
        });
        let posted = link
            .worker
            .post_message_with_transfer(&message, &pieces.buffers);
        link.longest_ms
            .set(pieces.longest_ms.max(pieces::now() - sending));
        if let Err(thrown) = posted {
            link.waiting.borrow_mut().remove(&id);
            return Err(e(thrown));
        }
        let head = JsFuture::from(answered)
            .await
            .map_err(e)?
            .as_string()
            .unwrap_or_default();
        let reading = pieces::now();
        let reply: Reply = serde_json::from_str(&head).map_err(|e| Error::Worker {
            reason: format!("an answer that does not parse: {e}"),
        })?;
        let report = reply.result.map_err(Error::from)?.into_report();
        link.longest_ms
            .set(link.longest_ms.get().max(pieces::now() - reading));
        report
    }

    /// The longest stretch the page's thread worked at the last save through this worker, in
    /// milliseconds: encoding and copying one slice of mementos, sending them, or reading the
    /// answer (measured with `performance.now()` around each). What a frame may have waited
    /// for that save; the page's own capture before it (`create_memento`) is not counted.
    #[must_use]
    pub fn longest_stretch_ms(&self) -> f64 {
        self.link.longest_ms.get()
    }

    /// Tells the worker to close its connection to `db`, as the page closed its own.
    pub(crate) fn close(&self, db: String) {
        let Ok(head) = serde_json::to_string(&Request::Close { db }) else {
            return;
        };
        let message = Object::new();
        let _ = Reflect::set(&message, &"head".into(), &head.into());
        let _ = self.link.worker.post_message(&message);
    }
}

impl Link {
    fn new(worker: Worker) -> Link {
        let waiting: Rc<RefCell<BTreeMap<u32, Function>>> = Rc::default();
        let failed: Rc<RefCell<Option<String>>> = Rc::default();
        let answers = Rc::clone(&waiting);
        let on_message = Closure::<dyn Fn(MessageEvent)>::new(move |event: MessageEvent| {
            let head = Reflect::get(&event.data(), &"head".into()).unwrap_or_default();
            let id = head
                .as_string()
                .and_then(|h| serde_json::from_str::<Reply>(&h).ok())
                .map(|r| r.id);
            if let Some(resolve) = id.and_then(|id| answers.borrow_mut().remove(&id)) {
                let _ = resolve.call1(&JsValue::NULL, &head);
            }
        });
        let (stranded, why) = (Rc::clone(&waiting), Rc::clone(&failed));
        let on_error = Closure::<dyn Fn(ErrorEvent)>::new(move |event: ErrorEvent| {
            let reason = format!("the save worker stopped: {}", event.message());
            for (id, resolve) in std::mem::take(&mut *stranded.borrow_mut()) {
                let _ = resolve.call1(&JsValue::NULL, &failed_reply(id, &reason));
            }
            *why.borrow_mut() = Some(reason);
        });
        worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        Link {
            worker,
            next: Cell::new(0),
            longest_ms: Cell::new(0.0),
            waiting,
            failed,
            _on_message: on_message,
            _on_error: on_error,
        }
    }
}
