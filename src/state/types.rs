//! [`MementoTypes`]: the memento type of every member of a state, with its id and version, for
//! the schema guard ([`savegame::schema`](crate#features), feature `schema`).

use std::any::type_name;
use std::fmt;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::Result;
use crate::originator::Originator;
use crate::snapshot::check_id;

/// The memento types of a game's state: for each member, its id (or, for a
/// [`Registry`](super::Registry), the pattern `prefix*` of its ids), its memento version and its
/// memento's type. What [`SaveState::memento_types`](super::SaveState::memento_types) lists, and
/// what the schema guard (`savegame::schema::Guard`, feature `schema`) traces and compares with
/// the shapes a game committed.
///
/// Listing costs nothing without the feature `schema` (each entry is an id, a version and a type
/// name); with it, each entry can also trace its type's shape, and an originator's entry keeps
/// its current memento as a sample for types whose `Deserialize` refuses made-up values.
///
/// ```
/// use savegame::{MementoTypes, Originator, SaveState};
///
/// #[derive(Originator, Default)]
/// #[savegame(version = 2)]
/// struct Player { health: u32 }
///
/// #[derive(SaveState, Default)]
/// struct Game { player: Player }
///
/// let mut types = MementoTypes::new();
/// assert!(Game::default().memento_types(&mut types)?);
/// types.memento::<Vec<String>>("quest-log", 1)?; // a memento captured by hand
/// let listed: Vec<(&str, Option<u32>)> = types.iter().map(|t| (t.id(), t.version())).collect();
/// assert_eq!(listed, [("player", Some(2)), ("quest-log", Some(1))]);
/// # Ok::<(), savegame::Error>(())
/// ```
#[derive(Default)]
pub struct MementoTypes {
    list: Vec<MementoType>,
}

/// One entry of [`MementoTypes`].
pub struct MementoType {
    id: String,
    version: std::result::Result<u32, String>,
    type_name: &'static str,
    #[cfg(feature = "schema")]
    pub(crate) trace: crate::schema::trace::TraceFn,
    #[cfg(feature = "schema")]
    pub(crate) sample: Option<crate::schema::trace::SampleFn>,
}

impl MementoType {
    /// The memento id, or the pattern (`monster/*`) of a registry's ids.
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Is the id a pattern, `prefix*`: every memento whose id starts with the prefix?
    #[must_use]
    pub fn is_pattern(&self) -> bool {
        self.id.ends_with('*')
    }

    /// Its memento version; `None` when it cannot be known (a registry with nothing
    /// registered, or whose originators report different versions: see
    /// [`version_problem`](Self::version_problem)).
    #[must_use]
    pub fn version(&self) -> Option<u32> {
        self.version.as_ref().ok().copied()
    }

    /// Why the version cannot be known.
    #[must_use]
    pub fn version_problem(&self) -> Option<&str> {
        self.version.as_ref().err().map(String::as_str)
    }

    /// The Rust type of the memento.
    #[must_use]
    pub fn type_name(&self) -> &'static str {
        self.type_name
    }
}

impl fmt::Debug for MementoType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MementoType")
            .field("id", &self.id)
            .field("version", &self.version)
            .field("type_name", &self.type_name)
            .finish()
    }
}

impl fmt::Debug for MementoTypes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.list).finish()
    }
}

impl MementoTypes {
    /// An empty list.
    #[must_use]
    pub fn new() -> Self {
        MementoTypes::default()
    }

    fn push<M: Serialize + DeserializeOwned + Send + Sync + 'static>(
        &mut self,
        id: String,
        version: std::result::Result<u32, String>,
        sample: Option<M>,
    ) -> Result<()> {
        check_id(&id)?;
        #[cfg(not(feature = "schema"))]
        drop(sample);
        let entry = MementoType {
            id,
            version,
            type_name: type_name::<M>(),
            #[cfg(feature = "schema")]
            trace: crate::schema::trace::trace_with::<M>,
            #[cfg(feature = "schema")]
            sample: sample.map(crate::schema::trace::sample_of),
        };
        // Listed twice, the last wins, as for a capture.
        self.list.retain(|e| e.id != entry.id);
        self.list.push(entry);
        Ok(())
    }

    /// Lists `originator`'s memento type under `id`, at its
    /// [`memento_version`](Originator::memento_version): a derived or a hand-written
    /// originator alike.
    ///
    /// # Errors
    /// [`Error::InvalidId`](crate::Error::InvalidId) for an empty id or one over 1,024 bytes.
    pub fn originator<O: Originator + ?Sized>(
        &mut self,
        id: impl Into<String>,
        originator: &O,
    ) -> Result<()> {
        let sample = cfg!(feature = "schema").then(|| originator.create_memento());
        self.push::<O::Memento>(id.into(), Ok(originator.memento_version()), sample)
    }

    /// Lists memento type `M` under `id` at memento version `version`: for a memento captured
    /// by hand ([`Snapshot::capture_memento_versioned`](crate::Snapshot::capture_memento_versioned)).
    ///
    /// # Errors
    /// As for [`originator`](Self::originator).
    pub fn memento<M: Serialize + DeserializeOwned + Send + Sync + 'static>(
        &mut self,
        id: impl Into<String>,
        version: u32,
    ) -> Result<()> {
        self.push::<M>(id.into(), Ok(version), None)
    }

    /// Lists the originators of a [`Registry`](super::Registry) as one entry, the pattern
    /// `prefix*`, at the version they report.
    ///
    /// # Errors
    /// As for [`originator`](Self::originator).
    pub(crate) fn registry<'a, T: Originator + 'a>(
        &mut self,
        prefix: &str,
        mut originators: impl Iterator<Item = &'a T>,
    ) -> Result<()> {
        let pattern = format!("{prefix}*");
        let Some(first) = originators.next() else {
            let why = format!(
                "the registry {pattern:?} has nothing registered, and a memento version is an \
                 originator's (Originator::memento_version): register one in the sample state"
            );
            return self.push::<T::Memento>(pattern, Err(why), None);
        };
        let version = first.memento_version();
        let mut versions = vec![version];
        for o in originators {
            let v = o.memento_version();
            if !versions.contains(&v) {
                versions.push(v);
            }
        }
        let version = if versions.len() == 1 {
            Ok(version)
        } else {
            versions.sort_unstable();
            Err(format!(
                "the originators of the registry {pattern:?} report memento versions {versions:?}: \
                 one type, one version"
            ))
        };
        let sample = cfg!(feature = "schema").then(|| first.create_memento());
        self.push::<T::Memento>(pattern, version, sample)
    }

    /// How many entries there are.
    #[must_use]
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Is the list empty?
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The entries, in the order they were listed.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &MementoType> + '_ {
        self.list.iter()
    }
}
