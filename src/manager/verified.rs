//! Which base files this manager has checked whole, and while that check still stands: so an
//! incremental save does not read the slot's whole save again (a CRC over every byte) before
//! each delta, but only when the file changed since it was last checked.
//!
//! A check stands for a file while the storage reports the same [`Identity`] for it (the same
//! file, length and change times: no writer, this process or another, has touched it) and that
//! identity had settled when it was taken (its last change at least [`Identity::SETTLE`]
//! older), so that a change made since cannot carry the same time. Even so, a base is read
//! whole again at least every [`CHECK_EVERY`] deltas. A storage that reports no identity
//! (the simulated file system, an object store) has every base checked every time.
//!
//! What this gives up: damage to the disk under an unchanged file is not seen before the next
//! whole check. A check of a file read back from the page cache sees no such damage either,
//! which is where a base written or read recently is read from.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::SystemTime;

use super::locks::lock;
use crate::storage::Identity;

/// The most deltas one whole check of a base stands for.
pub(super) const CHECK_EVERY: u32 = 64;

/// The bases this manager checked whole, by file name.
#[derive(Debug, Default)]
pub(super) struct Verified {
    checked: Mutex<HashMap<String, Check>>,
}

/// One whole check of a file: the file's identity before it was read, and how many deltas have
/// relied on it since.
#[derive(Debug, Clone, Copy)]
struct Check {
    identity: Identity,
    relied_on: u32,
}

impl Verified {
    /// Whether the file `name`, whose identity is now `identity`, passed a whole check that
    /// still stands (see the module docs); when it does, one more delta relies on it.
    pub(super) fn vouches(&self, name: &str, identity: Option<Identity>) -> bool {
        let Some(identity) = identity else {
            return false;
        };
        let mut checked = lock(&self.checked);
        match checked.get_mut(name) {
            Some(check) if check.identity == identity && check.relied_on < CHECK_EVERY => {
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
    fn a_check_stands_only_for_the_same_settled_file_and_only_so_often() {
        let verified = Verified::default();
        let changed = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let settled = changed + Identity::SETTLE;
        let id = identity(changed);
        assert!(!verified.vouches("a", Some(id)), "never checked");
        verified.passed("a", Some(id), settled - Duration::from_millis(1));
        assert!(
            !verified.vouches("a", Some(id)),
            "checked before it settled"
        );
        verified.passed("a", Some(id), settled);
        for _ in 0..CHECK_EVERY {
            assert!(verified.vouches("a", Some(id)));
        }
        assert!(!verified.vouches("a", Some(id)), "read whole again in time");
        verified.passed("a", Some(id), settled);
        let mut touched = id;
        touched.changed += Duration::from_nanos(1);
        assert!(!verified.vouches("a", Some(touched)), "changed since");
        assert!(!verified.vouches("a", None), "no identity");
        assert!(!verified.vouches("b", Some(id)), "another file");
    }
}
