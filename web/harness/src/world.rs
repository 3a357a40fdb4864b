//! The world the bench and the kill test save: a map of chunks, each chunk one memento (about
//! 48 KB in MessagePack), as an open-world game keeps it.

use savegame::{Originator, Snapshot};
use serde::{Deserialize, Serialize};

/// Entities per chunk: about 48 KB of MessagePack each.
const PER_CHUNK: u32 = 1_000;

/// One thing on the map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entity {
    id: u32,
    kind: u8,
    x: f32,
    y: f32,
    name: String,
}

/// One chunk of the map: its own memento.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chunk {
    /// Where it is (its index).
    pub index: u32,
    entities: Vec<Entity>,
}

impl Originator for Chunk {
    type Memento = Chunk;

    fn create_memento(&self) -> Chunk {
        self.clone()
    }

    fn restore_memento(&mut self, memento: Chunk) -> savegame::Result<()> {
        *self = memento;
        Ok(())
    }
}

/// A world of `chunks` chunks from `seed`.
#[must_use]
pub fn world(seed: u32, chunks: u32) -> Vec<Chunk> {
    let mut state = seed.wrapping_mul(2_654_435_761).max(1);
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state
    };
    (0..chunks)
        .map(|index| Chunk {
            index,
            entities: (0..PER_CHUNK)
                .map(|id| Entity {
                    id,
                    kind: (next() % 7) as u8,
                    x: (next() % 100_000) as f32 / 10.0,
                    y: (next() % 100_000) as f32 / 10.0,
                    name: format!("entity-{:08x}", next()),
                })
                .collect(),
        })
        .collect()
}

/// How many chunks make a world of about `megabytes` MB.
#[must_use]
pub fn chunks_for(megabytes: u32) -> u32 {
    megabytes * 21
}

/// The id of chunk `index` in a snapshot.
#[must_use]
pub fn chunk_id(index: u32) -> String {
    format!("chunk-{index:05}")
}

/// Captures every chunk into `snapshot`, lazily (each is encoded when the save needs it).
///
/// # Errors
/// The snapshot's (an id over its cap cannot happen here).
pub fn capture(snapshot: &mut Snapshot, world: &[Chunk]) -> savegame::Result<()> {
    for chunk in world {
        snapshot.capture(&chunk_id(chunk.index), chunk)?;
    }
    Ok(())
}
