//! One slot's sync, from the look to the install: the slot's local file and the remote
//! object compared with what the device's record says it last saw, then a push, a pull, a
//! three-way merge or a conflict; and a conflict's resolution.

use crate::merge::OWNER_FIELD;
use crate::merge::{self, Outcome, Side};
use crate::record;
use crate::remote::{Expect, Tag};
use crate::report::{Conflict, Merged, SlotSync, Version};
use crate::{Inner, Keep, ROUNDS, lock};
use savegame::format::Header;
use savegame::slot::{SlotFile, SlotId, conflict_name, synced_name};
use savegame::{Error, FileStamp, Result, Snapshot};

/// A slot's local file, read whole and checked.
struct Local {
    bytes: Vec<u8>,
    stamp: FileStamp,
    header: Header,
    snapshot: Snapshot,
}

impl Inner {
    /// Syncs one slot, on its own (a HEAD instead of a listing).
    pub(crate) fn sync_slot(&self, slot: SlotId) -> Result<SlotSync> {
        let _one = lock(&self.syncing);
        self.trust()?;
        let remote = self.block_on(self.remote.head(slot))?;
        self.sync_one(slot, remote)
    }

    /// Syncs one slot, `remote` being what the cloud holds of it (its size and tag).
    pub(crate) fn sync_one(
        &self,
        slot: SlotId,
        mut remote: Option<(u64, Tag)>,
    ) -> Result<SlotSync> {
        let name = slot.file_name();
        for _ in 0..ROUNDS {
            self.compact_if_needed(slot)?;
            let local = self.manager.file_stamp(slot)?;
            let record = self
                .read_preamble(&synced_name(&name))?
                .map(|r| r.in_effect(local));
            let synced = record.as_ref().and_then(|r| r.stamp);
            let local_changed = local.is_some() && synced != local;
            let remote_changed = remote.as_ref().is_some_and(|(_, tag)| {
                record.as_ref().is_none_or(|r| {
                    !tag.same(&Tag {
                        e_tag: r.e_tag.clone(),
                        version: r.version.clone(),
                    })
                })
            });
            let settled = match (local, &remote) {
                (None, None) => return Ok(SlotSync::Unchanged),
                (None, Some(_)) => self.pull(slot, None)?,
                (Some(_), None) => self.push(slot, &Expect::Absent)?,
                (Some(_), Some((_, tag))) => match (local_changed, remote_changed) {
                    (false, false) => Some(SlotSync::Unchanged),
                    (true, false) => self.push(slot, &Expect::Still(tag.clone()))?,
                    (false, true) => self.pull(slot, local)?,
                    (true, true) => self.both_changed(slot, record.as_ref())?,
                },
            };
            if let Some(done) = settled {
                match done {
                    SlotSync::Conflict(_) => {}
                    // The cloud's version in the copy was merged in, or a newer one replaced
                    // the local save (which a resolve had settled, or the copy would not be
                    // stale): nothing declined it.
                    SlotSync::Merged(_) | SlotSync::Pulled => {
                        self.drop_conflict_copy(&name, false)?
                    }
                    // The local save won over it: a resolve that kept it, killed before it
                    // removed the copy.
                    _ => self.drop_conflict_copy(&name, true)?,
                }
                return Ok(done);
            }
            // The other side moved under this round: look again.
            remote = self.block_on(self.remote.head(slot))?;
        }
        Err(Error::Cloud {
            action: "sync",
            object: self.remote.path(slot).to_string(),
            source: format!("the slot kept changing during {ROUNDS} rounds of sync").into(),
        })
    }

    /// Removes the copy of a conflict that a later sync found settled: the copy names a remote
    /// version the cloud has moved on from, and a resolve with it could only fail its
    /// `If-Match`. With `declined`, the version in it is kept as a backup first, unless one
    /// already is (a resolve keeps it before it uploads).
    fn drop_conflict_copy(&self, name: &str, declined: bool) -> Result<()> {
        let copy = conflict_name(name);
        if self
            .storage()
            .read_head(&copy, 0)
            .map_err(self.io(&copy))?
            .is_none()
        {
            return Ok(());
        }
        if declined
            && let Some(record) = self.read_record(&copy)?
            && let Some(slot) = SlotId::from_file_name(name)
            && self.check_remote(slot, &record.file).is_ok()
        {
            self.manager.keep_as_backup(slot, &record.file)?;
        }
        self.storage().delete(&copy).map_err(self.io(&copy))
    }

    /// Compacts a slot's incremental saves into one file: a slot is one object.
    fn compact_if_needed(&self, slot: SlotId) -> Result<()> {
        let listing = self.storage().list().map_err(self.io(""))?;
        let deltas = listing.iter().any(|f| {
            matches!(SlotFile::parse(&f.name), Some(SlotFile::Journal(s) | SlotFile::Delta(s, _)) if s == slot)
        });
        if deltas {
            self.manager.compact(slot)?;
        }
        Ok(())
    }

    /// The slot's local file, read whole and checked as a load checks it.
    fn read_local(&self, slot: SlotId) -> Result<Option<Local>> {
        let name = slot.file_name();
        let bytes = self
            .storage()
            .read(&name, self.manager.max_file_size())
            .map_err(self.io(&name))?;
        let Some(bytes) = bytes else {
            return Ok(None);
        };
        let stamp = FileStamp::of(&bytes)?;
        let (header, snapshot) = self.manager.check_file(slot, bytes.clone())?;
        Ok(Some(Local {
            bytes,
            stamp,
            header,
            snapshot,
        }))
    }

    /// Checks a file from the cloud as a load checks a local one, with the manager's own
    /// checks (CRC, header, the protection its key asks for, decryption or tag, its slot, its
    /// schema version), and its owner.
    fn check_remote(&self, slot: SlotId, bytes: &[u8]) -> Result<(Header, Snapshot)> {
        let (header, snapshot) = self.manager.check_file(slot, bytes.to_vec())?;
        if let Some(owner) = header.metadata.user.get(OWNER_FIELD)
            && *owner != self.owner
        {
            return Err(Error::ForeignSave {
                expected: self.owner.clone(),
                found: owner.clone(),
            });
        }
        Ok((header, snapshot))
    }

    /// Downloads the slot and puts it in place of the local file stamped `expected`.
    /// `None` when the slot moved under it (try again).
    fn pull(&self, slot: SlotId, expected: Option<FileStamp>) -> Result<Option<SlotSync>> {
        let Some((bytes, tag)) = self.download(slot)? else {
            return Ok(None);
        };
        self.check_remote(slot, &bytes)?;
        self.install(slot, expected, &bytes, &tag)
    }

    fn download(&self, slot: SlotId) -> Result<Option<(Vec<u8>, Tag)>> {
        self.block_on(self.remote.get(slot, self.manager.max_file_size()))
    }

    /// Puts checked remote `bytes` in place of the local file stamped `expected`, and records
    /// them as synced.
    fn install(
        &self,
        slot: SlotId,
        expected: Option<FileStamp>,
        bytes: &[u8],
        tag: &Tag,
    ) -> Result<Option<SlotSync>> {
        let stamp = FileStamp::of(bytes)?;
        if expected == Some(stamp) {
            // Already in place (a killed resolve or pull got that far): rotating it into the
            // backups would only push an older save out.
            self.write_record(slot, tag, bytes)?;
            return Ok(Some(SlotSync::Pulled));
        }
        self.note_install(slot, stamp, tag)?;
        if !self.manager.replace_if_unchanged(slot, expected, bytes)? {
            return Ok(None);
        }
        self.write_record(slot, tag, bytes)?;
        Ok(Some(SlotSync::Pulled))
    }

    /// Uploads the local file if the remote object is as `expect` says, and records it as
    /// synced. `None` when the object is not.
    fn push(&self, slot: SlotId, expect: &Expect) -> Result<Option<SlotSync>> {
        let Some(local) = self.read_local(slot)? else {
            return Ok(None);
        };
        self.note_upload(slot, local.stamp, None)?;
        let Some(tag) = self.put(slot, &local.bytes, expect)? else {
            return Ok(None);
        };
        self.write_record(slot, &tag, &local.bytes)?;
        Ok(Some(SlotSync::Pushed))
    }

    /// Puts `bytes` as the slot's object if it is as `expect` says: its new tag, or `None`.
    fn put(&self, slot: SlotId, bytes: &[u8], expect: &Expect) -> Result<Option<Tag>> {
        self.block_on(self.remote.put(slot, bytes, expect))
    }

    /// Both sides changed since the last sync: the same file (an upload whose answer was lost),
    /// this device's own upload whose answer was lost (it saved again since, or it is a merge
    /// never put in place), a merge, or a conflict.
    fn both_changed(
        &self,
        slot: SlotId,
        record: Option<&record::Preamble>,
    ) -> Result<Option<SlotSync>> {
        let name = slot.file_name();
        let Some(local) = self.read_local(slot)? else {
            return Ok(None);
        };
        let Some((bytes, tag)) = self.download(slot)? else {
            return Ok(None);
        };
        if bytes == local.bytes {
            self.write_record(slot, &tag, &bytes)?;
            return Ok(Some(SlotSync::Unchanged));
        }
        let (remote_header, remote_snapshot) = self.check_remote(slot, &bytes)?;
        let remote_stamp = FileStamp::of(&bytes)?;
        let own = record
            .and_then(|r| r.pending)
            .filter(|p| p.upload == remote_stamp);
        let needs_files =
            record.is_some_and(|r| r.stamp.is_some()) || own.is_some_and(|p| p.base.is_some());
        let known = if needs_files {
            self.read_synced(slot)?
        } else {
            None
        };
        // The common ancestor: the file last synced, or, when the cloud holds this device's
        // own upload, the local file that upload was made from.
        let ancestor = match own {
            Some(own) if own.base == Some(local.stamp) => {
                // A merge uploaded and never put in place: it is the local save's successor.
                return self.install(slot, Some(local.stamp), &bytes, &tag);
            }
            Some(own) if own.base.is_none() => {
                // A push of an earlier save of this device's: the local save came after it.
                // It is what the cloud holds, so the next round pushes the local save over it.
                self.write_record(slot, &tag, &bytes)?;
                return Ok(None);
            }
            // A merge never put in place, and the game saved since: merge that save with it,
            // against the save the merge was made from.
            Some(_) => known.and_then(|r| r.base),
            None => known.filter(|r| r.preamble.stamp.is_some()).map(|r| r.file),
        };
        let ancestor = ancestor.and_then(|file| self.manager.check_file(slot, file).ok());
        let side = |header, snapshot| Side { snapshot, header };
        let outcome = merge::merge(
            ancestor.as_ref().map(|(h, s)| side(h, s)),
            &side(&local.header, &local.snapshot),
            &side(&remote_header, &remote_snapshot),
            &self.device,
        );
        match outcome {
            Outcome::Merged {
                snapshot,
                from_local,
                from_remote,
            } => {
                let merged = self
                    .manager
                    .seal_next(slot, &snapshot, local.header.generation)?;
                self.note_upload(slot, FileStamp::of(&merged)?, Some(&local.bytes))?;
                let Some(new_tag) = self.put(slot, &merged, &Expect::Still(tag))? else {
                    // Another device wrote meanwhile: the next round merges with theirs.
                    return Ok(None);
                };
                // The cloud took it: now it replaces the local save, unless the game saved
                // meanwhile. Then the record still names the merge as this device's upload,
                // and the next round merges that save with it.
                self.note_install(slot, FileStamp::of(&merged)?, &new_tag)?;
                if !self
                    .manager
                    .replace_if_unchanged(slot, Some(local.stamp), &merged)?
                {
                    return Ok(None);
                }
                self.write_record(slot, &new_tag, &merged)?;
                Ok(Some(SlotSync::Merged(Merged {
                    slot,
                    from_local,
                    from_remote,
                })))
            }
            Outcome::Conflict { ids, reason } => {
                self.put_record(
                    &conflict_name(&name),
                    &record::Parts {
                        e_tag: tag.e_tag.as_deref(),
                        version: tag.version.as_deref(),
                        file: Some(&bytes),
                        pending: None,
                        pulled: None,
                    },
                )?;
                Ok(Some(SlotSync::Conflict(Box::new(Conflict {
                    slot,
                    local: Version::of(&local.header),
                    remote: Version::of(&remote_header),
                    ids,
                    reason,
                }))))
            }
        }
    }

    pub(crate) fn resolve(&self, slot: SlotId, keep: Keep) -> Result<SlotSync> {
        let _one = lock(&self.syncing);
        self.trust()?;
        let name = slot.file_name();
        let copy = conflict_name(&name);
        let Some(conflict) = self.read_record(&copy)? else {
            return Err(Error::SlotEmpty { slot });
        };
        let theirs = conflict.file;
        self.check_remote(slot, &theirs)?;
        let tag = Tag {
            e_tag: conflict.preamble.e_tag,
            version: conflict.preamble.version,
        };
        let done = match keep {
            Keep::Remote => {
                let local = self.manager.file_stamp(slot)?;
                if self.install(slot, local, &theirs, &tag)?.is_none() {
                    return Err(Error::Cloud {
                        action: "resolve",
                        object: name,
                        source: "the local save changed while the conflict was resolved".into(),
                    });
                }
                SlotSync::Pulled
            }
            Keep::Local => {
                let local = self.read_local(slot)?.ok_or(Error::SlotEmpty { slot })?;
                // The declined version is a backup before anything else: a resolve killed at
                // any later point has kept it.
                self.manager.keep_as_backup(slot, &theirs)?;
                self.note_upload(slot, local.stamp, None)?;
                let Some(new_tag) = self.put(slot, &local.bytes, &Expect::Still(tag))? else {
                    return Err(Error::Cloud {
                        action: "resolve",
                        object: self.remote.path(slot).to_string(),
                        source: "the cloud's save changed again since the conflict: sync first"
                            .into(),
                    });
                };
                self.write_record(slot, &new_tag, &local.bytes)?;
                SlotSync::Pushed
            }
        };
        self.storage().delete(&copy).map_err(self.io(&copy))?;
        Ok(done)
    }
}
