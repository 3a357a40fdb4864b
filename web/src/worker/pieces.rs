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

/// How long the page works at a save before it yields to the event loop: half of the 8 ms a
/// 60 fps frame can spare, so that a slice and the memento that ends it stay under it.
pub(crate) const SLICE_MS: f64 = 4.0;

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

/// The mementos of a snapshot as the worker gets them: their ids, versions and bytes (each an
/// `ArrayBuffer` of its own, to transfer).
pub(crate) struct Pieces {
    pub(crate) ids: Vec<String>,
    pub(crate) versions: Vec<u32>,
    pub(crate) buffers: Array,
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
    };
    let ids: Vec<String> = snapshot.ids().map(str::to_owned).collect();
    let mut slice_started = now();
    for id in ids {
        let bytes = snapshot.encoded(&id)?;
        out.buffers.push(&Uint8Array::from(bytes).buffer());
        out.versions
            .push(snapshot.memento_version(&id).unwrap_or_default());
        out.ids.push(id);
        if now() - slice_started >= SLICE_MS {
            yield_now().await;
            slice_started = now();
        }
    }
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
