//! A full save written as it is encoded: the file goes to the storage a segment at a time
//! ([`Storage::put_streamed`](crate::storage::Storage::put_streamed)), so a save never holds its
//! whole file in memory, and the disk is written while the rest is encoded. A snapshot's save
//! ([`Engine::save_locked`]) and a state's (`save_state`, which fingerprints each memento from
//! its pieces as they are written) both come through [`Engine::save_either`].
//!
//! It keeps every promise of the other path, a file sealed whole: the file the save demotes
//! to a backup is checked whole first (on a second thread, beside the writing, and before the
//! rotation), a damaged one never becomes a backup, a failure leaves every file as it was, and
//! `Ok` means the new file is durable. Where it cannot say what the slot's current file is
//! cheaply (no header at the game's schema version: a migration's pre-migration copy, a
//! damaged header), or the check finds the current file damaged, it writes nothing and the
//! other path saves. So it does where no thread can be started beside the encoder, and on a
//! storage that does not write as it goes (`Storage::streams`: only `FsStorage` does).

use std::cell::{Cell, RefCell};
use std::io;

use super::backups::rotate;
use super::engine::Engine;
use super::locks::lock_slot;
use super::report::SaveReport;
use crate::error::{Error, Result};
use crate::format::StreamError;
use crate::slot::SlotId;
use crate::snapshot::{SealWith, streams};
use crate::storage::StreamSink;

/// Writes a save file into a sink as it is encoded: `(generation, saved at, sealed how, sink,
/// the cap on its length)`; its length.
pub(super) type StreamFill<'f> = dyn FnMut(
        u64,
        std::time::SystemTime,
        SealWith<'_>,
        &mut dyn StreamSink,
        u64,
    ) -> std::result::Result<u64, StreamError>
    + 'f;

impl Engine {
    /// A full save with the slot's lock held, written as it is encoded by `stream` where the
    /// storage and the sealing allow it (see [`streamed`](super::streamed)), else sealed whole
    /// by `seal(generation, how)`. `seal` may be called twice (when the current file turns out
    /// to be damaged, the new one is sealed again with another generation).
    pub(super) fn save_either(
        &self,
        slot: SlotId,
        stream: &mut StreamFill<'_>,
        seal: &mut dyn FnMut(u64, SealWith<'_>) -> Result<Vec<u8>>,
    ) -> Result<SaveReport> {
        if self.files.storage.streams()
            && streams(&self.files.seal_with(0))
            && let Some(report) = self.save_streamed(slot, stream)?
        {
            return Ok(report);
        }
        self.save_sealed(slot, seal)
    }

    /// [`save_either`](Self::save_either), taking the slot's lock.
    pub(super) fn save_either_locking(
        &self,
        slot: SlotId,
        stream: &mut StreamFill<'_>,
        seal: &mut dyn FnMut(u64, SealWith<'_>) -> Result<Vec<u8>>,
    ) -> Result<SaveReport> {
        let _lock = lock_slot(&self.files, &slot.file_name())?;
        self.save_either(slot, stream, seal)
    }

    /// A full save to `slot` of the file `stream` writes, with the slot's lock held, written as
    /// it is encoded; `Ok(None)` when the other path must save instead (nothing was written).
    pub(super) fn save_streamed(
        &self,
        slot: SlotId,
        stream: &mut StreamFill<'_>,
    ) -> Result<Option<SaveReport>> {
        let files = &self.files;
        let name = slot.file_name();
        let (previous, current_len) = match files.read_header(&name) {
            Ok(Some((header, len))) if header.schema_version == files.schema_version => {
                (header.generation, Some(len))
            }
            // No current file: no backup to make, generations go on from the newest backup.
            Ok(None) => (self.backup_generation(&name), None),
            _ => return Ok(None),
        };
        // Deltas name their base by generation: a new base never reuses the one leftover
        // deltas were written for.
        let leftover = self.journals.generation(files, &name);
        let generation = previous.max(leftover).saturating_add(1);
        let saved_at = crate::format::now();
        let keep = current_len.map_or(0, |_| self.backups);
        let with = files.seal_with(0);
        let limit = files.max_file_size;
        let path = files.storage.locate(&name);
        // What stopped the put, beside the storage's own error.
        let stopped: RefCell<Option<Error>> = RefCell::new(None);
        // The current file is damaged, or no writer thread could be had: the other path saves.
        let fall_back = Cell::new(false);
        let written = Cell::new(0u64);
        let mut fill = |sink: &mut dyn StreamSink| -> io::Result<()> {
            let streamed = stream(generation, saved_at, with, sink, limit);
            let error = match streamed {
                Ok(len) => {
                    written.set(len);
                    return Ok(());
                }
                Err(StreamError::Sink(e)) => return Err(e),
                Err(StreamError::SealWhole) => {
                    fall_back.set(true);
                    return Err(io::Error::other("this save is sealed whole instead"));
                }
                Err(StreamError::TooLarge { size }) => Error::TooLarge {
                    path: path.clone(),
                    size,
                    limit,
                },
                Err(StreamError::Seal(e)) => e,
            };
            let said = io::Error::other(error.to_string());
            *stopped.borrow_mut() = Some(error);
            Err(said)
        };
        let put = std::thread::scope(|scope| {
            let Some(len) = current_len.filter(|_| keep > 0) else {
                return files.storage.put_streamed(&name, &mut fill, None);
            };
            // The check reads the current file back and takes its CRC, beside the writing.
            let name = name.as_str();
            let check = move || files.check_stored(name, len);
            let mut thread = crate::threads::scoped(scope, "savegame-check-streamed", check);
            let mut first = || -> io::Result<()> {
                let checked = match thread.take() {
                    // A check that panicked (it has no way to) is run again here.
                    Some(thread) => thread.join().unwrap_or_else(|_| check()),
                    None => check(),
                };
                match checked {
                    Ok(()) => rotate(files.storage.as_ref(), name, keep),
                    Err(e) => {
                        fall_back.set(e.is_corruption());
                        let said = io::Error::other(e.to_string());
                        *stopped.borrow_mut() = Some(e);
                        Err(said)
                    }
                }
            };
            files
                .storage
                .put_streamed(name, &mut fill, Some(&mut first))
        });
        if let Err(e) = put {
            if fall_back.get() {
                return Ok(None);
            }
            return Err(stopped
                .into_inner()
                .unwrap_or_else(|| files.error(&name, e)));
        }
        // The new base holds everything: its old deltas are obsolete.
        self.journals.clear(files, &name);
        Ok(Some(SaveReport {
            slot,
            path,
            bytes: written.get(),
            generation,
            saved_at: crate::format::millis_to_system_time(crate::format::system_time_to_millis(
                saved_at,
            )),
        }))
    }
}
