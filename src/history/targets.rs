//! What a [`MultiHistory`](super::MultiHistory) records and undoes: [`Target`]s (every
//! [`Originator`] is one), reached by id through [`Targets`]: the game's own scene or
//! registry, a map of boxed targets, or a [`TargetSet`] of borrowed ones built for one call.

use std::collections::BTreeMap;
use std::fmt;

use super::ID;
use crate::codec::Codec;
use crate::error::Result;
use crate::originator::Originator;

/// Something a [`MultiHistory`](super::MultiHistory) records: every [`Originator`] is one. The trait is
/// dyn-compatible, so that targets of different types sit side by side as `&mut dyn Target`.
pub trait Target {
    /// The target's memento, encoded with `codec`.
    ///
    /// # Errors
    /// [`Error::Encode`](crate::Error::Encode) if the codec cannot encode it.
    fn encode_memento(&self, codec: Codec) -> Result<Vec<u8>>;

    /// Restores the target from a memento encoded with `codec`.
    ///
    /// # Errors
    /// [`Error::Decode`](crate::Error::Decode) if the bytes are not a memento of the target; the originator's own
    /// error from `restore_memento`.
    fn restore_encoded(&mut self, codec: Codec, bytes: &[u8]) -> Result<()>;
}

impl<T: Originator> Target for T {
    fn encode_memento(&self, codec: Codec) -> Result<Vec<u8>> {
        codec
            .encode(&crate::originator::MementoOf(self))
            .map_err(|e| e.encoding(ID))
    }

    fn restore_encoded(&mut self, codec: Codec, bytes: &[u8]) -> Result<()> {
        let memento = codec.decode(bytes).map_err(|e| e.decoding(ID))?;
        self.restore_memento(memento)
    }
}

/// The targets of a [`MultiHistory`](super::MultiHistory), by id: what undo and redo write
/// to. Implement it on the game's own scene, so that undo and redo take the scene as it is:
///
/// ```
/// use savegame::history::{MultiHistory, Target, Targets};
/// # use savegame::Originator;
/// # use serde::{Deserialize, Serialize};
/// # #[derive(Clone, Default, Serialize, Deserialize)] struct Transform { x: f32 }
/// # impl Originator for Transform {
/// #     type Memento = Transform;
/// #     fn create_memento(&self) -> Transform { self.clone() }
/// #     fn restore_memento(&mut self, m: Transform) -> savegame::Result<()> { *self = m; Ok(()) }
/// # }
///
/// #[derive(Default)]
/// struct Scene { player: Transform, camera: Transform }
///
/// impl Targets for Scene {
///     fn target(&mut self, id: &str) -> Option<&mut dyn Target> {
///         match id {
///             "player" => Some(&mut self.player),
///             "camera" => Some(&mut self.camera),
///             _ => None,
///         }
///     }
/// }
///
/// let mut scene = Scene::default();
/// let mut history = MultiHistory::new();
/// history.edit(&mut scene.player, "player", "Move", |t| t.x = 2.0)?;
/// history.undo(&mut scene)?;
/// assert_eq!(scene.player.x, 0.0);
/// # Ok::<(), savegame::Error>(())
/// ```
///
/// A `BTreeMap<String, Box<dyn Target>>` is one, and so is a [`TargetSet`] of borrowed
/// originators. Ids are data (entities come and go), so a target an entry names may be
/// missing when it is undone: the undo is then refused before it changes anything.
pub trait Targets {
    /// The target named `id`, if there is one.
    fn target(&mut self, id: &str) -> Option<&mut dyn Target>;
}

/// Originators of any types, borrowed by id for one undo or redo (for a few loose
/// originators; a scene that implements [`Targets`] needs none).
///
/// ```
/// # use savegame::history::{MultiHistory, TargetSet};
/// # use savegame::Originator;
/// # use serde::{Deserialize, Serialize};
/// # #[derive(Default)] struct Light { on: bool }
/// # #[derive(Serialize, Deserialize)] struct M { on: bool }
/// # impl Originator for Light {
/// #     type Memento = M;
/// #     fn create_memento(&self) -> M { M { on: self.on } }
/// #     fn restore_memento(&mut self, m: M) -> savegame::Result<()> { self.on = m.on; Ok(()) }
/// # }
/// let (mut lamp, mut torch) = (Light::default(), Light::default());
/// let mut history = MultiHistory::new();
/// history.edit(&mut lamp, "lamp", "Switch on", |l| l.on = true)?;
/// history.undo(&mut TargetSet::new().with("lamp", &mut lamp).with("torch", &mut torch))?;
/// assert!(!lamp.on);
/// # Ok::<(), savegame::Error>(())
/// ```
#[derive(Default)]
pub struct TargetSet<'a> {
    targets: Vec<(&'a str, &'a mut dyn Target)>,
}

impl<'a> TargetSet<'a> {
    /// An empty set.
    #[must_use]
    pub fn new() -> Self {
        TargetSet {
            targets: Vec::new(),
        }
    }

    /// The set with `target` added as `id` (replacing another of that id).
    #[must_use]
    pub fn with(mut self, id: &'a str, target: &'a mut dyn Target) -> Self {
        self.insert(id, target);
        self
    }

    /// Adds `target` as `id`, replacing another of that id.
    pub fn insert(&mut self, id: &'a str, target: &'a mut dyn Target) {
        self.targets.retain(|(i, _)| *i != id);
        self.targets.push((id, target));
    }
}

impl Targets for TargetSet<'_> {
    fn target(&mut self, id: &str) -> Option<&mut dyn Target> {
        self.targets
            .iter_mut()
            .find(|(i, _)| *i == id)
            .map(|(_, t)| &mut **t as &mut dyn Target)
    }
}

impl fmt::Debug for TargetSet<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.targets.iter().map(|(id, _)| id))
            .finish()
    }
}

impl Targets for BTreeMap<String, Box<dyn Target>> {
    fn target(&mut self, id: &str) -> Option<&mut dyn Target> {
        self.get_mut(id).map(|t| &mut **t as &mut dyn Target)
    }
}

impl Targets for BTreeMap<String, Box<dyn Target + Send>> {
    fn target(&mut self, id: &str) -> Option<&mut dyn Target> {
        self.get_mut(id).map(|t| &mut **t as &mut dyn Target)
    }
}
