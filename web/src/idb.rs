//! IndexedDB through wasm-bindgen: opening the database, reading head records and objects,
//! and committing a set of changes in one transaction. Every request of a transaction is
//! made before the first `await`, so no transaction ever commits early.
//!
//! The database (version 2) has four object stores:
//!
//! | store | key | value |
//! |---|---|---|
//! | `heads` | object name | its head record: the length (u64, little-endian) then its first bytes ([`head_of`]) |
//! | `refs` | object name | where its bytes are: `blob:<key>` or `object:<name>` |
//! | `blobs` | a random key | the bytes of one or more objects (a `Uint8Array`) |
//! | `objects` | object name | version 1's place of an object's bytes, read while any name refers to it |
//!
//! A name without a `refs` record has its bytes in `objects` under its own name: a database of
//! version 1 (heads and objects only) opens as it is, and its objects move to `blobs` as they
//! are replaced. Two names may refer to the same bytes: a backup rotation writes the new file's
//! bytes once and only records for the names it moves, and bytes are deleted in the commit
//! that leaves no name referring to them. Every record of a commit is written in the same
//! transaction, so they always agree.

use js_sys::{Array, Function, Object, Promise, Reflect, Uint8Array};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{DomException, IdbDatabase, IdbFactory, IdbRequest, IdbTransaction};

use crate::error::{Error, Result};
use crate::working::{Changes, Listed, Loc};

const OBJECTS: &str = "objects";
const HEADS: &str = "heads";
const REFS: &str = "refs";
const BLOBS: &str = "blobs";
/// The database's schema version (IndexedDB's, not a save's): 2 added `refs` and `blobs`.
const DB_VERSION: u32 = 2;

/// A `refs` record's value for `loc`.
fn ref_of(loc: &Loc) -> String {
    match loc {
        Loc::Blob(key) => format!("blob:{key}"),
        Loc::Object(name) => format!("object:{name}"),
    }
}

/// The place a `refs` record names (`None`: not one this crate wrote).
fn loc_of(value: &str) -> Option<Loc> {
    if let Some(key) = value.strip_prefix("blob:") {
        return Some(Loc::Blob(key.to_owned()));
    }
    value
        .strip_prefix("object:")
        .map(|name| Loc::Object(name.to_owned()))
}

/// A fresh key for `blobs`: 104 random bits, as text.
pub(crate) fn new_key() -> String {
    let part = || (js_sys::Math::random() * f64::from(1u32 << 26) * f64::from(1u32 << 26)) as u64;
    format!("{:013x}{:013x}", part(), part())
}

/// The crate's error for what the browser threw while doing `operation`.
pub(crate) fn browser_error(operation: &'static str, thrown: &JsValue) -> Error {
    if let Some(e) = thrown.dyn_ref::<DomException>() {
        let name = e.name();
        if name == "QuotaExceededError" {
            return Error::QuotaExceeded { operation };
        }
        return Error::Browser {
            operation,
            name,
            message: e.message(),
        };
    }
    let message = thrown
        .dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| thrown.as_string())
        .unwrap_or_else(|| format!("{thrown:?}"));
    Error::Browser {
        operation,
        name: "Error".into(),
        message,
    }
}

/// A future of a request's `success` (its result) or `error` (its error). The handlers are set
/// here, at once, not when the future is first polled: no event can be missed.
fn request(req: &IdbRequest) -> JsFuture {
    let promise = Promise::new(&mut |resolve: Function, reject: Function| {
        let done = req.clone();
        let on_success = Closure::once_into_js(move || {
            let result = done.result().unwrap_or(JsValue::UNDEFINED);
            let _ = resolve.call1(&JsValue::NULL, &result);
        });
        let failed = req.clone();
        let on_error = Closure::once_into_js(move || {
            let error = match failed.error() {
                Ok(Some(e)) => JsValue::from(e),
                _ => JsValue::from_str("the request failed"),
            };
            let _ = reject.call1(&JsValue::NULL, &error);
        });
        req.set_onsuccess(Some(on_success.unchecked_ref()));
        req.set_onerror(Some(on_error.unchecked_ref()));
    });
    JsFuture::from(promise)
}

/// A future of a transaction's `complete` (`Ok`), or its `abort` (the error that caused it).
/// As for [`request`], the handlers are set at once.
fn completion(tx: &IdbTransaction) -> JsFuture {
    let promise = Promise::new(&mut |resolve: Function, reject: Function| {
        let on_complete = Closure::once_into_js(move || {
            let _ = resolve.call0(&JsValue::NULL);
        });
        let aborted = tx.clone();
        let on_abort = Closure::once_into_js(move || {
            let error = match aborted.error() {
                Some(e) => JsValue::from(e),
                None => JsValue::from_str("the transaction was aborted"),
            };
            let _ = reject.call1(&JsValue::NULL, &error);
        });
        tx.set_oncomplete(Some(on_complete.unchecked_ref()));
        tx.set_onabort(Some(on_abort.unchecked_ref()));
    });
    JsFuture::from(promise)
}

/// Opens (creating if needed) the database `name`.
pub(crate) async fn open(name: &str) -> Result<IdbDatabase> {
    let unavailable = |reason: String| Error::Unavailable {
        operation: "opening IndexedDB",
        reason,
    };
    // `indexedDB` of the global scope: a page's window, or a worker's scope.
    let factory = Reflect::get(&js_sys::global(), &JsValue::from_str("indexedDB"))
        .map_err(|e| browser_error("opening IndexedDB", &e))?
        .dyn_into::<IdbFactory>()
        .map_err(|_| unavailable("this browser has no IndexedDB here".into()))?;
    let open = factory
        .open_with_u32(name, DB_VERSION)
        .map_err(|e| browser_error("opening IndexedDB", &e))?;
    let upgrading = open.clone();
    let on_upgrade = Closure::once_into_js(move || {
        if let Ok(result) = upgrading.result()
            && let Ok(db) = result.dyn_into::<IdbDatabase>()
        {
            let stores = db.object_store_names();
            for store in [OBJECTS, HEADS, REFS, BLOBS] {
                if !stores.contains(store) {
                    let _ = db.create_object_store(store);
                }
            }
        }
    });
    open.set_onupgradeneeded(Some(on_upgrade.unchecked_ref()));
    let db = request(&open)
        .await
        .map_err(|e| browser_error("opening IndexedDB", &e))?;
    db.dyn_into::<IdbDatabase>()
        .map_err(|e| browser_error("opening IndexedDB", &e))
}

fn bytes_of(value: &JsValue) -> Option<Vec<u8>> {
    value.dyn_ref::<Uint8Array>().map(Uint8Array::to_vec)
}

/// Every object: its name, length, head record bytes and place.
pub(crate) async fn heads(db: &IdbDatabase) -> Result<Vec<Listed>> {
    let op = "reading the load menu";
    let e = |thrown: JsValue| browser_error(op, &thrown);
    let tx = db
        .transaction_with_str_sequence(&Array::of2(&HEADS.into(), &REFS.into()))
        .map_err(e)?;
    let heads = tx.object_store(HEADS).map_err(e)?;
    let refs = tx.object_store(REFS).map_err(e)?;
    let head_keys = request(&heads.get_all_keys().map_err(e)?);
    let head_values = request(&heads.get_all().map_err(e)?);
    let ref_keys = request(&refs.get_all_keys().map_err(e)?);
    let ref_values = request(&refs.get_all().map_err(e)?);
    let array = |v: JsValue| -> Array { v.unchecked_into() };
    let head_keys = array(head_keys.await.map_err(e)?);
    let head_values = array(head_values.await.map_err(e)?);
    let ref_keys = array(ref_keys.await.map_err(e)?);
    let ref_values = array(ref_values.await.map_err(e)?);
    let places: std::collections::BTreeMap<String, Loc> = ref_keys
        .iter()
        .zip(ref_values.iter())
        .filter_map(|(k, v)| Some((k.as_string()?, loc_of(&v.as_string()?)?)))
        .collect();
    let mut out = Vec::with_capacity(head_keys.length() as usize);
    for (key, value) in head_keys.iter().zip(head_values.iter()) {
        let (Some(name), Some(record)) = (key.as_string(), bytes_of(&value)) else {
            continue;
        };
        // A record too short to hold its length is not one this crate wrote: skip it.
        let Some((len, head)) = record.split_first_chunk::<8>() else {
            continue;
        };
        let at = places
            .get(&name)
            .cloned()
            .unwrap_or_else(|| Loc::Object(name.clone()));
        out.push((name, u64::from_le_bytes(*len), head.to_vec(), at));
    }
    Ok(out)
}

/// The whole bytes of each of `wanted`, read from its place (`None` for one that is gone).
pub(crate) async fn objects(
    db: &IdbDatabase,
    wanted: &[(String, Loc)],
) -> Result<Vec<(String, Option<Vec<u8>>)>> {
    let op = "reading a save";
    let e = |thrown: JsValue| browser_error(op, &thrown);
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let tx = db
        .transaction_with_str_sequence(&Array::of2(&OBJECTS.into(), &BLOBS.into()))
        .map_err(e)?;
    let objects = tx.object_store(OBJECTS).map_err(e)?;
    let blobs = tx.object_store(BLOBS).map_err(e)?;
    let mut requests = Vec::with_capacity(wanted.len());
    for (name, at) in wanted {
        let req = match at {
            Loc::Object(key) => objects.get(&JsValue::from_str(key)),
            Loc::Blob(key) => blobs.get(&JsValue::from_str(key)),
        }
        .map_err(e)?;
        requests.push((name.clone(), request(&req)));
    }
    let mut out = Vec::with_capacity(wanted.len());
    for (name, req) in requests {
        let value = req.await.map_err(e)?;
        out.push((name, bytes_of(&value)));
    }
    Ok(out)
}

/// Commits `changes` in one readwrite transaction with `durability: "strict"` (the browser
/// flushes to disk before it reports the transaction complete), and waits for it to complete.
/// Either every change is in the database afterwards, or (an error) none is.
pub(crate) async fn commit(db: &IdbDatabase, changes: &Changes) -> Result<()> {
    let op = "saving";
    let e = |thrown: JsValue| browser_error(op, &thrown);
    // `db.transaction(stores, "readwrite", { durability: "strict" })`, called through
    // Reflect: web-sys has the options argument only behind its unstable-API cfg.
    let transaction: Function = Reflect::get(db, &JsValue::from_str("transaction"))
        .map_err(e)?
        .dyn_into()
        .map_err(e)?;
    let options = Object::new();
    Reflect::set(&options, &"durability".into(), &"strict".into()).map_err(e)?;
    let stores = Array::of4(&OBJECTS.into(), &HEADS.into(), &REFS.into(), &BLOBS.into());
    let mode = JsValue::from_str("readwrite");
    let tx: IdbTransaction = transaction
        .call3(db, &stores, &mode, &options)
        .map_err(e)?
        .dyn_into()
        .map_err(e)?;
    let objects = tx.object_store(OBJECTS).map_err(e)?;
    let heads = tx.object_store(HEADS).map_err(e)?;
    let refs = tx.object_store(REFS).map_err(e)?;
    let blobs = tx.object_store(BLOBS).map_err(e)?;
    let done = completion(&tx);
    let requests = (|| -> std::result::Result<(), JsValue> {
        for (key, bytes) in &changes.blobs {
            blobs.put_with_key(&Uint8Array::from(bytes.as_slice()), &JsValue::from_str(key))?;
        }
        for (name, len, head, at) in &changes.names {
            let key = JsValue::from_str(name);
            let mut record = Vec::with_capacity(8 + head.len());
            record.extend_from_slice(&len.to_le_bytes());
            record.extend_from_slice(head);
            heads.put_with_key(&Uint8Array::from(record.as_slice()), &key)?;
            refs.put_with_key(&JsValue::from_str(&ref_of(at)), &key)?;
        }
        for name in &changes.deleted {
            let key = JsValue::from_str(name);
            heads.delete(&key)?;
            refs.delete(&key)?;
        }
        for loc in &changes.garbage {
            match loc {
                Loc::Object(name) => objects.delete(&JsValue::from_str(name))?,
                Loc::Blob(key) => blobs.delete(&JsValue::from_str(key))?,
            };
        }
        Ok(())
    })();
    if let Err(thrown) = requests {
        // Nothing is committed: undo the requests already made.
        let _ = tx.abort();
        let _ = done.await;
        return Err(e(thrown));
    }
    done.await.map(|_| ()).map_err(e)
}

/// Asks the browser to keep this origin's storage under storage pressure
/// (`navigator.storage.persist()`); `false` when it declines or cannot.
pub(crate) async fn persist() -> bool {
    let Some(window) = web_sys::window() else {
        return false;
    };
    let Ok(promise) = window.navigator().storage().persist() else {
        return false;
    };
    JsFuture::from(promise)
        .await
        .ok()
        .and_then(|v| v.as_bool())
        .unwrap_or(false)
}
