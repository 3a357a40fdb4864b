//! Cloud saves for [`savegame`]: the same slots on every device, through an object store, with
//! conflicts caught and disjoint changes merged.
//!
//! A crate of its own, beside `savegame-web` and `savegame-bevy`: a game without cloud saves
//! builds none of its network stack (object_store, tokio). It is built on the manager's public
//! sync seam ([`FileStamp`](savegame::FileStamp), [`SaveLoadManager::check_file`], [`SaveLoadManager::seal_next`],
//! [`SaveLoadManager::replace_if_unchanged`], [`SaveLoadManager::keep_as_backup`]), the same one
//! a game's own sync (Steam Cloud, a console's save API) would use.
//!
//! The game saves locally as always, through its [`SaveLoadManager`]; a [`CloudSync`] over that
//! manager and an [`ObjectStore`] (S3 or an S3-compatible store through [`S3`], or any
//! `object_store` backend: GCS, Azure, local files, memory) then pushes and pulls each slot:
//!
//! - **Objects.** Each slot's primary file is one object, `<prefix>/slot-003.sav`, under a
//!   prefix of the player's (`players/<id>`). The bytes are uploaded exactly as they are on
//!   disk, sealed: the key never leaves the device. A slot with incremental saves is compacted
//!   into one file first. The key-value store is not synced.
//! - **Conditional writes.** A new slot is created with `If-None-Match: *`
//!   ([`PutMode::Create`](object_store::PutMode::Create)), a known one replaced with
//!   `If-Match` on the ETag this device last saw
//!   ([`PutMode::Update`](object_store::PutMode::Update)): two devices never overwrite each
//!   other unseen. What the device last saw is kept beside the slot, in its record
//!   ([`synced_name`](savegame::slot::synced_name)): the object's ETag and version, and a copy of
//!   the file, the common ancestor of the next merge.
//! - **Stores that ignore the conditions are refused.** Before a sync first trusts a store, it
//!   probes it once with an object of its own under the prefix: a create over an existing
//!   object and a replace naming a stale ETag must both be refused. A store that lets either
//!   through (a proxy that strips the headers, a server without conditional writes) fails
//!   every sync with [`Error::ConditionIgnored`], which names the condition, and nothing is
//!   synced. A store that passed is remembered per store and prefix in the device's trust
//!   record (`cloud.synced` in the manager's storage); [`CloudBuilder::probe`] skips the probe
//!   for a store known to be good.
//! - **Both changed.** When the local save and the remote one both changed since the last
//!   sync, the mementos are compared with the ancestor's, one by one
//!   ([`merge`](self#the-merge)). Changes to different mementos are merged into a new save,
//!   sealed as the manager seals a save, uploaded, and put in place here only once the cloud
//!   took it ([`SlotSync::Merged`]). The same memento changed on both sides is a
//!   [`Conflict`], with both versions' label, playtime, saved-at and device for a "which save
//!   do you keep?" dialog; nothing is overwritten until [`CloudSync::resolve`] picks one, and
//!   the other is kept as the slot's newest backup (for [`Keep::Local`], before the upload).
//!   Nothing is ever deleted.
//! - **Checked downloads.** A downloaded object passes every check a load makes, the
//!   manager's own (CRC, header, the protection the manager's key asks for, decryption or
//!   tag, its slot, its schema version), before it replaces anything, and is refused with the
//!   same errors as a damaged local file ([`Error::ChecksumMismatch`], [`Error::Decrypt`],
//!   [`Error::NotEncrypted`], [`Error::SlotMismatch`], ...). A save stamped by another
//!   player's sync ([`OWNER_FIELD`]) is [`Error::ForeignSave`]. The local save it would have
//!   replaced becomes its newest backup when it does.
//! - **Failure is normal.** Each call to the store is tried a bounded number of times with
//!   exponential backoff ([`CloudBuilder::attempts`]); what still fails is reported per slot
//!   in [`SyncReport::failed`] as [`Error::Cloud`]. A put is one request (S3 makes it visible
//!   whole or not at all), so an upload cut off leaves the remote object as it was, and the
//!   local save is never touched by a failed step. The next sync resumes.
//! - **Lost answers and kills.** Before each upload the record names the file going up (and,
//!   for a merge, the local save it was made from). A device whose PUT landed but whose answer
//!   was lost, or that was killed before it heard, knows the object for its own at the next
//!   sync however much it saved since: its later saves are pushed over it, or a merge it never
//!   put in place is installed (or merged with the saves the game made since, against the save
//!   it was made from). It never conflicts with itself. A file from the cloud is named in the
//!   record before it replaces the local one, so a device killed between the two takes it
//!   for the cloud's version at the next sync, not for a change of its own. A settled
//!   conflict's copy is removed by the next sync that finds the slot settled, the declined
//!   version kept as a backup.
//! - **Off the game thread.** [`sync`](CloudSync::sync) blocks on the network: call it from a
//!   loading screen's thread, or use [`sync_in_background`](CloudSync::sync_in_background),
//!   or [`CloudBuilder::sync_after_save`] with [`CloudSync::save`]: a worker thread of the
//!   sync's own does it. A small tokio runtime owned by the sync drives the requests.
//! - **A cloud load menu.** [`CloudSync::remote_slots`] lists the slots in the cloud from a
//!   ranged GET of each object's first 4 KiB: label, playtime and saved-at without
//!   downloading whole saves.
//!
//! # The merge
//!
//! For each memento id, with its bytes and version in the ancestor (`a`), the local save (`l`)
//! and the remote save (`r`): if `l == r` it is kept; if `l == a` the remote change is taken;
//! if `r == a` the local one; otherwise both changed it and the slot is a conflict. A memento
//! added or removed on one side is a change like any other. The merged save's metadata is the
//! newer side's (by saved-at) with the longer playtime of the two, and this device's name as
//! its device; its generation is the local one plus one, and its saved-at the time of the
//! merge. Both sides must be in the same codec and at the same schema version (else it is a
//! conflict that says why).
//!
//! # Limits
//!
//! - Deletions do not sync: a slot deleted on one device comes back from the cloud.
//! - Only primary files are objects; backups stay on each device.
//! - The device and owner of a save are user fields of its metadata ([`DEVICE_FIELD`],
//!   [`OWNER_FIELD`]), stamped by [`CloudSync::snapshot`] and [`CloudSync::stamp`]; a save
//!   written without them shows no device, and a foreign file without an owner field cannot
//!   be told from the player's own (give each player a key of their own to make it fail to
//!   decrypt instead).
//! - A save is uploaded in one PUT (S3 takes up to 5 GiB in one); the whole file is held in
//!   memory while it moves. Each upload and install also rewrites the slot's record (with the
//!   last synced file in it) once more before it starts.
//! - A device killed after a pull replaced its save and before its record was written, whose
//!   game then saved before the next sync, merges that save against the older record: a
//!   memento both the pulled save and the new one changed is reported as a conflict (never
//!   merged wrongly).
//!
//! ```no_run
//! use std::sync::Arc;
//! use savegame_cloud::{CloudSync, S3};
//! use savegame::{SaveLoadManager, SlotId};
//!
//! # fn main() -> savegame::Result<()> {
//! let manager = Arc::new(SaveLoadManager::builder().app("com", "Studio", "Game").build()?);
//! let store = S3::new("game-saves")
//!     .region("eu-west-1")
//!     .credentials("AKIA...", "secret")
//!     .build()?;
//! let cloud = CloudSync::builder(Arc::clone(&manager), store)
//!     .prefix("players/4242")
//!     .device("Steam Deck")
//!     .build()?;
//!
//! let report = cloud.sync()?; // on a loading screen's thread, not the game's
//! for conflict in &report.conflicts {
//!     println!("{}: here {:?}, in the cloud {:?}", conflict.slot, conflict.local, conflict.remote);
//! }
//! let mut snapshot = cloud.snapshot().with_label("Chapter 2");
//! snapshot.capture_memento("score", &1200u32)?;
//! cloud.save(SlotId::Numbered(1), &snapshot)?;
//! # Ok(())
//! # }
//! ```

mod merge;
mod record;
mod remote;
mod report;
mod s3;
mod slot_sync;
mod worker;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

pub use merge::{DEVICE_FIELD, OWNER_FIELD};
/// The `object_store` crate this feature is built on, for stores of your own.
pub use object_store;
use object_store::ObjectStore;
use object_store::path::Path;
pub use report::{Conflict, Merged, RemoteSlot, SlotSync, SyncReport, Version};
pub use s3::S3;
pub use savegame::WriteCondition;
pub use worker::SyncHandle;

use self::remote::Remote;
use savegame::Snapshot;
use savegame::format::{self, Header};
use savegame::slot::{SlotFile, SlotId};
use savegame::{Error, Result};
use savegame::{SaveLoadManager, SaveReport};

/// How many times a slot's sync starts over when the other side changed under it (a put
/// refused because another device wrote first, a save by the game during the sync).
const ROUNDS: usize = 3;
/// How much of an object a cloud load menu reads: the fixed header and, usually, all of the
/// metadata (as the local load menu does).
const HEAD_READ: u64 = 4096;

/// Which side a [`CloudSync::resolve`] keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Keep {
    /// This device's save: it is uploaded over the remote one, which becomes the slot's newest
    /// local backup.
    Local,
    /// The cloud's save: it replaces the local one, which becomes the slot's newest backup.
    Remote,
}

/// Builds a [`CloudSync`]; see [`CloudSync::builder`].
#[derive(Debug)]
#[must_use]
pub struct CloudBuilder {
    manager: Arc<SaveLoadManager>,
    store: Arc<dyn ObjectStore>,
    prefix: String,
    device: String,
    attempts: u32,
    backoff: Duration,
    sync_after_save: bool,
    probe: bool,
}

impl CloudBuilder {
    /// The player's folder in the store, such as `players/4242` (required). Every slot is an
    /// object under it, and it is the owner stamped on saves ([`OWNER_FIELD`]).
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// This device's name, shown in conflicts ([`Version::device`]). Default: the host name
    /// where the platform says it, else `"unknown device"`.
    pub fn device(mut self, device: impl Into<String>) -> Self {
        self.device = device.into();
        self
    }

    /// How many times each request is tried before its failure is reported (default 4, at
    /// least 1), on top of the store client's own retries ([`S3`] keeps those short).
    pub fn attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts.max(1);
        self
    }

    /// The wait before a request's second try, doubled before each try after it (default
    /// 200 ms).
    pub fn backoff(mut self, first: Duration) -> Self {
        self.backoff = first;
        self
    }

    /// Sync a slot on the sync's worker thread after each [`CloudSync::save`] to it (default
    /// off). The results are kept for [`CloudSync::take_background_reports`].
    pub fn sync_after_save(mut self, on: bool) -> Self {
        self.sync_after_save = on;
        self
    }

    /// Probe the store before the first sync trusts it (default on): a create over an existing
    /// object and a replace naming a stale tag must both be refused, or every sync fails with
    /// [`Error::ConditionIgnored`] and nothing is synced. The probe writes, rewrites and
    /// deletes one small object under the prefix (five requests), once per store and prefix:
    /// a store that passed is named in the device's trust record, `cloud.synced` in the
    /// manager's storage. `false` skips it, for a store known to keep conditional writes
    /// (AWS S3, R2, GCS, Azure through `object_store`).
    pub fn probe(mut self, on: bool) -> Self {
        self.probe = on;
        self
    }

    /// Builds the sync, with its runtime and its worker thread.
    ///
    /// # Errors
    /// [`Error::Config`] when the prefix is missing or not a valid object path, or the runtime
    /// or the worker thread cannot be started.
    pub fn build(self) -> Result<CloudSync> {
        let config = |reason: String| Error::Config { reason };
        let prefix = Path::parse(self.prefix.trim_matches('/'))
            .map_err(|e| config(format!("the cloud prefix {:?}: {e}", self.prefix)))?;
        if prefix.as_ref().is_empty() {
            return Err(config("a cloud sync needs a prefix of the player's".into()));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("savegame-cloud")
            .enable_all()
            .build()
            .map_err(|e| config(format!("could not start the cloud runtime: {e}")))?;
        let inner = Arc::new(Inner {
            manager: self.manager,
            remote: Remote {
                store: self.store,
                prefix,
                attempts: self.attempts,
                backoff: self.backoff,
            },
            owner: self.prefix.trim_matches('/').to_owned(),
            device: self.device,
            runtime,
            syncing: Mutex::new(()),
            probe: self.probe,
            trusted: AtomicBool::new(false),
        });
        let worker = worker::Worker::start(Arc::clone(&inner))?;
        Ok(CloudSync {
            inner,
            worker,
            sync_after_save: self.sync_after_save,
        })
    }
}

/// Syncs a [`SaveLoadManager`]'s slots with an object store; see the [crate docs](crate).
///
/// `Send + Sync`. Dropping it waits for the background sync in progress, if any.
#[derive(Debug)]
pub struct CloudSync {
    inner: Arc<Inner>,
    worker: worker::Worker,
    sync_after_save: bool,
}

/// What the game thread and the worker share.
#[derive(Debug)]
pub(crate) struct Inner {
    manager: Arc<SaveLoadManager>,
    remote: Remote,
    owner: String,
    device: String,
    runtime: tokio::runtime::Runtime,
    /// Held by each sync: one at a time, so two never race each other over a slot's record.
    syncing: Mutex<()>,
    /// Whether the store is probed before it is trusted ([`CloudBuilder::probe`]).
    probe: bool,
    /// Whether it was found (or said) to keep conditional writes.
    trusted: AtomicBool,
}

impl CloudSync {
    /// A builder for a sync of `manager`'s slots through `store`. A prefix is required.
    pub fn builder(manager: Arc<SaveLoadManager>, store: Arc<dyn ObjectStore>) -> CloudBuilder {
        CloudBuilder {
            manager,
            store,
            prefix: String::new(),
            device: default_device(),
            attempts: 4,
            backoff: Duration::from_millis(200),
            sync_after_save: false,
            probe: true,
        }
    }

    /// The manager whose slots this syncs.
    #[must_use]
    pub fn manager(&self) -> &Arc<SaveLoadManager> {
        &self.inner.manager
    }

    /// An empty snapshot of the manager's, stamped with this device and owner
    /// ([`stamp`](Self::stamp)).
    #[must_use]
    pub fn snapshot(&self) -> Snapshot {
        let mut snapshot = self.inner.manager.snapshot();
        self.stamp(&mut snapshot);
        snapshot
    }

    /// Writes this device's name and the owner (the prefix) into `snapshot`'s user fields
    /// ([`DEVICE_FIELD`], [`OWNER_FIELD`]): what a conflict shows as the device, and what a sync
    /// checks to refuse another player's save.
    pub fn stamp(&self, snapshot: &mut Snapshot) {
        let user = &mut snapshot.metadata_mut().user;
        user.insert(DEVICE_FIELD.to_owned(), self.inner.device.clone());
        user.insert(OWNER_FIELD.to_owned(), self.inner.owner.clone());
    }

    /// Saves `snapshot` to `slot` through the manager ([`SaveLoadManager::save`]), and, with
    /// [`CloudBuilder::sync_after_save`], queues a sync of the slot on the worker thread.
    ///
    /// # Errors
    /// As for [`SaveLoadManager::save`]; the sync's own outcome goes to
    /// [`take_background_reports`](Self::take_background_reports).
    pub fn save(&self, slot: SlotId, snapshot: &Snapshot) -> Result<SaveReport> {
        let saved = self.inner.manager.save(slot, snapshot)?;
        if self.sync_after_save {
            self.worker.queue(Some(slot));
        }
        Ok(saved)
    }

    /// Syncs every slot: those of the manager's storage and those in the cloud. Blocks on the
    /// network; not for the game thread.
    ///
    /// # Errors
    /// [`Error::Cloud`] when the remote folder cannot be listed (or the store's probe failed
    /// on the network), [`Error::Io`] when the local one cannot;
    /// [`Error::ConditionIgnored`] when the store ignores a condition of conditional writes
    /// ([`CloudBuilder::probe`]), and then nothing was synced. Failures of single slots are in
    /// [`SyncReport::failed`].
    pub fn sync(&self) -> Result<SyncReport> {
        self.inner.sync(None)
    }

    /// Syncs one slot. Blocks on the network; not for the game thread.
    ///
    /// # Errors
    /// As for one slot of [`sync`](Self::sync): [`Error::Cloud`] for the network and the
    /// server, the load errors for a damaged remote save, [`Error::ForeignSave`];
    /// [`Error::ConditionIgnored`] as for [`sync`](Self::sync).
    pub fn sync_slot(&self, slot: SlotId) -> Result<SlotSync> {
        self.inner.sync_slot(slot)
    }

    /// Runs [`sync`](Self::sync) on the sync's worker thread, and returns at once.
    pub fn sync_in_background(&self) -> SyncHandle {
        self.worker.run()
    }

    /// The reports of the syncs [`CloudBuilder::sync_after_save`] ran since the last call.
    #[must_use]
    pub fn take_background_reports(&self) -> Vec<Result<SyncReport>> {
        self.worker.take_reports()
    }

    /// Waits until the worker thread has nothing left to do.
    pub fn wait_idle(&self) {
        self.worker.wait_idle();
    }

    /// The slots in the cloud, for a cloud load menu: each from a ranged GET of its object's
    /// first 4 KiB (more only for metadata larger than that), run concurrently. Blocks on the
    /// network.
    ///
    /// # Errors
    /// [`Error::Cloud`] when the folder cannot be listed; a slot whose header cannot be read
    /// is listed with its [`problem`](RemoteSlot::problem).
    pub fn remote_slots(&self) -> Result<Vec<RemoteSlot>> {
        use futures_util::StreamExt;
        let remote = &self.inner.remote;
        self.inner.block_on(async {
            let listed = remote.list(false).await?;
            let heads = futures_util::stream::iter(listed)
                .map(|(slot, size, _)| async move {
                    let header = read_remote_header(remote, slot, size).await;
                    let (header, problem) = match header {
                        Ok(h) => (Some(h), None),
                        Err(e) => (None, Some(e.to_string())),
                    };
                    RemoteSlot {
                        slot,
                        size,
                        header,
                        problem,
                    }
                })
                .buffered(16)
                .collect::<Vec<_>>()
                .await;
            Ok(heads)
        })
    }

    /// Settles a slot left in [`Conflict`] by the last sync: keeps one side, uploads or
    /// installs it, and keeps the other as the slot's newest local backup. For
    /// [`Keep::Local`] the cloud's version becomes the backup before the upload, so a resolve
    /// killed at any point has kept it; the next sync finishes what a killed resolve began.
    ///
    /// # Errors
    /// [`Error::SlotEmpty`] when the slot has no conflict to settle (or, for [`Keep::Local`],
    /// no local save); [`Error::Cloud`] when the upload fails, or the cloud's save changed again
    /// since the conflict (sync again); the load errors when a file is damaged;
    /// [`Error::ConditionIgnored`] as for [`sync`](Self::sync).
    pub fn resolve(&self, slot: SlotId, keep: Keep) -> Result<SlotSync> {
        self.inner.resolve(slot, keep)
    }
}

/// Reads and parses the header of a remote slot from the first bytes of its object.
async fn read_remote_header(remote: &Remote, slot: SlotId, size: u64) -> Result<Header> {
    let head = remote.get_head(slot, HEAD_READ.min(size)).await?;
    let needed = format::header_len(&head)?;
    let head = if needed > head.len() && needed as u64 <= size {
        remote.get_head(slot, needed as u64).await?
    } else {
        head
    };
    format::parse_header(&head, Some(size))
}

fn lock(m: &Mutex<()>) -> std::sync::MutexGuard<'_, ()> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The host name, where the environment names it.
fn default_device() -> String {
    ["HOSTNAME", "COMPUTERNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|n| !n.is_empty()))
        .unwrap_or_else(|| "unknown device".to_owned())
}

impl Inner {
    fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.runtime.block_on(f)
    }

    fn storage(&self) -> &dyn savegame::storage::Storage {
        self.manager.storage()
    }

    fn io(&self, name: &str) -> impl FnOnce(std::io::Error) -> Error + '_ {
        let path = self.storage().locate(name);
        move |e| Error::io(path, e)
    }

    /// Makes sure the store keeps conditional writes before anything is synced through it:
    /// once per store and prefix, remembered in the trust record; skipped when the builder
    /// said so ([`CloudBuilder::probe`]).
    fn trust(&self) -> Result<()> {
        if !self.probe || self.trusted.load(Ordering::SeqCst) {
            return Ok(());
        }
        let entry = (
            self.remote.store.to_string(),
            self.remote.prefix.to_string(),
        );
        let name = record::TRUST_NAME;
        let known = self
            .storage()
            .read(name, record::MAX_TRUST)
            .map_err(self.io(name))?;
        let mut entries = known.map(|b| record::trusted(&b)).unwrap_or_default();
        if !entries.contains(&entry) {
            if let Some(condition) = self.block_on(self.remote.probe())? {
                let (store, prefix) = entry;
                return Err(Error::ConditionIgnored {
                    store,
                    prefix,
                    condition,
                });
            }
            entries.push(entry);
            if let Some(bytes) = record::encode_trusted(&entries) {
                self.storage().put(name, &bytes).map_err(self.io(name))?;
            }
        }
        self.trusted.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// Syncs `only` that slot, or every slot.
    pub(crate) fn sync(&self, only: Option<SlotId>) -> Result<SyncReport> {
        let _one = lock(&self.syncing);
        self.trust()?;
        let mut report = SyncReport::default();
        let remote = self.block_on(self.remote.list(true))?;
        let listing = self.storage().list().map_err(self.io(""))?;
        let mut slots: Vec<SlotId> = listing
            .iter()
            .filter_map(|f| match SlotFile::parse(&f.name) {
                Some(SlotFile::Primary(slot) | SlotFile::Synced(slot)) => Some(slot),
                _ => None,
            })
            .chain(remote.iter().map(|(slot, ..)| *slot))
            .filter(|slot| *slot != SlotId::Store && only.is_none_or(|o| o == *slot))
            .collect();
        slots.sort_unstable();
        slots.dedup();
        for slot in slots {
            let tag = remote
                .iter()
                .find(|(s, ..)| *s == slot)
                .map(|(_, size, tag)| (*size, tag.clone()));
            let outcome = self.sync_one(slot, tag);
            report.add(slot, outcome);
        }
        Ok(report)
    }
}

/// The guide's cloud chapter, whose code blocks run as doctests here.
#[cfg(doctest)]
#[doc = include_str!("../../docs/guide/cloud.md")]
pub struct GuideDoctests;
