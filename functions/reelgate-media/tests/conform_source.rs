//! The conform stage reading its input through `ReadAt` (a local file that is never held
//! whole) instead of a slice: the same results, the `moov` cap, sample tables checked against
//! the file, and a pass-through bounded by what the conform would write. No ffmpeg needed: the
//! clips are the x264 fixture and the crate's own renders.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use reelgate_media::{
    conform_mp4, conform_source, render_mp4, AspectRatio, ConformTarget, FileSource, MediaError,
    RenderSpec, MAX_MOOV_BYTES,
};

const X264_BFRAMES: &[u8] = include_bytes!("fixtures/x264_bframes.mp4");

/// A file for one test, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, bytes: &[u8]) -> Self {
        let path = std::env::temp_dir().join(format!(
            "reelgate-conform-source-{}-{name}.mp4",
            std::process::id()
        ));
        std::fs::write(&path, bytes).expect("write");
        Self(path)
    }

    fn source(&self) -> FileSource {
        FileSource::open(&self.0).expect("open")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn target(aspect: AspectRatio, seconds: u32) -> ConformTarget {
    ConformTarget {
        aspect,
        seconds,
        fallback_audio: None,
    }
}

fn rendered(seconds: u32) -> Vec<u8> {
    let spec = RenderSpec::new(1366, 768, seconds, "a lighthouse at dusk");
    render_mp4(&spec, &mut |_| {}, &AtomicBool::new(false)).expect("render")
}

fn find(data: &[u8], from: usize, what: &[u8]) -> Option<usize> {
    data[from..]
        .windows(what.len())
        .position(|w| w == what)
        .map(|i| i + from)
}

/// The boxes' payload offset (after size and type) of the first `kind` after `handler`.
fn table(data: &[u8], handler: &[u8; 4], kind: &[u8; 4]) -> usize {
    let h = find(data, 0, handler).expect("the handler");
    find(data, h, kind).expect("the table") + 4
}

#[test]
fn a_file_source_conforms_as_the_bytes_do() {
    // Re-encoded (320x180 to 1366x768), its AAC kept.
    let file = TempFile::new("x264", X264_BFRAMES);
    let t = target(AspectRatio::R16x9, 2);
    let from_bytes = conform_mp4(X264_BFRAMES, &t).expect("conform bytes");
    let from_file = conform_source(&file.source(), &t).expect("conform file");
    assert!(!from_file.passed_through);
    assert_eq!(from_file.audio, "kept");
    assert_eq!(from_file.source, from_bytes.source);
    assert_eq!(
        (from_file.width, from_file.height, from_file.duration_secs),
        (
            from_bytes.width,
            from_bytes.height,
            from_bytes.duration_secs
        )
    );
    assert!(
        from_file.mp4 == from_bytes.mp4,
        "the same clip, byte for byte"
    );

    // Passed through: read whole from the file, byte for byte.
    let clip = rendered(4);
    let file = TempFile::new("render", &clip);
    let c = conform_source(&file.source(), &target(AspectRatio::R16x9, 4)).expect("conform");
    assert!(c.passed_through, "{c:?}");
    assert!(c.mp4 == clip, "byte for byte");
    assert_eq!(c.audio, "kept");
}

#[test]
fn a_moov_declared_larger_than_the_cap_is_refused_before_it_is_read() {
    // On a real file (the demuxer's own test reads only the headers of a fake one): the
    // rendered clip with its moov's size raised past the cap, padded with a sparse tail so that
    // the box lies inside the file.
    let mut clip = rendered(1);
    let moov = find(&clip, 0, b"moov").expect("moov") - 4;
    let old = u32::from_be_bytes(clip[moov..moov + 4].try_into().expect("4")) as u64;
    // The 8-byte header and one byte more than the cap of body.
    let grown = 8 + MAX_MOOV_BYTES + 1;
    clip[moov..moov + 4].copy_from_slice(&(grown as u32).to_be_bytes());
    let file = TempFile::new("big-moov", &clip);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file.0)
        .expect("open")
        .set_len(clip.len() as u64 + grown - old)
        .expect("sparse tail");
    let err = conform_source(&file.source(), &target(AspectRatio::R16x9, 1)).expect_err("cap");
    assert!(
        err.to_string()
            .contains(&format!("is {} bytes", MAX_MOOV_BYTES + 1)),
        "{err}"
    );
    // At the cap, the box is read (and its tail of zeros parses as boxes running to its end).
    let mut clip = rendered(1);
    clip[moov..moov + 4].copy_from_slice(&((8 + MAX_MOOV_BYTES) as u32).to_be_bytes());
    let file = TempFile::new("moov-at-cap", &clip);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file.0)
        .expect("open")
        .set_len(clip.len() as u64 + 8 + MAX_MOOV_BYTES - old)
        .expect("sparse tail");
    let err = conform_source(&file.source(), &target(AspectRatio::R16x9, 1))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(!err.contains("moov box"), "{err}");
}

#[test]
fn a_sample_table_pointing_outside_the_file_is_refused() {
    let mut clip = rendered(2);
    let size = clip.len() as u32;
    // The video's last chunk moved past the end of the file.
    let stco = table(&clip, b"vide", b"stco");
    let count = u32::from_be_bytes(clip[stco + 4..stco + 8].try_into().expect("4")) as usize;
    let last = stco + 8 + 4 * (count - 1);
    clip[last..last + 4].copy_from_slice(&(size + 1000).to_be_bytes());
    let file = TempFile::new("outside", &clip);
    for err in [
        conform_source(&file.source(), &target(AspectRatio::R16x9, 2)).expect_err("file"),
        conform_mp4(&clip, &target(AspectRatio::R16x9, 2)).expect_err("bytes"),
    ] {
        assert!(
            matches!(&err, MediaError::NotMp4(m) if m.contains("outside the file")),
            "{err}"
        );
    }
}

#[test]
fn a_pass_through_candidate_larger_than_the_cap_is_conformed_not_copied() {
    // The rendered clip meets the contract; a 16 MiB free box after it makes the file larger
    // than the conform would write for 4 s at 1366x768 (about 5 MiB).
    let mut clip = rendered(4);
    let pad = 16usize << 20;
    clip.extend_from_slice(&((pad + 8) as u32).to_be_bytes());
    clip.extend_from_slice(b"free");
    clip.resize(clip.len() + pad, 0);
    let file = TempFile::new("padded", &clip);
    for c in [
        conform_source(&file.source(), &target(AspectRatio::R16x9, 4)).expect("file"),
        conform_mp4(&clip, &target(AspectRatio::R16x9, 4)).expect("bytes"),
    ] {
        assert!(!c.passed_through, "{c:?}");
        assert!(c.mp4.len() < 8 << 20, "{} bytes", c.mp4.len());
        assert_eq!((c.width, c.height), (1366, 768));
        assert_eq!(c.audio, "kept");
    }
}
