//! [`MultiHistoryMemento`]: a [`MultiHistory`] in a save, so that a player who reloads can
//! still undo across the objects of a scene.
//!
//! A `MultiHistory` is an [`Originator`]: capture it into a [`Snapshot`](crate::Snapshot)
//! beside the targets it edits, and restore it after them, so that both are at the same point.
//! Its memento is versioned (format 1, the first field); a newer one is refused.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::diff;
use super::memento::Bytes;
use super::multi::{MultiEntry, MultiHistory, Part};
use crate::codec::Codec;
use crate::error::{Error, Result};
use crate::originator::Originator;

/// The newest format of a [`MultiHistoryMemento`], the one this library writes.
pub const MULTI_FORMAT_VERSION: u32 = 1;

/// A [`MultiHistory`] as it is stored in a save: every entry with its name and its parts (each
/// a target's id and its modifications), the cursor and the saved point. Open edits and
/// groups, merge keys, limits, observers and the hook are not part of it; its format is
/// below.
///
/// ```
/// use savegame::history::{MultiHistory, TargetSet};
/// use savegame::{Codec, Originator, Snapshot};
/// # use serde::{Deserialize, Serialize};
/// # #[derive(Clone, Default, Serialize, Deserialize)] struct Light { on: bool }
/// # impl Originator for Light {
/// #     type Memento = Light;
/// #     fn create_memento(&self) -> Light { self.clone() }
/// #     fn restore_memento(&mut self, m: Light) -> savegame::Result<()> { *self = m; Ok(()) }
/// # }
///
/// let mut lamp = Light::default();
/// let mut history = MultiHistory::new();
/// history.edit(&mut lamp, "lamp", "Switch on", |l| l.on = true)?;
///
/// let mut snapshot = Snapshot::new(Codec::MessagePack);
/// snapshot.capture("lamp", &lamp)?;
/// snapshot.capture("history", &history)?;
///
/// // A new session: the lamp and its history come back, and the switch can be undone.
/// let (mut lamp, mut history) = (Light::default(), MultiHistory::new());
/// snapshot.restore("lamp", &mut lamp)?;
/// snapshot.restore("history", &mut history)?;
/// history.undo(&mut TargetSet::new().with("lamp", &mut lamp))?;
/// assert!(!lamp.on);
/// # Ok::<(), savegame::Error>(())
/// ```
///
/// # Format, version 1
///
/// A map (a MessagePack map, or a JSON object):
///
/// | field | type | meaning |
/// |---|---|---|
/// | `format` | integer | 1 |
/// | `codec` | string | `"msgpack"` or `"json"`: the codec the modifications are encoded with |
/// | `cursor` | integer | how many entries are done |
/// | `saved` | integer or null | the position of the saved point, if it can be reached |
/// | `entries` | array of entry | oldest first |
///
/// - **entry:** `{"name": string, "parts": [part, ...]}`, at least one part.
/// - **part:** `{"target": string, "diff": bytes}`: the target's id (not empty), and its
///   modifications, encoded in `codec` as a [`HistoryMemento`](super::HistoryMemento)'s
///   `"Diff"` records are.
///
/// Bytes are a MessagePack `bin`, or a JSON array of numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MultiHistoryMemento {
    format: u32,
    codec: String,
    cursor: usize,
    saved: Option<usize>,
    entries: Vec<EntryMemento>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct EntryMemento {
    name: String,
    parts: Vec<PartMemento>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct PartMemento {
    target: String,
    diff: Bytes,
}

impl MultiHistoryMemento {
    /// The number of entries.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Is it empty?
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The memento with its saved point at its cursor: for the memento a save writes, which
    /// is the saved point of the history it holds.
    #[must_use]
    pub fn marked_saved(mut self) -> Self {
        self.saved = Some(self.cursor);
        self
    }
}

fn malformed(what: &str) -> Error {
    Error::malformed(format!("undo history: {what}"))
}

impl Originator for MultiHistory {
    type Memento = MultiHistoryMemento;

    /// The history's entries, cursor and saved point (not an open edit or group).
    fn create_memento(&self) -> MultiHistoryMemento {
        MultiHistoryMemento {
            format: MULTI_FORMAT_VERSION,
            codec: self.codec.name().to_owned(),
            cursor: self.cursor,
            saved: self.saved,
            entries: self
                .entries
                .iter()
                .map(|e| EntryMemento {
                    name: e.name.to_string(),
                    parts: e
                        .parts
                        .iter()
                        .map(|p| PartMemento {
                            target: p.target.to_string(),
                            diff: Bytes(p.mods.to_vec()),
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    /// Replaces the history's entries, cursor and saved point with the memento's, after
    /// checking every part. Drops any open edit or group; applies the history's own limits;
    /// observers hear if the status changed. The history takes the memento's codec: the
    /// modifications' value trees are the codec's own (a MessagePack map key is an integer
    /// where JSON has a string).
    ///
    /// # Errors
    /// [`Error::Rejected`] for a memento of a newer format; [`Error::Malformed`] when it is
    /// inconsistent; [`Error::Decode`] when a part's modifications do not decode. On error
    /// the history is unchanged.
    fn restore_memento(&mut self, memento: MultiHistoryMemento) -> Result<()> {
        let MultiHistoryMemento {
            format,
            codec,
            cursor,
            saved,
            entries,
        } = memento;
        if !(1..=MULTI_FORMAT_VERSION).contains(&format) {
            return Err(Error::rejected(format!(
                "undo history format {format} is not supported (this version reads 1 to \
                 {MULTI_FORMAT_VERSION})"
            )));
        }
        let codec: Codec = codec
            .parse()
            .map_err(|_| malformed(&format!("unknown codec {codec:?}")))?;
        let len = entries.len();
        if cursor > len || saved.is_some_and(|s| s > len) {
            return Err(malformed(
                "the cursor or the saved point is past the last entry",
            ));
        }
        let mut restored = VecDeque::with_capacity(len);
        for entry in entries {
            if entry.parts.is_empty() {
                return Err(malformed("an entry has no part"));
            }
            let mut parts = Vec::with_capacity(entry.parts.len());
            for part in entry.parts {
                if part.target.is_empty() {
                    return Err(malformed("a part names no target"));
                }
                diff::decode_list(codec, &part.diff.0)?;
                parts.push(Part {
                    target: part.target.into_boxed_str(),
                    mods: part.diff.0.into_boxed_slice(),
                });
            }
            restored.push_back(MultiEntry {
                name: entry.name.into_boxed_str(),
                merge: None,
                parts: parts.into_boxed_slice(),
            });
        }
        self.replace(codec, restored, cursor, saved);
        Ok(())
    }
}
