//! [`StreamSink`]: where a streamed put ([`Storage::put_streamed`](super::Storage::put_streamed))
//! writes an object as it is made.

use std::io;

/// Where a streamed put writes an object: bytes appended in order, and bytes written again
/// over a range appended already (a save's header and table of contents, once the rest is
/// written and their lengths and offsets are known). The object is the bytes appended, with
/// the writes over them.
pub trait StreamSink: Send {
    /// Appends `bytes` at the end of the object.
    ///
    /// # Errors
    /// The backend's error (a full disk, say).
    fn append(&mut self, bytes: &[u8]) -> io::Result<()>;

    /// Writes `bytes` over the object's bytes from `offset`, within what was appended.
    ///
    /// # Errors
    /// The backend's error; `InvalidInput` when the range runs past what was appended.
    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()>;
}

/// An object gathered in memory.
impl StreamSink for Vec<u8> {
    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.extend_from_slice(bytes);
        Ok(())
    }

    fn write_at(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        let place = usize::try_from(offset)
            .ok()
            .and_then(|start| Some(start..start.checked_add(bytes.len())?))
            .and_then(|range| self.get_mut(range))
            .ok_or_else(|| past_the_end(offset, bytes.len()))?;
        place.copy_from_slice(bytes);
        Ok(())
    }
}

/// The error of a write over bytes that were never appended.
pub(crate) fn past_the_end(offset: u64, len: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("a write over {len} bytes at {offset} runs past what was appended"),
    )
}

#[cfg(test)]
mod tests {
    use super::StreamSink;

    #[test]
    fn a_vec_takes_appends_and_writes_within_them_only() {
        let mut sink = Vec::new();
        StreamSink::append(&mut sink, b"hello world").unwrap();
        sink.write_at(6, b"WORLD").unwrap();
        assert_eq!(sink, b"hello WORLD");
        assert!(sink.write_at(7, b"WORLD").is_err());
        assert!(sink.write_at(u64::MAX, b"x").is_err());
        assert_eq!(sink, b"hello WORLD");
    }
}
