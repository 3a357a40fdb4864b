//! What protection a file must have to be opened: the one decision every entry point that
//! opens a file takes (a slot's save, a delta, the key-value store, a replay, a cloud download,
//! a file given to a tool), so that no path opens a file with less protection than its key asks
//! for (RELIABILITY.md S11).
//!
//! A file's flags say how it is protected ([`Protection`]): plain, authenticated (an HMAC tag,
//! readable body) or encrypted. The flags are in the header, which a CRC alone covers, so
//! anyone can clear or set them and fix the CRC. Clearing a flag is the dangerous edit: an
//! integrity-only file with its flag cleared is a well-formed plain file that nothing checks.
//! So the decision is not taken from the file, but from the key's mode: with a key, a file is
//! opened only with the protection the key asks for, whatever its flags say.

use crate::crypto::Key;
use crate::error::{Error, Result};
use crate::protection::{KeyPurpose, Protection};

/// What protection a file must have to be opened, and the key that opens it.
///
/// | trust | opens | refuses |
/// |---|---|---|
/// | [`plain`](Self::plain) (no key) | plain files | encrypted files ([`Error::KeyRequired`] to decrypt), integrity-only files ([`Error::KeyRequired`] to check the tag) |
/// | [`encrypted`](Self::encrypted) | files encrypted under the key | plain files ([`Error::NotEncrypted`]), integrity-only files ([`Error::ProtectionMismatch`]) |
/// | [`authenticated`](Self::authenticated) | integrity-only files, their tag checked under the key | plain files ([`Error::NotEncrypted`]), encrypted files ([`Error::ProtectionMismatch`]) |
/// | [`keyed`](Self::keyed) (tools) | encrypted and integrity-only files, under the key | plain files ([`Error::NotEncrypted`]) |
/// | [`unverified`](Self::unverified) (tools, no key) | plain files, and integrity-only files **without** checking their tag | encrypted files ([`Error::KeyRequired`]) |
///
/// [`or_plain`](Self::or_plain) adds plain files to what a keyed trust opens: what
/// [`ManagerBuilder::allow_unencrypted`](crate::ManagerBuilder::allow_unencrypted) does, for a
/// game that moves from plain saves to sealed ones.
///
/// A manager takes its trust from its builder (`key`, `integrity_only`, `allow_unencrypted`);
/// a tool gives one to [`Snapshot::open_file`](crate::Snapshot::open_file), which also takes an
/// `Option<&Key>`: `Some(key)` is [`keyed`](Self::keyed), `None` is [`plain`](Self::plain).
///
/// ```
/// use savegame::format::{Protection, Trust};
/// use savegame::Key;
///
/// let key = Key::from_bytes([7; 32]);
/// assert!(Trust::encrypted(&key).admit(Protection::Encrypted).is_ok());
/// // An integrity-only file stripped of its flag, with its CRC fixed, reads as plain:
/// assert!(matches!(
///     Trust::authenticated(&key).admit(Protection::Plain),
///     Err(savegame::Error::NotEncrypted)
/// ));
/// assert!(Trust::authenticated(&key).or_plain().admit(Protection::Plain).is_ok());
/// ```
#[derive(Clone, Copy)]
pub struct Trust<'a> {
    key: Option<&'a Key>,
    /// The protection a keyed trust asks for; `None` for one that takes either (tools).
    mode: Option<Protection>,
    /// Plain files are opened too.
    plain: bool,
    /// An integrity-only file's tag is checked (always, with a key).
    check_tag: bool,
}

impl<'a> Trust<'a> {
    /// No key: plain files only.
    #[must_use]
    pub const fn plain() -> Self {
        Trust {
            key: None,
            mode: None,
            plain: true,
            check_tag: true,
        }
    }

    /// Files encrypted under `key` only: what a manager built with
    /// [`key`](crate::ManagerBuilder::key) opens.
    #[must_use]
    pub const fn encrypted(key: &'a Key) -> Self {
        Trust {
            key: Some(key),
            mode: Some(Protection::Encrypted),
            plain: false,
            check_tag: true,
        }
    }

    /// Integrity-only files under `key` only, their tag checked: what a manager built with
    /// [`integrity_only`](crate::ManagerBuilder::integrity_only) opens.
    #[must_use]
    pub const fn authenticated(key: &'a Key) -> Self {
        Trust {
            key: Some(key),
            mode: Some(Protection::Authenticated),
            plain: false,
            check_tag: true,
        }
    }

    /// Encrypted or integrity-only files under `key`: for a tool that is given a key and not
    /// told the game's mode. Plain files are refused, so an integrity-only file stripped of its
    /// flag is refused too.
    #[must_use]
    pub const fn keyed(key: &'a Key) -> Self {
        Trust {
            key: Some(key),
            mode: None,
            plain: false,
            check_tag: true,
        }
    }

    /// No key, for a tool that shows a readable file to a person: plain files, and
    /// integrity-only files **without checking their tag** (their CRC and structure are
    /// checked). Never for loading game state, whose authenticity it does not establish.
    #[must_use]
    pub const fn unverified() -> Self {
        Trust {
            key: None,
            mode: None,
            plain: true,
            check_tag: false,
        }
    }

    /// What a manager's files must have, from its builder's settings: with `key`, its mode
    /// (authenticated when `integrity_only`, else encrypted), and plain files too when
    /// `allow_plain`; plain files alone without a key.
    pub(crate) fn of_manager(
        key: Option<&'a Key>,
        integrity_only: bool,
        allow_plain: bool,
    ) -> Self {
        let trust = match key {
            Some(key) if integrity_only => Trust::authenticated(key),
            Some(key) => Trust::encrypted(key),
            None => Trust::plain(),
        };
        if allow_plain { trust.or_plain() } else { trust }
    }

    /// This trust, opening plain files too (a keyed trust refuses them otherwise).
    #[must_use]
    pub const fn or_plain(mut self) -> Self {
        self.plain = true;
        self
    }

    /// The key, if there is one.
    #[must_use]
    pub const fn key(&self) -> Option<&'a Key> {
        self.key
    }

    /// Whether a file protected as `found` may be opened.
    ///
    /// # Errors
    /// - [`Error::KeyRequired`] when the file needs a key and there is none (to decrypt it,
    ///   or to check its tag);
    /// - [`Error::NotEncrypted`] when the file is plain and a key asks for protection;
    /// - [`Error::ProtectionMismatch`] when the file is sealed in the other mode than the
    ///   key's.
    pub fn admit(&self, found: Protection) -> Result<()> {
        match (self.key, found) {
            (_, Protection::Plain) if self.plain => Ok(()),
            (Some(_), Protection::Plain) => Err(Error::NotEncrypted),
            (None, Protection::Encrypted) => Err(missing_key(KeyPurpose::Decrypt)),
            (None, Protection::Authenticated) if self.check_tag => {
                Err(missing_key(KeyPurpose::CheckTag))
            }
            (None, _) => Ok(()),
            (Some(_), found) => match self.mode {
                Some(expected) if expected != found => {
                    Err(Error::ProtectionMismatch { expected, found })
                }
                _ => Ok(()),
            },
        }
    }

    /// Whether an integrity-only file's tag is to be checked.
    pub(crate) const fn checks_tag(&self) -> bool {
        self.check_tag
    }
}

impl<'a> From<Option<&'a Key>> for Trust<'a> {
    /// `Some(key)` is [`Trust::keyed`], `None` is [`Trust::plain`].
    fn from(key: Option<&'a Key>) -> Self {
        key.map_or(Trust::plain(), Trust::keyed)
    }
}

impl<'a> From<&'a Key> for Trust<'a> {
    /// [`Trust::keyed`].
    fn from(key: &'a Key) -> Self {
        Trust::keyed(key)
    }
}

impl std::fmt::Debug for Trust<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is never printed (Key's own Debug prints no bytes either).
        f.debug_struct("Trust")
            .field("key", &self.key.is_some())
            .field("mode", &self.mode)
            .field("plain", &self.plain)
            .field("check_tag", &self.check_tag)
            .finish()
    }
}

/// The error for a file that needs a key there is none of: [`Error::KeyRequired`] naming what
/// the key is for, or [`Error::FeatureDisabled`] for an encrypted file in a build without the
/// `encryption` feature.
pub(crate) fn missing_key(purpose: KeyPurpose) -> Error {
    if purpose == KeyPurpose::Decrypt && !cfg!(feature = "encryption") {
        Error::FeatureDisabled {
            feature: "encryption",
        }
    } else {
        Error::KeyRequired { purpose }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Protection; 3] = [
        Protection::Plain,
        Protection::Authenticated,
        Protection::Encrypted,
    ];

    fn opens(trust: Trust<'_>) -> Vec<Protection> {
        ALL.into_iter()
            .filter(|p| trust.admit(*p).is_ok())
            .collect()
    }

    #[test]
    fn each_trust_opens_exactly_what_its_table_says() {
        let key = Key::from_bytes([1; 32]);
        use Protection::*;
        assert_eq!(opens(Trust::plain()), [Plain]);
        assert_eq!(opens(Trust::encrypted(&key)), [Encrypted]);
        assert_eq!(opens(Trust::authenticated(&key)), [Authenticated]);
        assert_eq!(opens(Trust::keyed(&key)), [Authenticated, Encrypted]);
        assert_eq!(opens(Trust::unverified()), [Plain, Authenticated]);
        assert_eq!(opens(Trust::encrypted(&key).or_plain()), [Plain, Encrypted]);
        assert_eq!(
            opens(Trust::authenticated(&key).or_plain()),
            [Plain, Authenticated]
        );
        assert_eq!(opens(Trust::from(None)), [Plain]);
        assert_eq!(opens(Trust::from(Some(&key))), [Authenticated, Encrypted]);
    }

    #[test]
    fn refusals_are_typed_and_say_what_a_key_is_for() {
        let key = Key::from_bytes([1; 32]);
        assert!(matches!(
            Trust::encrypted(&key).admit(Protection::Plain),
            Err(Error::NotEncrypted)
        ));
        assert!(matches!(
            Trust::encrypted(&key).admit(Protection::Authenticated),
            Err(Error::ProtectionMismatch {
                expected: Protection::Encrypted,
                found: Protection::Authenticated
            })
        ));
        assert!(matches!(
            Trust::authenticated(&key).admit(Protection::Encrypted),
            Err(Error::ProtectionMismatch {
                expected: Protection::Authenticated,
                found: Protection::Encrypted
            })
        ));
        assert!(matches!(
            Trust::plain().admit(Protection::Authenticated),
            Err(Error::KeyRequired {
                purpose: KeyPurpose::CheckTag
            })
        ));
        if cfg!(feature = "encryption") {
            assert!(matches!(
                Trust::plain().admit(Protection::Encrypted),
                Err(Error::KeyRequired {
                    purpose: KeyPurpose::Decrypt
                })
            ));
        }
        assert!(!format!("{:?}", Trust::keyed(&key)).contains("[1"));
    }
}
