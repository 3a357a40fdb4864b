//! Little-endian integers and length-prefixed strings: the reader and writer helpers every
//! part of the format shares.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};

pub(crate) fn write_str16(buf: &mut Vec<u8>, s: &str, what: &str) -> Result<()> {
    let len = u16::try_from(s.len()).map_err(|_| Error::Config {
        reason: format!("{what} is {} bytes, over the 65535-byte cap", s.len()),
    })?;
    buf.extend_from_slice(&len.to_le_bytes());
    buf.extend_from_slice(s.as_bytes());
    Ok(())
}

pub(crate) fn len_u16(n: usize) -> Result<u16> {
    u16::try_from(n).map_err(|_| Error::Config {
        reason: format!("{n} is too many for a 16-bit length"),
    })
}

pub(crate) fn len_u32(n: usize) -> Result<u32> {
    u32::try_from(n).map_err(|_| Error::Config {
        reason: format!("{n} is too many for a 32-bit length"),
    })
}

/// The current time, the one clock every saved-at and recorded-at time is read from.
///
/// On `wasm32-unknown-unknown` (a browser) `SystemTime::now()` panics: there the time comes from
/// JavaScript's `Date.now()` through `web-time`, turned into a `std` time so the public API has
/// the same types on every target.
pub(crate) fn now() -> SystemTime {
    #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
    {
        let since_epoch = web_time::SystemTime::now()
            .duration_since(web_time::UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        UNIX_EPOCH.checked_add(since_epoch).unwrap_or(UNIX_EPOCH)
    }
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    {
        SystemTime::now()
    }
}

pub(crate) fn system_time_to_millis(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_millis()).map_or(i64::MIN, |ms| -ms),
    }
}

pub(crate) fn millis_to_system_time(ms: i64) -> SystemTime {
    let magnitude = Duration::from_millis(ms.unsigned_abs());
    let t = if ms >= 0 {
        UNIX_EPOCH.checked_add(magnitude)
    } else {
        UNIX_EPOCH.checked_sub(magnitude)
    };
    t.unwrap_or(UNIX_EPOCH)
}

pub(crate) fn read_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

pub(crate) fn read_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

pub(crate) fn read_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// A bounds-checked little-endian reader; every read past the end is a typed error.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8], what: &'static str) -> Self {
        Reader {
            bytes,
            pos: 0,
            what,
        }
    }

    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(Error::malformed(format!("truncated {}", self.what)));
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    pub(crate) fn str(&mut self, n: usize) -> Result<&'a str> {
        let what = self.what;
        std::str::from_utf8(self.bytes(n)?)
            .map_err(|_| Error::malformed(format!("invalid UTF-8 in the {what}")))
    }

    pub(crate) fn u8(&mut self) -> Result<u8> {
        Ok(self.bytes(1)?[0])
    }

    pub(crate) fn u16(&mut self) -> Result<u16> {
        Ok(read_u16(self.bytes(2)?, 0))
    }

    pub(crate) fn u32(&mut self) -> Result<u32> {
        Ok(read_u32(self.bytes(4)?, 0))
    }

    pub(crate) fn u64(&mut self) -> Result<u64> {
        Ok(read_u64(self.bytes(8)?, 0))
    }
}
