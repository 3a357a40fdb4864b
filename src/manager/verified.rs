//! Which base files this manager has checked whole, and while that check still stands: so an
//! incremental save does not read the slot's whole save again (a CRC over every byte) before
//! each delta, but only when the file changed since it was last checked.
//!
//! A check stands for a file while the storage reports the same [`Identity`] for it (the same
//! file, length and change times: no writer, this process or another, has touched it) and that
//! identity had settled when it was taken (its last change at least [`Identity::SETTLE`]
//! older), so that a change made since cannot carry the same time. Even so, a base is read
//! whole again once its last whole check is [`CHECK_AGE`] old, or has stood for
//! [`CHECK_EVERY`] deltas, whichever comes first. A storage that reports no identity (the
//! simulated file system, an object store) has every base checked every time.
//!
//! What this gives up: damage to the disk under an unchanged file is not seen before the next
//! whole check, so deltas go on being appended to the damaged base until then (for at most
//! [`CHECK_AGE`], or [`CHECK_EVERY`] deltas), and a load in that time falls back to a backup,
//! without the damaged base and its deltas. Once the check sees the damage, the delta is
//! refused (`FullSaveNeeded`) and the game's full save replaces the base. The bound is in time
//! first because a check of a file read back from the page cache sees no disk damage either,
//! which is where a base written or read recently is read from: the pages of a base that only
//! its header is read of leave the cache with time, not with the deltas appended beside it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use super::locks::lock;
use crate::storage::Identity;

/// The longest one whole check of a base stands for.
pub(super) const CHECK_AGE: Duration = Duration::from_secs(60);

/// The most deltas one whole check of a base stands for.
pub(super) const CHECK_EVERY: u32 = 1_024;

/// The bases this manager checked whole, by file name.
#[derive(Debug, Default)]
pub(super) struct Verified {
    checked: Mutex<HashMap<String, Check>>,
}

/// One whole check of a file: the file's identity before it was read, when it was taken, and
/// how many deltas have relied on it since.
#[derive(Debug, Clone, Copy)]
struct Check {
    identity: Identity,
    taken: SystemTime,
    relied_on: u32,
}

impl Verified {
    /// Whether the file `name`, whose identity is `identity` at `now`, passed a whole check
    /// that still stands (see the module docs; a clock turned back ends it too); when it does,
    /// one more delta relies on it.
    pub(super) fn vouches(&self, name: &str, identity: Option<Identity>, now: SystemTime) -> bool {
        let Some(identity) = identity else {
            return false;
        };
        let mut checked = lock(&self.checked);
        match checked.get_mut(name) {
            Some(check)
                if check.identity == identity
                    && check.relied_on < CHECK_EVERY
                    && now
                        .duration_since(check.taken)
                        .is_ok_and(|age| age < CHECK_AGE) =>
            {
                check.relied_on += 1;
                true
            }
            _ => false,
        }
    }

    /// Records that the file `name` passed a whole check begun when its identity was
    /// `identity`, taken at `taken`: it stands if that identity had settled by then.
    pub(super) fn passed(&self, name: &str, identity: Option<Identity>, taken: SystemTime) {
        let mut checked = lock(&self.checked);
        match identity {
            Some(identity) if identity.settled_at(taken) => {
                checked.insert(
                    name.to_owned(),
                    Check {
                        identity,
                        taken,
                        relied_on: 0,
                    },
                );
            }
            _ => {
                checked.remove(name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn identity(changed: SystemTime) -> Identity {
        Identity {
            file: (1, 2),
            len: 100,
            modified: changed,
            changed,
        }
    }

    #[test]
    fn a_check_stands_only_for_the_same_settled_file_and_only_so_long() {
        let verified = Verified::default();
        let changed = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let settled = changed + Identity::SETTLE;
        let id = identity(changed);
        let vouches = |identity, at| verified.vouches("a", identity, at);
        assert!(!vouches(Some(id), settled), "never checked");
        verified.passed("a", Some(id), settled - Duration::from_millis(1));
        assert!(!vouches(Some(id), settled), "checked before it settled");
        verified.passed("a", Some(id), settled);
        for _ in 0..CHECK_EVERY {
            assert!(vouches(Some(id), settled));
        }
        assert!(
            !vouches(Some(id), settled),
            "read whole again after so many"
        );
        verified.passed("a", Some(id), settled);
        let late = settled + CHECK_AGE;
        assert!(vouches(Some(id), late - Duration::from_millis(1)));
        assert!(!vouches(Some(id), late), "read whole again after so long");
        let before = settled - Duration::from_millis(1);
        assert!(!vouches(Some(id), before), "the clock turned back");
        let mut touched = id;
        touched.changed += Duration::from_nanos(1);
        assert!(!vouches(Some(touched), settled), "changed since");
        assert!(!vouches(None, settled), "no identity");
        assert!(!verified.vouches("b", Some(id), settled), "another file");
    }
}
