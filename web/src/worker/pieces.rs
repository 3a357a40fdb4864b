//! The page's part of a save through the worker: the snapshot's mementos encoded (those
//! captured and not yet encoded) and copied out of the module's memory one at a time, in
//! slices of at most [`SLICE_MS`], yielding to the event loop between two slices, so that no
//! frame waits on a save for longer than one memento takes.

use js_sys::{Array, ArrayBuffer, Function, Promise, Reflect, Uint8Array};
use savegame::Snapshot;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{MessageChannel, Performance};

use super::wire::{SaveRequest, Settings};
use crate::error::Result;

/// How long the page works at a save before it yields to the event loop, in milliseconds:
/// half of the 8 ms a 60 fps frame can spare, so that a slice and the memento that ends it
/// stay under it.
pub const SLICE_MS: f64 = 4.0;

/// `performance.now()` where there is one (a page, a worker), else `Date.now()`.
pub(crate) fn now() -> f64 {
    Reflect::get(&js_sys::global(), &"performance".into())
        .ok()
        .and_then(|p| p.dyn_into::<Performance>().ok())
        .map_or_else(js_sys::Date::now, |p| p.now())
}

/// Yields to the event loop: resolves in a task of its own, after whatever the browser has
/// queued (input, a frame). A message to itself, not `setTimeout`, which browsers clamp to 4 ms
/// once nested.
pub(crate) async fn yield_now() {
    let Ok(channel) = MessageChannel::new() else {
        return;
    };
    let promise = Promise::new(&mut |resolve: Function, _reject: Function| {
        channel.port1().set_onmessage(Some(&resolve));
    });
    if channel.port2().post_message(&JsValue::NULL).is_err() {
        return;
    }
    let _ = JsFuture::from(promise).await;
    channel.port1().set_onmessage(None);
}

/// Work on the page's thread cut into slices of at most [`SLICE_MS`] (4 ms, half of the 8 ms
/// a 60 fps frame can spare), with a yield to the event loop between two: what a save through
/// a [`SaveWorker`](crate::SaveWorker) does with the mementos, and what a game does with its
/// own capture of a big world, so that no frame waits on it.
///
/// ```no_run
/// # async fn capture(chunks: &[savegame::Snapshot]) {}
/// # async fn example(world: Vec<u32>, mut snapshot: savegame::Snapshot) -> savegame::Result<()> {
/// let mut slices = savegame_web::Slices::new();
/// for (i, chunk) in world.iter().enumerate() {
///     snapshot.capture_memento(&format!("chunk-{i}"), chunk)?;
///     slices.tick().await; // yields once 4 ms of work have gone by
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Slices {
    started: f64,
    longest: f64,
}

impl Default for Slices {
    fn default() -> Self {
        Self::new()
    }
}

impl Slices {
    /// The first slice starts now.
    #[must_use]
    pub fn new() -> Self {
        Slices {
            started: now(),
            longest: 0.0,
        }
    }

    /// Ends the slice and yields to the event loop when it has run [`SLICE_MS`] or more; else
    /// returns at once. Call it between two pieces of work.
    pub async fn tick(&mut self) {
        let worked = now() - self.started;
        if worked >= SLICE_MS {
            self.longest = self.longest.max(worked);
            yield_now().await;
            self.started = now();
        }
    }

    /// The longest slice so far, the current one included, in milliseconds (measured with
    /// `performance.now()`).
    #[must_use]
    pub fn longest_ms(&self) -> f64 {
        self.longest.max(now() - self.started)
    }
}

/// The mementos of a snapshot as the worker gets them: their ids, versions and bytes (each an
/// `ArrayBuffer` of its own, to transfer).
pub(crate) struct Pieces {
    pub(crate) ids: Vec<String>,
    pub(crate) versions: Vec<u32>,
    pub(crate) buffers: Array,
    /// The longest slice, in milliseconds.
    pub(crate) longest_ms: f64,
}

/// Encodes and copies out every memento of `snapshot`, in slices (see the module docs).
///
/// # Errors
/// [`savegame::Error::Encode`] for a memento the codec cannot encode: nothing was sent.
pub(crate) async fn pieces(snapshot: &Snapshot) -> Result<Pieces> {
    let mut out = Pieces {
        ids: Vec::with_capacity(snapshot.len()),
        versions: Vec::with_capacity(snapshot.len()),
        buffers: Array::new(),
        longest_ms: 0.0,
    };
    let ids: Vec<String> = snapshot.ids().map(str::to_owned).collect();
    let mut slices = Slices::new();
    for id in ids {
        let bytes = snapshot.encoded(&id)?;
        out.buffers.push(&Uint8Array::from(bytes).buffer());
        out.versions
            .push(snapshot.memento_version(&id).unwrap_or_default());
        out.ids.push(id);
        slices.tick().await;
    }
    out.longest_ms = slices.longest_ms();
    Ok(out)
}

/// The request of a save of `snapshot` (its mementos are `pieces`).
pub(crate) fn request(
    id: u32,
    db: String,
    slot: Option<String>,
    settings: Settings,
    snapshot: &Snapshot,
    pieces: &mut Pieces,
) -> SaveRequest {
    let meta = snapshot.metadata();
    SaveRequest {
        id,
        db,
        slot,
        settings,
        codec: snapshot.codec().id(),
        label: meta.label.clone(),
        playtime_ms: u64::try_from(meta.playtime.as_millis()).unwrap_or(u64::MAX),
        app_version: meta.app_version.clone(),
        user: meta.user.clone(),
        ids: std::mem::take(&mut pieces.ids),
        versions: std::mem::take(&mut pieces.versions),
        deleted: snapshot.deleted_ids().map(str::to_owned).collect(),
    }
}

/// The thumbnail of `snapshot` as the message carries it (`null` when it has none).
pub(crate) fn thumbnail(snapshot: &Snapshot) -> JsValue {
    snapshot
        .metadata()
        .thumbnail
        .as_deref()
        .map_or(JsValue::NULL, |t| Uint8Array::from(t).into())
}

/// The bytes of one transferred piece, copied into this module's memory.
pub(crate) fn bytes_of(piece: &JsValue) -> Option<Vec<u8>> {
    piece
        .dyn_ref::<ArrayBuffer>()
        .map(|b| Uint8Array::new(b).to_vec())
}
