//! How a file of the family is protected, and what a key is for: the words the format, the
//! errors and the open policy ([`Trust`](crate::format::Trust)) share. A leaf: it imports
//! nothing.

/// How a file's body is protected, as its flags say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Protection {
    /// Readable, with a CRC32 against damage and nothing against edits.
    Plain,
    /// Readable, with an HMAC-SHA256 tag under the key: an edit is refused as
    /// [`Error::Tampered`](crate::Error::Tampered) (format version 2 on).
    Authenticated,
    /// AES-256-GCM: unreadable without the key, and an edit fails to open
    /// ([`Error::Decrypt`](crate::Error::Decrypt)).
    Encrypted,
}

impl Protection {
    /// The name tools show: `plain`, `authenticated`, `encrypted`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Protection::Plain => "plain",
            Protection::Authenticated => "authenticated",
            Protection::Encrypted => "encrypted",
        }
    }
}

impl std::fmt::Display for Protection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a key is needed for, in [`Error::KeyRequired`](crate::Error::KeyRequired).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum KeyPurpose {
    /// The file is encrypted: it cannot be read without the key.
    Decrypt,
    /// The file is integrity-only: it is readable, but its tag can only be checked with the
    /// key (a tool may show it unchecked: [`Trust::unverified`](crate::format::Trust::unverified)).
    CheckTag,
}

impl KeyPurpose {
    /// What the key is for, in words: `to decrypt it`, `to check its tag`.
    #[must_use]
    pub const fn describe(self) -> &'static str {
        match self {
            KeyPurpose::Decrypt => "the save is encrypted, and no key was given to decrypt it",
            KeyPurpose::CheckTag => {
                "the save is integrity-only (readable), and no key was given to check its tag"
            }
        }
    }
}
