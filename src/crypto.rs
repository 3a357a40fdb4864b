//! Keys and AES-256-GCM sealing.
//!
//! A [`Key`] is 32 bytes. It is zeroized when dropped, and its `Debug` output shows no key bytes.
//! Every seal draws a fresh 96-bit nonce from the operating system's random number generator,
//! so two saves never share a nonce (the probability of a collision after 2^32 saves with one key
//! is about 2^-33).
//!
//! # Builds without the `encryption` feature
//!
//! [`Key`] is the same type in every build, so code written against a build with the feature
//! compiles against one without it (features are additive). What needs the cipher or the OS
//! random number generator fails at run time instead, with [`Error::FeatureDisabled`]
//! (`feature: "encryption"`): [`Key::generate`], and every save, load or replay that a key is
//! given to. Such a build never writes in the clear what it was told to seal. Making a key from
//! bytes or hex works in every build.
//!
//! # Integrity-only files
//!
//! With the `integrity` feature, a key can also *authenticate* a file it does not encrypt
//! ([`ManagerBuilder::integrity_only`](crate::ManagerBuilder::integrity_only)): the body stays
//! readable JSON or MessagePack, and an HMAC-SHA256 tag over the whole file before it makes any
//! edit detectable. The MAC key is not the AES key itself but one derived from it
//! (HMAC-SHA256 of the key over a fixed label), so one key never serves two algorithms. HMAC
//! needs no nonce, so there is no nonce to repeat, and the same bytes always get the same tag.
//!
//! # What encryption protects, and what it does not
//!
//! A key compiled into the game stops players from editing saves in a text or hex editor, and it
//! makes tampering detectable. It does not stop a determined player who extracts the key from
//! the game's binary: treat an embedded key as obfuscation, not secrecy.

use std::fmt;

#[cfg(feature = "encryption")]
use aes_gcm::aead::{AeadInOut, KeyInit};
#[cfg(feature = "encryption")]
use aes_gcm::{Aes256Gcm, Nonce, Tag};
use zeroize::Zeroizing;

use crate::error::{Error, Result};

/// Length of a key in bytes.
pub const KEY_LEN: usize = 32;
/// Length of a nonce in bytes (96 bits).
pub const NONCE_LEN: usize = 12;
/// Length of an authentication tag in bytes.
pub const TAG_LEN: usize = 16;
/// Length of an HMAC-SHA256 tag in bytes (integrity-only files).
pub const MAC_LEN: usize = 32;

/// The label the MAC key is derived under: HMAC-SHA256(key, label).
#[cfg(feature = "integrity")]
pub(crate) const MAC_KEY_LABEL: &[u8] = b"savegame format 2: integrity-only MAC key";

/// A 256-bit AES-GCM key. Zeroized on drop; `Debug` prints no key bytes.
#[derive(Clone)]
pub struct Key {
    // Held, and wiped on drop, in every build; only the cipher reads it.
    #[cfg_attr(not(feature = "encryption"), allow(dead_code))]
    bytes: Zeroizing<[u8; KEY_LEN]>,
}

impl Key {
    /// A key made of these 32 bytes.
    #[must_use]
    pub fn from_bytes(bytes: [u8; KEY_LEN]) -> Self {
        Key {
            bytes: Zeroizing::new(bytes),
        }
    }

    /// A key from a slice that must be exactly 32 bytes long.
    ///
    /// # Errors
    /// [`Error::Config`] when the slice is not 32 bytes long.
    pub fn from_slice(bytes: &[u8]) -> Result<Self> {
        let mut key = Zeroizing::new([0u8; KEY_LEN]);
        if bytes.len() != KEY_LEN {
            return Err(Error::Config {
                reason: format!("a key is {KEY_LEN} bytes, not {}", bytes.len()),
            });
        }
        key.copy_from_slice(bytes);
        Ok(Key { bytes: key })
    }

    /// A key from 64 hexadecimal digits (surrounding whitespace is ignored).
    ///
    /// # Errors
    /// [`Error::Config`] when the text is not 64 hexadecimal digits. The message does not repeat
    /// the text.
    pub fn from_hex(hex: &str) -> Result<Self> {
        let hex = hex.trim().as_bytes();
        let bad = || Error::Config {
            reason: format!("a hex key is {} hexadecimal digits", KEY_LEN * 2),
        };
        if hex.len() != KEY_LEN * 2 {
            return Err(bad());
        }
        let mut key = Zeroizing::new([0u8; KEY_LEN]);
        for (byte, pair) in key.iter_mut().zip(hex.chunks_exact(2)) {
            let hi = hex_digit(pair[0]).ok_or_else(bad)?;
            let lo = hex_digit(pair[1]).ok_or_else(bad)?;
            *byte = (hi << 4) | lo;
        }
        Ok(Key { bytes: key })
    }

    /// A new random key from the operating system's random number generator.
    ///
    /// # Errors
    /// [`Error::Config`] if the operating system has no random number generator available;
    /// [`Error::FeatureDisabled`] in a build without the `encryption` feature.
    pub fn generate() -> Result<Self> {
        let mut key = Zeroizing::new([0u8; KEY_LEN]);
        fill_random(key.as_mut())?;
        Ok(Key { bytes: key })
    }
}

#[cfg(feature = "encryption")]
impl Key {
    fn cipher(&self) -> Aes256Gcm {
        let bytes: &[u8; KEY_LEN] = &self.bytes;
        Aes256Gcm::new(bytes.into())
    }

    /// Encrypts `buf` in place and returns the authentication tag.
    pub(crate) fn seal(
        &self,
        nonce: &[u8; NONCE_LEN],
        associated_data: &[u8],
        buf: &mut [u8],
    ) -> Result<[u8; TAG_LEN]> {
        let tag = self
            .cipher()
            .encrypt_inout_detached(&Nonce::from(*nonce), associated_data, buf.into())
            // Only fails for plaintexts over 64 GiB, far beyond any size cap.
            .map_err(|_| Error::Config {
                reason: "payload too large to encrypt".into(),
            })?;
        let mut out = [0u8; TAG_LEN];
        out.copy_from_slice(tag.as_slice());
        Ok(out)
    }

    /// Decrypts `buf` in place, checking `tag`. On failure the buffer's contents are
    /// unspecified and must not be used.
    pub(crate) fn open(
        &self,
        nonce: &[u8; NONCE_LEN],
        associated_data: &[u8],
        buf: &mut [u8],
        tag: &[u8; TAG_LEN],
    ) -> Result<()> {
        self.cipher()
            .decrypt_inout_detached(
                &Nonce::from(*nonce),
                associated_data,
                buf.into(),
                &Tag::from(*tag),
            )
            .map_err(|_| Error::Decrypt)
    }
}

/// Without the cipher, sealing and opening fail: nothing is ever written in the clear in place
/// of a sealed file, and no sealed file is reported as anything but unreadable by this build.
#[cfg(not(feature = "encryption"))]
impl Key {
    /// Always [`Error::FeatureDisabled`]: this build has no cipher.
    pub(crate) fn seal(
        &self,
        _nonce: &[u8; NONCE_LEN],
        _associated_data: &[u8],
        _buf: &mut [u8],
    ) -> Result<[u8; TAG_LEN]> {
        Err(disabled())
    }

    /// Always [`Error::FeatureDisabled`]: this build has no cipher.
    pub(crate) fn open(
        &self,
        _nonce: &[u8; NONCE_LEN],
        _associated_data: &[u8],
        _buf: &mut [u8],
        _tag: &[u8; TAG_LEN],
    ) -> Result<()> {
        Err(disabled())
    }
}

#[cfg(feature = "integrity")]
type HmacSha256 = hmac::Hmac<sha2::Sha256>;

#[cfg(feature = "integrity")]
impl Key {
    /// HMAC-SHA256 under a 32-byte key. HMAC pads a key shorter than SHA-256's 64-byte block
    /// with zeros, so the key and zeros fill the block exactly, and the keying cannot fail.
    fn hmac(key: &[u8; KEY_LEN]) -> HmacSha256 {
        use hmac::KeyInit;
        let mut block = Zeroizing::new([0u8; 64]);
        block[..KEY_LEN].copy_from_slice(key);
        let block: &[u8; 64] = &block;
        HmacSha256::new(block.into())
    }

    /// The MAC of integrity-only files, keyed with a key derived from this one.
    fn mac(&self) -> HmacSha256 {
        use hmac::Mac;
        let mut derive = Self::hmac(&self.bytes);
        derive.update(MAC_KEY_LABEL);
        let mut mac_key = Zeroizing::new([0u8; KEY_LEN]);
        mac_key.copy_from_slice(derive.finalize().into_bytes().as_slice());
        Self::hmac(&mac_key)
    }

    /// The HMAC-SHA256 tag of `data`.
    pub(crate) fn authenticate(&self, data: &[u8]) -> Result<[u8; MAC_LEN]> {
        use hmac::Mac;
        let mut mac = self.mac();
        mac.update(data);
        let mut out = [0u8; MAC_LEN];
        out.copy_from_slice(mac.finalize().into_bytes().as_slice());
        Ok(out)
    }

    /// Checks `tag` against `data` in constant time: [`Error::Tampered`] when it does not match
    /// (a wrong key or an edit, deliberately not told apart).
    pub(crate) fn verify(&self, data: &[u8], tag: &[u8; MAC_LEN]) -> Result<()> {
        use hmac::Mac;
        let mut mac = self.mac();
        mac.update(data);
        mac.verify_slice(tag).map_err(|_| Error::Tampered)
    }
}

/// Without the `integrity` feature, authenticating and checking integrity-only files fail.
#[cfg(not(feature = "integrity"))]
impl Key {
    /// Always [`Error::FeatureDisabled`]: this build has no HMAC.
    pub(crate) fn authenticate(&self, _data: &[u8]) -> Result<[u8; MAC_LEN]> {
        Err(Error::FeatureDisabled {
            feature: "integrity",
        })
    }

    /// Always [`Error::FeatureDisabled`]: this build has no HMAC.
    pub(crate) fn verify(&self, _data: &[u8], _tag: &[u8; MAC_LEN]) -> Result<()> {
        Err(Error::FeatureDisabled {
            feature: "integrity",
        })
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Key(<redacted>)")
    }
}

/// A fresh nonce from the operating system's random number generator.
#[cfg(feature = "encryption")]
pub(crate) fn random_nonce() -> Result<[u8; NONCE_LEN]> {
    let mut nonce = [0u8; NONCE_LEN];
    fill_random(&mut nonce)?;
    Ok(nonce)
}

#[cfg(feature = "encryption")]
fn fill_random(buf: &mut [u8]) -> Result<()> {
    getrandom::fill(buf).map_err(|e| Error::Config {
        reason: format!("the OS random number generator failed: {e}"),
    })
}

/// This build has no random number generator for keys (getrandom comes with `encryption`).
#[cfg(not(feature = "encryption"))]
fn fill_random(_buf: &mut [u8]) -> Result<()> {
    Err(disabled())
}

#[cfg(not(feature = "encryption"))]
fn disabled() -> Error {
    Error::FeatureDisabled {
        feature: "encryption",
    }
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_prints_no_key_bytes() {
        let key = Key::from_bytes([0xAB; KEY_LEN]);
        let shown = format!("{key:?} {key:#?}");
        assert!(!shown.to_lowercase().contains("ab"), "{shown}");
        assert!(!shown.contains("171"), "{shown}");
        assert!(shown.contains("redacted"));
    }

    #[test]
    fn hex_keys_parse() {
        let hex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1F";
        let key = Key::from_hex(hex).unwrap();
        let expected: Vec<u8> = (0u8..32).collect();
        assert_eq!(key.bytes.as_slice(), expected.as_slice());
        assert!(Key::from_hex(&hex[1..]).is_err());
        let err = Key::from_hex(&hex.replacen('e', "g", 1)).unwrap_err();
        let shown = format!("{err} {err:?}");
        assert!(
            !shown.contains("0102030405"),
            "the message must not echo the key: {shown}"
        );
        assert!(Key::from_slice(&[1; 31]).is_err());
        assert!(Key::from_slice(&[1; 32]).is_ok());
    }

    #[cfg(feature = "encryption")]
    #[test]
    fn seal_then_open_round_trips_and_detects_changes() {
        let key = Key::generate().unwrap();
        let nonce = random_nonce().unwrap();
        let mut buf = b"the player's progress".to_vec();
        let tag = key.seal(&nonce, b"header", &mut buf).unwrap();
        assert_ne!(buf, b"the player's progress");
        let sealed = buf.clone();

        key.open(&nonce, b"header", &mut buf, &tag).unwrap();
        assert_eq!(buf, b"the player's progress");

        let mut wrong_ad = sealed.clone();
        assert!(matches!(
            key.open(&nonce, b"headex", &mut wrong_ad, &tag),
            Err(Error::Decrypt)
        ));
        let other = Key::generate().unwrap();
        let mut wrong_key = sealed.clone();
        assert!(matches!(
            other.open(&nonce, b"header", &mut wrong_key, &tag),
            Err(Error::Decrypt)
        ));
    }

    #[cfg(feature = "integrity")]
    #[test]
    fn macs_detect_changes_and_other_keys() {
        let key = Key::from_bytes([5; KEY_LEN]);
        let tag = key.authenticate(b"the player's progress").unwrap();
        assert_eq!(tag, key.authenticate(b"the player's progress").unwrap());
        key.verify(b"the player's progress", &tag).unwrap();
        assert!(matches!(
            key.verify(b"the player's progresS", &tag),
            Err(Error::Tampered)
        ));
        let other = Key::from_bytes([6; KEY_LEN]);
        assert!(matches!(
            other.verify(b"the player's progress", &tag),
            Err(Error::Tampered)
        ));
        // The MAC key is derived: the tag is not plain HMAC-SHA256 under the AES key.
        use hmac::Mac;
        let mut plain = Key::hmac(&[5; KEY_LEN]);
        plain.update(b"the player's progress");
        assert_ne!(plain.finalize().into_bytes().as_slice(), tag.as_slice());
    }

    /// A build without the cipher takes keys like any other, and refuses, with a typed error,
    /// everything that would need the cipher or the random number generator.
    #[cfg(not(feature = "encryption"))]
    #[test]
    fn without_the_feature_keys_exist_and_sealing_is_refused() {
        let key = Key::from_bytes([9; KEY_LEN]);
        let disabled = |r: Result<()>| {
            matches!(
                r,
                Err(Error::FeatureDisabled {
                    feature: "encryption"
                })
            )
        };
        let mut buf = b"the player's progress".to_vec();
        assert!(disabled(
            key.seal(&[0; NONCE_LEN], b"h", &mut buf).map(|_| ())
        ));
        assert_eq!(buf, b"the player's progress", "nothing is touched");
        assert!(disabled(key.open(
            &[0; NONCE_LEN],
            b"h",
            &mut buf,
            &[0; TAG_LEN]
        )));
        assert!(disabled(Key::generate().map(|_| ())));
        assert_eq!(format!("{key:?}"), "Key(<redacted>)");
    }
}
