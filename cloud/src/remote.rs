//! The remote side: a slot's object under the player's prefix, read whole or by range, and
//! written with conditional puts, each call retried a bounded number of times with backoff;
//! and the probe that checks a store keeps those conditions before a sync trusts it.

use std::sync::Arc;
use std::time::Duration;

use object_store::path::Path;
use object_store::{
    GetOptions, GetRange, ObjectMeta, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload,
    UpdateVersion,
};

use savegame::slot::SlotId;
use savegame::{Error, Result, WriteCondition};

/// What a sync knows of a remote object: its ETag and version (what a conditional put names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Tag {
    pub(super) e_tag: Option<String>,
    pub(super) version: Option<String>,
}

impl Tag {
    /// Whether `self` and `other` name the same object version. ETags are compared without
    /// their quotes and weak marker: servers quote them in some answers and not in others.
    pub(super) fn same(&self, other: &Tag) -> bool {
        fn bare(tag: &Option<String>) -> Option<&str> {
            tag.as_deref()
                .map(|t| t.trim_start_matches("W/").trim_matches('"'))
        }
        bare(&self.e_tag) == bare(&other.e_tag) && self.version == other.version
    }

    fn of(meta: &ObjectMeta) -> Self {
        Tag {
            e_tag: meta.e_tag.clone(),
            version: meta.version.clone(),
        }
    }
}

/// How a put may replace the object.
pub(super) enum Expect {
    /// Only if there is no object (`If-None-Match: *`).
    Absent,
    /// Only if the object is still this one (`If-Match`).
    Still(Tag),
}

/// The player's folder in an object store.
#[derive(Debug)]
pub(super) struct Remote {
    pub(super) store: Arc<dyn ObjectStore>,
    pub(super) prefix: Path,
    /// How many times a call is tried before its error is returned (at least 1).
    pub(super) attempts: u32,
    /// The wait before the second try; doubled before each try after it.
    pub(super) backoff: Duration,
}

/// Whether an error of the store may pass on a second try (a network or server failure),
/// rather than being an answer (a precondition, a missing object, a refusal).
fn transient(e: &object_store::Error) -> bool {
    !matches!(
        e,
        object_store::Error::NotFound { .. }
            | object_store::Error::AlreadyExists { .. }
            | object_store::Error::Precondition { .. }
            | object_store::Error::NotModified { .. }
            | object_store::Error::NotSupported { .. }
            | object_store::Error::PermissionDenied { .. }
            | object_store::Error::Unauthenticated { .. }
            | object_store::Error::NotImplemented { .. }
            | object_store::Error::InvalidPath { .. }
    )
}

impl Remote {
    /// Where `slot`'s primary file lives in the store.
    pub(super) fn path(&self, slot: SlotId) -> Path {
        self.prefix.clone().join(slot.file_name().as_str())
    }

    /// The crate's error for the store's error `e` on `path`.
    pub(super) fn error(action: &'static str, path: &Path, e: object_store::Error) -> Error {
        Error::Cloud {
            action,
            object: path.to_string(),
            source: Box::new(e),
        }
    }

    /// Runs `call` until it succeeds, gives an answer that is not a transient failure, or has
    /// been tried `attempts` times, waiting with exponential backoff between tries.
    async fn retry<T, F, Fut>(&self, mut call: F) -> object_store::Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = object_store::Result<T>>,
    {
        let mut wait = self.backoff;
        let mut tries = 1;
        loop {
            match call().await {
                Err(e) if transient(&e) && tries < self.attempts.max(1) => {
                    tokio::time::sleep(wait).await;
                    wait = wait.saturating_mul(2);
                    tries += 1;
                }
                done => return done,
            }
        }
    }

    /// Every slot's primary object under the prefix, with its size and tag. Objects that are
    /// not a slot's primary file (backups, other tools' files) are left out. With `tags`,
    /// where the listing gives no ETag (some S3-compatible servers leave it out), each such
    /// object is asked for its own with a HEAD, concurrently; without, the tags may be empty
    /// (a load menu needs none).
    pub(super) async fn list(&self, tags: bool) -> Result<Vec<(SlotId, u64, Tag)>> {
        use futures_util::{StreamExt, TryStreamExt};
        let listed: Vec<ObjectMeta> = self
            .retry(|| self.store.list(Some(&self.prefix)).try_collect())
            .await
            .map_err(|e| Self::error("list", &self.prefix, e))?;
        let slots: Vec<(SlotId, u64, Tag)> = listed
            .iter()
            .filter_map(|meta| {
                let rest = meta.location.prefix_match(&self.prefix)?;
                let parts: Vec<_> = rest.collect();
                let [name] = parts.as_slice() else {
                    return None;
                };
                let slot = SlotId::from_file_name(name.as_ref())?;
                (slot != SlotId::Store).then(|| (slot, meta.size, Tag::of(meta)))
            })
            .collect();
        let mut slots: Vec<(SlotId, u64, Tag)> = futures_util::stream::iter(slots)
            .map(|(slot, size, tag)| async move {
                if !tags || tag.e_tag.is_some() || tag.version.is_some() {
                    return Ok::<_, Error>(Some((slot, size, tag)));
                }
                // Gone since the listing: left out, as if listed a moment later.
                Ok(self.head(slot).await?.map(|(size, tag)| (slot, size, tag)))
            })
            .buffered(16)
            .try_filter_map(|found| async move { Ok(found) })
            .try_collect()
            .await?;
        slots.sort_by_key(|(slot, ..)| *slot);
        Ok(slots)
    }

    /// The tag and size of `slot`'s object, or `None` when there is none.
    pub(super) async fn head(&self, slot: SlotId) -> Result<Option<(u64, Tag)>> {
        let path = self.path(slot);
        match self.retry(|| self.store.head(&path)).await {
            Ok(meta) => Ok(Some((meta.size, Tag::of(&meta)))),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(Self::error("head", &path, e)),
        }
    }

    /// The whole of `slot`'s object and its tag, refused over `limit` bytes before its body is
    /// read; `None` when there is none.
    pub(super) async fn get(&self, slot: SlotId, limit: u64) -> Result<Option<(Vec<u8>, Tag)>> {
        let path = self.path(slot);
        let got = self
            .retry(|| async {
                let got = self.store.get(&path).await?;
                let meta = got.meta.clone();
                if meta.size > limit {
                    return Ok(Err(meta.size));
                }
                let bytes = got.bytes().await?;
                Ok(Ok((bytes.to_vec(), Tag::of(&meta))))
            })
            .await;
        match got {
            Ok(Ok(found)) => Ok(Some(found)),
            Ok(Err(size)) => Err(Error::TooLarge {
                path: path.to_string().into(),
                size,
                limit,
            }),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(Self::error("download", &path, e)),
        }
    }

    /// The first `len` bytes of `slot`'s object (fewer if it is shorter), by a ranged GET.
    pub(super) async fn get_head(&self, slot: SlotId, len: u64) -> Result<Vec<u8>> {
        let path = self.path(slot);
        let options = || GetOptions {
            range: Some(GetRange::Bounded(0..len)),
            ..GetOptions::default()
        };
        self.retry(|| async {
            let got = self.store.get_opts(&path, options()).await?;
            got.bytes().await
        })
        .await
        .map(|b| b.to_vec())
        .map_err(|e| Self::error("read the header of", &path, e))
    }

    /// Puts `bytes` as `slot`'s object if it is as `expect` says: the new tag, or `None` when
    /// the object is not (another device wrote it since this one looked).
    pub(super) async fn put(
        &self,
        slot: SlotId,
        bytes: &[u8],
        expect: &Expect,
    ) -> Result<Option<Tag>> {
        let path = self.path(slot);
        let payload = PutPayload::from(bytes.to_vec());
        let options = || PutOptions {
            mode: match expect {
                Expect::Absent => PutMode::Create,
                Expect::Still(tag) => PutMode::Update(UpdateVersion {
                    e_tag: tag.e_tag.clone(),
                    version: tag.version.clone(),
                }),
            },
            ..PutOptions::default()
        };
        match self
            .retry(|| self.store.put_opts(&path, payload.clone(), options()))
            .await
        {
            Ok(put) => Ok(Some(Tag {
                e_tag: put.e_tag,
                version: put.version,
            })),
            Err(
                object_store::Error::Precondition { .. }
                | object_store::Error::AlreadyExists { .. },
            ) => Ok(None),
            Err(e) => Err(Self::error("upload", &path, e)),
        }
    }

    /// Checks that the store keeps the two conditions conditional puts rest on, with an
    /// object of its own under the prefix (`savegame-probe-<random>`, never a slot's name):
    /// it is created (`If-None-Match: *`), created again (must be refused), replaced naming
    /// its tag (must succeed), replaced naming the first tag again, now stale (must be
    /// refused), then deleted. Returns the condition the store let through, if any.
    ///
    /// Only a write that went through when it should not have counts against the store: a
    /// lost answer or a network failure is an [`Error::Cloud`], and the next sync probes again.
    ///
    /// # Errors
    /// [`Error::Cloud`] when a step fails for another reason (the network, the server, a store
    /// without conditional puts at all).
    pub(super) async fn probe(&self) -> Result<Option<WriteCondition>> {
        use std::hash::BuildHasher;
        let nonce = std::hash::RandomState::new()
            .hash_one((std::process::id(), std::time::SystemTime::now()));
        let path = self
            .prefix
            .clone()
            .join(format!("savegame-probe-{nonce:016x}").as_str());
        let outcome = self.probe_at(&path).await;
        // The probe object is litter either way; a failure to remove it costs nothing (it is
        // no slot's name, and a sync skips it).
        let _ = self.retry(|| self.store.delete(&path)).await;
        outcome
    }

    async fn probe_at(&self, path: &Path) -> Result<Option<WriteCondition>> {
        let failed = |e| Self::error("probe", path, e);
        let put = |body: &'static [u8], mode: PutMode| {
            let options = PutOptions {
                mode,
                ..PutOptions::default()
            };
            self.retry(move || {
                self.store
                    .put_opts(path, PutPayload::from_static(body), options.clone())
            })
        };
        let update = |tag: &object_store::PutResult| {
            PutMode::Update(UpdateVersion {
                e_tag: tag.e_tag.clone(),
                version: tag.version.clone(),
            })
        };
        // Each body differs from the others, so each version has a tag of its own (S3's ETag
        // of a small object is its MD5).
        let first = put(b"savegame probe 1", PutMode::Create)
            .await
            .map_err(failed)?;
        match put(b"savegame probe 2", PutMode::Create).await {
            Ok(_) => return Ok(Some(WriteCondition::CreateIfAbsent)),
            Err(object_store::Error::AlreadyExists { .. }) => {}
            Err(e) => return Err(failed(e)),
        }
        put(b"savegame probe 3", update(&first))
            .await
            .map_err(failed)?;
        match put(b"savegame probe 4", update(&first)).await {
            Ok(_) => Ok(Some(WriteCondition::ReplaceIfMatch)),
            Err(object_store::Error::Precondition { .. }) => Ok(None),
            Err(e) => Err(failed(e)),
        }
    }
}
