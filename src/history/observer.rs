//! Change notifications: [`Observer`]s hear when can-undo, can-redo or dirty flips.

use std::fmt;
use std::sync::{Mutex, PoisonError};

/// What an editor's undo and redo buttons and its title bar show: can the player undo, redo,
/// and are there unsaved changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub struct Status {
    /// There is an entry to undo.
    pub can_undo: bool,
    /// There is an entry to redo.
    pub can_redo: bool,
    /// The history is not at its saved point (see
    /// [`History::is_dirty`](super::History::is_dirty)).
    pub dirty: bool,
}

/// What an [`Observer`] is told.
///
/// An observer is called once per operation of the history, and only when something it shows
/// changes: an edit that leaves can-undo, can-redo and dirty as they were notifies nobody.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Event {
    /// An operation (an edit, an undo, a redo, a save mark, a limit, a restore) flipped at
    /// least one of can-undo, can-redo and dirty.
    Changed {
        /// The status before the operation.
        was: Status,
        /// The status after it.
        now: Status,
    },
    /// [`History::clear`](super::History::clear) dropped every entry. Sent once per call,
    /// instead of [`Event::Changed`], even when the status did not change.
    Cleared {
        /// The status before the call.
        was: Status,
        /// The status after it.
        now: Status,
    },
}

impl Event {
    /// The status after the operation.
    #[must_use]
    pub fn status(&self) -> Status {
        match *self {
            Event::Changed { now, .. } | Event::Cleared { now, .. } => now,
        }
    }

    /// The status before the operation.
    #[must_use]
    pub fn previous(&self) -> Status {
        match *self {
            Event::Changed { was, .. } | Event::Cleared { was, .. } => was,
        }
    }
}

/// Something that listens to a [`History`](super::History): an editor's buttons, its title
/// bar, a menu.
///
/// Closures are observers: any `FnMut(Event) + Send + 'static` can be passed to
/// [`History::add_observer`](super::History::add_observer). A type of your own implements this
/// trait and is kept as a `Box<dyn Observer + Send>`.
///
/// ```
/// use savegame::history::{Event, Observer};
///
/// struct Buttons { undo_enabled: bool, redo_enabled: bool }
///
/// impl Observer for Buttons {
///     fn notify(&mut self, event: Event) {
///         self.undo_enabled = event.status().can_undo;
///         self.redo_enabled = event.status().can_redo;
///     }
/// }
/// ```
pub trait Observer {
    /// Called after an operation that changed the [`Status`], with what changed.
    fn notify(&mut self, event: Event);
}

impl<F: FnMut(Event)> Observer for F {
    fn notify(&mut self, event: Event) {
        self(event);
    }
}

/// Names an observer added to a history, to remove it later.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ObserverId(u64);

/// The observers of one history.
///
/// They sit in a `Mutex` only so that a history is `Sync` whatever its observers are: the
/// history reaches them through `&mut self` and [`Mutex::get_mut`], which never locks.
pub(crate) struct Observers {
    list: Mutex<Vec<(ObserverId, Box<dyn Observer + Send>)>>,
    next: u64,
}

impl Observers {
    pub(crate) fn new() -> Self {
        Observers {
            list: Mutex::new(Vec::new()),
            next: 0,
        }
    }

    fn list(&mut self) -> &mut Vec<(ObserverId, Box<dyn Observer + Send>)> {
        self.list.get_mut().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn add(&mut self, observer: Box<dyn Observer + Send>) -> ObserverId {
        let id = ObserverId(self.next);
        self.next += 1;
        self.list().push((id, observer));
        id
    }

    pub(crate) fn remove(&mut self, id: ObserverId) -> bool {
        let list = self.list();
        let before = list.len();
        list.retain(|(i, _)| *i != id);
        list.len() != before
    }

    pub(crate) fn send(&mut self, event: Event) {
        for (_, observer) in self.list().iter_mut() {
            observer.notify(event);
        }
    }
}

impl fmt::Debug for Observers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self
            .list
            .lock()
            .map_or_else(|e| e.into_inner().len(), |l| l.len());
        f.debug_struct("Observers").field("count", &count).finish()
    }
}
