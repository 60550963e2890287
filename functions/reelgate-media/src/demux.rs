//! A small, bounds-checked reader of ISO BMFF / QuickTime sample tables (non-fragmented files):
//! each track's handler, timescale, edit, first sample entry and where its samples lie. Unlike
//! the `mp4` crate it keeps unknown sample entries (`hvc1`, `av01`, `sowt`, `Opus`, ...), so the
//! conform stage can name what it cannot handle, and it reads uncompressed audio chunk by chunk
//! instead of one tiny sample at a time.
//!
//! The file is read through a [`ReadAt`] source in bounded windows: the top-level box headers
//! (16 bytes each), the `moov` box's body (at most [`MAX_MOOV_BYTES`], held for the movie's
//! life; every table offset is into it), then each sample when it is asked for (at most
//! [`MAX_SAMPLE_BYTES`], borrowed when the source is already in memory).

use std::borrow::Cow;
use std::ops::Range;

use crate::error::MediaError;
use crate::faststart::{boxes, RawBox};
use crate::source::ReadAt;

/// The largest `moov` box read; its body is held in memory for as long as the file is read.
/// The conform stage reads at most 3,600 video and 400,000 audio samples, and a sample table
/// costs at most 44 bytes a sample when every table has an entry for every sample (4 in `stsz`,
/// 8 in `co64` with a chunk a sample, 12 in `stsc` with an entry a chunk, 8 in `stts`, 8 in
/// `ctts`, 4 in `stss`): 403,600 x 44 bytes = 16.9 MiB. Twice that leaves room for the sample
/// entries, other tracks and metadata; the `moov` of a real engine's clip is well under 1 MiB.
pub const MAX_MOOV_BYTES: u64 = 32 << 20;

/// The largest sample read at once (a coded picture or audio access unit; uncompressed audio
/// is read in smaller windows). An uncompressed 8-bit 4:2:0 picture of H.264 level 5.2's
/// largest frame (36,864 macroblocks of 384 bytes, as PCM macroblocks) is 13.5 MiB; audio
/// access units are a few KiB.
pub const MAX_SAMPLE_BYTES: u64 = 16 << 20;

/// Most top-level boxes walked (a real file has a handful: `ftyp`, `moov`, `mdat`, `free`, ...;
/// each costs one small read).
const MAX_TOP_LEVEL_BOXES: usize = 10_000;

fn bad(m: impl Into<String>) -> MediaError {
    MediaError::NotMp4(m.into())
}

/// The boxes in `data`, as [`MediaError::NotMp4`] when they do not parse.
fn children(data: &[u8]) -> Result<Vec<RawBox>, MediaError> {
    boxes(data).map_err(|e| match e {
        MediaError::Mux(m) => bad(m),
        other => other,
    })
}

fn io(e: std::io::Error) -> MediaError {
    MediaError::Io(e.to_string())
}

fn find<'a>(data: &'a [u8], list: &[RawBox], kind: &[u8; 4]) -> Option<&'a [u8]> {
    list.iter()
        .find(|b| &b.kind == kind)
        .map(|b| &data[b.body..b.end])
}

pub(crate) fn be16(b: &[u8], at: usize) -> Result<u16, MediaError> {
    b.get(at..at + 2)
        .map(|s| u16::from_be_bytes([s[0], s[1]]))
        .ok_or_else(|| bad("truncated box"))
}

pub(crate) fn be32(b: &[u8], at: usize) -> Result<u32, MediaError> {
    b.get(at..at + 4)
        .map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or_else(|| bad("truncated box"))
}

pub(crate) fn be64(b: &[u8], at: usize) -> Result<u64, MediaError> {
    b.get(at..at + 8)
        .map(|s| {
            let mut a = [0u8; 8];
            a.copy_from_slice(s);
            u64::from_be_bytes(a)
        })
        .ok_or_else(|| bad("truncated box"))
}

/// The first edit that presents media: skip `media_time` (media timescale) and present
/// `duration` (movie timescale).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Edit {
    pub media_time: u64,
    pub duration: u64,
}

/// A track's metadata and where its tables lie in the `moov` box.
#[derive(Debug, Clone)]
pub(crate) struct Track {
    /// `vide`, `soun`, ...
    pub handler: [u8; 4],
    /// Media timescale.
    pub timescale: u32,
    pub edit: Option<Edit>,
    /// The four-character code of the first sample entry (`avc1`, `mp4a`, `hvc1`, ...).
    pub codec: [u8; 4],
    /// The first sample entry's payload (after its 8-byte header), as a range of the `moov`
    /// box's body.
    pub entry: Range<usize>,
    /// The `stbl` payload, as a range of the `moov` box's body.
    stbl: Range<usize>,
}

/// One coded sample.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sample {
    pub offset: u64,
    pub size: u32,
    /// Decode time in the media timescale.
    pub dts: u64,
    pub duration: u32,
    /// Composition offset (presentation time = `dts + cts_offset`).
    pub cts_offset: i64,
    pub sync: bool,
}

/// A parsed movie: its timescale and tracks, the `moov` box's body and the file it came from.
pub(crate) struct Movie<'a> {
    source: &'a dyn ReadAt,
    /// The `moov` box's body (at most [`MAX_MOOV_BYTES`]).
    moov: Vec<u8>,
    pub timescale: u32,
    /// Movie duration (`mvhd`) in `timescale` units.
    pub duration: u64,
    pub tracks: Vec<Track>,
    /// Whether the `moov` box comes before the first `mdat` box.
    pub moov_first: bool,
}

/// Reads `(version, timescale, duration)` from an `mdhd` or `mvhd` payload.
fn time_header(b: &[u8]) -> Result<(u32, u64), MediaError> {
    if b.first() == Some(&1) {
        Ok((be32(b, 20)?, be64(b, 24)?))
    } else {
        Ok((be32(b, 12)?, u64::from(be32(b, 16)?)))
    }
}

fn first_edit(elst: &[u8]) -> Result<Option<Edit>, MediaError> {
    let version = *elst.first().ok_or_else(|| bad("empty elst"))?;
    let count = be32(elst, 4)? as usize;
    let entry_len = if version == 1 { 20 } else { 12 };
    for i in 0..count.min(elst.len() / entry_len) {
        let at = 8 + i * entry_len;
        let (duration, media_time) = if version == 1 {
            (be64(elst, at)?, be64(elst, at + 8)? as i64)
        } else {
            (
                u64::from(be32(elst, at)?),
                i64::from(be32(elst, at + 4)? as i32),
            )
        };
        if media_time >= 0 {
            return Ok(Some(Edit {
                media_time: media_time as u64,
                duration,
            }));
        }
    }
    Ok(None)
}

impl<'a> Movie<'a> {
    /// Walks the top-level box headers, reads the `moov` box's body and parses every track's
    /// headers (not yet the sample tables).
    pub fn parse(source: &'a dyn ReadAt) -> Result<Self, MediaError> {
        let (moov_at, moov_len, moov_first) = Self::top_level(source)?;
        if moov_len > MAX_MOOV_BYTES {
            return Err(MediaError::Unconformable(format!(
                "the moov box (the file's metadata) is {moov_len} bytes, more than the \
                 {MAX_MOOV_BYTES} ({} MiB) accepted",
                MAX_MOOV_BYTES >> 20
            )));
        }
        let mut moov = vec![0u8; moov_len as usize];
        source.read_exact_at(&mut moov, moov_at).map_err(io)?;
        let moov_children = children(&moov)?;
        if moov_children.iter().any(|b| &b.kind == b"mvex") {
            return Err(bad("fragmented MP4 is not supported"));
        }
        let mvhd = find(&moov, &moov_children, b"mvhd").ok_or_else(|| bad("no mvhd box"))?;
        let (timescale, duration) = time_header(mvhd)?;
        let mut tracks = Vec::new();
        for trak in moov_children.iter().filter(|b| &b.kind == b"trak") {
            let body = &moov[trak.body..trak.end];
            if let Some(t) = Self::track(body, trak.body)? {
                tracks.push(t);
            }
        }
        Ok(Self {
            source,
            moov,
            timescale,
            duration,
            tracks,
            moov_first,
        })
    }

    /// Walks the top-level boxes by their headers: where the first `moov` box's body lies in
    /// the file, its length, and whether it comes before the first `mdat` box. Every box must
    /// lie inside the file (a box of size 0 runs to its end; size 1 is followed by a 64-bit
    /// size).
    fn top_level(source: &dyn ReadAt) -> Result<(u64, u64, bool), MediaError> {
        let size = source.size();
        let mut pos = 0u64;
        let mut moov = None;
        let mut mdat_before_moov = false;
        let mut count = 0usize;
        while pos < size {
            count += 1;
            if count > MAX_TOP_LEVEL_BOXES {
                return Err(bad(format!(
                    "more than {MAX_TOP_LEVEL_BOXES} top-level boxes"
                )));
            }
            let rest = size - pos;
            if rest < 8 {
                return Err(bad("truncated box header"));
            }
            let mut h = [0u8; 16];
            let n = rest.min(16) as usize;
            source.read_exact_at(&mut h[..n], pos).map_err(io)?;
            let kind = [h[4], h[5], h[6], h[7]];
            let (len, header) = match u32::from_be_bytes([h[0], h[1], h[2], h[3]]) {
                0 => (rest, 8),
                1 => {
                    if rest < 16 {
                        return Err(bad("truncated large box header"));
                    }
                    (be64(&h, 8)?, 16)
                }
                n => (u64::from(n), 8),
            };
            if len < header || len > rest {
                return Err(bad(format!(
                    "box {} has an invalid size",
                    String::from_utf8_lossy(&kind)
                )));
            }
            match &kind {
                b"moov" if moov.is_none() => moov = Some((pos + header, len - header)),
                b"mdat" if moov.is_none() => mdat_before_moov = true,
                _ => {}
            }
            pos += len;
        }
        let (at, len) = moov.ok_or_else(|| bad("no moov box"))?;
        Ok((at, len, !mdat_before_moov))
    }

    /// One `trak` (its payload starts at `at` in the `moov` body); `None` when it has no sample
    /// entry.
    fn track(body: &[u8], at: usize) -> Result<Option<Track>, MediaError> {
        let list = children(body)?;
        let edit = match list.iter().find(|b| &b.kind == b"edts") {
            Some(edts) => {
                let e = &body[edts.body..edts.end];
                let el = children(e)?;
                match find(e, &el, b"elst") {
                    Some(elst) => first_edit(elst)?,
                    None => None,
                }
            }
            None => None,
        };
        let mdia_box = list
            .iter()
            .find(|b| &b.kind == b"mdia")
            .ok_or_else(|| bad("no mdia box"))?;
        let mdia = &body[mdia_box.body..mdia_box.end];
        let mdia_at = at + mdia_box.body;
        let ml = children(mdia)?;
        let (timescale, _) =
            time_header(find(mdia, &ml, b"mdhd").ok_or_else(|| bad("no mdhd box"))?)?;
        let mut handler = [0u8; 4];
        if let Some(hdlr) = find(mdia, &ml, b"hdlr") {
            handler.copy_from_slice(hdlr.get(8..12).ok_or_else(|| bad("truncated hdlr"))?);
        }
        let minf_box = ml
            .iter()
            .find(|b| &b.kind == b"minf")
            .ok_or_else(|| bad("no minf box"))?;
        let minf = &mdia[minf_box.body..minf_box.end];
        let minf_at = mdia_at + minf_box.body;
        let nl = children(minf)?;
        let Some(stbl_box) = nl.iter().find(|b| &b.kind == b"stbl") else {
            return Ok(None);
        };
        let stbl = &minf[stbl_box.body..stbl_box.end];
        let stbl_at = minf_at + stbl_box.body;
        let sl = children(stbl)?;
        let Some(stsd_box) = sl.iter().find(|b| &b.kind == b"stsd") else {
            return Ok(None);
        };
        let stsd = &stbl[stsd_box.body..stsd_box.end];
        if stsd.len() < 8 || be32(stsd, 4)? == 0 {
            return Ok(None);
        }
        let entries = children(&stsd[8..])?;
        let Some(entry) = entries.first() else {
            return Ok(None);
        };
        let entry_at = stbl_at + stsd_box.body + 8;
        Ok(Some(Track {
            handler,
            timescale,
            edit,
            codec: entry.kind,
            entry: entry_at + entry.body..entry_at + entry.end,
            stbl: stbl_at..stbl_at + stbl.len(),
        }))
    }

    /// The first track with `handler` (`vide`, `soun`).
    pub fn first(&self, handler: &[u8; 4]) -> Option<&Track> {
        self.tracks.iter().find(|t| &t.handler == handler)
    }

    /// The track's sample entry payload.
    pub fn entry(&self, track: &Track) -> &[u8] {
        &self.moov[track.entry.clone()]
    }

    /// The bytes of a sample, checked against the file's length and [`MAX_SAMPLE_BYTES`]:
    /// borrowed when the file is in memory, read from it otherwise.
    pub fn sample_bytes(&self, offset: u64, size: u64) -> Result<Cow<'a, [u8]>, MediaError> {
        let end = offset
            .checked_add(size)
            .filter(|e| *e <= self.source.size())
            .ok_or_else(|| bad("a sample lies outside the file"))?;
        if size > MAX_SAMPLE_BYTES {
            return Err(MediaError::Unconformable(format!(
                "a sample of {size} bytes, more than the {MAX_SAMPLE_BYTES} ({} MiB) accepted",
                MAX_SAMPLE_BYTES >> 20
            )));
        }
        let source: &'a dyn ReadAt = self.source;
        if let Some(all) = source.as_bytes() {
            return all
                .get(offset as usize..end as usize)
                .map(Cow::Borrowed)
                .ok_or_else(|| bad("a sample lies outside the file"));
        }
        let mut out = vec![0u8; size as usize];
        source.read_exact_at(&mut out, offset).map_err(io)?;
        Ok(Cow::Owned(out))
    }

    /// Every sample inside the file and no two sharing a byte, so a track's samples together
    /// are never more bytes than the file (a table pointing many samples at the same bytes
    /// would have a conform copy them over and over).
    fn check_sample_extents(&self, samples: &[Sample]) -> Result<(), MediaError> {
        self.check_extents(samples.iter().map(|s| (s.offset, u64::from(s.size))))
    }

    /// [`Self::check_sample_extents`] for `(offset, length)` runs of bytes.
    fn check_extents(&self, runs: impl Iterator<Item = (u64, u64)>) -> Result<(), MediaError> {
        let mut extents: Vec<(u64, u64)> = runs
            .filter(|(_, len)| *len > 0)
            .map(|(offset, len)| (offset, offset.saturating_add(len)))
            .collect();
        extents.sort_unstable();
        let mut end_before = 0u64;
        for (start, end) in extents {
            if end > self.source.size() {
                return Err(bad("a sample lies outside the file"));
            }
            if start < end_before {
                return Err(bad("two samples share bytes of the file"));
            }
            end_before = end;
        }
        Ok(())
    }

    fn tables(&self, track: &Track) -> Result<Tables<'_>, MediaError> {
        let stbl = &self.moov[track.stbl.clone()];
        let list = children(stbl)?;
        let get = |k: &[u8; 4]| find(stbl, &list, k);
        let stsz = get(b"stsz").ok_or_else(|| bad("no stsz box"))?;
        let chunk_offsets = match (get(b"stco"), get(b"co64")) {
            (Some(stco), _) => ChunkOffsets::Short(stco),
            (None, Some(co64)) => ChunkOffsets::Long(co64),
            (None, None) => return Err(bad("no stco/co64 box")),
        };
        Ok(Tables {
            stsz,
            stsc: get(b"stsc").ok_or_else(|| bad("no stsc box"))?,
            stts: get(b"stts").ok_or_else(|| bad("no stts box"))?,
            ctts: get(b"ctts"),
            stss: get(b"stss"),
            chunk_offsets,
        })
    }

    /// The number of samples (`stsz`).
    pub fn sample_count(&self, track: &Track) -> Result<u32, MediaError> {
        be32(self.tables(track)?.stsz, 8)
    }

    /// Every sample of the track in decode order; fails when there are more than `limit`.
    pub fn samples(&self, track: &Track, limit: u32) -> Result<Vec<Sample>, MediaError> {
        let t = self.tables(track)?;
        let count = be32(t.stsz, 8)?;
        if count > limit {
            return Err(MediaError::InvalidSpec(format!(
                "the track has {count} samples, more than the {limit} accepted"
            )));
        }
        let fixed = be32(t.stsz, 4)?;
        let mut out: Vec<Sample> = Vec::with_capacity(count as usize);
        t.layout(count, |_, offset, index| {
            let size = if fixed != 0 {
                fixed
            } else {
                be32(t.stsz, 12 + index as usize * 4)?
            };
            out.push(Sample {
                offset,
                size,
                dts: 0,
                duration: 0,
                cts_offset: 0,
                sync: t.stss.is_none(),
            });
            Ok(u64::from(size))
        })?;
        if out.len() != count as usize {
            return Err(bad("the chunk tables hold fewer samples than stsz"));
        }
        self.check_sample_extents(&out)?;
        // Decode times.
        let entries = be32(t.stts, 4)? as usize;
        let mut i = 0usize;
        let mut dts = 0u64;
        for e in 0..entries {
            let n = be32(t.stts, 8 + e * 8)? as usize;
            let delta = be32(t.stts, 12 + e * 8)?;
            for s in out.iter_mut().skip(i).take(n) {
                s.dts = dts;
                s.duration = delta;
                dts += u64::from(delta);
            }
            i = i.saturating_add(n);
            if i >= out.len() {
                break;
            }
        }
        if i < out.len() {
            // Samples the time table does not cover keep the last delta.
            let delta = out[..i].last().map_or(0, |s| s.duration);
            for s in &mut out[i..] {
                s.dts = dts;
                s.duration = delta;
                dts += u64::from(delta);
            }
        }
        if let Some(ctts) = t.ctts {
            let version = ctts.first().copied().unwrap_or(0);
            let entries = be32(ctts, 4)? as usize;
            let mut i = 0usize;
            for e in 0..entries {
                let n = be32(ctts, 8 + e * 8)? as usize;
                let raw = be32(ctts, 12 + e * 8)?;
                // Version 0 offsets are unsigned in the standard, but writers store negative
                // ones too; values past i32::MAX are read as negative either way.
                let off = if version == 1 || raw > i32::MAX as u32 {
                    i64::from(raw as i32)
                } else {
                    i64::from(raw)
                };
                for s in out.iter_mut().skip(i).take(n) {
                    s.cts_offset = off;
                }
                i = i.saturating_add(n);
                if i >= out.len() {
                    break;
                }
            }
        }
        if let Some(stss) = t.stss {
            let entries = be32(stss, 4)? as usize;
            for e in 0..entries.min(stss.len() / 4) {
                let n = be32(stss, 8 + e * 4)? as usize;
                if let Some(s) = n.checked_sub(1).and_then(|i| out.get_mut(i)) {
                    s.sync = true;
                }
            }
        }
        Ok(out)
    }

    /// For uncompressed audio: the byte runs of the track in order, each sample taken as
    /// `frame_bytes` long (QuickTime PCM stores one sample per frame, and its `stsz` size is not
    /// always the frame's size). Consecutive samples of a chunk are merged into one run.
    /// Reads at most `max_frames` frames in at most `max_runs` runs; the runs are held to the
    /// same rule as other samples (inside the file, no two sharing a byte), so the PCM read is
    /// never more bytes than the file.
    pub fn pcm_runs(
        &self,
        track: &Track,
        frame_bytes: u64,
        max_frames: u64,
        max_runs: usize,
    ) -> Result<Vec<(u64, u64)>, MediaError> {
        let t = self.tables(track)?;
        let count = u64::from(be32(t.stsz, 8)?).min(max_frames) as u32;
        let mut runs: Vec<(u64, u64)> = Vec::new();
        t.layout(count, |new_chunk, offset, _| {
            match runs.last_mut() {
                Some(last) if !new_chunk && last.0.saturating_add(last.1) == offset => {
                    last.1 = last.1.saturating_add(frame_bytes);
                }
                _ => {
                    if runs.len() >= max_runs {
                        return Err(MediaError::InvalidSpec(format!(
                            "the audio track has more than the {max_runs} chunks accepted"
                        )));
                    }
                    runs.push((offset, frame_bytes));
                }
            }
            Ok(frame_bytes)
        })?;
        self.check_extents(runs.iter().copied())?;
        Ok(runs)
    }
}

enum ChunkOffsets<'a> {
    Short(&'a [u8]),
    Long(&'a [u8]),
}

struct Tables<'a> {
    stsz: &'a [u8],
    stsc: &'a [u8],
    stts: &'a [u8],
    ctts: Option<&'a [u8]>,
    stss: Option<&'a [u8]>,
    chunk_offsets: ChunkOffsets<'a>,
}

impl Tables<'_> {
    fn chunk_count(&self) -> Result<u32, MediaError> {
        match self.chunk_offsets {
            ChunkOffsets::Short(b) => Ok(be32(b, 4)?.min((b.len().saturating_sub(8) / 4) as u32)),
            ChunkOffsets::Long(b) => Ok(be32(b, 4)?.min((b.len().saturating_sub(8) / 8) as u32)),
        }
    }

    /// Offset of chunk `i` (0-based).
    fn chunk_offset(&self, i: u32) -> Result<u64, MediaError> {
        match self.chunk_offsets {
            ChunkOffsets::Short(b) => Ok(u64::from(be32(b, 8 + i as usize * 4)?)),
            ChunkOffsets::Long(b) => be64(b, 8 + i as usize * 8),
        }
    }

    /// Walks the first `count` samples chunk by chunk: `f(first_in_chunk, offset, index)`
    /// returns the sample's size, which places the next one.
    fn layout(
        &self,
        count: u32,
        mut f: impl FnMut(bool, u64, u32) -> Result<u64, MediaError>,
    ) -> Result<(), MediaError> {
        let chunks = self.chunk_count()?;
        let entries = be32(self.stsc, 4)?.min((self.stsc.len().saturating_sub(8) / 12) as u32);
        let mut index = 0u32;
        for e in 0..entries {
            let at = 8 + e as usize * 12;
            let first = be32(self.stsc, at)?.max(1) - 1;
            let per_chunk = be32(self.stsc, at + 4)?;
            let end = if e + 1 < entries {
                (be32(self.stsc, at + 12)?.max(1) - 1).min(chunks)
            } else {
                chunks
            };
            for chunk in first..end {
                if index >= count {
                    return Ok(());
                }
                let mut offset = self.chunk_offset(chunk)?;
                for k in 0..per_chunk {
                    if index >= count {
                        return Ok(());
                    }
                    offset = offset.saturating_add(f(k == 0, offset, index)?);
                    index += 1;
                }
            }
        }
        Ok(())
    }
}

/// The length of length-prefixed NAL units as Annex B ([`avcc_to_annexb`]), without
/// converting them: with 1-byte lengths, many tiny NAL units grow by up to 150%.
pub(crate) fn annexb_len(sample: &[u8], length_size: usize) -> Result<u64, MediaError> {
    let mut pos = 0usize;
    let mut out = 0u64;
    while pos < sample.len() {
        if sample.len() - pos < length_size {
            return Err(MediaError::VideoDecode("truncated NAL length".into()));
        }
        let len = sample[pos..pos + length_size]
            .iter()
            .fold(0usize, |a, b| (a << 8) | usize::from(*b));
        pos += length_size;
        if len > sample.len() - pos {
            return Err(MediaError::VideoDecode(
                "NAL unit overruns its sample".into(),
            ));
        }
        out += 4 + len as u64;
        pos += len;
    }
    Ok(out)
}

/// Appends length-prefixed NAL units as Annex B (start code + NAL).
pub(crate) fn avcc_to_annexb(
    sample: &[u8],
    length_size: usize,
    out: &mut Vec<u8>,
) -> Result<(), MediaError> {
    let mut pos = 0usize;
    while pos < sample.len() {
        if sample.len() - pos < length_size {
            return Err(MediaError::VideoDecode("truncated NAL length".into()));
        }
        let mut len = 0usize;
        for b in &sample[pos..pos + length_size] {
            len = (len << 8) | usize::from(*b);
        }
        pos += length_size;
        if len > sample.len() - pos {
            return Err(MediaError::VideoDecode(
                "NAL unit overruns its sample".into(),
            ));
        }
        out.extend_from_slice(&[0, 0, 0, 1]);
        out.extend_from_slice(&sample[pos..pos + len]);
        pos += len;
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A box of `kind` around `payload` (32-bit size).
    pub(crate) fn bx(kind: &[u8; 4], payload: &[u8]) -> Vec<u8> {
        let mut out = ((payload.len() + 8) as u32).to_be_bytes().to_vec();
        out.extend_from_slice(kind);
        out.extend_from_slice(payload);
        out
    }

    /// A full box: version 0, no flags, then `fields` as 32-bit words.
    pub(crate) fn full(kind: &[u8; 4], fields: &[u32]) -> Vec<u8> {
        let mut payload = vec![0u8; 4];
        for f in fields {
            payload.extend_from_slice(&f.to_be_bytes());
        }
        bx(kind, &payload)
    }

    /// A file of one `soun` track whose chunks lie at `chunk_offsets` (the file's first
    /// `mdat_len` bytes after a 16-byte `ftyp` and the `mdat` header are media data, starting at
    /// offset 24), `per_chunk` samples of `sample_size` bytes each.
    fn file(chunk_offsets: &[u32], per_chunk: u32, sample_size: u32, mdat_len: usize) -> Vec<u8> {
        let mut out = bx(b"ftyp", b"isom\0\0\0\0");
        out.extend(bx(b"mdat", &vec![0x55; mdat_len]));
        let count = chunk_offsets.len() as u32 * per_chunk;
        let mut stco = vec![chunk_offsets.len() as u32];
        stco.extend_from_slice(chunk_offsets);
        // An audio sample entry: 28 bytes of fields, no children.
        let entry = bx(b"sowt", &[0u8; 28]);
        let mut stsd = vec![0u8, 0, 0, 0, 0, 0, 0, 1];
        stsd.extend(entry);
        let stbl = [
            bx(b"stsd", &stsd),
            full(b"stsz", &[sample_size, count]),
            full(b"stsc", &[1, 1, per_chunk, 1]),
            full(b"stts", &[1, count, 1]),
            full(b"stco", &stco),
        ]
        .concat();
        let minf = bx(b"stbl", &stbl);
        let mdia = [
            full(b"mdhd", &[0, 0, 48_000, count, 0]),
            full(b"hdlr", &[0, u32::from_be_bytes(*b"soun"), 0, 0, 0]),
            bx(b"minf", &minf),
        ]
        .concat();
        let trak = bx(b"mdia", &mdia);
        let moov = [full(b"mvhd", &[0, 0, 1000, 1000, 0]), bx(b"trak", &trak)].concat();
        out.extend(bx(b"moov", &moov));
        out
    }

    fn samples(data: &[u8]) -> Result<Vec<Sample>, String> {
        let movie = Movie::parse(&data).expect("parse");
        let track = movie.first(b"soun").expect("track");
        movie.samples(track, 100).map_err(|e| e.to_string())
    }

    fn runs(data: &[u8], frame: u64, max_runs: usize) -> Result<Vec<(u64, u64)>, String> {
        let movie = Movie::parse(&data).expect("parse");
        let track = movie.first(b"soun").expect("track");
        movie
            .pcm_runs(track, frame, 10_000, max_runs)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn tables_inside_the_file_without_shared_bytes_read() {
        let data = file(&[24, 40], 4, 4, 32);
        let s = samples(&data).expect("samples");
        assert_eq!(s.len(), 8);
        assert_eq!((s[4].offset, s[7].offset), (40, 52));
        assert_eq!(runs(&data, 4, 100), Ok(vec![(24, 16), (40, 16)]));
    }

    #[test]
    fn samples_sharing_bytes_are_refused() {
        // Both chunks at the same bytes, then chunks overlapping by one byte.
        for offsets in [[24, 24], [24, 39]] {
            let err = samples(&file(&offsets, 4, 4, 32)).expect_err("overlap");
            assert!(err.contains("share bytes"), "{offsets:?}: {err}");
        }
    }

    #[test]
    fn a_sample_outside_the_file_is_refused() {
        let err = samples(&file(&[24, 4_000_000], 4, 4, 32)).expect_err("outside");
        assert!(err.contains("outside the file"), "{err}");
        // The last sample running one byte past the end.
        let len = file(&[24, 40], 4, 4, 32).len() as u32;
        let err = samples(&file(&[24, len - 16 + 1], 4, 4, 32)).expect_err("outside");
        assert!(err.contains("outside the file"), "{err}");
        assert!(samples(&file(&[24, len - 16], 4, 4, 32)).is_ok());
    }

    #[test]
    fn overlapping_pcm_chunks_are_refused() {
        // Many chunks read as PCM runs over the same 16 bytes: small on disk, large decoded.
        let err = runs(&file(&[24; 50], 4, 4, 32), 4, 100).expect_err("overlap");
        assert!(err.contains("share bytes"), "{err}");
        // One frame of overlap between neighbouring chunks.
        let err = runs(&file(&[24, 36], 4, 4, 32), 4, 100).expect_err("overlap");
        assert!(err.contains("share bytes"), "{err}");
    }

    #[test]
    fn a_pcm_run_outside_the_file_is_refused() {
        let err = runs(&file(&[24, u32::MAX - 8], 4, 4, 32), 4, 100).expect_err("outside");
        assert!(err.contains("outside the file"), "{err}");
        // The frame size, not stsz's sample size, places the runs: 4-byte samples read as
        // 4096-byte frames run past the end.
        let err = runs(&file(&[24, 40], 4, 4, 32), 4096, 100).expect_err("outside");
        assert!(err.contains("outside the file"), "{err}");
    }

    #[test]
    fn pcm_in_more_chunks_than_accepted_is_refused() {
        let offsets: Vec<u32> = (0..8).map(|i| 24 + 4 * i).collect();
        let data = file(&offsets, 1, 4, 32);
        assert_eq!(runs(&data, 4, 8).map(|r| r.len()), Ok(8));
        let err = runs(&data, 4, 7).expect_err("too many");
        assert!(err.contains("more than the 7 chunks"), "{err}");
    }

    /// A source that is not in memory (no [`ReadAt::as_bytes`]): every read copies, as from a
    /// file.
    struct Unmapped<'a>(&'a [u8]);

    impl ReadAt for Unmapped<'_> {
        fn size(&self) -> u64 {
            self.0.size()
        }

        fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
            self.0.read_exact_at(buf, offset)
        }
    }

    /// A large file that is `head` followed by zeros, recording the longest read.
    struct Sparse {
        head: Vec<u8>,
        size: u64,
        longest: std::sync::atomic::AtomicUsize,
    }

    impl ReadAt for Sparse {
        fn size(&self) -> u64 {
            self.size
        }

        fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
            self.longest
                .fetch_max(buf.len(), std::sync::atomic::Ordering::Relaxed);
            for (i, b) in buf.iter_mut().enumerate() {
                *b = usize::try_from(offset)
                    .ok()
                    .and_then(|o| self.head.get(o + i))
                    .copied()
                    .unwrap_or(0);
            }
            Ok(())
        }
    }

    #[test]
    fn a_source_not_in_memory_reads_the_same_samples() {
        let data = file(&[24, 40], 4, 4, 32);
        let source = Unmapped(&data);
        let movie = Movie::parse(&source).expect("parse");
        let track = movie.first(b"soun").expect("track");
        let s = movie.samples(track, 100).expect("samples");
        assert_eq!((s[4].offset, s[7].offset), (40, 52));
        let bytes = movie.sample_bytes(40, 16).expect("bytes");
        assert!(matches!(bytes, Cow::Owned(_)), "read, not borrowed");
        assert_eq!(&bytes[..], &data[40..56]);
        // A slice is borrowed.
        let slice: &[u8] = &data;
        let movie = Movie::parse(&slice).expect("parse");
        assert!(matches!(
            movie.sample_bytes(40, 16).expect("bytes"),
            Cow::Borrowed(_)
        ));
        // Outside the file, through the table and directly.
        let len = data.len() as u32;
        let far = file(&[24, len - 16 + 1], 4, 4, 32);
        let source = Unmapped(&far);
        let movie = Movie::parse(&source).expect("parse");
        let track = movie.first(b"soun").expect("track");
        let err = movie.samples(track, 100).expect_err("outside").to_string();
        assert!(err.contains("outside the file"), "{err}");
        let err = movie.sample_bytes(u64::MAX - 1, 4).expect_err("overflow");
        assert!(err.to_string().contains("outside the file"), "{err}");
    }

    #[test]
    fn a_sample_larger_than_the_window_is_refused() {
        let size = MAX_SAMPLE_BYTES + 1;
        let data = file(&[24], 1, size as u32, 32);
        let source = Sparse {
            size: data.len() as u64 + size,
            head: data,
            longest: Default::default(),
        };
        let movie = Movie::parse(&source).expect("parse");
        let err = movie.sample_bytes(24, size).expect_err("too large");
        assert!(
            matches!(&err, MediaError::Unconformable(m) if m.contains("16 MiB")),
            "{err}"
        );
        assert!(movie.sample_bytes(24, MAX_SAMPLE_BYTES).is_ok());
    }

    #[test]
    fn a_moov_larger_than_the_cap_is_refused_before_it_is_read() {
        // ftyp, then a moov box declaring 1 GiB with its 64-bit size, in a 1 GiB + 24 byte file.
        let mut head = bx(b"ftyp", b"isom\0\0\0\0");
        let moov_len: u64 = 1 << 30;
        head.extend_from_slice(&1u32.to_be_bytes());
        head.extend_from_slice(b"moov");
        head.extend_from_slice(&(moov_len + 16).to_be_bytes());
        let source = Sparse {
            size: 16 + 16 + moov_len,
            head,
            longest: Default::default(),
        };
        let err = Movie::parse(&source).err().expect("refused");
        assert!(
            matches!(&err, MediaError::Unconformable(m)
                if m.contains("moov box") && m.contains(&format!("{moov_len} bytes"))),
            "{err}"
        );
        // Only box headers were read.
        assert!(
            source.longest.load(std::sync::atomic::Ordering::Relaxed) <= 16,
            "read {} bytes at once",
            source.longest.load(std::sync::atomic::Ordering::Relaxed)
        );
        // One byte under the cap is read.
        let mut at_cap = bx(b"ftyp", b"isom\0\0\0\0");
        at_cap.extend_from_slice(&((MAX_MOOV_BYTES + 8) as u32).to_be_bytes());
        at_cap.extend_from_slice(b"moov");
        let source = Sparse {
            size: 16 + 8 + MAX_MOOV_BYTES,
            head: at_cap,
            longest: Default::default(),
        };
        // Read whole (zeros are no boxes of substance, so it fails after the read).
        assert!(Movie::parse(&source).is_err());
        assert_eq!(
            source.longest.load(std::sync::atomic::Ordering::Relaxed) as u64,
            MAX_MOOV_BYTES
        );
    }

    #[test]
    fn top_level_boxes_with_64_bit_sizes_and_size_0_are_walked() {
        // ftyp, moov first, then an mdat with a 64-bit size, then a free box running to the end.
        let plain = file(&[24, 40], 4, 4, 32);
        let moov_at = 16 + 8 + 32;
        let moov = &plain[moov_at..];
        let mut data = plain[..16].to_vec();
        data.extend_from_slice(moov);
        let shift = moov.len() as u32 + 8; // moov before the mdat, whose header grows by 8
        let mut mdat = 1u32.to_be_bytes().to_vec();
        mdat.extend_from_slice(b"mdat");
        mdat.extend_from_slice(&(16u64 + 32).to_be_bytes());
        mdat.extend_from_slice(&[0x55; 32]);
        data.extend_from_slice(&mdat);
        let mut free = 0u32.to_be_bytes().to_vec();
        free.extend_from_slice(b"free");
        free.extend_from_slice(&[0; 100]);
        data.extend_from_slice(&free);
        // The chunk offsets moved with the mdat.
        let stco = data.windows(4).position(|w| w == b"stco").expect("stco") + 4;
        for (k, at) in [24u32, 40].iter().enumerate() {
            let p = stco + 8 + 4 * k;
            data[p..p + 4].copy_from_slice(&(at + shift).to_be_bytes());
        }
        let source = Unmapped(&data);
        let movie = Movie::parse(&source).expect("parse");
        assert!(movie.moov_first);
        let track = movie.first(b"soun").expect("track");
        let s = movie.samples(track, 100).expect("samples");
        assert_eq!(s[0].offset, u64::from(24 + shift));
        assert_eq!(
            &movie.sample_bytes(s[0].offset, 4).expect("bytes")[..],
            &[0x55; 4]
        );
        // moov after mdat in the plain file.
        assert!(!Movie::parse(&Unmapped(&plain)).expect("parse").moov_first);
        // A 64-bit size past the end of the file, and one smaller than its header.
        for bad_size in [u64::MAX, 15] {
            let mut d = data.clone();
            let at = 16 + moov.len() + 8;
            d[at..at + 8].copy_from_slice(&bad_size.to_be_bytes());
            let err = Movie::parse(&Unmapped(&d)).err().expect("refused");
            assert!(
                err.to_string().contains("invalid size"),
                "{bad_size}: {err}"
            );
        }
    }
}
