//! [`Chain`]: every recorded state of the originator, held as one full copy and deltas.
//!
//! Each memento record of the history is a [`Link`]: the state before the edit and the state
//! after it. Laid end to end, the links form one line of states:
//!
//! ```text
//! before₀ ─edit─ after₀ ─gap─ before₁ ─edit─ after₁ ─gap─ before₂ ─edit─ after₂
//! ```
//!
//! A `gap` is whatever changed the originator between two memento records (commands, or
//! changes nobody recorded); it is usually nothing. Only one state, the **anchor**, is held in
//! full; every other state is reached by applying deltas from it, one step at a time. The
//! anchor stays where the history last worked (the cursor), so an undo or a redo moves it by
//! one or two steps, and each step splices a few bytes in place.
//!
//! Links are numbered from the first one ever pushed, so an entry of the history can name its
//! links by number while old links are dropped from the front.

use std::collections::VecDeque;
use std::mem::size_of;

use super::delta::Delta;
use crate::error::{Error, Result};

/// One memento record: the edit from its before state to its after state, and the gap from the
/// previous link's after state to this before state (`None` for the first link).
#[derive(Debug, Clone)]
pub(crate) struct Link {
    pub(crate) gap: Option<Delta>,
    pub(crate) edit: Delta,
}

impl Link {
    fn heap_bytes(&self) -> usize {
        self.gap.as_ref().map_or(0, Delta::heap_bytes) + self.edit.heap_bytes()
    }
}

/// Where the full copy sits: link number and side.
#[derive(Debug, Clone)]
pub(crate) struct Anchor {
    pub(crate) link: usize,
    pub(crate) after: bool,
    pub(crate) bytes: Vec<u8>,
}

impl Anchor {
    /// Position on the line of states: before₀ = 0, after₀ = 1, before₁ = 2, ...
    fn position(&self) -> usize {
        self.link * 2 + usize::from(self.after)
    }
}

/// The states of a history's memento records. Invariant: the anchor exists exactly when there
/// are links, and points at one of them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Chain {
    links: VecDeque<Link>,
    /// The number of the first link in `links`.
    base: usize,
    anchor: Option<Anchor>,
    /// Sum of the links' heap bytes.
    delta_bytes: usize,
}

impl Chain {
    /// A chain made of stored parts (a history memento). The parts are checked when the chain
    /// is walked.
    pub(crate) fn from_parts(mut links: Vec<Link>, anchor: Option<Anchor>) -> Result<Self> {
        if let Some(first) = links.first_mut() {
            first.gap = None;
        }
        if links.is_empty() != anchor.is_none()
            || anchor.as_ref().is_some_and(|a| a.link >= links.len())
        {
            return Err(malformed("the anchor does not point at a link"));
        }
        let delta_bytes = links.iter().map(Link::heap_bytes).sum();
        Ok(Chain {
            links: links.into(),
            base: 0,
            anchor,
            delta_bytes,
        })
    }

    /// The number of the first link.
    pub(crate) fn start(&self) -> usize {
        self.base
    }

    /// One past the number of the last link: the number the next pushed link gets.
    pub(crate) fn end(&self) -> usize {
        self.base + self.links.len()
    }

    /// Are there no links?
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.links.is_empty()
    }

    /// The links, first to last.
    pub(crate) fn links(&self) -> impl ExactSizeIterator<Item = &Link> {
        self.links.iter()
    }

    /// The anchor, if there are links.
    pub(crate) fn anchor(&self) -> Option<&Anchor> {
        self.anchor.as_ref()
    }

    /// Heap bytes: the anchor's buffer, the deltas, and the link table.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.anchor.as_ref().map_or(0, |a| a.bytes.capacity())
            + self.delta_bytes
            + self.links.capacity() * size_of::<Link>()
    }

    /// The encoded state on side `after` of link number `link`. Moves the anchor there.
    ///
    /// # Errors
    /// [`Error::Malformed`] when the link does not exist or a delta does not fit the state it
    /// is applied to (a damaged history memento; never for a history built in this process).
    pub(crate) fn state(&mut self, link: usize, after: bool) -> Result<&[u8]> {
        if link < self.base || link >= self.end() {
            return Err(malformed("a record names a link that does not exist"));
        }
        let target = link * 2 + usize::from(after);
        let Some(anchor) = self.anchor.as_mut() else {
            return Err(malformed("no anchor"));
        };
        while anchor.position() != target {
            let forward = anchor.position() < target;
            step(&self.links, self.base, anchor, forward)?;
        }
        Ok(&anchor.bytes)
    }

    /// Appends a link from `before` to `after`; the anchor becomes `after`.
    ///
    /// # Errors
    /// As for [`state`](Self::state), when the previous link's after state is reached.
    pub(crate) fn push(&mut self, before: &[u8], mut after: Vec<u8>) -> Result<()> {
        let gap = if self.links.is_empty() {
            None
        } else {
            let last = self.end() - 1;
            Some(Delta::between(self.state(last, true)?, before))
        };
        let link = Link {
            gap,
            edit: Delta::between(before, &after),
        };
        self.delta_bytes += link.heap_bytes();
        self.links.push_back(link);
        // Encoders grow their buffer by doubling; the anchor is kept, so keep it tight.
        if after.capacity() > after.len() + after.len() / 8 {
            after.shrink_to_fit();
        }
        self.anchor = Some(Anchor {
            link: self.end() - 1,
            after: true,
            bytes: after,
        });
        Ok(())
    }

    /// Replaces the after state of the last link (an edit merged into it). Returns `false`, and
    /// changes nothing, when the new after state equals the link's before state: the merged
    /// edit is no change at all, and the caller drops the link.
    ///
    /// # Errors
    /// As for [`state`](Self::state).
    pub(crate) fn set_last_after(&mut self, after: Vec<u8>) -> Result<bool> {
        let Some(last) = self.end().checked_sub(1).filter(|&l| l >= self.base) else {
            return Err(malformed("no link to merge into"));
        };
        let edit = Delta::between(self.state(last, false)?, &after);
        if edit.is_identity() {
            return Ok(false);
        }
        if let Some(link) = self.links.back_mut() {
            self.delta_bytes = self.delta_bytes - link.edit.heap_bytes() + edit.heap_bytes();
            link.edit = edit;
        }
        self.anchor = Some(Anchor {
            link: last,
            after: true,
            bytes: after,
        });
        Ok(true)
    }

    /// Drops the first link.
    ///
    /// # Errors
    /// As for [`state`](Self::state), when the anchor moves off the dropped link.
    pub(crate) fn pop_front(&mut self) -> Result<()> {
        if self.anchor.as_ref().is_some_and(|a| a.link == self.base) {
            if self.links.len() > 1 {
                self.state(self.base + 1, false)?;
            } else {
                self.anchor = None;
            }
        }
        if let Some(link) = self.links.pop_front() {
            self.delta_bytes -= link.heap_bytes();
            self.base += 1;
        }
        // Nothing comes before the new first link: its gap leads nowhere.
        if let Some(first) = self.links.front_mut()
            && let Some(gap) = first.gap.take()
        {
            self.delta_bytes -= gap.heap_bytes();
        }
        Ok(())
    }

    /// Drops the last link.
    ///
    /// # Errors
    /// As for [`state`](Self::state), when the anchor moves off the dropped link.
    pub(crate) fn pop_back(&mut self) -> Result<()> {
        let Some(last) = self.end().checked_sub(1).filter(|&l| l >= self.base) else {
            return Ok(());
        };
        if self.anchor.as_ref().is_some_and(|a| a.link == last) {
            if self.links.len() > 1 {
                self.state(last - 1, true)?;
            } else {
                self.anchor = None;
            }
        }
        if let Some(link) = self.links.pop_back() {
            self.delta_bytes -= link.heap_bytes();
        }
        Ok(())
    }

    /// Drops every link and frees their memory.
    pub(crate) fn clear(&mut self) {
        let end = self.end();
        *self = Chain {
            base: end,
            ..Chain::default()
        };
    }

    /// The sum of the links' heap bytes, counted from scratch (tests compare it with the
    /// running sum).
    #[cfg(test)]
    pub(crate) fn recount_delta_bytes(&self) -> usize {
        self.links.iter().map(Link::heap_bytes).sum()
    }

    /// Does the running sum of the links' heap bytes match a recount?
    #[cfg(test)]
    pub(crate) fn delta_bytes_add_up(&self) -> bool {
        self.delta_bytes == self.recount_delta_bytes()
    }
}

/// Moves `anchor` one state forward or back along `links` (whose first link is number `base`).
fn step(links: &VecDeque<Link>, base: usize, anchor: &mut Anchor, forward: bool) -> Result<()> {
    let index = anchor.link - base;
    let (delta, link, after) = match (forward, anchor.after) {
        // before → after of the same link
        (true, false) => (links.get(index).map(|l| &l.edit), anchor.link, true),
        // after → before of the next link, through the next link's gap
        (true, true) => (
            links.get(index + 1).and_then(|l| l.gap.as_ref()),
            anchor.link + 1,
            false,
        ),
        // after → before of the same link
        (false, true) => (links.get(index).map(|l| &l.edit), anchor.link, false),
        // before → after of the previous link, back through this link's gap
        (false, false) => (
            links.get(index).and_then(|l| l.gap.as_ref()),
            anchor.link.wrapping_sub(1),
            true,
        ),
    };
    let Some(delta) = delta else {
        return Err(malformed("a link has no gap to its neighbour"));
    };
    // Forward steps apply a delta from its old side to its new side.
    let applied = if forward {
        delta.forward(&mut anchor.bytes)
    } else {
        delta.backward(&mut anchor.bytes)
    };
    if !applied {
        return Err(malformed("a delta does not fit the state it applies to"));
    }
    anchor.link = link;
    anchor.after = after;
    Ok(())
}

fn malformed(what: &str) -> Error {
    Error::malformed(format!("undo history: {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn states() -> Vec<Vec<u8>> {
        // before₀ after₀ | before₁ (a gap: something changed) after₁ | before₂ after₂
        vec![
            b"room: chair at A, table at T".to_vec(),
            b"room: chair at B, table at T".to_vec(),
            b"room: chair at B, table at T, lamp".to_vec(),
            b"room: chair at C, table at T, lamp".to_vec(),
            b"room: chair at C, table at T, lamp".to_vec(),
            b"room: chair at C, table at U, lamp".to_vec(),
        ]
    }

    fn chain() -> Chain {
        let s = states();
        let mut chain = Chain::default();
        for pair in s.chunks(2) {
            chain.push(&pair[0], pair[1].clone()).unwrap();
        }
        chain
    }

    #[test]
    fn every_state_is_reachable_from_the_anchor_in_any_order() {
        let s = states();
        let mut chain = chain();
        for &(link, after) in &[(0, false), (2, true), (1, false), (0, true), (2, false)] {
            let index = link * 2 + usize::from(after);
            assert_eq!(chain.state(link, after).unwrap(), &s[index][..]);
        }
        assert_eq!(chain.delta_bytes, chain.recount_delta_bytes());
    }

    #[test]
    fn dropping_links_from_either_end_keeps_the_rest_reachable() {
        let s = states();
        let mut chain = chain();
        chain.state(0, false).unwrap();
        chain.pop_front().unwrap();
        assert_eq!(chain.start(), 1);
        assert_eq!(chain.state(1, false).unwrap(), &s[2][..]);
        assert!(chain.state(0, true).is_err(), "a dropped link is gone");
        chain.state(2, true).unwrap();
        chain.pop_back().unwrap();
        assert_eq!(chain.end(), 2);
        assert_eq!(chain.state(1, true).unwrap(), &s[3][..]);
        assert_eq!(chain.delta_bytes, chain.recount_delta_bytes());
        chain.pop_back().unwrap();
        assert!(chain.is_empty() && chain.anchor().is_none());
        assert_eq!(
            chain.heap_bytes(),
            chain.links.capacity() * size_of::<Link>()
        );
    }

    #[test]
    fn merging_into_the_last_link_can_cancel_it() {
        let s = states();
        let mut chain = chain();
        assert!(
            chain
                .set_last_after(b"room: chair at C, table at V, lamp".to_vec())
                .unwrap()
        );
        assert_eq!(chain.state(2, false).unwrap(), &s[4][..]);
        assert!(!chain.set_last_after(s[4].clone()).unwrap());
    }

    #[test]
    fn a_damaged_delta_is_an_error_not_a_panic() {
        let links = vec![
            Link {
                gap: None,
                edit: Delta::between(b"aaa", b"abba"),
            },
            Link {
                gap: Some(Delta::from_parts(
                    9,
                    9,
                    vec![super::super::delta::Hunk {
                        at: 0,
                        old: vec![1].into(),
                        new: vec![2].into(),
                    }],
                )),
                edit: Delta::between(b"x", b"y"),
            },
        ];
        let anchor = Anchor {
            link: 1,
            after: true,
            bytes: b"y".to_vec(),
        };
        let mut chain = Chain::from_parts(links, Some(anchor)).unwrap();
        assert!(matches!(
            chain.state(0, false),
            Err(Error::Malformed { .. })
        ));
        assert!(
            Chain::from_parts(
                Vec::new(),
                Some(Anchor {
                    link: 0,
                    after: false,
                    bytes: vec![]
                })
            )
            .is_err()
        );
    }
}
