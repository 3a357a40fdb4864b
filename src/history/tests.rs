//! Unit tests of the history's internals: the chain of states, merges, limits, memory.

use proptest::prelude::*;
use serde::{Deserialize, Serialize};

use super::*;

#[derive(Debug, Default)]
struct Doc {
    text: Vec<u8>,
}

impl Originator for Doc {
    type Memento = Vec<u8>;
    fn create_memento(&self) -> Vec<u8> {
        self.text.clone()
    }
    fn restore_memento(&mut self, m: Vec<u8>) -> Result<()> {
        self.text = m;
        Ok(())
    }
}

/// Appends its bytes; holds them on the heap.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Append(Vec<u8>, bool);

impl Command<Doc> for Append {
    fn name(&self) -> String {
        "append".into()
    }
    fn apply(&mut self, doc: &mut Doc) -> Result<()> {
        doc.text.extend_from_slice(&self.0);
        Ok(())
    }
    fn undo(&mut self, doc: &mut Doc) -> Result<()> {
        doc.text
            .truncate(doc.text.len().saturating_sub(self.0.len()));
        Ok(())
    }
    fn merge_id(&self) -> Option<u64> {
        self.1.then_some(7)
    }
    fn merge(&mut self, next: Self) -> Merged<Self> {
        self.0.extend(next.0);
        Merged::Yes
    }
    fn heap_size(&self) -> usize {
        self.0.capacity()
    }
}

impl<T: Originator, C: Command<T>> History<T, C> {
    /// `bytes()` counted from scratch.
    fn recount(&self) -> usize {
        assert_eq!(
            self.entry_bytes,
            self.entries
                .iter()
                .map(Entry::heap_bytes::<T>)
                .sum::<usize>()
        );
        self.bytes()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn the_running_byte_count_is_always_the_recount(
        ops in proptest::collection::vec((0u8..7, 0usize..40, any::<bool>()), 1..80),
        budget in proptest::option::of(64usize..2000),
    ) {
        let builder = History::<Doc, Append>::builder().limit(12);
        let mut history = match budget {
            Some(b) => builder.byte_budget(b),
            None => builder,
        }
        .build()
        .unwrap();
        let mut doc = Doc::default();
        for (op, n, flag) in ops {
            match op {
                0 => {
                    let title = if flag { Title::new("type").merging(1) } else { "type".into() };
                    history.edit(&mut doc, title, |d| d.text.extend(std::iter::repeat_n(b'x', n))).unwrap();
                }
                1 => {
                    history.apply(&mut doc, Append(vec![b'y'; n], flag)).unwrap();
                }
                2 => {
                    history.undo(&mut doc).unwrap();
                }
                3 => {
                    history.redo(&mut doc).unwrap();
                }
                4 => {
                    history.group(&mut doc, "group", |h, d| {
                        h.edit(d, "cut", |d| d.text.truncate(n))?;
                        h.apply(d, Append(vec![b'z'; n], flag))
                    }).unwrap();
                }
                5 => history.mark_saved(),
                _ => history.seal(),
            }
            prop_assert!(history.chain.delta_bytes_add_up());
            let bytes = history.recount();
            prop_assert!(bytes >= history.chain.heap_bytes());
            prop_assert!(history.len() <= 12);
        }
    }
}

#[test]
fn a_history_holds_one_full_state_however_many_small_edits() {
    let mut doc = Doc {
        text: vec![b'.'; 100_000],
    };
    let mut history = History::<Doc>::builder().unlimited().build().unwrap();
    for i in 0..200 {
        history
            .edit(&mut doc, "poke", |d| d.text[i * 100] = b'#')
            .unwrap();
    }
    let full = Codec::MessagePack.encode(&doc.text).unwrap().len();
    assert!(history.bytes() > full, "the one full state is counted");
    let per_entry = (history.bytes() - full) / 200;
    // Bookkeeping: the entry and its link in their tables (by capacity), and the name.
    assert!(per_entry < 256, "{per_entry} bytes per one-byte edit");
}

#[test]
fn the_open_edit_and_group_count_in_bytes() {
    let mut doc = Doc {
        text: vec![1; 1000],
    };
    let mut history = History::<Doc>::new();
    let empty = history.bytes();
    history.begin_edit(&doc, "type").unwrap();
    assert!(history.bytes() >= empty + 1000);
    doc.text.push(2);
    history.commit_edit(&doc).unwrap();
    history.begin_group("g").unwrap();
    history.edit(&mut doc, "type", |d| d.text.push(3)).unwrap();
    let open = history.bytes();
    history.end_group().unwrap();
    assert!(
        history.bytes() < open,
        "closing a group compacts its states"
    );
}

#[test]
fn debug_output_names_the_shape_not_the_states() {
    let mut doc = Doc::default();
    let mut history = History::<Doc>::new();
    history.edit(&mut doc, "type", |d| d.text.push(1)).unwrap();
    let text = format!("{history:?}");
    assert!(
        text.contains("len: 1") && text.contains("cursor: 1"),
        "{text}"
    );
    let builder = format!("{:?}", History::<Doc>::builder().limit(3));
    assert!(builder.contains("limit: Some(3)"), "{builder}");
}
