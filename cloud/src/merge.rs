//! The three-way merge of a slot both devices changed: per memento, against the last synced
//! file (the common ancestor).
//!
//! For every memento id in any of the three snapshots, with `a`, `l`, `r` its encoded bytes
//! and version in the ancestor, the local save and the remote save (or nothing):
//!
//! | case | result |
//! |---|---|
//! | `l == r` | `l` (both made the same change, or neither changed it) |
//! | `l == a` | `r`: only the remote side changed it (added, changed or removed) |
//! | `r == a` | `l`: only the local side changed it |
//! | otherwise | a conflict on this id: nothing is merged |
//!
//! Without an ancestor (a first sync of a slot both devices already had), every memento is
//! taken as changed on the side that has it, so only ids present on one side, or equal on
//! both, merge; a deletion then cannot be told from an addition, and the memento is kept.
//! Merging compares bytes, so the three files must be in the same codec and the two sides at
//! the same schema version; an ancestor at another schema version is not used.

use std::collections::BTreeSet;
use std::time::SystemTime;

use savegame::Snapshot;
use savegame::format::{Header, Metadata};

/// The user field of the metadata that names the device a save was written on.
pub const DEVICE_FIELD: &str = "savegame.device";
/// The user field of the metadata that names the owner (the sync's prefix) of a save.
pub const OWNER_FIELD: &str = "savegame.owner";

/// One side of a merge: the snapshot and the header of its file.
pub(super) struct Side<'a> {
    pub(super) snapshot: &'a Snapshot,
    pub(super) header: &'a Header,
}

/// What a three-way merge gives.
pub(super) enum Outcome {
    /// A snapshot holding both sides' changes, and the ids each side's change came from.
    Merged {
        snapshot: Box<Snapshot>,
        from_local: Vec<String>,
        from_remote: Vec<String>,
    },
    /// Both sides changed these mementos differently (or the saves cannot be compared: then
    /// the list is empty and `reason` says why).
    Conflict {
        ids: Vec<String>,
        reason: Option<String>,
    },
}

/// A memento as a merge compares it: its encoded bytes and its version.
type Memento<'a> = Option<(&'a [u8], u32)>;

fn memento<'a>(snapshot: &'a Snapshot, id: &str) -> Memento<'a> {
    Some((snapshot.raw(id)?, snapshot.memento_version(id)?))
}

/// Merges `local` and `remote` against `ancestor` (see the module docs). The merged
/// snapshot's metadata is the newer side's (by saved-at), with the longer playtime of the two
/// and `device` as its device.
pub(super) fn merge(
    ancestor: Option<Side<'_>>,
    local: &Side<'_>,
    remote: &Side<'_>,
    device: &str,
) -> Outcome {
    let codec = local.header.codec;
    if remote.header.codec != codec {
        return incomparable(format!(
            "the saves are in different codecs ({} here, {} remote)",
            codec.name(),
            remote.header.codec.name()
        ));
    }
    if remote.header.schema_version != local.header.schema_version {
        return incomparable(format!(
            "the saves are at different schema versions ({} here, {} remote)",
            local.header.schema_version, remote.header.schema_version
        ));
    }
    let ancestor = ancestor.filter(|a| {
        a.header.codec == codec && a.header.schema_version == local.header.schema_version
    });
    let mut ids: BTreeSet<&str> = local.snapshot.ids().collect();
    ids.extend(remote.snapshot.ids());
    if let Some(a) = &ancestor {
        ids.extend(a.snapshot.ids());
    }
    let mut merged = Snapshot::new(codec);
    let (mut from_local, mut from_remote, mut conflicts) = (Vec::new(), Vec::new(), Vec::new());
    for id in ids {
        let l = memento(local.snapshot, id);
        let r = memento(remote.snapshot, id);
        let a = ancestor.as_ref().and_then(|a| memento(a.snapshot, id));
        let take = if l == r {
            l
        } else if l == a {
            from_remote.push(id.to_owned());
            r
        } else if r == a {
            from_local.push(id.to_owned());
            l
        } else {
            conflicts.push(id.to_owned());
            continue;
        };
        if let Some((bytes, version)) = take
            && (merged.insert_raw(id, bytes.to_vec()).is_err()
                || merged.set_memento_version(id, version).is_err())
        {
            // Ids came out of parsed files, so they are valid; one that is not cannot merge.
            conflicts.push(id.to_owned());
        }
    }
    if !conflicts.is_empty() {
        return Outcome::Conflict {
            ids: conflicts,
            reason: None,
        };
    }
    *merged.metadata_mut() = merged_metadata(local.header, remote.header, device);
    Outcome::Merged {
        snapshot: Box::new(merged),
        from_local,
        from_remote,
    }
}

fn incomparable(reason: String) -> Outcome {
    Outcome::Conflict {
        ids: Vec::new(),
        reason: Some(reason),
    }
}

/// The newer side's metadata, the longer playtime, and this device.
fn merged_metadata(local: &Header, remote: &Header, device: &str) -> Metadata {
    let newer = if remote.saved_at > local.saved_at {
        remote
    } else {
        local
    };
    let mut metadata = newer.metadata.clone();
    metadata.playtime = local.metadata.playtime.max(remote.metadata.playtime);
    metadata
        .user
        .insert(DEVICE_FIELD.to_owned(), device.to_owned());
    metadata.saved_at = None::<SystemTime>;
    metadata
}

#[cfg(test)]
mod tests {
    use super::*;
    use savegame::{Codec, SlotId};
    use std::time::Duration;

    fn file(mementos: &[(&str, u32)], label: &str, playtime: u64) -> (Header, Snapshot) {
        let mut s = Snapshot::new(Codec::Json)
            .with_label(label)
            .with_playtime(Duration::from_secs(playtime));
        for (id, v) in mementos {
            s.capture_memento(id, v).unwrap();
        }
        let bytes = s.seal_file(SlotId::Numbered(1), 1, 1, None).unwrap();
        Snapshot::open_file(bytes, None).unwrap()
    }

    fn side(f: &(Header, Snapshot)) -> Side<'_> {
        Side {
            snapshot: &f.1,
            header: &f.0,
        }
    }

    fn run(
        a: Option<&(Header, Snapshot)>,
        l: &(Header, Snapshot),
        r: &(Header, Snapshot),
    ) -> Outcome {
        merge(a.map(side), &side(l), &side(r), "desk")
    }

    #[test]
    fn disjoint_changes_merge_and_deletions_carry_over() {
        let a = file(&[("p", 1), ("q", 1), ("gone", 1)], "a", 10);
        let l = file(&[("p", 2), ("q", 1), ("gone", 1)], "local", 30);
        std::thread::sleep(Duration::from_millis(5));
        let r = file(&[("p", 1), ("q", 5), ("new", 9)], "remote", 20);
        let Outcome::Merged {
            snapshot,
            from_local,
            from_remote,
        } = run(Some(&a), &l, &r)
        else {
            panic!("expected a merge");
        };
        assert_eq!(snapshot.memento::<u32>("p").unwrap(), 2);
        assert_eq!(snapshot.memento::<u32>("q").unwrap(), 5);
        assert_eq!(snapshot.memento::<u32>("new").unwrap(), 9);
        assert!(!snapshot.contains("gone"));
        assert_eq!(from_local, ["p"]);
        assert_eq!(from_remote, ["gone", "new", "q"]);
        // The newer side's label, the longer playtime, this device.
        assert_eq!(snapshot.metadata().label, "remote");
        assert_eq!(snapshot.metadata().playtime, Duration::from_secs(30));
        assert_eq!(snapshot.metadata().user[DEVICE_FIELD], "desk");
    }

    #[test]
    fn the_same_memento_changed_twice_is_a_conflict() {
        let a = file(&[("p", 1)], "a", 1);
        let l = file(&[("p", 2)], "l", 1);
        let r = file(&[("p", 3)], "r", 1);
        assert!(matches!(run(Some(&a), &l, &r), Outcome::Conflict { ids, .. } if ids == ["p"]));
        // The same change on both sides is no conflict.
        let r = file(&[("p", 2)], "r", 1);
        assert!(matches!(run(Some(&a), &l, &r), Outcome::Merged { .. }));
        // Without an ancestor, a memento both sides hold differently is a conflict.
        let r = file(&[("p", 3), ("x", 1)], "r", 1);
        assert!(matches!(run(None, &l, &r), Outcome::Conflict { ids, .. } if ids == ["p"]));
    }
}
