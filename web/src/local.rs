//! localStorage: a synchronous [`Storage`] for small saves.

use std::io;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use savegame::storage::{Head, Storage, StoredFile, too_large};
use wasm_bindgen::JsCast;
use web_sys::DomException;

use crate::error::QuotaExceeded;

/// Saves in the page's `localStorage`, each object one item whose value is its bytes in
/// base64, under the key `<namespace>/<name>`.
///
/// localStorage is synchronous, so this is a plain [`Storage`]: build a manager on it with
/// [`ManagerBuilder::storage`](savegame::ManagerBuilder::storage) and use the manager as on a
/// desktop. Each item is replaced atomically (`setItem` stores the new value whole or throws
/// and leaves the old one), which is the promise a put makes.
///
/// # When to use it, and its limits
///
/// - **Small saves only.** Browsers give an origin about 5 MB of localStorage (Chromium: 5
///   million UTF-16 characters, shared by every key of the origin), and base64 takes 4
///   characters for 3 bytes; every save also keeps its backups and a staged copy. A put that
///   does not fit fails with an I/O error of kind
///   [`StorageFull`](io::ErrorKind::StorageFull) carrying a [`QuotaExceeded`]
///   ([`is_quota_exceeded`](crate::is_quota_exceeded) tells), and the previous save is
///   untouched. Use [`IndexedDbSaves`](crate::IndexedDbSaves) for anything bigger.
/// - **Every read is whole.** `getItem` returns the whole value, so a load menu reads every
///   save (it decodes only the header's bytes).
/// - **Durable means: visible to this and every other tab of the origin at once, and written
///   to disk by the browser shortly after** (there is no fsync; Chromium batches writes for up
///   to a few seconds). A browser crash in that moment can lose the newest save; the previous
///   one is then what loads.
/// - **The main thread only.** Workers have no localStorage: there every call fails.
#[derive(Debug, Clone)]
pub struct LocalStorage {
    prefix: String,
}

impl LocalStorage {
    /// Saves under `namespace` (one per game: two games on one origin must not share it).
    #[must_use]
    pub fn new(namespace: &str) -> Self {
        LocalStorage {
            prefix: format!("{namespace}/"),
        }
    }

    fn key(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    fn storage() -> io::Result<web_sys::Storage> {
        let unavailable = |why: &str| {
            io::Error::new(
                io::ErrorKind::Unsupported,
                format!("localStorage is unavailable: {why}"),
            )
        };
        let window = web_sys::window().ok_or_else(|| unavailable("no window"))?;
        match window.local_storage() {
            Ok(Some(storage)) => Ok(storage),
            Ok(None) => Err(unavailable("this browser has none")),
            Err(_) => Err(unavailable(
                "access denied (storage disabled for this site?)",
            )),
        }
    }

    fn get(&self, name: &str) -> io::Result<Option<String>> {
        Self::storage()?
            .get_item(&self.key(name))
            .map_err(|e| js_error("reading", &e))
    }
}

/// The decoded length of a base64 value, from its length alone.
fn decoded_len(encoded: &str) -> u64 {
    let padding = encoded.bytes().rev().take_while(|&b| b == b'=').count();
    (encoded.len() / 4 * 3).saturating_sub(padding) as u64
}

fn decode(name: &str, encoded: &str) -> io::Result<Vec<u8>> {
    STANDARD.decode(encoded).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{name}: the stored value is not base64 ({e})"),
        )
    })
}

fn js_error(what: &str, thrown: &wasm_bindgen::JsValue) -> io::Error {
    let detail = thrown
        .dyn_ref::<DomException>()
        .map(|e| format!("{}: {}", e.name(), e.message()))
        .unwrap_or_else(|| format!("{thrown:?}"));
    io::Error::other(format!("localStorage {what} failed: {detail}"))
}

impl Storage for LocalStorage {
    fn read(&self, name: &str, limit: u64) -> io::Result<Option<Vec<u8>>> {
        let Some(encoded) = self.get(name)? else {
            return Ok(None);
        };
        let len = decoded_len(&encoded);
        if len > limit {
            return Err(too_large(len));
        }
        decode(name, &encoded).map(Some)
    }

    fn put(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let encoded = STANDARD.encode(bytes);
        match Self::storage()?.set_item(&self.key(name), &encoded) {
            Ok(()) => Ok(()),
            Err(e) => {
                let quota = e
                    .dyn_ref::<DomException>()
                    .is_some_and(|d| d.name() == "QuotaExceededError");
                if quota {
                    Err(QuotaExceeded {
                        name: name.to_owned(),
                        bytes: encoded.len() as u64,
                    }
                    .into_io())
                } else {
                    Err(js_error("writing", &e))
                }
            }
        }
    }

    fn delete(&self, name: &str) -> io::Result<()> {
        Self::storage()?
            .remove_item(&self.key(name))
            .map_err(|e| js_error("deleting", &e))
    }

    fn list(&self) -> io::Result<Vec<StoredFile>> {
        let storage = Self::storage()?;
        let count = storage.length().map_err(|e| js_error("listing", &e))?;
        let mut out = Vec::new();
        for i in 0..count {
            let Ok(Some(key)) = storage.key(i) else {
                continue;
            };
            let Some(name) = key.strip_prefix(&self.prefix) else {
                continue;
            };
            if let Ok(Some(value)) = storage.get_item(&key) {
                out.push(StoredFile {
                    name: name.to_owned(),
                    len: decoded_len(&value),
                });
            }
        }
        Ok(out)
    }

    /// Decodes only the characters that hold the range asked for.
    fn read_at(&self, name: &str, offset: u64, len: usize) -> io::Result<Option<Head>> {
        let Some(encoded) = self.get(name)? else {
            return Ok(None);
        };
        let file_len = decoded_len(&encoded);
        let start = offset.min(file_len);
        let end = start.saturating_add(len as u64).min(file_len);
        // Whole groups of 4 characters hold whole groups of 3 bytes.
        let first_group = (start / 3) as usize;
        let last_group = end.div_ceil(3) as usize;
        let chars = encoded
            .get(first_group * 4..(last_group * 4).min(encoded.len()))
            .unwrap_or("");
        let decoded = decode(name, chars)?;
        let skip = (start - first_group as u64 * 3) as usize;
        let take = (end - start) as usize;
        let bytes = decoded
            .get(skip..skip + take)
            .map(<[u8]>::to_vec)
            .unwrap_or_default();
        Ok(Some(Head { bytes, file_len }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoded_len_is_exact_for_every_padding() {
        for n in 0..10 {
            let encoded = STANDARD.encode(vec![0u8; n]);
            assert_eq!(decoded_len(&encoded), n as u64);
        }
    }
}
