//! Saves in IndexedDB, with an async API whose `Ok` means committed.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use savegame::storage::Storage as _;
use savegame::{Loaded, ManagerBuilder, SaveLoadManager, SaveReport, SlotId, SlotInfo, Snapshot};
use web_sys::IdbDatabase;

use crate::error::Result;
use crate::idb;
use crate::worker::SaveWorker;
use crate::working::{Loc, WorkingSet};

/// How many times an operation is run again after fetching objects it wanted and that were not
/// loaded: each run fetches at least one more object, so this bounds a run over many slots.
const MAX_RUNS: usize = 64;

/// Which objects an operation is known to read whole, fetched before it runs (any other it
/// reads is fetched when it asks, and the operation run again).
#[derive(Debug, Clone, Copy)]
enum Needs {
    /// Headers only: served from the head records.
    Heads,
    /// The objects of one slot that a save or a load reads whole: its file, journal and
    /// staged copies. Not its backups: a load reads one only when the file is damaged, and a
    /// save moves them without reading them, so each would be 10 MB fetched for nothing in
    /// a 10 MB world (one that is read after all is fetched then, and the call run again).
    Slot(SlotId),
}

impl Needs {
    fn wants(self, name: &str) -> bool {
        match self {
            Needs::Heads => false,
            Needs::Slot(slot) => {
                name.starts_with(&slot.file_name())
                    && savegame::slot::parse_backup_name(name).is_none()
            }
        }
    }
}

/// Saves in the browser's IndexedDB: a [`SaveLoadManager`]'s whole policy (backups and
/// fallback, incremental saves, migrations, the load menu), with async calls.
///
/// ```no_run
/// # async fn run() -> savegame_web::Result<()> {
/// use savegame::{SaveLoadManager, SlotId};
/// let saves = savegame_web::IndexedDbSaves::open("my-game", SaveLoadManager::builder()).await?;
/// let mut snapshot = saves.manager().snapshot();
/// snapshot.capture_memento("score", &42u32)?;
/// saves.save(SlotId::Numbered(1), &snapshot).await?; // committed to IndexedDB
/// let menu = saves.list().await?;                     // labels and times, from head records
/// let loaded = saves.load(SlotId::Numbered(1)).await?;
/// assert_eq!(loaded.snapshot.memento::<u32>("score")?, 42);
/// # Ok(()) }
/// ```
///
/// # Design
///
/// IndexedDB is asynchronous; the manager's [`Storage`](savegame::storage::Storage) is not,
/// and a page cannot block on a promise. So each call here:
///
/// 1. reads the database's head records (each object's length and first bytes), and the whole
///    bytes of the objects the call reads (the slot's file, backups and journal);
/// 2. runs the manager's synchronous code against those bytes in memory, which records every
///    object it puts or deletes (an object it wanted and that was not loaded is fetched, and
///    the call run again from the start);
/// 3. commits every change in **one** readwrite transaction (`durability: "strict"`), and
///    returns `Ok` only once the browser reports it complete.
///
/// A save with its backup rotation is therefore atomic as a whole: the new save and the moved
/// backups are all in the database, or (after an error, a quota refusal, a tab closed before
/// the transaction completed) none of it is, and the previous save is as it was. The next call
/// reads the database again, so a save made by another tab is seen by the next load here.
///
/// Calls on one `IndexedDbSaves` take turns: a save waits for the call before it to finish.
/// Two tabs saving the same slot at the same moment are not serialized (the later commit wins,
/// whole); a game that can run in two tabs should save from one.
///
/// # Durable, in a browser
///
/// There is no fsync. `Ok` from [`save`](Self::save) means the transaction completed with
/// strict durability: Chromium and Firefox flush it to disk before reporting completion, so
/// it survives the tab, the browser or the machine going down after that. It does not survive
/// the player clearing the site's data, or the browser evicting the origin under storage
/// pressure (call [`persist`](Self::persist) to ask it not to).
#[derive(Debug)]
pub struct IndexedDbSaves {
    db: IdbDatabase,
    working: Arc<WorkingSet>,
    manager: SaveLoadManager,
    turns: Turns,
    bytes_read: Cell<u64>,
    worker: Option<SaveWorker>,
}

impl IndexedDbSaves {
    /// Opens (creating if needed) the database `name` of this origin, and builds `builder`'s
    /// manager over it (the builder's codec, key, schema version, migrations, backups...; its
    /// storage or folder is replaced).
    ///
    /// # Errors
    /// [`Error::Unavailable`](crate::Error::Unavailable) when the page has no IndexedDB (some
    /// private modes, a worker without it); the browser's error when the database cannot be
    /// opened; the builder's error.
    pub async fn open(name: &str, builder: ManagerBuilder) -> Result<Self> {
        let db = idb::open(name).await?;
        let working = Arc::new(WorkingSet::default());
        let manager = builder.storage(Arc::clone(&working)).build()?;
        Ok(IndexedDbSaves {
            db,
            working,
            manager,
            turns: Turns::default(),
            bytes_read: Cell::new(0),
            worker: None,
        })
    }

    /// Saves (and autosaves) through `worker` from now on: encoded, sealed and committed in
    /// the worker, off the page's thread (see [`SaveWorker`]). Loads, the load menu and every
    /// other call stay on the page; they take turns with the saves as before, so a load after
    /// a save sees it. The worker must serve a manager built as this one is.
    #[must_use]
    pub fn with_worker(mut self, worker: SaveWorker) -> Self {
        self.worker = Some(worker);
        self
    }

    /// The manager: for [`snapshot`](SaveLoadManager::snapshot) and the settings. Its own
    /// saving and loading methods see only what the last call here loaded, and what they write
    /// is not stored: save, load and list through this type, or through [`run`](Self::run).
    #[must_use]
    pub fn manager(&self) -> &SaveLoadManager {
        &self.manager
    }

    /// Saves `snapshot` to `slot`, as [`SaveLoadManager::save`] does (backups, generations,
    /// the pre-migration copy), and returns once the save is committed to IndexedDB.
    ///
    /// # Errors
    /// The manager's error; [`Error::QuotaExceeded`](crate::Error::QuotaExceeded) when the
    /// origin's quota refuses it; the browser's error. In every case nothing was written and
    /// the previous save loads as before.
    ///
    /// With a [`SaveWorker`] attached, the mementos are encoded on the page in slices (see
    /// [`with_worker`](Self::with_worker)) and the rest is done by the worker; the errors are
    /// the same, and [`Error::Worker`](crate::Error::Worker) when the worker itself failed.
    pub async fn save(&self, slot: SlotId, snapshot: &Snapshot) -> Result<SaveReport> {
        if let Some(worker) = &self.worker {
            let _turn = self.turns.take().await;
            return worker
                .save(
                    self.db.name(),
                    Some(slot.file_name()),
                    &self.manager,
                    snapshot,
                )
                .await;
        }
        self.transact(Needs::Slot(slot), |m| m.save(slot, snapshot))
            .await
    }

    /// Saves `snapshot` to the autosave rotation, as [`SaveLoadManager::autosave`] does.
    ///
    /// # Errors
    /// As for [`save`](Self::save).
    pub async fn autosave(&self, snapshot: &Snapshot) -> Result<SaveReport> {
        if let Some(worker) = &self.worker {
            let _turn = self.turns.take().await;
            return worker
                .save(self.db.name(), None, &self.manager, snapshot)
                .await;
        }
        self.transact(Needs::Heads, |m| m.autosave(snapshot)).await
    }

    /// Loads `slot`, as [`SaveLoadManager::load`] does: falling back to the newest sound backup
    /// when the primary record is missing or damaged (the [`LoadReport`](savegame::LoadReport) says so), applying
    /// its journal, migrating an old save.
    ///
    /// # Errors
    /// The manager's error ([`savegame::Error::SlotEmpty`], a damaged save with no sound
    /// backup, a wrong key...), or the browser's.
    pub async fn load(&self, slot: SlotId) -> Result<Loaded> {
        self.transact(Needs::Slot(slot), |m| m.load(slot)).await
    }

    /// The load menu, as [`SaveLoadManager::list`] gives it: read from the head records alone,
    /// so no save is read whole, whatever its size.
    ///
    /// # Errors
    /// The browser's error.
    pub async fn list(&self) -> Result<Vec<SlotInfo>> {
        self.transact(Needs::Heads, SaveLoadManager::list).await
    }

    /// Deletes `slot` and its backups and journal; `false` if it held nothing.
    ///
    /// # Errors
    /// As for [`save`](Self::save).
    pub async fn delete(&self, slot: SlotId) -> Result<bool> {
        self.transact(Needs::Slot(slot), |m| m.delete(slot)).await
    }

    /// Runs `op` on the manager (any of its methods: an incremental save, a copy, a
    /// compaction...), with what it reads loaded from IndexedDB, and commits what it wrote in
    /// one transaction before returning its result.
    ///
    /// `op` may run more than once: when it reads an object that was not loaded, its run is
    /// undone, the object fetched, and `op` run again. Only the last run's result counts, so
    /// `op` should only call the manager.
    ///
    /// # Errors
    /// `op`'s error, or as for [`save`](Self::save).
    pub async fn run<T>(
        &self,
        op: impl FnMut(&SaveLoadManager) -> savegame::Result<T>,
    ) -> Result<T> {
        self.transact(Needs::Heads, op).await
    }

    /// The bytes of one stored object as they are (a save file, a backup: `slot-001.sav`,
    /// `slot-001.sav.bak1`), or `None`: for exporting a save as a file the player downloads.
    ///
    /// # Errors
    /// The browser's error.
    pub async fn export(&self, name: &str) -> Result<Option<Vec<u8>>> {
        let _turn = self.turns.take().await;
        let listed = idb::heads(&self.db).await?;
        let Some((_, _, _, at)) = listed.into_iter().find(|(n, ..)| n == name) else {
            return Ok(None);
        };
        let mut found = idb::objects(&self.db, &[(name.to_owned(), at)]).await?;
        Ok(found.pop().and_then(|(_, bytes)| bytes))
    }

    /// Stores `bytes` as the object `name`, as they are, in one transaction: for importing a
    /// save file the player uploads (a load then checks it like any other).
    ///
    /// # Errors
    /// As for [`save`](Self::save).
    pub async fn import(&self, name: &str, bytes: &[u8]) -> Result<()> {
        let _turn = self.turns.take().await;
        self.working.reset(idb::heads(&self.db).await?);
        self.working
            .put(name, bytes)
            .map_err(|e| savegame::Error::io(name, e))?;
        self.commit().await
    }

    /// Asks the browser to keep this origin's data under storage pressure
    /// (`navigator.storage.persist()`). `true` when it will; browsers may decline, or ask the
    /// player.
    pub async fn persist(&self) -> bool {
        idb::persist().await
    }

    /// How many bytes of whole objects this has read from IndexedDB so far (head records not
    /// counted): what a load menu costs, for tests and the demo page.
    #[must_use]
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read.get()
    }

    /// The save worker attached with [`with_worker`](Self::with_worker), if any.
    #[must_use]
    pub fn worker(&self) -> Option<&SaveWorker> {
        self.worker.as_ref()
    }

    /// Closes the database connection: every later call fails with the browser's error.
    /// (A page that is going away needs no call: the browser closes it.)
    pub fn close(&self) {
        self.db.close();
        if let Some(worker) = &self.worker {
            worker.close(self.db.name());
        }
    }

    async fn fetch(&self, names: &[(String, Loc)]) -> Result<()> {
        for (name, bytes) in idb::objects(&self.db, names).await? {
            let len = bytes.as_ref().map_or(0, Vec::len) as u64;
            self.bytes_read.set(self.bytes_read.get() + len);
            self.working.fill(&name, bytes);
        }
        Ok(())
    }

    async fn transact<T>(
        &self,
        needs: Needs,
        mut op: impl FnMut(&SaveLoadManager) -> savegame::Result<T>,
    ) -> Result<T> {
        let _turn = self.turns.take().await;
        self.working.reset(idb::heads(&self.db).await?);
        let wanted = self.working.unloaded(|name| needs.wants(name));
        self.fetch(&wanted).await?;
        let mut runs = 0;
        let result = loop {
            runs += 1;
            let result = op(&self.manager);
            let misses = self.working.take_misses();
            if misses.is_empty() || runs >= MAX_RUNS {
                break result;
            }
            self.working.rollback();
            self.fetch(&misses).await?;
        };
        self.commit().await?;
        Ok(result?)
    }

    /// Commits what the working set changed since its reset, in one transaction.
    async fn commit(&self) -> Result<()> {
        let changes = self.working.changes(idb::new_key);
        if !changes.is_empty() {
            if let Err(e) = idb::commit(&self.db, &changes).await {
                self.working.rollback();
                return Err(e);
            }
            self.working.committed();
        }
        Ok(())
    }
}

/// Turns between the calls on one [`IndexedDbSaves`]: one at a time, in the order they came.
#[derive(Debug, Default)]
struct Turns {
    busy: Cell<bool>,
    waiting: RefCell<VecDeque<Waker>>,
}

impl Turns {
    fn take(&self) -> TakeTurn<'_> {
        TakeTurn {
            turns: self,
            queued: false,
        }
    }
}

struct TakeTurn<'a> {
    turns: &'a Turns,
    queued: bool,
}

impl<'a> Future for TakeTurn<'a> {
    type Output = Turn<'a>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Turn<'a>> {
        let turns = self.turns;
        if !turns.busy.get() {
            turns.busy.set(true);
            return Poll::Ready(Turn { turns });
        }
        turns.waiting.borrow_mut().push_back(cx.waker().clone());
        self.queued = true;
        Poll::Pending
    }
}

/// The turn; the next waiting call is woken when it drops.
struct Turn<'a> {
    turns: &'a Turns,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.turns.busy.set(false);
        if let Some(next) = self.turns.waiting.borrow_mut().pop_front() {
            next.wake();
        }
    }
}
