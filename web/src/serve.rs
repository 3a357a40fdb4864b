//! The worker's side: [`serve`] answers the page's save requests, one at a time, in the order
//! they came, each with the manager's whole save (its backups, checks and one IndexedDB
//! transaction) run here, off the page's thread.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

use js_sys::{Array, Object, Reflect};
use savegame::{Codec, ManagerBuilder, SaveReport, SlotId, Snapshot};
use wasm_bindgen::prelude::Closure;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{DedicatedWorkerGlobalScope, MessageEvent};

use crate::error::{Error, Result};
use crate::indexed_db::IndexedDbSaves;
use crate::worker::pieces::bytes_of;
use crate::worker::wire::{Reply, Report, Request, SaveRequest, Settings, WireError};

/// What the worker keeps between requests.
struct Served {
    builder: Box<dyn Fn() -> ManagerBuilder>,
    scope: DedicatedWorkerGlobalScope,
    /// One connection per database, opened by its first save and kept (closed, when the page
    /// closed its own: later saves then fail as the page's would).
    open: RefCell<BTreeMap<String, Rc<IndexedDbSaves>>>,
    queue: RefCell<VecDeque<JsValue>>,
    busy: RefCell<bool>,
}

/// Serves the page's saves in this dedicated worker: what the game's worker entry calls (see
/// [`SaveWorker`](crate::SaveWorker)). `builder` builds the manager of every save here, and
/// must build it as the page builds its own (the same codec, key, schema version, backups):
/// a save whose page manager differs in schema version or protection is refused with
/// [`savegame::Error::Config`].
///
/// # Errors
/// [`Error::Unavailable`] when this is not a dedicated worker.
pub fn serve(builder: impl Fn() -> ManagerBuilder + 'static) -> Result<()> {
    let scope = js_sys::global()
        .dyn_into::<DedicatedWorkerGlobalScope>()
        .map_err(|_| Error::Unavailable {
            operation: "starting the save worker",
            reason: "serve runs in a dedicated worker, not here".into(),
        })?;
    let served = Rc::new(Served {
        builder: Box::new(builder),
        scope: scope.clone(),
        open: RefCell::default(),
        queue: RefCell::default(),
        busy: RefCell::new(false),
    });
    let on_message = Closure::<dyn Fn(MessageEvent)>::new(move |event: MessageEvent| {
        served.queue.borrow_mut().push_back(event.data());
        if !served.busy.replace(true) {
            wasm_bindgen_futures::spawn_local(drain(Rc::clone(&served)));
        }
    });
    scope.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    // The worker lives as long as its handler: it is never removed.
    on_message.forget();
    let ready = Object::new();
    let _ = Reflect::set(&ready, &"ready".into(), &JsValue::TRUE);
    scope
        .post_message(&ready)
        .map_err(|e| crate::idb::browser_error("starting the save worker", &e))
}

/// Answers the queued requests, one at a time.
async fn drain(served: Rc<Served>) {
    loop {
        let next = served.queue.borrow_mut().pop_front();
        let Some(data) = next else {
            break;
        };
        answer(&served, &data).await;
    }
    *served.busy.borrow_mut() = false;
}

async fn answer(served: &Served, data: &JsValue) {
    let head = Reflect::get(data, &"head".into())
        .ok()
        .and_then(|h| h.as_string())
        .unwrap_or_default();
    let request: Request = match serde_json::from_str(&head) {
        Ok(r) => r,
        // Not a request of this crate's: no one waits for an answer.
        Err(_) => return,
    };
    match request {
        Request::Close { db } => {
            if let Some(saves) = served.open.borrow().get(&db) {
                saves.close();
            }
        }
        Request::Save(request) => {
            let id = request.id;
            let result = save(served, request, data).await;
            let reply = Reply {
                id,
                result: result.as_ref().map(Report::from).map_err(WireError::from),
            };
            let Ok(head) = serde_json::to_string(&reply) else {
                return;
            };
            let message = Object::new();
            let _ = Reflect::set(&message, &"head".into(), &head.into());
            let _ = served.scope.post_message(&message);
        }
    }
}

async fn saves_of(served: &Served, db: &str) -> Result<Rc<IndexedDbSaves>> {
    if let Some(saves) = served.open.borrow().get(db) {
        return Ok(Rc::clone(saves));
    }
    let saves = Rc::new(IndexedDbSaves::open(db, (served.builder)()).await?);
    served
        .open
        .borrow_mut()
        .insert(db.to_owned(), Rc::clone(&saves));
    Ok(saves)
}

async fn save(served: &Served, request: SaveRequest, data: &JsValue) -> Result<SaveReport> {
    let saves = saves_of(served, &request.db).await?;
    if Settings::of(saves.manager()) != request.settings {
        return Err(savegame::Error::Config {
            reason: format!(
                "the save worker's manager is not built as the page's ({:?} here, {:?} there): \
                 give serve the page's builder",
                Settings::of(saves.manager()),
                request.settings
            ),
        }
        .into());
    }
    let snapshot = snapshot_of(&request, data)?;
    match request.slot.as_deref().map(SlotId::from_file_name) {
        None => saves.autosave(&snapshot).await,
        Some(Some(slot)) => saves.save(slot, &snapshot).await,
        Some(None) => Err(Error::Worker {
            reason: format!("{:?} names no slot", request.slot),
        }),
    }
}

/// The page's snapshot, rebuilt from the request and its pieces.
fn snapshot_of(request: &SaveRequest, data: &JsValue) -> Result<Snapshot> {
    let mut snapshot = Snapshot::new(Codec::from_id(request.codec)?);
    let meta = snapshot.metadata_mut();
    meta.label.clone_from(&request.label);
    meta.playtime = std::time::Duration::from_millis(request.playtime_ms);
    meta.app_version.clone_from(&request.app_version);
    meta.user.clone_from(&request.user);
    meta.thumbnail = Reflect::get(data, &"thumbnail".into())
        .ok()
        .and_then(|t| t.dyn_into::<js_sys::Uint8Array>().ok())
        .map(|t| t.to_vec());
    let pieces: Array = Reflect::get(data, &"pieces".into())
        .ok()
        .and_then(|p| p.dyn_into().ok())
        .unwrap_or_default();
    if pieces.length() as usize != request.ids.len() || request.versions.len() != request.ids.len()
    {
        return Err(Error::Worker {
            reason: format!(
                "a save of {} mementos came with {} pieces",
                request.ids.len(),
                pieces.length()
            ),
        });
    }
    for ((id, version), piece) in request.ids.iter().zip(&request.versions).zip(pieces.iter()) {
        let bytes = bytes_of(&piece).ok_or_else(|| Error::Worker {
            reason: format!("the piece of memento {id:?} is not an ArrayBuffer"),
        })?;
        snapshot.insert_raw(id, bytes)?;
        snapshot.set_memento_version(id, *version)?;
    }
    for id in &request.deleted {
        snapshot.mark_deleted(id)?;
    }
    Ok(snapshot)
}
