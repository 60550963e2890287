//! Container metadata without decoding.

use std::io::Cursor;

use crate::error::MediaError;
use crate::faststart::boxes;

/// Metadata of an MP4/QuickTime file.
#[derive(Debug, Clone, PartialEq)]
pub struct Mp4Probe {
    /// Movie duration (`mvhd`) in seconds.
    pub duration_secs: f64,
    /// The first video track, if any.
    pub video: Option<VideoTrack>,
    /// The first audio track, if any.
    pub audio: Option<AudioTrack>,
}

/// A video track's metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct VideoTrack {
    /// Sample entry type: `avc1` (H.264), `hev1` (H.265), `vp09`, or the raw four-character code.
    pub codec: String,
    pub width: u32,
    pub height: u32,
    /// Presented duration: the edit list's when there is one, else the media's.
    pub duration_secs: f64,
    /// Number of samples (frames).
    pub frames: u32,
}

/// An audio track's metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct AudioTrack {
    /// `aac` for an `mp4a` sample entry, else the raw four-character code.
    pub codec: String,
    pub sample_rate: u32,
    pub channels: u16,
    /// Presented duration: the edit list's when there is one, else the media's.
    pub duration_secs: f64,
}

/// True when `bytes` starts like an ISO BMFF file (an `ftyp`, `moov`, `mdat`,
/// `free`, `skip` or `wide` box first).
pub(crate) fn looks_like_mp4(bytes: &[u8]) -> bool {
    bytes.len() >= 8
        && matches!(
            &bytes[4..8],
            b"ftyp" | b"moov" | b"mdat" | b"free" | b"skip" | b"wide"
        )
}

/// Boxes whose payload is only child boxes.
const CONTAINERS: [&[u8; 4]; 10] = [
    b"moov", b"trak", b"mdia", b"minf", b"stbl", b"edts", b"dinf", b"mvex", b"moof", b"traf",
];
const MAX_DEPTH: usize = 12;

/// Checks that every box of the metadata tree lies inside its parent and has a
/// real size. The `mp4` crate trusts sizes, and a nested box of size 0 makes it
/// seek back to the same header forever, so untrusted files are checked first.
fn validate_tree(data: &[u8], depth: usize) -> Result<(), MediaError> {
    let bad = |m: String| MediaError::NotMp4(m);
    if depth > MAX_DEPTH {
        return Err(bad("boxes nested too deeply".into()));
    }
    for b in boxes(data).map_err(|e| bad(e.to_string()))? {
        if depth > 0 && data[b.start..b.start + 4] == [0, 0, 0, 0] {
            return Err(bad(format!(
                "nested box '{}' has size 0",
                String::from_utf8_lossy(&b.kind)
            )));
        }
        let body = &data[b.body..b.end];
        if CONTAINERS.contains(&&b.kind) {
            validate_tree(body, depth + 1)?;
        } else if &b.kind == b"stsd" {
            // Version/flags and entry count, then the sample entries (whose own
            // children the parser reads without looping).
            if body.len() < 8 {
                return Err(bad("truncated stsd".into()));
            }
            for entry in boxes(&body[8..]).map_err(|e| bad(e.to_string()))? {
                let at = 8 + entry.start;
                if body[at..at + 4] == [0, 0, 0, 0] {
                    return Err(bad("sample entry has size 0".into()));
                }
            }
        }
    }
    Ok(())
}

pub(crate) fn open(bytes: &[u8]) -> Result<mp4::Mp4Reader<Cursor<&[u8]>>, MediaError> {
    if !looks_like_mp4(bytes) {
        return Err(MediaError::NotMp4("no ISO BMFF box at the start".into()));
    }
    validate_tree(bytes, 0)?;
    // The parser is not ours: turn a panic on hostile input into an error.
    std::panic::catch_unwind(|| mp4::Mp4Reader::read_header(Cursor::new(bytes), bytes.len() as u64))
        .map_err(|_| MediaError::NotMp4("malformed MP4 (the parser panicked)".into()))?
        .map_err(|e| MediaError::NotMp4(e.to_string()))
}

fn track_duration(track: &mp4::Mp4Track, movie_timescale: u32) -> f64 {
    if let Some(elst) = track.trak.edts.as_ref().and_then(|e| e.elst.as_ref()) {
        // Sum of the segments that present media (media_time == -1 marks an empty edit).
        let presented: u64 = elst
            .entries
            .iter()
            .filter(|e| e.media_time != u64::from(u32::MAX) && e.media_time != u64::MAX)
            .map(|e| e.segment_duration)
            .sum();
        if presented > 0 && movie_timescale > 0 {
            return presented as f64 / f64::from(movie_timescale);
        }
    }
    let mdhd = &track.trak.mdia.mdhd;
    if mdhd.timescale == 0 {
        0.0
    } else {
        mdhd.duration as f64 / f64::from(mdhd.timescale)
    }
}

/// Reads an MP4's container metadata (no decoding, so it is fast). Fails with
/// [`MediaError::NotMp4`] for anything that is not an MP4/QuickTime file or
/// whose `moov` cannot be parsed.
pub fn probe_mp4(bytes: &[u8]) -> Result<Mp4Probe, MediaError> {
    let reader = open(bytes)?;
    let movie_timescale = reader.timescale();
    let duration_secs = if movie_timescale == 0 {
        0.0
    } else {
        reader.moov.mvhd.duration as f64 / f64::from(movie_timescale)
    };
    let mut tracks: Vec<&mp4::Mp4Track> = reader.tracks().values().collect();
    tracks.sort_by_key(|t| t.track_id());
    let mut video = None;
    let mut audio = None;
    for track in tracks {
        let stsd = &track.trak.mdia.minf.stbl.stsd;
        let handler = track.trak.mdia.hdlr.handler_type.to_string();
        let is_video =
            stsd.avc1.is_some() || stsd.hev1.is_some() || stsd.vp09.is_some() || handler == "vide";
        let is_audio = stsd.mp4a.is_some() || handler == "soun";
        if is_video && video.is_none() {
            let codec = if stsd.avc1.is_some() {
                "avc1"
            } else if stsd.hev1.is_some() {
                "hev1"
            } else if stsd.vp09.is_some() {
                "vp09"
            } else {
                "unknown"
            };
            let (width, height) = match (&stsd.avc1, &stsd.hev1, &stsd.vp09) {
                (Some(a), _, _) => (u32::from(a.width), u32::from(a.height)),
                (_, Some(h), _) => (u32::from(h.width), u32::from(h.height)),
                (_, _, Some(v)) => (u32::from(v.width), u32::from(v.height)),
                _ => (
                    track.trak.tkhd.width.value() as u32,
                    track.trak.tkhd.height.value() as u32,
                ),
            };
            video = Some(VideoTrack {
                codec: codec.to_string(),
                width,
                height,
                duration_secs: track_duration(track, movie_timescale),
                frames: track.sample_count(),
            });
        } else if is_audio && audio.is_none() {
            let (codec, sample_rate, channels) = match &stsd.mp4a {
                Some(m) => ("aac", u32::from(m.samplerate.value()), m.channelcount),
                None => ("unknown", track.trak.mdia.mdhd.timescale, 0),
            };
            audio = Some(AudioTrack {
                codec: codec.to_string(),
                sample_rate,
                channels,
                duration_secs: track_duration(track, movie_timescale),
            });
        }
    }
    Ok(Mp4Probe {
        duration_secs,
        video,
        audio,
    })
}
