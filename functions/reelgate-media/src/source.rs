//! Random-access sources of media bytes: a file the conform stage reads in bounded windows
//! (the `moov` box, then each sample as it is decoded or copied) instead of holding it whole.
//!
//! [`ReadAt`] is implemented for bytes in memory (`[u8]`, `Vec<u8>`, and references to any
//! source) and for a local file through [`FileSource`], which reads with `pread(2)`
//! ([`std::os::unix::fs::FileExt::read_exact_at`]), so one source may be shared by threads
//! without a cursor.
//!
//! This module is a leaf: it imports nothing from the rest of the crate.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Bytes that can be read at any offset, of a length known up front.
pub trait ReadAt: Send + Sync {
    /// The length of the source in bytes.
    fn size(&self) -> u64;

    /// Fills `buf` with the bytes at `offset..offset + buf.len()`; fails with
    /// [`io::ErrorKind::UnexpectedEof`] when they run past [`Self::size`].
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;

    /// The whole source as one slice, when it is already held in memory (readers then borrow
    /// from it instead of copying). `None`, the default, for anything else.
    fn as_bytes(&self) -> Option<&[u8]> {
        None
    }
}

fn past_end(offset: u64, len: usize, size: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!("{len} bytes at offset {offset} run past the end of the {size}-byte source"),
    )
}

impl ReadAt for [u8] {
    fn size(&self) -> u64 {
        self.len() as u64
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let start = usize::try_from(offset)
            .ok()
            .filter(|s| *s <= self.len() && self.len() - *s >= buf.len())
            .ok_or_else(|| past_end(offset, buf.len(), self.size()))?;
        buf.copy_from_slice(&self[start..start + buf.len()]);
        Ok(())
    }

    fn as_bytes(&self) -> Option<&[u8]> {
        Some(self)
    }
}

impl ReadAt for Vec<u8> {
    fn size(&self) -> u64 {
        self.as_slice().size()
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.as_slice().read_exact_at(buf, offset)
    }

    fn as_bytes(&self) -> Option<&[u8]> {
        Some(self)
    }
}

impl<T: ReadAt + ?Sized> ReadAt for &T {
    fn size(&self) -> u64 {
        (**self).size()
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        (**self).read_exact_at(buf, offset)
    }

    fn as_bytes(&self) -> Option<&[u8]> {
        (**self).as_bytes()
    }
}

/// A local file read at offsets, its length taken once when it is opened (the file is not
/// expected to change while it is read; a read past its end then fails, it is never taken as
/// shorter data).
#[derive(Debug)]
pub struct FileSource {
    file: File,
    size: u64,
}

impl FileSource {
    /// Opens `path` for reading.
    pub fn open(path: impl AsRef<Path>) -> io::Result<Self> {
        Self::new(File::open(path)?)
    }

    /// Wraps an open file, reading its length from its metadata.
    pub fn new(file: File) -> io::Result<Self> {
        let size = file.metadata()?.len();
        Ok(Self { file, size })
    }

    /// The file.
    pub fn file(&self) -> &File {
        &self.file
    }
}

impl ReadAt for FileSource {
    fn size(&self) -> u64 {
        self.size
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        if offset
            .checked_add(buf.len() as u64)
            .is_none_or(|end| end > self.size)
        {
            return Err(past_end(offset, buf.len(), self.size));
        }
        FileExt::read_exact_at(&self.file, buf, offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_read_inside_and_refuse_past_the_end() {
        let data: Vec<u8> = (0..16).collect();
        let mut buf = [0u8; 4];
        data.read_exact_at(&mut buf, 12).expect("last four");
        assert_eq!(buf, [12, 13, 14, 15]);
        let err = data.read_exact_at(&mut buf, 13).expect_err("one past");
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        let err = data
            .read_exact_at(&mut buf, u64::MAX)
            .expect_err("far past");
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        data.read_exact_at(&mut [], 16).expect("nothing at the end");
        let slice: &[u8] = &data;
        let dynamic: &dyn ReadAt = &slice;
        assert_eq!(dynamic.size(), 16);
        assert_eq!(dynamic.as_bytes(), Some(&data[..]));
    }

    #[test]
    fn a_file_reads_at_offsets_with_its_size_taken_once() {
        let path = std::env::temp_dir().join(format!("reelgate-source-{}", std::process::id()));
        let data: Vec<u8> = (0..=255).collect();
        std::fs::write(&path, &data).expect("write");
        let source = FileSource::open(&path).expect("open");
        let _ = std::fs::remove_file(&path);
        assert_eq!(source.size(), 256);
        assert!(source.as_bytes().is_none());
        let mut buf = [0u8; 3];
        source.read_exact_at(&mut buf, 100).expect("read");
        assert_eq!(buf, [100, 101, 102]);
        let err = source
            .read_exact_at(&mut buf, 254)
            .expect_err("past the end");
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    }
}
