//! [`HistoryMemento`]: a history in a save, so that a player who reloads can still undo.
//!
//! A [`History`] is an [`Originator`]: capture it into a [`Snapshot`](crate::Snapshot) next to
//! the originator it edits, and restore both after a load. Its memento is versioned: its first
//! field is the format version. This library reads every version from 1 to [`FORMAT_VERSION`]
//! and writes the oldest one that can hold the history (1 unless it holds property-diff
//! edits), so that a game built before property-diff edits existed still reads the histories
//! that do without them. A memento of a newer version is refused with a decode error that
//! says so (fields are accepted in any order; unknown fields are ignored).
//!
//! The byte layout is on [`HistoryMemento`].

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeOwned, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use super::History;
use super::ID;
use super::chain::{Anchor, Chain, Link};
use super::command::Command;
use super::delta::{Delta, Hunk};
use super::diff;
use super::entry::{Entry, Record};
use crate::codec::Codec;
use crate::error::{Error, Result};
use crate::originator::Originator;

/// The newest version of the [`HistoryMemento`] format, which this library writes for a
/// history that holds property-diff edits (version 1 otherwise). It reads every version from 1.
pub const FORMAT_VERSION: u32 = 2;

/// The format version of a history without property-diff edits.
const PLAIN_VERSION: u32 = 1;

/// A [`History`] as it is stored in a save: every entry with its name and its group of
/// records, the cursor, the saved point, and the recorded states in their compact form (see
/// the [format](#format-versions-1-and-2) below). Open edits and groups, merge keys, limits, observers
/// and the hook are not part of it: a restored history keeps its own limits, observers and
/// hook, and does not merge the next edit into a restored entry.
///
/// Capture the history right after the originator it edits, and restore it right after that
/// originator, so that both are at the same point:
///
/// ```
/// use savegame::{Codec, History, Originator, Snapshot};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Default)]
/// struct Room { chair: i32 }
/// #[derive(Serialize, Deserialize)]
/// struct RoomMemento { chair: i32 }
/// impl Originator for Room {
///     type Memento = RoomMemento;
///     fn create_memento(&self) -> RoomMemento { RoomMemento { chair: self.chair } }
///     fn restore_memento(&mut self, m: RoomMemento) -> savegame::Result<()> {
///         self.chair = m.chair;
///         Ok(())
///     }
/// }
///
/// let mut room = Room::default();
/// let mut history = History::<Room>::new();
/// history.edit(&mut room, "Move chair", |r| r.chair = 4)?;
///
/// // Saving: this save is the saved point of the history it holds.
/// let mut snapshot = Snapshot::new(Codec::MessagePack);
/// snapshot.capture("room", &room)?;
/// snapshot.capture_memento("history", &history.create_memento().marked_saved())?;
/// // ... manager.save(slot, &snapshot)?; then:
/// history.mark_saved();
///
/// // Loading, in a new session.
/// let (mut room, mut history) = (Room::default(), History::<Room>::new());
/// snapshot.restore("room", &mut room)?;
/// snapshot.restore("history", &mut history)?;
/// assert!(!history.is_dirty());
/// history.undo(&mut room)?;
/// assert_eq!(room.chair, 0);
/// # Ok::<(), savegame::Error>(())
/// ```
///
/// # Format, versions 1 and 2
///
/// A map (a MessagePack map, or a JSON object), written in this order (read in any order;
/// unknown fields are ignored):
///
/// | field | type | meaning |
/// |---|---|---|
/// | `format` | integer | 2 if a record is a `"Diff"` record, else 1; written first |
/// | `codec` | string | `"msgpack"` or `"json"`: the codec the states below are encoded with |
/// | `cursor` | integer | how many entries are done |
/// | `saved` | integer or null | the position of the saved point, if it can be reached |
/// | `entries` | array of entry | oldest first |
/// | `links` | array of link | one per `"Memento"` record, in the order of the entries and their records |
/// | `anchor` | null, or anchor | the one state held in full; null when there are no links |
///
/// - **entry:** `{"name": string, "records": [record, ...]}`, at least one record; a record is
///   the string `"Memento"` (a memento edit, whose states are the next link),
///   `{"Command": <the command, in the game's serde form>}`, or (version 2 only)
///   `{"Diff": bytes}`, a property-diff edit.
/// - **diff** (the bytes of a `"Diff"` record, encoded in `codec`, like the states): an array
///   of modifications, each an array `[path, old, new, seen]`. `path` is an array of tokens
///   (map keys as the codec decoded them, array indices as integers); `old` and `new` are
///   arrays of no value (the path is absent on that side) or one; `seen` is null, or such an
///   array holding the value the target really had when a hook rewrote `new`.
/// - **link:** `{"gap": delta or null, "edit": delta}`: `edit` leads from the record's before
///   state to its after state, `gap` from the previous link's after state to this before state
///   (null for the first link).
/// - **delta:** `{"old_len": integer, "new_len": integer, "hunks": [hunk, ...]}`: the lengths
///   of the two states, and where they differ, in increasing order of offset. Applying a delta
///   checks the lengths and every hunk's bytes.
/// - **hunk:** `{"at": integer, "old": bytes, "new": bytes}`: at offset `at` of the old state,
///   the bytes `old` became `new`; everything between hunks is the same in both states.
/// - **anchor:** `{"link": integer, "after": bool, "state": bytes}`: the index of a link (from
///   0), its side, and the encoded memento of the originator at that state.
///
/// Bytes are a MessagePack `bin`, or a JSON array of numbers.
///
/// The states are the originator's own encoded mementos, so they follow its memento type: when
/// a game update changes that type incompatibly, restoring an older history fails with
/// [`Error::Decode`] (every restore decodes one state to check), and the
/// game starts a fresh history while the level itself loads as usual.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(bound(serialize = "C: Serialize"))]
pub struct HistoryMemento<C> {
    format: u32,
    codec: String,
    cursor: usize,
    saved: Option<usize>,
    entries: Vec<EntryMemento<C>>,
    links: Vec<LinkMemento>,
    anchor: Option<AnchorMemento>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(bound(serialize = "C: Serialize", deserialize = "C: Deserialize<'de>"))]
struct EntryMemento<C> {
    name: String,
    records: Vec<RecordMemento<C>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(bound(serialize = "C: Serialize", deserialize = "C: Deserialize<'de>"))]
enum RecordMemento<C> {
    Memento,
    Command(C),
    Diff(Bytes),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct LinkMemento {
    gap: Option<DeltaMemento>,
    edit: DeltaMemento,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct DeltaMemento {
    old_len: usize,
    new_len: usize,
    hunks: Vec<HunkMemento>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct HunkMemento {
    at: usize,
    old: Bytes,
    new: Bytes,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct AnchorMemento {
    link: usize,
    after: bool,
    state: Bytes,
}

impl<C> HistoryMemento<C> {
    /// The format version: 1 for a history without property-diff edits, else 2 (for a memento
    /// that was read, the version it was written in).
    #[must_use]
    pub fn format_version(&self) -> u32 {
        self.format
    }

    /// The number of entries.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Does it hold no entry?
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many entries are done.
    #[must_use]
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// The position of the saved point, if it can be reached.
    #[must_use]
    pub fn saved_index(&self) -> Option<usize> {
        self.saved
    }

    /// The names of the entries, oldest first.
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.entries.iter().map(|e| e.name.as_str())
    }

    /// The same memento with its saved point at its cursor: what a manual save stores, since
    /// the save it goes into *is* the saved point. (A plain capture keeps the history's own
    /// saved point, which is right for an autosave: after loading one, the history is still
    /// dirty with respect to the player's last save.)
    #[must_use]
    pub fn marked_saved(mut self) -> Self {
        self.saved = Some(self.cursor);
        self
    }
}

impl<'de, C: Deserialize<'de>> Deserialize<'de> for HistoryMemento<C> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(MementoVisitor(PhantomData))
    }
}

struct MementoVisitor<C>(PhantomData<C>);

impl<'de, C: Deserialize<'de>> Visitor<'de> for MementoVisitor<C> {
    type Value = HistoryMemento<C>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an undo history (a map with a `format` field)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut format = None;
        let mut codec = None;
        let mut cursor = None;
        let mut saved = None;
        let mut entries = None;
        let mut links = None;
        let mut anchor = None;
        // `format` comes first in what this library writes, so a memento of another version
        // is refused before the rest is read; any order is accepted.
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "format" => {
                    let version: u32 = map.next_value()?;
                    if !(PLAIN_VERSION..=FORMAT_VERSION).contains(&version) {
                        return Err(de::Error::custom(format_args!(
                            "undo history format {version} is not supported (this version of \
                             savegame reads formats {PLAIN_VERSION} to {FORMAT_VERSION})"
                        )));
                    }
                    format = Some(version);
                }
                "codec" => codec = Some(map.next_value()?),
                "cursor" => cursor = Some(map.next_value()?),
                "saved" => saved = Some(map.next_value()?),
                "entries" => entries = Some(map.next_value()?),
                "links" => links = Some(map.next_value()?),
                "anchor" => anchor = Some(map.next_value()?),
                _ => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        Ok(HistoryMemento {
            format: format.ok_or_else(|| de::Error::missing_field("format"))?,
            codec: codec.ok_or_else(|| de::Error::missing_field("codec"))?,
            cursor: cursor.ok_or_else(|| de::Error::missing_field("cursor"))?,
            saved: saved.unwrap_or(None),
            entries: entries.ok_or_else(|| de::Error::missing_field("entries"))?,
            links: links.ok_or_else(|| de::Error::missing_field("links"))?,
            anchor: anchor.unwrap_or(None),
        })
    }
}

/// Bytes as a MessagePack `bin` (a JSON array of numbers).
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct Bytes(pub(crate) Vec<u8>);

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{} bytes>", self.0.len())
    }
}

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_byte_buf(BytesVisitor)
    }
}

struct BytesVisitor;

impl<'de> Visitor<'de> for BytesVisitor {
    type Value = Bytes;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("bytes")
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Bytes, E> {
        Ok(Bytes(v.to_vec()))
    }

    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Bytes, E> {
        Ok(Bytes(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Bytes, A::Error> {
        // The claimed length is not trusted: preallocate at most 64 KiB.
        let mut bytes = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 16));
        while let Some(b) = seq.next_element::<u8>()? {
            bytes.push(b);
        }
        Ok(Bytes(bytes))
    }
}

impl From<&Delta> for DeltaMemento {
    fn from(delta: &Delta) -> Self {
        let (old_len, new_len, hunks) = delta.parts();
        DeltaMemento {
            old_len,
            new_len,
            hunks: hunks
                .iter()
                .map(|h| HunkMemento {
                    at: h.at,
                    old: Bytes(h.old.to_vec()),
                    new: Bytes(h.new.to_vec()),
                })
                .collect(),
        }
    }
}

impl From<DeltaMemento> for Delta {
    fn from(d: DeltaMemento) -> Self {
        let hunks = d
            .hunks
            .into_iter()
            .map(|h| Hunk {
                at: h.at,
                old: h.old.0.into_boxed_slice(),
                new: h.new.0.into_boxed_slice(),
            })
            .collect();
        Delta::from_parts(d.old_len, d.new_len, hunks)
    }
}

impl<T, C> Originator for History<T, C>
where
    T: Originator,
    C: Command<T> + Clone + Serialize + DeserializeOwned + Send + Sync + 'static,
{
    type Memento = HistoryMemento<C>;

    /// The history's entries, cursor, saved point and states (not an open edit or group).
    fn create_memento(&self) -> HistoryMemento<C> {
        let start = self.chain.start();
        let diffs = self
            .entries
            .iter()
            .flat_map(|e| e.records.iter())
            .any(|r| matches!(r, Record::Diff(_)));
        HistoryMemento {
            format: if diffs { FORMAT_VERSION } else { PLAIN_VERSION },
            codec: self.codec.name().to_owned(),
            cursor: self.cursor,
            saved: self.saved,
            entries: self
                .entries
                .iter()
                .map(|e| EntryMemento {
                    name: e.name.to_string(),
                    records: e
                        .records
                        .iter()
                        .map(|r| match r {
                            Record::Memento => RecordMemento::Memento,
                            Record::Command(c) => RecordMemento::Command(c.clone()),
                            Record::Diff(bytes) => RecordMemento::Diff(Bytes(bytes.to_vec())),
                        })
                        .collect(),
                })
                .collect(),
            links: self
                .chain
                .links()
                .map(|l| LinkMemento {
                    gap: l.gap.as_ref().map(DeltaMemento::from),
                    edit: DeltaMemento::from(&l.edit),
                })
                .collect(),
            anchor: self.chain.anchor().map(|a| AnchorMemento {
                link: a.link - start,
                after: a.after,
                state: Bytes(a.bytes.clone()),
            }),
        }
    }

    /// Replaces the history's entries, cursor and saved point with the memento's, after
    /// checking every stored state (re-encoding them when the memento's codec is not the
    /// history's). Drops any open edit or group; applies the history's own limits; observers
    /// hear if the status changed.
    ///
    /// A memento with property-diff edits in another codec than the history's is kept in its
    /// own codec, and the history takes that codec ([`History::codec`]): the value trees of
    /// the modifications are the codec's own (a MessagePack map key is an integer where JSON
    /// has a string), and cannot be re-encoded without the originator's types.
    ///
    /// # Errors
    /// [`Error::Malformed`] when the memento is inconsistent; [`Error::Decode`] when a state
    /// does not decode as `T::Memento` (the game's memento type changed since the save). On
    /// error the history is unchanged.
    fn restore_memento(&mut self, memento: HistoryMemento<C>) -> Result<()> {
        let HistoryMemento {
            format,
            codec,
            cursor,
            saved,
            entries,
            links,
            anchor,
        } = memento;
        if !(PLAIN_VERSION..=FORMAT_VERSION).contains(&format) {
            return Err(Error::rejected(format!(
                "undo history format {format} is not supported (this version reads \
                 {PLAIN_VERSION} to {FORMAT_VERSION})"
            )));
        }
        let codec: Codec = codec
            .parse()
            .map_err(|_| malformed(&format!("unknown codec {codec:?}")))?;
        let diffs = entries
            .iter()
            .flat_map(|e| &e.records)
            .filter_map(|r| match r {
                RecordMemento::Diff(bytes) => Some(bytes),
                _ => None,
            })
            .collect::<Vec<_>>();
        if format == PLAIN_VERSION && !diffs.is_empty() {
            return Err(malformed("a format 1 history holds a property-diff record"));
        }
        for bytes in &diffs {
            diff::decode_list(codec, &bytes.0)?;
        }
        // Property-diff records hold the codec's own value trees: keep them in it.
        let into = if diffs.is_empty() { self.codec } else { codec };
        let len = entries.len();
        if cursor > len || saved.is_some_and(|s| s > len) {
            return Err(malformed(
                "the cursor or the saved point is past the last entry",
            ));
        }
        if entries.iter().any(|e| e.records.is_empty()) {
            return Err(malformed("an entry has no record"));
        }
        let memento_records = entries
            .iter()
            .flat_map(|e| &e.records)
            .filter(|r| matches!(r, RecordMemento::Memento))
            .count();
        if memento_records != links.len() {
            return Err(malformed(
                "the number of links is not the number of memento records",
            ));
        }
        let links = links
            .into_iter()
            .map(|l| Link {
                gap: l.gap.map(Delta::from),
                edit: Delta::from(l.edit),
            })
            .collect();
        let anchor = anchor.map(|a| Anchor {
            link: a.link,
            after: a.after,
            bytes: a.state.0,
        });
        let chain = self.checked_chain(Chain::from_parts(links, anchor)?, codec, into)?;

        let mut first_link = 0;
        let entries: std::collections::VecDeque<Entry<C>> = entries
            .into_iter()
            .map(|e| {
                let records: Box<[Record<C>]> = e
                    .records
                    .into_iter()
                    .map(|r| match r {
                        RecordMemento::Memento => Record::Memento,
                        RecordMemento::Command(c) => Record::Command(c),
                        RecordMemento::Diff(bytes) => Record::Diff(bytes.0.into_boxed_slice()),
                    })
                    .collect();
                let entry = Entry {
                    name: e.name.into_boxed_str(),
                    merge: None,
                    records,
                    first_link,
                };
                first_link += entry.links();
                entry
            })
            .collect();

        let was = self.status();
        self.entry_bytes = entries.iter().map(Entry::heap_bytes::<T>).sum();
        self.entries = entries;
        self.chain = chain;
        self.codec = into;
        self.cursor = cursor;
        self.saved = saved;
        self.saved_by_save = saved.is_some();
        self.sealed = true;
        self.edit = None;
        self.group = None;
        let trimmed = self.trim();
        self.notify(was);
        trimmed
    }
}

impl<T: Originator, C: Command<T>> History<T, C> {
    /// Walks every state of a chain read from a memento (which checks every delta), decodes
    /// one state as `T::Memento`, and re-encodes every state in codec `into` if `codec` is
    /// another.
    fn checked_chain(&self, mut chain: Chain, codec: Codec, into: Codec) -> Result<Chain> {
        let end = chain.end();
        if end == 0 {
            return Ok(Chain::default());
        }
        if codec == into {
            for link in 0..end {
                chain.state(link, false)?;
                chain.state(link, true)?;
            }
            let last = chain.state(end - 1, true)?;
            codec
                .decode::<T::Memento>(last)
                .map_err(|e| e.decoding(ID))?;
            return Ok(chain);
        }
        let mut rebuilt = Chain::default();
        for link in 0..end {
            let before = transcode::<T>(codec, into, chain.state(link, false)?)?;
            let after = transcode::<T>(codec, into, chain.state(link, true)?)?;
            rebuilt.push(&before, after)?;
        }
        Ok(rebuilt)
    }
}

fn transcode<T: Originator>(from: Codec, into: Codec, bytes: &[u8]) -> Result<Vec<u8>> {
    let memento: T::Memento = from.decode(bytes).map_err(|e| e.decoding(ID))?;
    into.encode(&memento).map_err(|e| e.encoding(ID))
}

fn malformed(what: &str) -> Error {
    Error::malformed(format!("undo history: {what}"))
}
