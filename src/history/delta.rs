//! [`Delta`]: the compact form of one recorded change, the bytes two encoded states do not share.
//!
//! Two encodings of one originator before and after an edit usually differ in a few places: a
//! chair's position; or, for a piece placed in a room, the element count in the header of a map
//! and the new element further on. A delta keeps only those places, as **hunks**: at this
//! offset, these old bytes became these new bytes. Everything between hunks, and the common
//! suffix, is shared and stored nowhere. A delta works both ways: it turns the old state into
//! the new one, and back.
//!
//! Finding the hunks is one pass at `memcmp` speed: skip the common run, then find where the
//! two sides agree again, trying in order a same-length change of up to [`REACH`] bytes, the
//! net growth or shrinkage of what is left, and then a search for an insertion or a deletion of
//! up to [`SEARCH`] bytes (with the bytes looked for starting up to 256 bytes on, should the
//! next change be close). After [`MAX_HUNKS`] hunks, or when nothing agrees again, the rest is
//! one hunk. Any split is correct; these heuristics only make deltas small for the changes an
//! editor makes.

/// Bytes that must agree for the two sides to count as back in step.
const SYNC: usize = 16;
/// The longest same-length change looked for before trying insertions and deletions.
const REACH: usize = 64;
/// The longest insertion or deletion of unknown size searched for.
const SEARCH: usize = 64 * 1024;
/// Hunks per delta; what is left after them is one more hunk.
const MAX_HUNKS: usize = 64;
/// Bytes compared at once while skipping a common run (one `memcmp` each).
const BLOCK: usize = 128;

/// One place where the two states differ: at offset `at` of the old state, `old` became `new`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hunk {
    pub(crate) at: usize,
    pub(crate) old: Box<[u8]>,
    pub(crate) new: Box<[u8]>,
}

/// A two-way patch between two byte strings.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Delta {
    old_len: usize,
    new_len: usize,
    /// In increasing order of `at`, not overlapping.
    hunks: Box<[Hunk]>,
}

impl Delta {
    /// The delta that turns `old` into `new` (and back).
    pub(crate) fn between(old: &[u8], new: &[u8]) -> Self {
        let tail = common_suffix(old, new);
        let (old_end, new_end) = (old.len() - tail, new.len() - tail);
        let mut hunks = Vec::new();
        let (mut i, mut j) = (0, 0);
        loop {
            let same = common_prefix(&old[i..old_end], &new[j..new_end]);
            i += same;
            j += same;
            if i == old_end && j == new_end {
                break;
            }
            let (o, n) = (&old[i..old_end], &new[j..new_end]);
            let (a, b) = if hunks.len() + 1 == MAX_HUNKS {
                (o.len(), n.len())
            } else {
                resync(o, n)
            };
            hunks.push(Hunk {
                at: i,
                old: o[..a].into(),
                new: n[..b].into(),
            });
            i += a;
            j += b;
        }
        Delta {
            old_len: old.len(),
            new_len: new.len(),
            hunks: hunks.into_boxed_slice(),
        }
    }

    /// A delta from its parts, as a history memento stores them. Checked when applied.
    pub(crate) fn from_parts(old_len: usize, new_len: usize, hunks: Vec<Hunk>) -> Self {
        Delta {
            old_len,
            new_len,
            hunks: hunks.into_boxed_slice(),
        }
    }

    /// `(old length, new length, hunks)`.
    pub(crate) fn parts(&self) -> (usize, usize, &[Hunk]) {
        (self.old_len, self.new_len, &self.hunks)
    }

    /// Do the two states have equal bytes?
    pub(crate) fn is_identity(&self) -> bool {
        self.hunks.is_empty()
    }

    /// Turns the old bytes in `bytes` into the new ones. Returns `false`, leaving `bytes`
    /// unchanged, when `bytes` do not fit this delta (a damaged history memento).
    pub(crate) fn forward(&self, bytes: &mut Vec<u8>) -> bool {
        self.apply(bytes, true)
    }

    /// Turns the new bytes in `bytes` back into the old ones; `false` as for
    /// [`forward`](Self::forward).
    pub(crate) fn backward(&self, bytes: &mut Vec<u8>) -> bool {
        self.apply(bytes, false)
    }

    /// Heap bytes the delta holds.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.hunks.len() * size_of::<Hunk>()
            + self
                .hunks
                .iter()
                .map(|h| h.old.len() + h.new.len())
                .sum::<usize>()
    }

    fn apply(&self, bytes: &mut Vec<u8>, forward: bool) -> bool {
        let (src_len, dst_len) = if forward {
            (self.old_len, self.new_len)
        } else {
            (self.new_len, self.old_len)
        };
        let side = |h: &Hunk| -> (usize, usize) {
            if forward {
                (h.old.len(), h.new.len())
            } else {
                (h.new.len(), h.old.len())
            }
        };
        // Check everything before changing anything: where each hunk sits in the source, that
        // the source holds its bytes there, and the lengths.
        let mut starts = Vec::with_capacity(self.hunks.len());
        let (mut end, mut shift, mut in_place) = (0usize, 0isize, true);
        for h in &self.hunks {
            let (from_len, to_len) = side(h);
            // Offsets in the new state are the old ones moved by the hunks before.
            let Some(start) = (if forward {
                Some(h.at)
            } else {
                h.at.checked_add_signed(shift)
            }) else {
                return false;
            };
            let from = if forward { &h.old } else { &h.new };
            if start < end || bytes.get(start..start.saturating_add(from_len)) != Some(&from[..]) {
                return false;
            }
            end = start + from_len;
            in_place &= from_len == to_len;
            shift += isize::try_from(h.new.len()).unwrap_or(isize::MAX)
                - isize::try_from(h.old.len()).unwrap_or(isize::MAX);
            starts.push(start);
        }
        let grown = isize::try_from(src_len)
            .ok()
            .and_then(|s| s.checked_add(if forward { shift } else { -shift }));
        if bytes.len() != src_len || grown != isize::try_from(dst_len).ok() {
            return false;
        }
        if in_place {
            for (h, &start) in self.hunks.iter().zip(&starts) {
                let to = if forward { &h.new } else { &h.old };
                bytes[start..start + to.len()].copy_from_slice(to);
            }
            return true;
        }
        // The buffer is the history's one full state, and counts against its byte budget:
        // build the result at its exact size.
        let mut out = Vec::with_capacity(dst_len);
        let mut at = 0;
        for (h, &start) in self.hunks.iter().zip(&starts) {
            let (from_len, _) = side(h);
            let to = if forward { &h.new } else { &h.old };
            out.extend_from_slice(&bytes[at..start]);
            out.extend_from_slice(to);
            at = start + from_len;
        }
        out.extend_from_slice(&bytes[at..]);
        *bytes = out;
        true
    }
}

/// Where `o` and `n`, which differ at their first byte, agree again: the lengths `(a, b)` of
/// the hunk that ends there. `(o.len(), n.len())` when they never do.
fn resync(o: &[u8], n: &[u8]) -> (usize, usize) {
    if o.is_empty() || n.is_empty() {
        return (o.len(), n.len());
    }
    let agree = |a: usize, b: usize| {
        a + SYNC <= o.len() && b + SYNC <= n.len() && o[a..a + SYNC] == n[b..b + SYNC]
    };
    // What is left grows or shrinks by this much: one insertion or deletion of that size is
    // the likeliest change after a same-length one.
    let growth = n.len().abs_diff(o.len());
    for s in 0..=REACH {
        if s > 0 && agree(s, s) {
            return (s, s);
        }
        if growth > 0 {
            let (a, b) = if n.len() > o.len() {
                (s, s + growth)
            } else {
                (s + growth, s)
            };
            if agree(a, b) {
                return (a, b);
            }
        }
    }
    // An insertion or a deletion of another size, found by where the other side's bytes
    // reappear. The bytes looked for start a little further on when the next change is close.
    for key_at in [0, SYNC, 4 * SYNC, 16 * SYNC] {
        let inserted = o
            .get(key_at..key_at + SYNC)
            .and_then(|key| find(window(n, key_at + 1), key).map(|p| (key_at, key_at + 1 + p)));
        let deleted = n
            .get(key_at..key_at + SYNC)
            .and_then(|key| find(window(o, key_at + 1), key).map(|p| (key_at + 1 + p, key_at)));
        match (inserted, deleted) {
            (Some(i), Some(d)) => return if i.1 <= d.0 { i } else { d },
            (Some(x), None) | (None, Some(x)) => return x,
            (None, None) => {}
        }
    }
    (o.len(), n.len())
}

/// `x` from `from`, at most [`SEARCH`] + [`SYNC`] bytes of it.
fn window(x: &[u8], from: usize) -> &[u8] {
    x.get(from..x.len().min(from + SEARCH + SYNC))
        .unwrap_or_default()
}

/// The first position of `key` in `hay`.
fn find(hay: &[u8], key: &[u8]) -> Option<usize> {
    let first = *key.first()?;
    let mut from = 0;
    while let Some(p) = hay.get(from..)?.iter().position(|&b| b == first) {
        let at = from + p;
        if hay.get(at..at + key.len())? == key {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// Length of the longest common prefix of `a` and `b`.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let blocks = a
        .chunks_exact(BLOCK)
        .zip(b.chunks_exact(BLOCK))
        .take_while(|(x, y)| x == y)
        .count();
    let done = blocks * BLOCK;
    done + a[done..]
        .iter()
        .zip(&b[done..])
        .take_while(|(x, y)| x == y)
        .count()
}

/// Length of the longest common suffix of `a` and `b`.
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    let blocks = a
        .rchunks_exact(BLOCK)
        .zip(b.rchunks_exact(BLOCK))
        .take_while(|(x, y)| x == y)
        .count();
    let done = blocks * BLOCK;
    done + a[..a.len() - done]
        .iter()
        .rev()
        .zip(b[..b.len() - done].iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn round_trip(old: &[u8], new: &[u8]) -> Delta {
        let d = Delta::between(old, new);
        let mut bytes = old.to_vec();
        assert!(d.forward(&mut bytes));
        assert_eq!(bytes, new);
        assert!(d.backward(&mut bytes));
        assert_eq!(bytes, old);
        assert_eq!(d.is_identity(), old == new);
        d
    }

    /// Changed bytes, not counting the hunk table.
    fn payload(d: &Delta) -> usize {
        d.hunks.iter().map(|h| h.old.len() + h.new.len()).sum()
    }

    /// Bytes without repeats (splitmix64).
    fn noise(len: usize, seed: u32) -> Vec<u8> {
        (0..len as u64)
            .map(|i| {
                let mut z = (i ^ u64::from(seed) << 32).wrapping_add(0x9e37_79b9_7f4a_7c15);
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                (z ^ (z >> 31)) as u8
            })
            .collect()
    }

    #[test]
    fn equal_bytes_make_an_identity_delta_that_holds_nothing() {
        let bytes = vec![7u8; 1000];
        let d = round_trip(&bytes, &bytes);
        assert_eq!(d.heap_bytes(), 0);
    }

    #[test]
    fn a_changed_value_in_a_large_buffer_costs_only_the_changed_bytes() {
        let old = noise(1_000_000, 1);
        let mut new = old.clone();
        new[500_000] ^= 0xff;
        new[500_003] ^= 0xff;
        assert_eq!(payload(&round_trip(&old, &new)), 8);
    }

    #[test]
    fn a_new_element_and_its_count_in_the_header_are_two_small_hunks() {
        // A map header with a count, a large body, and one element appended: the way
        // MessagePack encodes placing one more piece in a room.
        let body = noise(200_000, 2);
        let old = [&[0xde, 0x01, 0x90][..], &body].concat();
        let new = [&[0xde, 0x01, 0x91][..], &body, b"one more piece"].concat();
        let d = round_trip(&old, &new);
        assert_eq!(d.hunks.len(), 2);
        assert_eq!(payload(&d), 2 + 14);
        // In the middle, with a changed field after it (next id).
        let (head, rest) = body.split_at(90_000);
        let old = [&[0xde, 0x01, 0x90][..], head, rest, b"next=17"].concat();
        let new = [
            &[0xde, 0x01, 0x91][..],
            head,
            &noise(5000, 3),
            rest,
            b"next=18",
        ]
        .concat();
        let d = round_trip(&old, &new);
        assert!(payload(&d) < 5100, "{}", payload(&d));
        // A removed element.
        let d = round_trip(&new, &old);
        assert!(payload(&d) < 5100, "{}", payload(&d));
    }

    #[test]
    fn a_delta_refuses_bytes_it_was_not_made_from() {
        let d = Delta::between(b"abcdef", b"abXYZdef");
        // The changed bytes are checked, and the length (the shared bytes are not compared).
        let mut wrong = b"abQdef".to_vec();
        assert!(!d.forward(&mut wrong));
        assert_eq!(wrong, b"abQdef");
        let mut wrong = b"abXYQdef".to_vec();
        assert!(!d.backward(&mut wrong));
        let mut short = b"ab".to_vec();
        assert!(!d.forward(&mut short));
        assert!(!d.backward(&mut short));
        let hostile = Delta::from_parts(
            3,
            usize::MAX,
            vec![Hunk {
                at: usize::MAX,
                old: vec![1].into(),
                new: vec![2].into(),
            }],
        );
        let mut bytes = b"abc".to_vec();
        assert!(!hostile.forward(&mut bytes));
        assert!(!hostile.backward(&mut bytes));
        assert_eq!(bytes, b"abc");
        let overlapping = Delta::from_parts(
            3,
            3,
            vec![
                Hunk {
                    at: 1,
                    old: b"bc".to_vec().into(),
                    new: b"xy".to_vec().into(),
                },
                Hunk {
                    at: 2,
                    old: b"c".to_vec().into(),
                    new: b"z".to_vec().into(),
                },
            ],
        );
        assert!(!overlapping.forward(&mut bytes));
        assert_eq!(bytes, b"abc");
    }

    #[test]
    fn regression_a_change_that_reaches_the_end_of_one_side_does_not_panic() {
        // Found by the proptest: looking for where the sides agree again sliced past the end of
        // a side that had nothing left.
        let old = noise(1800, 0);
        let new = [&[0u8; 16][..], &old].concat();
        round_trip(&old, &new);
        round_trip(&new, &old);
        round_trip(&old, &[&old[..], b"tail"].concat());
        round_trip(&[&old[..], b"tail"].concat(), &old);
        round_trip(b"", b"abc");
        round_trip(b"abc", b"");
    }

    #[test]
    fn regression_a_deletion_just_before_an_insertion_stays_small() {
        // Found by the proptest: the bytes searched for to end the deletion ran into the
        // insertion 15 bytes later, and the rest of the buffer became one hunk.
        let old = noise(2320, 0);
        let new = [
            &old[..505],
            &old[656..671],
            &[0; 14],
            &old[671..1238],
            &[0],
            &old[1238..],
        ]
        .concat();
        let d = round_trip(&old, &new);
        assert!(payload(&d) < 600, "{} bytes", payload(&d));
    }

    #[derive(Debug, Clone)]
    enum Edit {
        Replace(usize, Vec<u8>),
        Insert(usize, Vec<u8>),
        Delete(usize, usize),
    }

    fn edit() -> impl Strategy<Value = Edit> {
        prop_oneof![
            (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..8))
                .prop_map(|(at, b)| Edit::Replace(at, b)),
            (
                any::<usize>(),
                proptest::collection::vec(any::<u8>(), 1..300)
            )
                .prop_map(|(at, b)| Edit::Insert(at, b)),
            (any::<usize>(), 1usize..300).prop_map(|(at, n)| Edit::Delete(at, n)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn deltas_turn_either_side_into_the_other(
            len in 0usize..3000,
            seed in any::<u32>(),
            edits in proptest::collection::vec(edit(), 0..6),
            repetitive in any::<bool>(),
        ) {
            let old = if repetitive { vec![b'a'; len] } else { noise(len, seed) };
            let mut new = old.clone();
            let mut changed = 0;
            let count = edits.len();
            for e in edits {
                let n = new.len();
                match e {
                    Edit::Replace(at, b) if n > 0 => {
                        let at = at % n;
                        let end = (at + b.len()).min(n);
                        changed += 2 * (end - at);
                        new[at..end].copy_from_slice(&b[..end - at]);
                    }
                    Edit::Insert(at, b) => {
                        changed += b.len();
                        new.splice(at % (n + 1)..at % (n + 1), b);
                    }
                    Edit::Delete(at, k) if n > 0 => {
                        let at = at % n;
                        let end = (at + k).min(n);
                        changed += end - at;
                        new.drain(at..end);
                    }
                    _ => {}
                }
            }
            let d = round_trip(&old, &new);
            if !repetitive {
                // A few localised edits of random bytes cost about what they changed, plus at
                // most a few hundred bytes each: the unmatched blocks around the edit on either
                // side, and the instructions' own bytes (four edits near one another in the
                // saved case cost 552 bytes each over what they changed).
                prop_assert!(
                    payload(&d) <= 2 * changed + count * (2 * (16 * SYNC + SYNC) + SYNC),
                    "{} bytes for {} changed", payload(&d), changed
                );
            }
        }
    }
}
