//! The conform stage: turns a hosted engine's MP4 into a clip that meets reelgate's contract
//! (H.264 at the job's 768p size, an AAC track, exactly the seconds asked, `moov` first), in
//! pure Rust and bundled C so that it runs in AWS Lambda without ffmpeg.
//!
//! Video is decoded with openh264 (display order), and each picture, as it comes out of the
//! decoder, is scaled to cover the target frame with the centre kept ([`crate::scale`]) and
//! encoded again with the crate's H.264 settings: decoded pictures are never collected. AAC
//! audio is copied access unit by access unit, after every unit kept has been decoded (and
//! found to last the video); other audio is decoded and encoded to AAC-LC, and a clip without
//! audio gets the caller's reference audio or silence.
//!
//! # Memory
//!
//! The engine's file (`F` bytes, up to the caller's 256 MiB) is not held: [`conform_source`]
//! reads it through a [`ReadAt`] source (a local [`crate::FileSource`]) in bounded windows, and
//! [`conform_mp4`] reads bytes the caller holds the same way (borrowing samples from them, so
//! it adds nothing for the input). A conform holds:
//!
//! * `M`, the `moov` box's body, at most [`crate::MAX_MOOV_BYTES`] (32 MiB), refused from its
//!   header before it is read when larger, and held while the file is read: every table offset
//!   is into it (the `avcC` whose parameter sets are copied out is at most 64 KiB);
//! * `S`, one sample at a time: the coded picture read (at most [`crate::MAX_SAMPLE_BYTES`],
//!   16 MiB) and its Annex B copy for the decoder (checked to be at most 16 MiB before it is
//!   built), 32 MiB at worst and a few hundred KiB for real clips; an audio access unit (the
//!   same cap), or a window of uncompressed audio (1 MiB). No decoder needs the track whole:
//!   AAC goes to fdk-aac and MP3, FLAC and ALAC to symphonia packet by packet;
//! * `P`, the decoder's picture pool: for a stream of `W`x`H` macroblocks,
//!   `(max_num_ref_frames + 2) * (ceil32(16W + 64) * ceil32(16H + 64) * 1.5 + 165 * W * H)`
//!   bytes ([`decoder_picture_bytes`]). Every SPS, in the `avcC` or in the stream, is checked
//!   before the decoder sees it: `P` at most [`MAX_DECODER_PICTURE_BYTES`] (160 MiB), and the
//!   level's own limits (H.264 Table A-1, levels up to 5.2, sides up to 4096) hold it to
//!   140.1 MiB;
//! * the decoder's other state, about 1.2 KiB a macroblock: at most 43 MiB (36,864, level
//!   5.2's largest frame);
//! * about 20 MiB for the encoder at the output size, the scaler, the sample tables (at most
//!   3,600 video and 400,000 audio samples, 40 bytes each, every one inside the file and none
//!   sharing bytes) and the audio, which is folded to 48 kHz stereo as it is decoded
//!   (192,000 bytes a second, at most 12 MiB) or checked unit by unit when kept (kept AAC is at
//!   most [`KEPT_AAC_BYTES_PER_SEC`] for the clip, 4.3 MiB for 61 s, or it is re-encoded);
//! * `V`, the coded video, at most twice what the rate control aims at plus 1 MiB
//!   ([`max_video_bytes`]): with the aim `w * h * fps / 10` bits a second (at most 8 Mbit/s),
//!   `V <= w * h * frames / 40 + 1 MiB`, 91 MiB for 3,600 frames at 1366x768, and at most
//!   115.4 MiB (8 Mbit/s for 60 s: 21:9 at 60 fps). It is held while the decoder runs, then
//!   about twice over while muxing, after the decoder is dropped.
//!
//! Peak: `M + S + max(P + 1.2 KiB * W * H + 20 MiB + V, 2 * V + 20 MiB)`, at most
//! `32 + 32 + 140 + 43 + 20 + 115.4 = 382.4 MiB` whatever `F` (the same terms with the file
//! held whole were `F` + 318 MiB).
//!
//! A clip that meets the contract is passed through (read whole into [`Conformed::mp4`],
//! decoding only its AAC, unit by unit) only when the file is no larger than what the conform
//! would write for it ([`pass_through_max_bytes`]: `V` at the encoder's aim for the clip's size
//! and frame rate, plus AAC at its ceiling and 1 MiB of container): 96.3 MiB for 3,600 frames
//! in 60.5 s at 1366x768, at most 121.6 MiB (8 Mbit/s for 60.5 s), so a pass-through holds at
//! most `M` + 121.6 MiB + the tables. A larger file is conformed like any other.
//!
//! Measured (VmHWM of the whole process, `examples/conform_bench.rs -- DIR --file MP4 SECONDS`,
//! which reads the file through a [`crate::FileSource`]): 86 MiB for 60 s of 1080p30 High with
//! four references (40 MB file; it was the file + 78 MiB when read whole), 14.6 MiB for a
//! 9.8 MB 15 s 1366x768 pass-through. Earlier, with the file held whole (the terms other than
//! `F` are unchanged): +201 MiB for 4096x2304 at level 5.1 with its five references, +147 MiB
//! for 2560x1152 with sixteen.

use crate::aspect::{output_dimensions, AspectRatio};
use crate::audio_decode::{self, Pcm, PcmFormat};
use crate::demux::{annexb_len, avcc_to_annexb, MAX_SAMPLE_BYTES};
use crate::demux::{be16, be32, Movie, Sample, Track};
use crate::encode::{
    encode_aac_stereo_48k, video_bitrate, AacTrack, AacUnit, H264Encoder, AUDIO_SAMPLE_RATE,
    MOVIE_TIMESCALE,
};
use crate::error::MediaError;
use crate::mux;
use crate::scale::{CoverScaler, Picture};
use crate::source::ReadAt;

use openh264::decoder::{DecodedYUV, Decoder, DecoderConfig, Flush};
use openh264::formats::YUVSource;
use openh264::OpenH264API;

/// Largest accepted picture side.
const MAX_SIDE: u32 = 4096;
/// Longest accepted engine clip.
const MAX_INPUT_SECS: f64 = 120.0;
/// Most video frames accepted (30 fps for 120 s).
const MAX_FRAMES: u32 = 30 * 120;
/// Most audio samples (access units) read from a track.
const MAX_AUDIO_SAMPLES: u32 = 400_000;
/// How far the engine's clip may fall short of the seconds asked and still be accepted.
const SHORT_TOLERANCE_SECS: f64 = 0.5;
/// Uncompressed audio is read from the file at most this many bytes at a time.
const PCM_WINDOW_BYTES: u64 = 1 << 20;
/// The most bytes a second of AAC that is kept (passed through, or copied into a conformed
/// clip): AAC-LC's ceiling for stereo at 48 kHz (6,144 bits a channel for each 1,024-sample
/// frame, 576 kbit/s). Kept AAC above it is decoded and encoded again instead.
const KEPT_AAC_BYTES_PER_SEC: f64 = 72_000.0;
/// Room for a passed-through clip's container (`ftyp`, the `moov` box's tables, box headers).
const PASS_THROUGH_CONTAINER_BYTES: u64 = 1 << 20;
/// Kept AAC that stops earlier than this before the clip's end is re-encoded with silence after.
const AUDIO_GAP_SECS: f64 = 0.1;
/// How much longer than the video a passed-through clip's AAC track may last.
const PASS_THROUGH_AUDIO_OVERRUN_SECS: f64 = 1.0;
/// How much longer than its sample table says kept AAC may decode (the last unit's full frame,
/// rounding) before the table is taken to understate it.
const AAC_DECODE_OVERRUN_SECS: f64 = 0.5;

/// What the conformed clip must be.
#[derive(Debug, Clone)]
pub struct ConformTarget {
    /// The job's ratio; `Auto` takes the engine's own orientation (nearest of the fixed ratios
    /// to the source frame's shape).
    pub aspect: AspectRatio,
    /// The seconds the caller asked for (4..=15 today; 1..=60 accepted).
    pub seconds: u32,
    /// The caller's first reference audio file, raw bytes as uploaded, laid under a clip that
    /// has no audio of its own.
    pub fallback_audio: Option<Vec<u8>>,
}

/// The conformed clip and what was done.
#[derive(Clone)]
pub struct Conformed {
    pub mp4: Vec<u8>,
    /// True when the input already met the contract and is returned byte for byte.
    pub passed_through: bool,
    pub width: u32,
    pub height: u32,
    pub duration_secs: f64,
    /// What came in, for logs: e.g. "H.264 High 1920x1080 30.00 fps, AAC 44100 Hz stereo,
    /// 8.00 s".
    pub source: String,
    /// What was done to the audio: "kept", "re-encoded from <codec>", "reference audio mixed",
    /// "silence added".
    pub audio: String,
}

impl std::fmt::Debug for Conformed {
    /// Everything but the bytes of the clip (only their count).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conformed")
            .field("mp4_bytes", &self.mp4.len())
            .field("passed_through", &self.passed_through)
            .field("width", &self.width)
            .field("height", &self.height)
            .field("duration_secs", &self.duration_secs)
            .field("source", &self.source)
            .field("audio", &self.audio)
            .finish()
    }
}

/// Conforms an engine's MP4 to the contract (see the module documentation):
///
/// * passed through unchanged when it is already H.264 at the target size with an AAC track,
///   within 0.5 s of `seconds`, `moov` before `mdat`, and the file no larger than the conform
///   would write for it (see [`conform_source`]);
/// * a `moov` box larger than [`crate::MAX_MOOV_BYTES`] or a sample larger than
///   [`crate::MAX_SAMPLE_BYTES`] fails with [`MediaError::Unconformable`];
/// * H.265, AV1, VP8/9, MPEG-4 Part 2 and H.264 profiles other than Baseline, Main, Extended
///   and High fail with [`MediaError::UnsupportedCodec`];
/// * a clip more than 0.5 s shorter than `seconds`, longer than 120 s, with more than 3600
///   frames or larger than 4096x4096 fails with [`MediaError::Unconformable`];
/// * otherwise the picture is scaled to cover the 768p frame of `target.aspect` (centre kept),
///   cut to `seconds`, encoded as H.264, with the audio kept (AAC), re-encoded (other codecs),
///   taken from `target.fallback_audio`, or silent.
///
/// This is [`conform_source`] over bytes in memory (samples are borrowed from them).
pub fn conform_mp4(input: &[u8], target: &ConformTarget) -> Result<Conformed, MediaError> {
    conform_source(&input, target)
}

/// [`conform_mp4`] reading the engine's MP4 from `input` (a local file through
/// [`crate::FileSource`], say) instead of holding it whole: the top-level box headers, the
/// `moov` box (at most [`crate::MAX_MOOV_BYTES`], refused before it is read when larger), then
/// each sample as it is decoded or copied (at most [`crate::MAX_SAMPLE_BYTES`], uncompressed
/// audio a mebibyte at a time). A clip that already meets the contract is read whole into
/// [`Conformed::mp4`] only when it is no larger than the conform would write for it (twice the
/// encoder's aim for its size and frame rate, AAC at its ceiling and a mebibyte of container);
/// a larger one is conformed. A read error of the source is [`MediaError::Io`].
pub fn conform_source(input: &dyn ReadAt, target: &ConformTarget) -> Result<Conformed, MediaError> {
    // The parsers and decoders wrapped here are not all ours: a panic becomes an error.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| conform(input, target)))
        .unwrap_or_else(|_| {
            Err(MediaError::NotMp4(
                "malformed media (a parser panicked)".into(),
            ))
        })
}

fn unconformable(m: impl Into<String>) -> MediaError {
    MediaError::Unconformable(m.into())
}

fn fourcc(c: &[u8; 4]) -> String {
    c.iter()
        .map(|b| {
            if b.is_ascii_graphic() || *b == b' ' {
                char::from(*b)
            } else {
                '?'
            }
        })
        .collect::<String>()
        .trim_end()
        .to_string()
}

// ---------------------------------------------------------------------------
// Sample entries

/// The payload of the child boxes of a sample entry, found by four-character code (also inside
/// a QuickTime `wave` box).
fn entry_child<'a>(children: &'a [u8], kind: &[u8; 4]) -> Option<&'a [u8]> {
    let list = crate::faststart::boxes(children).ok()?;
    for b in &list {
        if &b.kind == kind {
            return Some(&children[b.body..b.end]);
        }
    }
    for b in list.iter().filter(|b| &b.kind == b"wave") {
        if let Some(found) = entry_child(&children[b.body..b.end], kind) {
            return Some(found);
        }
    }
    None
}

/// The H.264 configuration from `avcC`.
struct AvcConfig {
    length_size: usize,
    sps: Vec<Vec<u8>>,
    pps: Vec<Vec<u8>>,
}

/// The largest `avcC` read (a real one, a few parameter sets, is well under a KiB; the sets are
/// copied out of it and handed to the decoder with the first picture).
const MAX_AVCC_BYTES: usize = 64 << 10;

fn parse_avcc(b: &[u8]) -> Result<AvcConfig, MediaError> {
    if b.len() > MAX_AVCC_BYTES {
        return Err(MediaError::NotMp4(format!(
            "the avcC is {} bytes, more than the {MAX_AVCC_BYTES} accepted",
            b.len()
        )));
    }
    let bad = || MediaError::NotMp4("truncated avcC".into());
    let length_size = usize::from(*b.get(4).ok_or_else(bad)? & 3) + 1;
    let mut pos = 5;
    let read_list = |pos: &mut usize, count: usize| -> Result<Vec<Vec<u8>>, MediaError> {
        let mut out = Vec::new();
        for _ in 0..count {
            let len = usize::from(be16(b, *pos).map_err(|_| bad())?);
            let nal = b.get(*pos + 2..*pos + 2 + len).ok_or_else(bad)?;
            out.push(nal.to_vec());
            *pos += 2 + len;
        }
        Ok(out)
    };
    let n_sps = usize::from(*b.get(pos).ok_or_else(bad)? & 0x1f);
    pos += 1;
    let sps = read_list(&mut pos, n_sps)?;
    let n_pps = usize::from(*b.get(pos).ok_or_else(bad)?);
    pos += 1;
    let pps = read_list(&mut pos, n_pps)?;
    Ok(AvcConfig {
        length_size,
        sps,
        pps,
    })
}

/// Reads bits of an H.264 RBSP (emulation prevention bytes removed).
struct Bits {
    data: Vec<u8>,
    pos: usize,
}

impl Bits {
    fn new(nal: &[u8]) -> Self {
        let mut data = Vec::with_capacity(nal.len());
        let mut zeros = 0;
        for &b in nal {
            if zeros >= 2 && b == 3 {
                zeros = 0;
                continue;
            }
            zeros = if b == 0 { zeros + 1 } else { 0 };
            data.push(b);
        }
        Self { data, pos: 0 }
    }

    fn bit(&mut self) -> Result<u32, MediaError> {
        let byte = self
            .data
            .get(self.pos / 8)
            .ok_or_else(|| MediaError::NotMp4("truncated H.264 SPS".into()))?;
        let v = (byte >> (7 - self.pos % 8)) & 1;
        self.pos += 1;
        Ok(u32::from(v))
    }

    fn bits(&mut self, n: u32) -> Result<u32, MediaError> {
        let mut v = 0;
        for _ in 0..n {
            v = (v << 1) | self.bit()?;
        }
        Ok(v)
    }

    fn ue(&mut self) -> Result<u32, MediaError> {
        let mut zeros = 0;
        while self.bit()? == 0 {
            zeros += 1;
            if zeros > 31 {
                return Err(MediaError::NotMp4("bad Exp-Golomb code in SPS".into()));
            }
        }
        Ok(((1u64 << zeros) - 1 + u64::from(self.bits(zeros)?)) as u32)
    }

    fn se(&mut self) -> Result<i32, MediaError> {
        let v = self.ue()?;
        Ok(if v & 1 == 1 {
            v.div_ceil(2) as i32
        } else {
            -((v / 2) as i32)
        })
    }
}

/// What the sequence parameter set says.
struct SpsInfo {
    profile_idc: u8,
    constrained: bool,
    /// `constraint_set3_flag`: with `level_idc` 11 in Baseline, Main and Extended it means
    /// level 1b.
    constraint_set3: bool,
    level_idc: u8,
    chroma_format: u32,
    bit_depth: u32,
    /// The picture as shown (cropped).
    width: u32,
    height: u32,
    /// The coded frame in macroblocks (what the decoder allocates).
    width_mbs: u32,
    height_mbs: u32,
    progressive: bool,
    /// `max_num_ref_frames`: the decoder keeps this many pictures besides the current one.
    ref_frames: u32,
    /// The VUI's `max_dec_frame_buffering`, when the SPS has one and it reads.
    max_dec_frame_buffering: Option<u32>,
}

/// The most a decoder's picture pool may take for one conform (see [`decoder_picture_bytes`]).
/// Streams within the levels OpenH264 decodes (up to 5.2) and [`MAX_SIDE`] need at most
/// 140 MiB (4096x2304 with its level's five references: 139 MiB); sixteen references at
/// 4096x2304 (358 MiB, which level 6.2 allows) are refused before the decoder allocates
/// anything.
pub const MAX_DECODER_PICTURE_BYTES: u64 = 160 << 20;

/// Bytes OpenH264 keeps beside each pool picture for every macroblock: a decoded flag, the
/// macroblock type, and two lists of sixteen motion vectors and reference indices.
const DECODER_BYTES_PER_MB: u64 = 1 + 4 + 2 * 16 * 4 + 2 * 16;

/// The pictures OpenH264 (single-threaded, as here) allocates for a sequence: a pool of
/// `max_num_ref_frames + 2` pictures, each the coded frame with 32 pixels of padding on every
/// side rounded up to a multiple of 32, 8-bit 4:2:0, and [`DECODER_BYTES_PER_MB`] a
/// macroblock (`GetTargetRefListSize` and `AllocPicture` in its decoder).
fn decoder_picture_bytes(sps: &SpsInfo) -> u64 {
    let padded = |mbs: u32| (u64::from(mbs) * 16 + 64).div_ceil(32) * 32;
    let mbs = u64::from(sps.width_mbs) * u64::from(sps.height_mbs);
    let picture =
        padded(sps.width_mbs) * padded(sps.height_mbs) * 3 / 2 + mbs * DECODER_BYTES_PER_MB;
    picture.saturating_mul(u64::from(sps.ref_frames) + 2)
}

/// A level of H.264 Table A-1: its name, `MaxFS` (macroblocks a frame) and `MaxDpbMbs`
/// (macroblocks the decoded picture buffer holds).
struct Level {
    name: &'static str,
    max_fs: u32,
    max_dpb_mbs: u32,
}

/// The highest level OpenH264's decoder knows (`GetLevelLimits`); it drops an SPS above it.
const MAX_DECODER_LEVEL_IDC: u8 = 52;

fn level_limits(sps: &SpsInfo) -> Option<Level> {
    let level = |name, max_fs, max_dpb_mbs| {
        Some(Level {
            name,
            max_fs,
            max_dpb_mbs,
        })
    };
    let one_b = sps.level_idc == 9
        || (sps.level_idc == 11 && sps.constraint_set3 && matches!(sps.profile_idc, 66 | 77 | 88));
    if one_b {
        return level("1b", 99, 396);
    }
    match sps.level_idc {
        10 => level("1", 99, 396),
        11 => level("1.1", 396, 900),
        12 => level("1.2", 396, 2376),
        13 => level("1.3", 396, 2376),
        20 => level("2", 396, 2376),
        21 => level("2.1", 792, 4752),
        22 => level("2.2", 1620, 8100),
        30 => level("3", 1620, 8100),
        31 => level("3.1", 3600, 18000),
        32 => level("3.2", 5120, 20480),
        40 => level("4", 8192, 32768),
        41 => level("4.1", 8192, 32768),
        42 => level("4.2", 8704, 34816),
        50 => level("5", 22080, 110400),
        51 => level("5.1", 36864, 184320),
        52 => level("5.2", 36864, 184320),
        60 => level("6", 139264, 696320),
        61 => level("6.1", 139264, 696320),
        62 => level("6.2", 139264, 696320),
        _ => None,
    }
}

/// Whether the decoder may be handed a stream with this SPS: a profile, chroma format, bit
/// depth and scan it decodes, sides of at most [`MAX_SIDE`], a frame and a picture buffer
/// within the declared level (H.264 A.3.1: `MaxFS`, sides of at most `sqrt(8 * MaxFS)`
/// macroblocks, at most `min(MaxDpbMbs / frame macroblocks, 16)` reference frames and as much
/// `max_dec_frame_buffering`), pictures within [`MAX_DECODER_PICTURE_BYTES`], and a level the
/// decoder knows. Run on every SPS before the decoder sees it: OpenH264 sizes its picture pool
/// from the SPS and only warns when a stream breaks its level.
fn check_sps(sps: &SpsInfo) -> Result<(), MediaError> {
    let profile = profile_name(sps);
    if !matches!(sps.profile_idc, 66 | 77 | 88 | 100) {
        return Err(MediaError::UnsupportedCodec(format!(
            "the video is H.264 {profile}; only H.264 Baseline, Main and High are conformed"
        )));
    }
    if sps.chroma_format != 1 || sps.bit_depth != 8 {
        return Err(MediaError::UnsupportedCodec(format!(
            "the video is H.264 {profile} with {}-bit {} chroma; only 8-bit 4:2:0 is conformed",
            sps.bit_depth,
            match sps.chroma_format {
                0 => "monochrome",
                2 => "4:2:2",
                3 => "4:4:4",
                _ => "4:2:0",
            }
        )));
    }
    if !sps.progressive {
        return Err(MediaError::UnsupportedCodec(
            "the video is interlaced H.264; only progressive video is conformed".into(),
        ));
    }
    if sps.width > MAX_SIDE || sps.height > MAX_SIDE {
        return Err(unconformable(format!(
            "the video is {}x{}; sides of at most {MAX_SIDE} pixels are accepted",
            sps.width, sps.height
        )));
    }
    let Some(level) = level_limits(sps) else {
        return Err(unconformable(format!(
            "the video declares H.264 level_idc {}, which is no level of the standard",
            sps.level_idc
        )));
    };
    let (w, h) = (sps.width, sps.height);
    let frame_mbs = u64::from(sps.width_mbs) * u64::from(sps.height_mbs);
    let max_side = f64::from(level.max_fs * 8).sqrt() as u32;
    if frame_mbs > u64::from(level.max_fs) || sps.width_mbs > max_side || sps.height_mbs > max_side
    {
        return Err(unconformable(format!(
            "the video's {w}x{h} pictures ({}x{} macroblocks) are larger than H.264 level {} \
             allows ({} macroblocks, at most {max_side} a side)",
            sps.width_mbs, sps.height_mbs, level.name, level.max_fs
        )));
    }
    let max_dpb_frames = (u64::from(level.max_dpb_mbs) / frame_mbs.max(1)).min(16) as u32;
    if sps.ref_frames > max_dpb_frames {
        return Err(unconformable(format!(
            "the video declares {} reference frames of {w}x{h}; H.264 level {} allows {} at that \
             size",
            sps.ref_frames, level.name, max_dpb_frames
        )));
    }
    if let Some(buffering) = sps.max_dec_frame_buffering {
        if buffering > max_dpb_frames {
            return Err(unconformable(format!(
                "the video declares a decoded picture buffer of {buffering} frames of {w}x{h}; \
                 H.264 level {} allows {max_dpb_frames} at that size",
                level.name
            )));
        }
    }
    let buffer = decoder_picture_bytes(sps);
    if buffer > MAX_DECODER_PICTURE_BYTES {
        return Err(unconformable(format!(
            "the video declares {} reference frames of {w}x{h}: decoding it would hold {} MiB of \
             pictures, more than the {} MiB a conform allows",
            sps.ref_frames,
            buffer >> 20,
            MAX_DECODER_PICTURE_BYTES >> 20
        )));
    }
    if sps.level_idc > MAX_DECODER_LEVEL_IDC {
        return Err(MediaError::UnsupportedCodec(format!(
            "the video is H.264 level {}; levels up to 5.2 are decoded",
            level.name
        )));
    }
    Ok(())
}

/// Parses an SPS NAL unit (header byte first, emulation prevention bytes still in).
fn parse_sps(nal: &[u8]) -> Result<SpsInfo, MediaError> {
    parse_sps_rbsp(Bits::new(nal.get(1..).unwrap_or_default()))
}

fn parse_sps_rbsp(mut r: Bits) -> Result<SpsInfo, MediaError> {
    let profile_idc = r.bits(8)? as u8;
    let constraints = r.bits(8)?;
    let level_idc = r.bits(8)? as u8;
    let _id = r.ue()?;
    let (mut chroma_format, mut bit_depth) = (1, 8);
    if matches!(
        profile_idc,
        100 | 110 | 122 | 244 | 44 | 83 | 86 | 118 | 128 | 138 | 139 | 134 | 135
    ) {
        chroma_format = r.ue()?;
        if chroma_format == 3 {
            r.bit()?;
        }
        bit_depth = r.ue()? + 8;
        let _chroma_depth = r.ue()?;
        r.bit()?;
        if r.bit()? == 1 {
            let lists = if chroma_format == 3 { 12 } else { 8 };
            for i in 0..lists {
                if r.bit()? == 1 {
                    let size = if i < 6 { 16 } else { 64 };
                    let (mut last, mut next) = (8i32, 8i32);
                    for _ in 0..size {
                        if next != 0 {
                            next = (last + r.se()? + 256).rem_euclid(256);
                        }
                        if next != 0 {
                            last = next;
                        }
                    }
                }
            }
        }
    }
    let _log2_max_frame_num = r.ue()?;
    match r.ue()? {
        0 => {
            r.ue()?;
        }
        1 => {
            r.bit()?;
            r.se()?;
            r.se()?;
            let n = r.ue()?;
            if n > 255 {
                return Err(MediaError::NotMp4("bad SPS".into()));
            }
            for _ in 0..n {
                r.se()?;
            }
        }
        _ => {}
    }
    let ref_frames = r.ue()?;
    r.bit()?;
    let w_mbs = r.ue()?.saturating_add(1);
    let h_units = r.ue()?.saturating_add(1);
    let frame_mbs_only = r.bit()? == 1;
    if !frame_mbs_only {
        r.bit()?;
    }
    r.bit()?;
    let (mut cl, mut cr, mut ct, mut cb) = (0, 0, 0, 0);
    if r.bit()? == 1 {
        cl = r.ue()?;
        cr = r.ue()?;
        ct = r.ue()?;
        cb = r.ue()?;
    }
    // A VUI that does not read leaves the buffering unknown rather than failing the SPS: the
    // checks that bound memory rest on max_num_ref_frames, which OpenH264 sizes its pool by.
    let max_dec_frame_buffering = match r.bit() {
        Ok(1) => vui_max_dec_frame_buffering(&mut r).unwrap_or(None),
        _ => None,
    };
    let sub_w: u32 = if chroma_format == 1 || chroma_format == 2 {
        2
    } else {
        1
    };
    let sub_h: u32 = if chroma_format == 1 { 2 } else { 1 };
    let (crop_x, crop_y) = if chroma_format == 0 {
        (1, 2 - u32::from(frame_mbs_only))
    } else {
        (sub_w, sub_h * (2 - u32::from(frame_mbs_only)))
    };
    let height_mbs = h_units.saturating_mul(2 - u32::from(frame_mbs_only));
    let width = u64::from(w_mbs) * 16;
    let height = u64::from(height_mbs) * 16;
    let width = width.saturating_sub(u64::from(crop_x) * u64::from(cl.saturating_add(cr)));
    let height = height.saturating_sub(u64::from(crop_y) * u64::from(ct.saturating_add(cb)));
    Ok(SpsInfo {
        profile_idc,
        constrained: constraints & 0x40 != 0,
        constraint_set3: constraints & 0x10 != 0,
        level_idc,
        chroma_format,
        bit_depth,
        width: width.min(u64::from(u32::MAX)) as u32,
        height: height.min(u64::from(u32::MAX)) as u32,
        width_mbs: w_mbs,
        height_mbs,
        progressive: frame_mbs_only,
        ref_frames,
        max_dec_frame_buffering,
    })
}

/// Reads a VUI (H.264 E.1.1) as far as `max_dec_frame_buffering`; `None` when it has no
/// bitstream restriction.
fn vui_max_dec_frame_buffering(r: &mut Bits) -> Result<Option<u32>, MediaError> {
    if r.bit()? == 1 {
        // aspect_ratio_idc, and Extended_SAR's width and height.
        if r.bits(8)? == 255 {
            r.bits(32)?;
        }
    }
    if r.bit()? == 1 {
        r.bit()?;
    }
    if r.bit()? == 1 {
        r.bits(4)?;
        if r.bit()? == 1 {
            r.bits(24)?;
        }
    }
    if r.bit()? == 1 {
        r.ue()?;
        r.ue()?;
    }
    if r.bit()? == 1 {
        r.bits(32)?;
        r.bits(32)?;
        r.bit()?;
    }
    let nal_hrd = r.bit()? == 1;
    if nal_hrd {
        skip_hrd(r)?;
    }
    let vcl_hrd = r.bit()? == 1;
    if vcl_hrd {
        skip_hrd(r)?;
    }
    if nal_hrd || vcl_hrd {
        r.bit()?;
    }
    r.bit()?;
    if r.bit()? == 0 {
        return Ok(None);
    }
    r.bit()?;
    for _ in 0..5 {
        r.ue()?;
    }
    Ok(Some(r.ue()?))
}

/// Skips `hrd_parameters()` (H.264 E.1.2).
fn skip_hrd(r: &mut Bits) -> Result<(), MediaError> {
    let count = r.ue()?;
    if count > 31 {
        return Err(MediaError::NotMp4("bad HRD parameters in SPS".into()));
    }
    r.bits(8)?;
    for _ in 0..=count {
        r.ue()?;
        r.ue()?;
        r.bit()?;
    }
    r.bits(20)?;
    Ok(())
}

fn profile_name(sps: &SpsInfo) -> String {
    match sps.profile_idc {
        66 if sps.constrained => "Constrained Baseline".into(),
        66 => "Baseline".into(),
        77 => "Main".into(),
        88 => "Extended".into(),
        100 => "High".into(),
        110 => "High 10".into(),
        122 => "High 4:2:2".into(),
        244 => "High 4:4:4 Predictive".into(),
        44 => "CAVLC 4:4:4 Intra".into(),
        83 | 86 => "Scalable".into(),
        118 | 128 => "Multiview/Stereo High".into(),
        n => format!("profile_idc {n}"),
    }
}

/// The first video track, checked to be an H.264 stream this crate can decode.
struct VideoInput<'a> {
    track: &'a Track,
    config: AvcConfig,
    sps: SpsInfo,
    /// The sample entry's width and height.
    entry_size: (u32, u32),
}

fn video_input<'a>(movie: &'a Movie<'_>) -> Result<VideoInput<'a>, MediaError> {
    let track = movie.first(b"vide").ok_or(MediaError::NoVideoTrack)?;
    let codec = &track.codec;
    let name = match codec {
        b"avc1" | b"avc3" => None,
        b"hvc1" | b"hev1" => Some("H.265/HEVC"),
        b"av01" => Some("AV1"),
        b"vp09" => Some("VP9"),
        b"vp08" => Some("VP8"),
        b"mp4v" => Some("MPEG-4 Part 2"),
        b"dvh1" | b"dvhe" | b"dvav" | b"dva1" => Some("Dolby Vision"),
        b"apch" | b"apcn" | b"apcs" | b"apco" | b"ap4h" | b"ap4x" => Some("Apple ProRes"),
        b"mjpa" | b"mjpb" | b"jpeg" => Some("Motion JPEG"),
        b"vvc1" | b"vvi1" => Some("H.266/VVC"),
        b"encv" => Some("encrypted video"),
        _ => Some(""),
    };
    if let Some(name) = name {
        let cc = fourcc(codec);
        let what = if name.is_empty() {
            format!("'{cc}'")
        } else {
            format!("{name} ({cc})")
        };
        return Err(MediaError::UnsupportedCodec(format!(
            "the video is {what}; only H.264 Baseline, Main and High are conformed"
        )));
    }
    let entry = movie.entry(track);
    let entry_size = (u32::from(be16(entry, 24)?), u32::from(be16(entry, 26)?));
    let children = entry.get(78..).unwrap_or_default();
    let config = match entry_child(children, b"avcC") {
        Some(avcc) => parse_avcc(avcc)?,
        None => return Err(MediaError::NotMp4("the H.264 track has no avcC".into())),
    };
    // avc3 may carry its parameter sets in the stream only: look at the first sample (the
    // decode loop checks every parameter set it hands the decoder in any case).
    let sps = match checked_avcc_sps(&config)? {
        Some(sps) => sps,
        None => {
            let sps = parse_sps(&first_sample_sps(movie, track, config.length_size)?)?;
            check_sps(&sps)?;
            sps
        }
    };
    Ok(VideoInput {
        track,
        config,
        sps,
        entry_size,
    })
}

/// Every SPS of the `avcC` checked (the decoder is handed them all); the first one, which the
/// stage takes the picture's size from.
fn checked_avcc_sps(config: &AvcConfig) -> Result<Option<SpsInfo>, MediaError> {
    let mut first = None;
    for nal in &config.sps {
        let sps = parse_sps(nal)?;
        check_sps(&sps)?;
        first.get_or_insert(sps);
    }
    Ok(first)
}

/// Every sequence parameter set in `packet` (Annex B, as the decoder is handed it) checked
/// with [`check_sps`] before the decoder sees it; subset SPS (SVC, MVC) refused. The units are
/// found and unescaped the way OpenH264 does (`WelsDecodeBs`), so that no SPS hides from this
/// check inside another unit: a start code is any `00 00 01`, and `00 00 03` followed by a
/// byte above 3 is dropped whole.
pub(crate) fn check_parameter_sets(packet: &[u8]) -> Result<(), MediaError> {
    let starts: Vec<usize> = packet
        .windows(3)
        .enumerate()
        .filter(|(_, w)| *w == [0, 0, 1])
        .map(|(i, _)| i + 3)
        .collect();
    for (k, &start) in starts.iter().enumerate() {
        let Some(&header) = packet.get(start) else {
            continue;
        };
        match header & 0x1f {
            7 => {
                let end = starts
                    .get(k + 1)
                    .map_or(packet.len(), |next| next - 3)
                    .max(start + 1);
                let rbsp = openh264_unescape(&packet[start + 1..end]);
                check_sps(&parse_sps_rbsp(Bits { data: rbsp, pos: 0 })?)?;
            }
            15 => {
                return Err(MediaError::UnsupportedCodec(
                    "the video carries a subset SPS (SVC or MVC); only H.264 Baseline, Main and \
                     High are conformed"
                        .into(),
                ))
            }
            _ => {}
        }
    }
    Ok(())
}

/// A NAL unit's payload with emulation prevention removed as OpenH264 removes it.
fn openh264_unescape(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if i + 2 < raw.len() && raw[i] == 0 && raw[i + 1] == 0 && raw[i + 2] == 3 {
            if raw.get(i + 3).is_none_or(|b| *b <= 3) {
                out.extend_from_slice(&[0, 0]);
            }
            i += 3;
        } else {
            out.push(raw[i]);
            i += 1;
        }
    }
    out
}

fn first_sample_sps(
    movie: &Movie<'_>,
    track: &Track,
    length_size: usize,
) -> Result<Vec<u8>, MediaError> {
    let samples = movie.samples(track, MAX_FRAMES)?;
    if let Some(s) = samples.first() {
        let data = movie.sample_bytes(s.offset, u64::from(s.size))?;
        let data: &[u8] = &data;
        let mut pos = 0usize;
        while pos + length_size <= data.len() {
            let len = data[pos..pos + length_size]
                .iter()
                .fold(0usize, |a, b| (a << 8) | usize::from(*b));
            pos += length_size;
            let Some(nal) = data.get(pos..pos + len) else {
                break;
            };
            if nal.first().is_some_and(|h| h & 0x1f == 7) {
                return Ok(nal.to_vec());
            }
            pos += len;
        }
    }
    Err(MediaError::NotMp4(
        "the H.264 track has no sequence parameter set".into(),
    ))
}

// ---------------------------------------------------------------------------
// Audio sample entries

/// An audio track's codec as far as this module cares.
enum AudioCodec {
    Aac {
        asc: Vec<u8>,
        aot: u8,
        freq_index: u8,
        rate: u32,
        chan_conf: u8,
        /// Expressible as the 2-byte config the muxer writes (AAC Main/LC/SSR/LTP, a standard
        /// rate, channel configuration 1..=7, 1024-sample frames, no extensions).
        copyable: bool,
    },
    Mp3,
    Flac(Vec<u8>),
    Alac(Vec<u8>),
    Pcm(PcmFormat),
    Unsupported(String),
}

impl AudioCodec {
    fn name(&self) -> String {
        match self {
            Self::Aac { aot: 5, .. } => "HE-AAC".into(),
            Self::Aac { aot: 29, .. } => "HE-AAC v2".into(),
            Self::Aac { .. } => "AAC".into(),
            Self::Mp3 => "MP3".into(),
            Self::Flac(_) => "FLAC".into(),
            Self::Alac(_) => "ALAC".into(),
            Self::Pcm(f) => format!(
                "PCM {}{}{}",
                if f.float {
                    "f"
                } else if f.bits == 8 && !f.signed {
                    "u"
                } else {
                    "s"
                },
                f.bits,
                if f.bits == 8 {
                    ""
                } else if f.big_endian {
                    "be"
                } else {
                    "le"
                }
            ),
            Self::Unsupported(n) => n.clone(),
        }
    }
}

const AAC_RATES: [u32; 13] = [
    96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350,
];

/// Reads an `esds` payload: the object type indication and the decoder specific info.
fn parse_esds(esds: &[u8]) -> Option<(u8, Vec<u8>)> {
    // Descriptor header: tag, then a size in up to four 7-bit groups.
    fn desc(b: &[u8], pos: usize) -> Option<(u8, usize, usize)> {
        let tag = *b.get(pos)?;
        let mut size = 0usize;
        let mut p = pos + 1;
        for _ in 0..4 {
            let c = *b.get(p)?;
            p += 1;
            size = (size << 7) | usize::from(c & 0x7f);
            if c & 0x80 == 0 {
                break;
            }
        }
        Some((tag, p, size))
    }
    let b = esds.get(4..)?;
    let (tag, mut p, _) = desc(b, 0)?;
    if tag != 3 {
        return None;
    }
    let flags = *b.get(p + 2)?;
    p += 3;
    if flags & 0x80 != 0 {
        p += 2;
    }
    if flags & 0x40 != 0 {
        p += 1 + usize::from(*b.get(p)?);
    }
    if flags & 0x20 != 0 {
        p += 2;
    }
    let (tag, p, _) = desc(b, p)?;
    if tag != 4 {
        return None;
    }
    let oti = *b.get(p)?;
    let asc = match desc(b, p + 13) {
        Some((5, q, len)) => b.get(q..q + len)?.to_vec(),
        _ => Vec::new(),
    };
    Some((oti, asc))
}

fn aac_codec(asc: Vec<u8>) -> AudioCodec {
    if asc.len() < 2 {
        return AudioCodec::Unsupported("AAC without a decoder configuration".into());
    }
    let aot = asc[0] >> 3;
    let freq_index = ((asc[0] & 7) << 1) | (asc[1] >> 7);
    let chan_conf = (asc[1] >> 3) & 0x0f;
    let rate = AAC_RATES.get(usize::from(freq_index)).copied().unwrap_or(0);
    let copyable = matches!(aot, 1..=4)
        && rate != 0
        && (1..=7).contains(&chan_conf)
        && asc[1] & 7 == 0
        && no_sbr_extension(&asc[2..]);
    if aot == 31 || !matches!(aot, 1..=5 | 29) {
        return AudioCodec::Unsupported(format!("MPEG-4 audio object type {aot}"));
    }
    AudioCodec::Aac {
        asc,
        aot,
        freq_index,
        rate,
        chan_conf,
        copyable,
    }
}

/// Whether what follows a plain 2-byte AudioSpecificConfig adds nothing a decoder needs:
/// padding, or the backward-compatible sync extension (0x2b7) saying SBR is absent, as ffmpeg
/// writes it.
fn no_sbr_extension(rest: &[u8]) -> bool {
    if rest.iter().all(|b| *b == 0) {
        return true;
    }
    let mut bits = Bits {
        data: rest.to_vec(),
        pos: 0,
    };
    matches!(
        (bits.bits(11), bits.bits(5), bits.bit()),
        (Ok(0x2b7), Ok(5), Ok(0))
    )
}

/// Channel count, sample size, sample rate and child boxes of an audio sample entry.
fn audio_entry(entry: &[u8]) -> Result<(u16, u16, u32, &[u8], u16), MediaError> {
    let version = be16(entry, 8)?;
    let channels = be16(entry, 16)?;
    let bits = be16(entry, 18)?;
    let rate = be32(entry, 24)? >> 16;
    let at = match version {
        1 => 44,
        2 => 64,
        _ => 28,
    };
    let children = match entry.get(at..) {
        Some(c) if crate::faststart::boxes(c).is_ok() => c,
        _ => entry.get(28..).unwrap_or_default(),
    };
    Ok((channels, bits, rate, children, version))
}

fn audio_codec(movie: &Movie<'_>, track: &Track) -> Result<AudioCodec, MediaError> {
    let entry = movie.entry(track);
    let (channels, bits, rate, children, version) = audio_entry(entry)?;
    let rate = if rate == 0 { track.timescale } else { rate };
    let little = |default_le: bool| match entry_child(children, b"enda") {
        Some(e) => be16(e, 0).map(|v| v != 0).unwrap_or(default_le),
        None => default_le,
    };
    let pcm = |bits: u16, float: bool, le: bool, signed: bool| {
        AudioCodec::Pcm(PcmFormat {
            rate,
            channels,
            bits,
            float,
            big_endian: !le,
            signed,
        })
    };
    Ok(match &track.codec {
        b"mp4a" => match entry_child(children, b"esds").and_then(parse_esds) {
            Some((0x40 | 0x66..=0x68, asc)) => aac_codec(asc),
            Some((0x69 | 0x6b, _)) => AudioCodec::Mp3,
            Some((0xa5, _)) => AudioCodec::Unsupported("AC-3".into()),
            Some((0xa6, _)) => AudioCodec::Unsupported("E-AC-3".into()),
            Some((0xa9, _)) => AudioCodec::Unsupported("DTS".into()),
            Some((0xad, _)) => AudioCodec::Unsupported("Opus".into()),
            Some((0xdd, _)) => AudioCodec::Unsupported("Vorbis".into()),
            Some((oti, _)) => AudioCodec::Unsupported(format!("object type 0x{oti:02x} (mp4a)")),
            None => AudioCodec::Unsupported("mp4a without a readable esds".into()),
        },
        b".mp3" | b"mp3 " => AudioCodec::Mp3,
        b"fLaC" => match entry_child(children, b"dfLa") {
            // Full box header, then the STREAMINFO metadata block (4-byte header, 34 bytes).
            Some(d) if d.len() >= 42 => AudioCodec::Flac(d[8..42].to_vec()),
            _ => AudioCodec::Unsupported("FLAC without a dfLa box".into()),
        },
        b"alac" => match entry_child(children, b"alac") {
            Some(a) if a.len() >= 28 => AudioCodec::Alac(a[4..28].to_vec()),
            _ => AudioCodec::Unsupported("ALAC without its configuration".into()),
        },
        b"sowt" => pcm(bits.max(8), false, true, true),
        b"twos" => pcm(bits.max(8), false, false, true),
        b"raw " => pcm(8, false, true, false),
        b"in24" => pcm(24, false, little(false), true),
        b"in32" => pcm(32, false, little(false), true),
        b"fl32" => pcm(32, true, little(false), true),
        b"fl64" => pcm(64, true, little(false), true),
        b"lpcm" if version == 2 => {
            let rate = entry
                .get(32..40)
                .map(|b| {
                    let mut a = [0u8; 8];
                    a.copy_from_slice(b);
                    f64::from_be_bytes(a)
                })
                .filter(|r| r.is_finite() && *r >= 1.0 && *r <= 1e6)
                .map_or(track.timescale, |r| r.round() as u32);
            let channels = be32(entry, 40)?.min(64) as u16;
            let bits = be32(entry, 48)?.min(64) as u16;
            let flags = be32(entry, 52)?;
            AudioCodec::Pcm(PcmFormat {
                rate,
                channels,
                bits,
                float: flags & 1 != 0,
                big_endian: flags & 2 != 0,
                signed: flags & 4 != 0,
            })
        }
        b"ipcm" | b"fpcm" => match entry_child(children, b"pcmC") {
            Some(c) if c.len() >= 6 => pcm(
                u16::from(c[5]),
                &track.codec == b"fpcm",
                c[4] & 1 != 0,
                true,
            ),
            _ => AudioCodec::Unsupported("PCM without a pcmC box".into()),
        },
        b"Opus" => AudioCodec::Unsupported("Opus".into()),
        b"ac-3" => AudioCodec::Unsupported("AC-3".into()),
        b"ec-3" => AudioCodec::Unsupported("E-AC-3".into()),
        b"ac-4" => AudioCodec::Unsupported("AC-4".into()),
        b"dtsc" | b"dtsh" | b"dtsl" | b"dtse" => AudioCodec::Unsupported("DTS".into()),
        b"samr" | b"sawb" => AudioCodec::Unsupported("AMR".into()),
        b"ulaw" => AudioCodec::Unsupported("mu-law".into()),
        b"alaw" => AudioCodec::Unsupported("A-law".into()),
        b"enca" => AudioCodec::Unsupported("encrypted audio".into()),
        other => AudioCodec::Unsupported(format!("'{}'", fourcc(other))),
    })
}

fn channels_name(n: u16) -> String {
    match n {
        1 => "mono".into(),
        2 => "stereo".into(),
        n => format!("{n} ch"),
    }
}

/// Decodes an audio track to 48 kHz stereo with its edit's leading samples dropped, at most
/// about `max_secs` seconds of it (folded as it is decoded: see [`audio_decode::StereoSink`]).
fn decode_track(
    movie: &Movie<'_>,
    track: &Track,
    codec: &AudioCodec,
    max_secs: f64,
) -> Result<Pcm, MediaError> {
    // An edit cannot sensibly skip more than the longest accepted clip.
    let skip_secs = track
        .edit
        .map_or(0.0, |e| {
            e.media_time as f64 / f64::from(track.timescale.max(1))
        })
        .min(MAX_INPUT_SECS);
    let want_secs = max_secs + skip_secs;
    let samples = || -> Result<Vec<Sample>, MediaError> {
        let mut s = movie.samples(track, MAX_AUDIO_SAMPLES)?;
        // Only what can be heard in the clip.
        let limit = (want_secs + 1.0) * f64::from(track.timescale.max(1));
        s.retain(|x| (x.dts as f64) < limit);
        Ok(s)
    };
    Ok(match codec {
        AudioCodec::Aac { asc, .. } => {
            let samples = samples()?;
            let units = samples
                .iter()
                .map(|s| movie.sample_bytes(s.offset, u64::from(s.size)));
            audio_decode::decode_aac(asc, units, skip_secs, want_secs)?
        }
        AudioCodec::Mp3 | AudioCodec::Flac(_) | AudioCodec::Alac(_) => {
            let samples = samples()?;
            let (id, extra) = match codec {
                AudioCodec::Flac(info) => (audio_decode::SYM_FLAC, Some(info.clone())),
                AudioCodec::Alac(cookie) => (audio_decode::SYM_ALAC, Some(cookie.clone())),
                _ => (audio_decode::SYM_MP3, None),
            };
            let (_, _, rate, _, _) = audio_entry(movie.entry(track))?;
            let rate = if rate == 0 { track.timescale } else { rate };
            let packets = samples.iter().map(|s| {
                movie
                    .sample_bytes(s.offset, u64::from(s.size))
                    .map(|b| (b, s.duration))
            });
            audio_decode::decode_packets(
                &codec.name(),
                (id, rate, extra),
                packets,
                skip_secs,
                want_secs,
            )?
        }
        AudioCodec::Pcm(format) => {
            format.check().map_err(|m| {
                MediaError::UnsupportedCodec(format!("the audio is {} with {m}", codec.name()))
            })?;
            let max_frames = (want_secs * f64::from(format.rate)).ceil() as u64;
            let frame = format.frame_bytes();
            let runs = movie.pcm_runs(track, frame, max_frames, MAX_AUDIO_SAMPLES as usize)?;
            let mut sink = audio_decode::StereoSink::new(skip_secs);
            // Whole frames at a time, at most about PCM_WINDOW_BYTES.
            let window = (PCM_WINDOW_BYTES / frame.max(1)).max(1) * frame.max(1);
            for (offset, len) in runs {
                let mut done = 0u64;
                while done < len {
                    let n = window.min(len - done);
                    let bytes = movie.sample_bytes(offset + done, n)?;
                    format
                        .convert_into(&bytes, &mut sink)
                        .map_err(MediaError::AudioDecode)?;
                    done += n;
                }
            }
            sink.finish()
        }
        AudioCodec::Unsupported(name) => {
            return Err(MediaError::UnsupportedCodec(format!(
                "the audio is {name}; only AAC, MP3, FLAC, ALAC and PCM audio are conformed"
            )))
        }
    })
}

/// Decodes the first audio track of an MP4/M4A (a caller's reference audio).
pub(crate) fn decode_mp4_audio(bytes: &[u8], max_secs: f64) -> Result<Pcm, MediaError> {
    let movie = Movie::parse(&bytes)?;
    let track = movie
        .first(b"soun")
        .ok_or_else(|| MediaError::AudioDecode("the reference M4A has no audio track".into()))?;
    let codec = audio_codec(&movie, track)?;
    decode_track(&movie, track, &codec, max_secs).map_err(|e| match e {
        MediaError::UnsupportedCodec(m) => {
            MediaError::UnsupportedCodec(m.replacen("the audio", "the reference audio", 1))
        }
        other => other,
    })
}

// ---------------------------------------------------------------------------
// Reference audio files (here, beside the MP4 audio track decoder an M4A needs)

/// What a reference audio file is, from its first bytes.
fn reference_kind(bytes: &[u8]) -> &'static str {
    let at = |o: usize, m: &[u8]| bytes.len() >= o + m.len() && &bytes[o..o + m.len()] == m;
    if at(0, b"RIFF") && at(8, b"WAVE") {
        "WAV"
    } else if at(4, b"ftyp") {
        "MP4/M4A"
    } else if at(0, b"fLaC") {
        "FLAC"
    } else if at(0, b"OggS") {
        let head = &bytes[..bytes.len().min(256)];
        if head.windows(8).any(|w| w == b"OpusHead") {
            "Opus (in Ogg)"
        } else {
            "Ogg"
        }
    } else if at(0, b"ID3") || (bytes.len() >= 2 && bytes[0] == 0xFF && bytes[1] & 0xE0 == 0xE0) {
        if bytes.len() >= 2 && bytes[0] == 0xFF && bytes[1] & 0xF6 == 0xF0 {
            "AAC (ADTS)"
        } else {
            "MP3"
        }
    } else if at(0, b"FORM") {
        "AIFF"
    } else if at(0, b"caff") {
        "CAF"
    } else if at(0, &[0x1A, 0x45, 0xDF, 0xA3]) {
        "WebM/Matroska"
    } else {
        "unknown"
    }
}

/// Decodes a caller's reference audio file (WAV with 8/16/24/32-bit integer or 32/64-bit float
/// PCM, MP3, FLAC, Ogg Vorbis, or MP4/M4A with AAC, MP3, FLAC, ALAC or PCM), at most about
/// `max_secs` seconds of it.
pub(crate) fn decode_reference(bytes: &[u8], max_secs: f64) -> Result<Pcm, MediaError> {
    let kind = reference_kind(bytes);
    match kind {
        "WAV" => {
            let (format, data, tag) = audio_decode::wav(bytes)?;
            if format.float || tag == 1 {
                format.check().map_err(|m| {
                    MediaError::UnsupportedCodec(format!("the reference WAV has {m}"))
                })?;
                let max = (max_secs * f64::from(format.rate)).ceil() as u64;
                let frame = format.frame_bytes() as usize;
                let data = &data[..data.len().min((max as usize).saturating_mul(frame))];
                let mut sink = audio_decode::StereoSink::new(0.0);
                format
                    .convert_into(data, &mut sink)
                    .map_err(|m| MediaError::AudioDecode(format!("the reference WAV: {m}")))?;
                return Ok(sink.finish());
            }
            // Other WAV encodings (A-law, mu-law, ...): let symphonia try.
            audio_decode::decode_file(bytes, "the reference WAV", max_secs).map_err(|_| {
                MediaError::UnsupportedCodec(format!(
                    "the reference WAV uses format tag 0x{tag:04x}; only PCM and float WAV are decoded"
                ))
            })
        }
        "MP4/M4A" => decode_mp4_audio(bytes, max_secs),
        "MP3" | "FLAC" | "Ogg" => audio_decode::decode_file(bytes, &format!("the reference {kind}"), max_secs),
        "unknown" => Err(MediaError::UnsupportedCodec(
            "the reference audio is not in a format this service decodes (WAV, MP3, FLAC, Ogg Vorbis, M4A)".into(),
        )),
        other => Err(MediaError::UnsupportedCodec(format!(
            "the reference audio is {other}; only WAV, MP3, FLAC, Ogg Vorbis and M4A are decoded"
        ))),
    }
}

// ---------------------------------------------------------------------------
// Video timing

/// When each decoded picture (in display order) is shown, on the clip's timeline.
struct Timing {
    /// Presentation start of each picture in display order, in the media timescale, relative
    /// to the presented start (may be negative for pictures an edit cuts).
    starts: Vec<i64>,
    /// Presented length in the media timescale.
    length: i64,
    timescale: u32,
}

impl Timing {
    fn new(samples: &[Sample], track: &Track, movie_timescale: u32) -> Result<Self, MediaError> {
        if samples.is_empty() {
            return Err(unconformable("the video track has no frames"));
        }
        let mut pts: Vec<(i64, u32)> = samples
            .iter()
            .map(|s| (s.dts as i64 + s.cts_offset, s.duration))
            .collect();
        pts.sort_unstable();
        let first = pts[0].0;
        let (last, last_duration) = pts[pts.len() - 1];
        let media_end = last + i64::from(last_duration.max(1));
        let start = match track.edit {
            Some(e) if (e.media_time as i64) < media_end => e.media_time as i64,
            _ => first,
        };
        let mut length = media_end - start;
        if let Some(e) = track.edit {
            if e.duration > 0 && movie_timescale > 0 {
                let edit_len = (u128::from(e.duration) * u128::from(track.timescale)
                    / u128::from(movie_timescale))
                .min(i64::MAX as u128) as i64;
                length = length.min(edit_len);
            }
        }
        if length <= 0 {
            return Err(unconformable("the video track presents nothing"));
        }
        Ok(Self {
            starts: pts.iter().map(|(p, _)| p - start).collect(),
            length,
            timescale: track.timescale.max(1),
        })
    }

    fn secs(&self) -> f64 {
        self.length as f64 / f64::from(self.timescale)
    }

    /// Converts media ticks to [`MOVIE_TIMESCALE`] ticks (rounded).
    fn to_out(&self, t: i64) -> i64 {
        let scale = i128::from(self.timescale);
        ((i128::from(t) * i128::from(MOVIE_TIMESCALE) + scale / 2).div_euclid(scale)) as i64
    }

    /// Picture `k`'s span on the output timeline (`MOVIE_TIMESCALE` ticks, clipped to
    /// `0..end`), or `None` when it is not shown.
    fn span(&self, k: usize, end: i64) -> Option<(u64, u32)> {
        let a = self.to_out(*self.starts.get(k)?).max(0);
        let b = match self.starts.get(k + 1) {
            Some(next) => self.to_out(*next),
            None => end,
        }
        .min(end);
        (b > a).then(|| (a as u64, (b - a) as u32))
    }
}

// ---------------------------------------------------------------------------
// The stage

fn describe_source(
    video: &VideoInput<'_>,
    frames: usize,
    secs: f64,
    audio: Option<(&AudioCodec, u32, u16)>,
) -> String {
    let (w, h) = (video.sps.width, video.sps.height);
    let fps = if secs > 0.0 {
        frames as f64 / secs
    } else {
        0.0
    };
    let audio = match audio {
        Some((codec, rate, channels)) => match codec {
            AudioCodec::Unsupported(n) => format!("{n} audio"),
            c => format!("{} {rate} Hz {}", c.name(), channels_name(channels)),
        },
        None => "no audio".into(),
    };
    format!(
        "H.264 {} {w}x{h} {fps:.2} fps, {audio}, {secs:.2} s",
        profile_name(&video.sps)
    )
}

/// An uploaded source video as the conform stage reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceVideo {
    pub width: u32,
    pub height: u32,
    pub duration_secs: f64,
    pub frames: u32,
    /// e.g. "H.264 High 1920x1080 30.00 fps, AAC 48000 Hz stereo, 8.00 s".
    pub description: String,
}

/// Checks a caller's video (a character's, a source to extend or edit) with the conform
/// stage's own reading of it, before a frame is decoded: H.264 Baseline, Main or High, 8-bit
/// 4:2:0 and progressive (what the decoder takes), at most `max_pixels` per picture, at most
/// `max_secs` long. Errors are [`MediaError::UnsupportedCodec`], [`MediaError::Unconformable`],
/// [`MediaError::NoVideoTrack`] or [`MediaError::NotMp4`], each with a sentence for the caller.
pub fn check_source(
    input: &[u8],
    max_secs: f64,
    max_pixels: u64,
) -> Result<SourceVideo, MediaError> {
    if !crate::probe::looks_like_mp4(input) {
        return Err(MediaError::NotMp4("no ISO BMFF box at the start".into()));
    }
    let movie = Movie::parse(&input)?;
    let video = video_input(&movie)?;
    let (sw, sh) = (video.sps.width, video.sps.height);
    let (ew, eh) = video.entry_size;
    let (w, h) = (sw.max(ew), sh.max(eh));
    if u64::from(w) * u64::from(h) > max_pixels
        || w > MAX_SIDE
        || h > MAX_SIDE
        || sw < 16
        || sh < 16
    {
        return Err(unconformable(format!(
            "the video is {w}x{h}; at most {max_pixels} pixels a picture (1920x1080) are accepted"
        )));
    }
    let frame_count = movie.sample_count(video.track)?;
    let max_frames = (max_secs * 60.0).ceil() as u32;
    if frame_count > max_frames {
        return Err(unconformable(format!(
            "the video has {frame_count} frames, more than the {max_frames} of {max_secs} s at 60 fps"
        )));
    }
    let samples = movie.samples(video.track, max_frames)?;
    let timing = Timing::new(&samples, video.track, movie.timescale)?;
    let secs = timing.secs();
    let declared = if movie.timescale == 0 {
        0.0
    } else {
        movie.duration as f64 / f64::from(movie.timescale)
    };
    if secs.max(declared) > max_secs {
        return Err(unconformable(format!(
            "the video lasts {:.2} s, longer than the {max_secs} s accepted",
            secs.max(declared)
        )));
    }
    Ok(SourceVideo {
        width: sw,
        height: sh,
        duration_secs: secs,
        frames: frame_count,
        description: describe_source(&video, samples.len(), secs, None),
    })
}

/// The whole of `input`, for a pass-through (the caller has bounded its size).
fn read_whole(input: &dyn ReadAt) -> Result<Vec<u8>, MediaError> {
    if let Some(bytes) = input.as_bytes() {
        return Ok(bytes.to_vec());
    }
    let len = usize::try_from(input.size())
        .map_err(|_| MediaError::Io("the file does not fit in memory".into()))?;
    let mut out = vec![0u8; len];
    input
        .read_exact_at(&mut out, 0)
        .map_err(|e| MediaError::Io(e.to_string()))?;
    Ok(out)
}

/// The largest file passed through for a clip of `width`x`height` showing `frames` pictures in
/// `secs`: what the conform itself may write for it, that is [`max_video_bytes`] at the
/// encoder's aim for that size and rate, plus stereo AAC at its ceiling
/// ([`KEPT_AAC_BYTES_PER_SEC`]) for `secs` and the overrun a passed-through track is
/// allowed ([`PASS_THROUGH_AUDIO_OVERRUN_SECS`]), plus [`PASS_THROUGH_CONTAINER_BYTES`]. A
/// larger file (an engine's clip at a far higher bit rate, or padded) is conformed instead of
/// copied whole into memory.
fn pass_through_max_bytes(width: u32, height: u32, frames: usize, secs: f64) -> u64 {
    let fps = if secs > 0.0 {
        frames as f64 / secs
    } else {
        f64::NAN
    };
    let bitrate = video_bitrate(width as usize, height as usize, fps);
    let audio = KEPT_AAC_BYTES_PER_SEC * (secs + PASS_THROUGH_AUDIO_OVERRUN_SECS);
    max_video_bytes(bitrate, secs) + audio as u64 + PASS_THROUGH_CONTAINER_BYTES
}

fn conform(input: &dyn ReadAt, target: &ConformTarget) -> Result<Conformed, MediaError> {
    if !(1..=60).contains(&target.seconds) {
        return Err(MediaError::InvalidSpec(format!(
            "seconds must be within 1..=60, got {}",
            target.seconds
        )));
    }
    let mut head = [0u8; 8];
    if input.size() >= 8 {
        input
            .read_exact_at(&mut head, 0)
            .map_err(|e| MediaError::Io(e.to_string()))?;
    }
    if !crate::probe::looks_like_mp4(&head) {
        return Err(MediaError::NotMp4("no ISO BMFF box at the start".into()));
    }
    let movie = Movie::parse(input)?;
    let video = video_input(&movie)?;
    let (sw, sh) = (video.sps.width, video.sps.height);
    let (ew, eh) = video.entry_size;
    if sw.max(ew) > MAX_SIDE || sh.max(eh) > MAX_SIDE || sw < 16 || sh < 16 {
        return Err(unconformable(format!(
            "the video is {sw}x{sh}; sides of 16..={MAX_SIDE} pixels are accepted"
        )));
    }
    let frame_count = movie.sample_count(video.track)?;
    if frame_count > MAX_FRAMES {
        return Err(unconformable(format!(
            "the video has {frame_count} frames, more than the {MAX_FRAMES} accepted"
        )));
    }
    let samples = movie.samples(video.track, MAX_FRAMES)?;
    let timing = Timing::new(&samples, video.track, movie.timescale)?;
    let video_secs = timing.secs();
    if video_secs > MAX_INPUT_SECS {
        return Err(unconformable(format!(
            "the engine's clip lasts {video_secs:.2} s, longer than the {MAX_INPUT_SECS} s accepted"
        )));
    }
    let seconds = f64::from(target.seconds);
    if video_secs < seconds - SHORT_TOLERANCE_SECS {
        return Err(unconformable(format!(
            "the engine's clip lasts {video_secs:.2} s, shorter than the {} s asked",
            target.seconds
        )));
    }

    let audio_track = movie.first(b"soun");
    let audio_codec = match audio_track {
        Some(t) => Some((t, audio_codec(&movie, t)?)),
        None => None,
    };
    let audio_desc = audio_codec.as_ref().map(|(t, c)| {
        let (ch, _, rate, _, _) = audio_entry(movie.entry(t)).unwrap_or((0, 0, 0, &[], 0));
        let (rate, ch) = match c {
            AudioCodec::Aac {
                rate, chan_conf, ..
            } if *rate != 0 => (*rate, u16::from(*chan_conf)),
            AudioCodec::Pcm(f) => (f.rate, f.channels),
            _ => (if rate == 0 { t.timescale } else { rate }, ch),
        };
        (c, rate, ch)
    });
    let source = describe_source(&video, samples.len(), video_secs, audio_desc);

    let (width, height) = output_dimensions(target.aspect, Some((sw, sh)));
    let movie_secs = movie.duration as f64 / f64::from(movie.timescale.max(1));
    if (ew, eh) == (width, height)
        && (sw, sh) == (width, height)
        && (video_secs - seconds).abs() <= SHORT_TOLERANCE_SECS
        && (movie_secs - seconds).abs() <= SHORT_TOLERANCE_SECS
        && movie.moov_first
        && input.size() <= pass_through_max_bytes(width, height, samples.len(), video_secs)
    {
        if let Some((track, AudioCodec::Aac { asc, .. })) = &audio_codec {
            // A track that stops early or runs on past the clip is conformed instead (cut, or
            // padded with silence), not passed through.
            let samples = movie.samples(track, MAX_AUDIO_SAMPLES)?;
            let declared = presented_secs(track, &samples);
            if declared >= video_secs - SHORT_TOLERANCE_SECS
                && declared <= video_secs + PASS_THROUGH_AUDIO_OVERRUN_SECS
            {
                check_kept_aac(&movie, track, asc, &samples, video_secs)?;
                return Ok(Conformed {
                    mp4: read_whole(input)?,
                    passed_through: true,
                    width,
                    height,
                    duration_secs: movie_secs,
                    source,
                    audio: "kept".into(),
                });
            }
        }
    }

    // The clip's end on the output timeline.
    let clip_end = (u64::from(target.seconds) * u64::from(MOVIE_TIMESCALE))
        .min(timing.to_out(timing.length).max(1) as u64) as i64;
    let clip_secs = clip_end as f64 / f64::from(MOVIE_TIMESCALE);

    // The audio first: it fails faster than the video when it cannot be done.
    let (audio, audio_note) = match audio_codec {
        Some((track, codec)) => engine_audio(&movie, track, &codec, clip_secs)?,
        None => match &target.fallback_audio {
            Some(bytes) => {
                let pcm = decode_reference(bytes, clip_secs + 1.0)?;
                (
                    encode_pcm(&pcm, clip_secs)?,
                    "reference audio mixed".to_string(),
                )
            }
            None => (
                encode_aac_stereo_48k(&[], samples_48k(clip_secs))?,
                "silence added".to_string(),
            ),
        },
    };
    let video_out = encode_video(&movie, &video, &samples, &timing, clip_end, (width, height))?;
    let mp4 = mux::mux(width, height, video_out, &audio)?;
    Ok(Conformed {
        mp4,
        passed_through: false,
        width,
        height,
        duration_secs: clip_secs,
        source,
        audio: audio_note,
    })
}

fn samples_48k(secs: f64) -> u64 {
    (secs * f64::from(AUDIO_SAMPLE_RATE)).round() as u64
}

/// PCM to a 48 kHz stereo AAC-LC track lasting `secs` (cut, or padded with silence).
fn encode_pcm(pcm: &Pcm, secs: f64) -> Result<AacTrack, MediaError> {
    let mut cut = Pcm {
        rate: pcm.rate,
        channels: pcm.channels,
        samples: Vec::new(),
    };
    let frames = ((secs + 0.01) * f64::from(pcm.rate)).ceil() as usize;
    let n = (frames * usize::from(pcm.channels)).min(pcm.samples.len());
    cut.samples.extend_from_slice(&pcm.samples[..n]);
    let stereo = if cut.samples.is_empty() {
        Vec::new()
    } else {
        cut.to_stereo_48k()?
    };
    encode_aac_stereo_48k(&stereo, samples_48k(secs))
}

/// The engine's own audio: AAC copied when it can be, anything else decoded and re-encoded.
fn engine_audio(
    movie: &Movie<'_>,
    track: &Track,
    codec: &AudioCodec,
    clip_secs: f64,
) -> Result<(AacTrack, String), MediaError> {
    if let AudioCodec::Aac {
        asc,
        aot,
        freq_index,
        rate,
        chan_conf,
        copyable: true,
    } = codec
    {
        if *rate == track.timescale {
            let config = (*aot, *freq_index, *chan_conf);
            if let Some(kept) = copy_aac(movie, track, asc, config, clip_secs)? {
                return Ok((kept, "kept".into()));
            }
        }
    }
    let pcm = decode_track(movie, track, codec, clip_secs + 0.5)?;
    Ok((
        encode_pcm(&pcm, clip_secs)?,
        format!("re-encoded from {}", codec.name()),
    ))
}

/// The AAC access units that cover the clip, with the source's priming edit, checked by
/// decoding them ([`check_kept_aac`]); `None` when the track's table says it stops too early (it
/// is then re-encoded with silence after it) or its units for the clip come to more than
/// [`KEPT_AAC_BYTES_PER_SEC`] (then re-encoded).
fn copy_aac(
    movie: &Movie<'_>,
    track: &Track,
    asc: &[u8],
    (aot, freq_index, chan_conf): (u8, u8, u8),
    clip_secs: f64,
) -> Result<Option<AacTrack>, MediaError> {
    let samples = movie.samples(track, MAX_AUDIO_SAMPLES)?;
    let ts = u64::from(track.timescale);
    let priming = track.edit.map_or(0, |e| e.media_time);
    let total: u64 = samples.iter().map(|s| u64::from(s.duration)).sum();
    let wanted = (clip_secs * ts as f64).round() as u64;
    let available = total.saturating_sub(priming);
    if (available as f64) < (clip_secs - AUDIO_GAP_SECS) * ts as f64 {
        return Ok(None);
    }
    let presented = wanted.min(available);
    let mut kept = 0usize;
    let mut at = 0u64;
    for s in &samples {
        if at >= priming + presented {
            break;
        }
        at += u64::from(s.duration);
        kept += 1;
    }
    let samples = &samples[..kept];
    // Units far larger than AAC's ceiling would be held whole in the output: decoded and
    // encoded again instead.
    let kept_bytes: u64 = samples.iter().map(|s| u64::from(s.size)).sum();
    if kept_bytes as f64 > KEPT_AAC_BYTES_PER_SEC * (clip_secs + 1.0) {
        return Ok(None);
    }
    check_kept_aac(movie, track, asc, samples, clip_secs)?;
    let mut units = Vec::with_capacity(kept);
    let mut bytes = 0u64;
    for s in samples {
        let data = movie
            .sample_bytes(s.offset, u64::from(s.size))?
            .into_owned();
        bytes += data.len() as u64;
        units.push(AacUnit {
            data,
            duration: s.duration,
        });
    }
    let secs = at as f64 / ts as f64;
    let err = |e: mp4::Error| MediaError::Mux(e.to_string());
    Ok(Some(AacTrack {
        config: mp4::AacConfig {
            bitrate: if secs > 0.0 {
                (bytes as f64 * 8.0 / secs) as u32
            } else {
                0
            },
            profile: mp4::AudioObjectType::try_from(aot).map_err(err)?,
            freq_index: mp4::SampleFreqIndex::try_from(freq_index).map_err(err)?,
            chan_conf: mp4::ChannelConfig::try_from(chan_conf).map_err(err)?,
        },
        timescale: track.timescale,
        units,
        priming,
        presented,
    }))
}

/// What an audio track's sample table says it presents, in seconds: its samples' durations
/// less the priming its edit skips.
fn presented_secs(track: &Track, samples: &[Sample]) -> f64 {
    let total: u64 = samples.iter().map(|s| u64::from(s.duration)).sum();
    let priming = track.edit.map_or(0, |e| e.media_time);
    total.saturating_sub(priming) as f64 / f64::from(track.timescale.max(1))
}

/// Kept AAC (passed through or copied) is decoded before it is kept, unit by unit with nothing
/// but counters held ([`audio_decode::check_aac`]): every unit must decode, and the sound, less
/// the priming its edit skips, must last the video's `video_secs` less
/// [`SHORT_TOLERANCE_SECS`]. A table that claims long units for a few bytes of sound, or
/// units that are not AAC, fails the conform rather than reach the output.
fn check_kept_aac(
    movie: &Movie<'_>,
    track: &Track,
    asc: &[u8],
    units: &[Sample],
    video_secs: f64,
) -> Result<(), MediaError> {
    let ts = f64::from(track.timescale.max(1));
    let declared = units.iter().map(|s| u64::from(s.duration)).sum::<u64>() as f64 / ts;
    let priming = track.edit.map_or(0, |e| e.media_time) as f64 / ts;
    let decoded = audio_decode::check_aac(
        asc,
        units
            .iter()
            .map(|s| movie.sample_bytes(s.offset, u64::from(s.size))),
        declared + AAC_DECODE_OVERRUN_SECS,
    )?;
    let heard = decoded.secs - priming;
    if heard < video_secs - SHORT_TOLERANCE_SECS {
        return Err(MediaError::AudioDecode(format!(
            "the AAC track decodes to {heard:.2} s of sound ({} units), shorter than the \
             {video_secs:.2} s of video",
            decoded.units
        )));
    }
    Ok(())
}

/// The most coded video a conformed clip of `secs` may take: twice what the encoder's rate
/// control aims at, and a mebibyte for the first pictures. Working rate control stays near
/// its aim; pictures that do not compress at the highest quantiser (noise, which an engine
/// can send) would otherwise grow the clip, and the copies the muxer makes of it, without
/// bound (20 s of 720p60 noise came to 143 MiB).
fn max_video_bytes(bitrate: u32, secs: f64) -> u64 {
    (2.0 * f64::from(bitrate) / 8.0 * secs) as u64 + (1 << 20)
}

/// Scales and encodes pictures as they come out of the decoder.
struct Pipeline {
    width: usize,
    height: usize,
    scaler: Option<(usize, usize, CoverScaler)>,
    picture: Picture,
    encoder: H264Encoder,
    /// Pictures received so far (display order).
    received: usize,
    /// Output time reached.
    written: u64,
    /// The end of the part being decoded, on that part's own timeline.
    clip_end: i64,
    /// Where the part being decoded starts on the output timeline (a stitch's second part).
    offset: u64,
    /// The most coded video the clip may take ([`max_video_bytes`]).
    max_video_bytes: u64,
}

impl Pipeline {
    /// Takes picture number `received`; returns whether the clip is complete.
    fn push(&mut self, frame: &DecodedYUV<'_>, timing: &Timing) -> Result<bool, MediaError> {
        let k = self.received;
        self.received += 1;
        let Some((start, mut duration)) = timing.span(k, self.clip_end) else {
            // Not shown: cut by an edit before the start, or past the clip's end.
            return Ok(timing
                .starts
                .get(k)
                .is_none_or(|s| timing.to_out(*s) >= self.clip_end));
        };
        let mut start = start + self.offset;
        let (fw, fh) = frame.dimensions();
        if fw as u32 > MAX_SIDE || fh as u32 > MAX_SIDE || fw < 2 || fh < 2 {
            return Err(unconformable(format!("a decoded picture is {fw}x{fh}")));
        }
        let (fw, fh) = (fw & !1, fh & !1);
        if !matches!(&self.scaler, Some((w, h, _)) if (*w, *h) == (fw, fh)) {
            self.scaler = Some((fw, fh, CoverScaler::new(fw, fh, self.width, self.height)));
        }
        let (ys, us, _) = frame.strides();
        if let Some((_, _, scaler)) = &mut self.scaler {
            scaler.scale(
                (frame.y(), frame.u(), frame.v()),
                (ys, us),
                &mut self.picture,
            );
        }
        if self.written == 0 {
            // The first picture shown starts the clip.
            duration += start as u32;
            start = 0;
        } else if start > self.written {
            // A gap (a picture the decoder did not deliver): the previous picture stays up.
            self.encoder.extend_last((start - self.written) as u32);
        }
        self.encoder.encode(
            (&self.picture.y, &self.picture.u, &self.picture.v),
            start,
            duration,
        )?;
        self.written = start + u64::from(duration);
        if self.encoder.bytes() > self.max_video_bytes {
            return Err(unconformable(format!(
                "the pictures do not compress: {} MiB of video by {:.2} s, more than twice the \
                 {:.1} Mbit/s the encoder aims at",
                self.encoder.bytes() >> 20,
                self.written as f64 / f64::from(MOVIE_TIMESCALE),
                f64::from(self.encoder.bitrate()) / 1e6
            )));
        }
        Ok(self.written as i64 >= self.offset as i64 + self.clip_end)
    }
}

/// Decodes the video track in display order and encodes the pictures shown before `clip_end`
/// (output ticks) at `width`x`height`, keeping the source's frame timing.
fn encode_video(
    movie: &Movie<'_>,
    video: &VideoInput<'_>,
    samples: &[Sample],
    timing: &Timing,
    clip_end: i64,
    (width, height): (u32, u32),
) -> Result<crate::encode::EncodedVideo, MediaError> {
    let (w, h) = (width as usize, height as usize);
    let fps = shown_fps(timing, clip_end);
    let encoder = H264Encoder::new(w, h, fps, true)?;
    let max_video_bytes = max_video_bytes(
        encoder.bitrate(),
        clip_end as f64 / f64::from(MOVIE_TIMESCALE),
    );
    let mut pipe = Pipeline {
        width: w,
        height: h,
        scaler: None,
        picture: Picture::new(w, h),
        encoder,
        received: 0,
        written: 0,
        clip_end,
        offset: 0,
        max_video_bytes,
    };
    decode_part(&mut pipe, movie, video, samples, timing)?;
    pipe.encoder.finish()
}

/// Pictures a second of the part shows before `clip_end`.
fn shown_fps(timing: &Timing, clip_end: i64) -> f64 {
    let shown = timing
        .starts
        .iter()
        .filter(|s| timing.to_out(**s) < clip_end)
        .count()
        .max(1);
    shown as f64 / (clip_end as f64 / f64::from(MOVIE_TIMESCALE))
}

/// Decodes one part's video track in display order into `pipe` (whose `clip_end` and `offset`
/// place it on the output timeline), then holds its last picture to the part's end.
fn decode_part(
    pipe: &mut Pipeline,
    movie: &Movie<'_>,
    video: &VideoInput<'_>,
    samples: &[Sample],
    timing: &Timing,
) -> Result<(), MediaError> {
    let clip_end = pipe.clip_end;
    let shown = timing
        .starts
        .iter()
        .filter(|s| timing.to_out(**s) < clip_end)
        .count()
        .max(1);
    pipe.received = 0;
    let before = pipe.written;
    let config = DecoderConfig::new().flush_after_decode(Flush::NoFlush);
    let mut decoder = Decoder::with_api_config(OpenH264API::from_source(), config)
        .map_err(|e| MediaError::VideoDecode(e.to_string()))?;
    let mut packet = Vec::new();
    let mut last_error = None;
    let mut done = false;
    for (i, s) in samples.iter().enumerate() {
        packet.clear();
        if i == 0 {
            for p in video.config.sps.iter().chain(&video.config.pps) {
                packet.extend_from_slice(&[0, 0, 0, 1]);
                packet.extend_from_slice(p);
            }
        }
        let data = movie.sample_bytes(s.offset, u64::from(s.size))?;
        // As Annex B the picture is no larger than a sample may be, checked before it is built
        // (tiny NAL units with 1-byte lengths would grow it by up to 150%).
        let len = annexb_len(&data, video.config.length_size)?;
        if len > MAX_SAMPLE_BYTES {
            return Err(unconformable(format!(
                "picture {i}'s NAL units come to {len} bytes, more than the {MAX_SAMPLE_BYTES} \
                 accepted"
            )));
        }
        avcc_to_annexb(&data, video.config.length_size, &mut packet)?;
        drop(data);
        check_parameter_sets(&packet)?;
        match decoder.decode(&packet) {
            Ok(Some(frame)) => {
                if pipe.push(&frame, timing)? {
                    done = true;
                    break;
                }
            }
            Ok(None) => {}
            Err(e) => last_error = Some(e.to_string()),
        }
    }
    if !done {
        let remaining = decoder
            .flush_remaining()
            .map_err(|e| MediaError::VideoDecode(e.to_string()))?;
        for frame in remaining {
            if pipe.push(&frame, timing)? {
                break;
            }
        }
    }
    if pipe.written == before {
        return Err(MediaError::VideoDecode(
            last_error.unwrap_or_else(|| "the decoder produced no picture".into()),
        ));
    }
    if pipe.received * 2 < shown {
        return Err(MediaError::VideoDecode(format!(
            "only {} of {shown} pictures decoded{}",
            pipe.received,
            last_error.map(|e| format!(" ({e})")).unwrap_or_default()
        )));
    }
    // Pictures the decoder did not deliver: the last one stays up to the part's end.
    let end = pipe.offset as i64 + clip_end;
    if (pipe.written as i64) < end {
        pipe.encoder.extend_last((end - pipe.written as i64) as u32);
        pipe.written = end as u64;
    }
    Ok(())
}

/// One part of a stitch, read: its movie, video track, samples and timing, and its length on
/// the output timeline.
struct Part<'a> {
    movie: &'a Movie<'a>,
    video: VideoInput<'a>,
    samples: Vec<Sample>,
    timing: Timing,
    end: i64,
}

impl<'a> Part<'a> {
    fn read(movie: &'a Movie<'a>) -> Result<Part<'a>, MediaError> {
        let video = video_input(movie)?;
        let (sw, sh) = (video.sps.width, video.sps.height);
        if sw.max(video.entry_size.0) > MAX_SIDE || sh.max(video.entry_size.1) > MAX_SIDE {
            return Err(unconformable(format!("the video is {sw}x{sh}")));
        }
        let samples = movie.samples(video.track, MAX_FRAMES)?;
        let timing = Timing::new(&samples, video.track, movie.timescale)?;
        if timing.secs() > MAX_INPUT_SECS {
            return Err(unconformable(format!(
                "a part lasts {:.2} s, longer than the {MAX_INPUT_SECS} s accepted",
                timing.secs()
            )));
        }
        let end = timing.to_out(timing.length).max(1);
        Ok(Part {
            movie,
            video,
            samples,
            timing,
            end,
        })
    }

    fn secs(&self) -> f64 {
        self.end as f64 / f64::from(MOVIE_TIMESCALE)
    }

    /// The part's audio as 48 kHz stereo PCM of exactly its length (silence where it has none
    /// or stops early).
    fn audio(&self) -> Result<Vec<i16>, MediaError> {
        let frames = samples_48k(self.secs()) as usize;
        let mut stereo = match self.movie.first(b"soun") {
            Some(track) => {
                let codec = audio_codec(self.movie, track)?;
                let pcm = decode_track(self.movie, track, &codec, self.secs() + 0.5)?;
                if pcm.samples.is_empty() {
                    Vec::new()
                } else {
                    pcm.to_stereo_48k()?
                }
            }
            None => Vec::new(),
        };
        stereo.resize(frames * 2, 0);
        Ok(stereo)
    }
}

/// Joins two clips into one MP4 at the first clip's size: `first` then `second`, the pictures
/// of both scaled to cover that size and encoded as one H.264 stream (so the parameter sets of
/// two encoders never meet in one track), the audio of both decoded and laid end to end as one
/// AAC track, with no gap at the seam (each part lasts exactly its video's length, its audio
/// cut or padded with silence to it). Used by the workflow's stitch step to extend a video.
pub fn stitch_mp4(first: &[u8], second: &[u8]) -> Result<Conformed, MediaError> {
    guarded(|| stitch(first, second))
}

fn stitch(first: &[u8], second: &[u8]) -> Result<Conformed, MediaError> {
    for part in [first, second] {
        if !crate::probe::looks_like_mp4(part) {
            return Err(MediaError::NotMp4("no ISO BMFF box at the start".into()));
        }
    }
    let (a, b) = (Movie::parse(&first)?, Movie::parse(&second)?);
    let (a, b) = (Part::read(&a)?, Part::read(&b)?);
    let (width, height) = (a.video.sps.width & !1, a.video.sps.height & !1);
    let (w, h) = (width as usize, height as usize);
    let total = a.end + b.end;
    let fps = (shown_fps(&a.timing, a.end) + shown_fps(&b.timing, b.end)) / 2.0;
    let encoder = H264Encoder::new(w, h, fps, true)?;
    let max_video_bytes =
        max_video_bytes(encoder.bitrate(), total as f64 / f64::from(MOVIE_TIMESCALE));
    let mut pipe = Pipeline {
        width: w,
        height: h,
        scaler: None,
        picture: Picture::new(w, h),
        encoder,
        received: 0,
        written: 0,
        clip_end: a.end,
        offset: 0,
        max_video_bytes,
    };
    decode_part(&mut pipe, a.movie, &a.video, &a.samples, &a.timing)?;
    pipe.offset = a.end as u64;
    pipe.clip_end = b.end;
    decode_part(&mut pipe, b.movie, &b.video, &b.samples, &b.timing)?;
    let video_out = pipe.encoder.finish()?;
    let secs = total as f64 / f64::from(MOVIE_TIMESCALE);
    let mut pcm = a.audio()?;
    pcm.extend(b.audio()?);
    let audio = encode_aac_stereo_48k(&pcm, samples_48k(secs))?;
    let mp4 = mux::mux(width, height, video_out, &audio)?;
    Ok(Conformed {
        mp4,
        passed_through: false,
        width,
        height,
        duration_secs: secs,
        source: format!("{:.2} s + {:.2} s", a.secs(), b.secs()),
        audio: "joined".into(),
    })
}

/// `work`, with a panic in a decoder (not ours) turned into an error.
fn guarded<T>(work: impl FnOnce() -> Result<T, MediaError>) -> Result<T, MediaError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
        .unwrap_or_else(|_| Err(MediaError::Unconformable("the decoder panicked".into())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demux::tests::{bx, full};

    /// Writes an H.264 RBSP bit by bit.
    #[derive(Default)]
    struct BitWriter {
        bytes: Vec<u8>,
        bits: usize,
    }

    impl BitWriter {
        fn bit(&mut self, b: u32) -> &mut Self {
            if self.bits % 8 == 0 {
                self.bytes.push(0);
            }
            if b & 1 == 1 {
                *self.bytes.last_mut().expect("a byte") |= 0x80 >> (self.bits % 8);
            }
            self.bits += 1;
            self
        }

        fn bits(&mut self, n: u32, v: u64) -> &mut Self {
            for i in (0..n).rev() {
                self.bit((v >> i) as u32 & 1);
            }
            self
        }

        fn ue(&mut self, v: u32) -> &mut Self {
            let v = u64::from(v) + 1;
            let len = 64 - v.leading_zeros();
            self.bits(len - 1, 0).bits(len, v)
        }

        /// The RBSP with its stop bit, as a NAL unit with `header`, emulation prevention added.
        fn nal(&mut self, header: u8) -> Vec<u8> {
            self.bit(1);
            let mut out = vec![header];
            let mut zeros = 0;
            for &b in &self.bytes {
                if zeros >= 2 && b <= 3 {
                    out.push(3);
                    zeros = 0;
                }
                zeros = if b == 0 { zeros + 1 } else { 0 };
                out.push(b);
            }
            out
        }
    }

    /// What a test SPS declares.
    #[derive(Clone, Copy)]
    struct Sps {
        profile: u8,
        constraint_set3: bool,
        level: u8,
        refs: u32,
        width_mbs: u32,
        height_mbs: u32,
        /// The VUI's max_dec_frame_buffering (a VUI with timing and NAL HRD parameters before
        /// it), or no VUI.
        buffering: Option<u32>,
    }

    const HD: Sps = Sps {
        profile: 100,
        constraint_set3: false,
        level: 41,
        refs: 4,
        width_mbs: 120,
        height_mbs: 68,
        buffering: None,
    };

    fn sps_nal(s: Sps) -> Vec<u8> {
        let mut w = BitWriter::default();
        w.bits(8, u64::from(s.profile))
            .bits(8, if s.constraint_set3 { 0x10 } else { 0 })
            .bits(8, u64::from(s.level))
            .ue(0);
        if s.profile == 100 {
            // 4:2:0, 8-bit, no scaling matrices.
            w.ue(1).ue(0).ue(0).bit(0).bit(0);
        }
        // log2_max_frame_num_minus4, pic_order_cnt_type 2.
        w.ue(0).ue(2);
        w.ue(s.refs).bit(0);
        w.ue(s.width_mbs - 1).ue(s.height_mbs - 1);
        // frame_mbs_only, direct_8x8_inference; cropped to 1080 lines when 68 MBs high.
        w.bit(1).bit(1);
        if s.height_mbs == 68 {
            w.bit(1).ue(0).ue(0).ue(0).ue(4);
        } else {
            w.bit(0);
        }
        match s.buffering {
            None => {
                w.bit(0);
            }
            Some(b) => {
                w.bit(1);
                // aspect ratio (Extended_SAR), no overscan, video signal with colour
                // description, no chroma location.
                w.bit(1).bits(8, 255).bits(16, 1).bits(16, 1);
                w.bit(0);
                w.bit(1).bits(3, 5).bit(0).bit(1).bits(24, 0x010101);
                w.bit(0);
                // timing: 1001/60000, fixed rate.
                w.bit(1).bits(32, 1001).bits(32, 60000).bit(1);
                // NAL HRD with two CPB specifications, no VCL HRD, low delay.
                w.bit(1).ue(1).bits(4, 2).bits(4, 3);
                for _ in 0..2 {
                    w.ue(12_000).ue(30_000).bit(0);
                }
                w.bits(5, 23).bits(5, 23).bits(5, 23).bits(5, 24);
                w.bit(0).bit(0);
                // pic_struct_present, bitstream restriction.
                w.bit(0).bit(1);
                w.bit(1).ue(2).ue(1).ue(16).ue(16).ue(2).ue(b);
            }
        }
        w.nal(0x67)
    }

    fn sps(s: Sps) -> SpsInfo {
        parse_sps(&sps_nal(s)).expect("the SPS parses")
    }

    fn refused(s: Sps) -> String {
        check_sps(&sps(s)).expect_err("refused").to_string()
    }

    #[test]
    fn the_sps_gives_level_size_references_and_vui_buffering() {
        let info = sps(Sps {
            buffering: Some(4),
            ..HD
        });
        assert_eq!(info.level_idc, 41);
        assert_eq!((info.width, info.height), (1920, 1080));
        assert_eq!((info.width_mbs, info.height_mbs), (120, 68));
        assert_eq!(info.ref_frames, 4);
        assert_eq!(info.max_dec_frame_buffering, Some(4));
        assert_eq!(sps(HD).max_dec_frame_buffering, None);
        check_sps(&info).expect("1080p with 4 references is within level 4.1");
        // The same SPS as OpenH264 unescapes it in a stream reads the same.
        let nal = sps_nal(Sps {
            buffering: Some(4),
            ..HD
        });
        let rbsp = openh264_unescape(&nal[1..]);
        let again = parse_sps_rbsp(Bits { data: rbsp, pos: 0 }).expect("parses");
        assert_eq!(again.max_dec_frame_buffering, Some(4));
    }

    #[test]
    fn references_beyond_the_levels_picture_buffer_are_refused() {
        // Level 4.1 holds 32768 macroblocks: four 1080p frames (8160 each).
        let err = refused(Sps { refs: 5, ..HD });
        assert!(
            err.contains("5 reference frames of 1920x1080; H.264 level 4.1 allows 4"),
            "{err}"
        );
        // At 720p (3600 macroblocks) the same level allows nine, and no level more than 16.
        let hd720 = Sps {
            width_mbs: 80,
            height_mbs: 45,
            ..HD
        };
        check_sps(&sps(Sps { refs: 9, ..hd720 })).expect("9 at 720p");
        assert!(refused(Sps { refs: 10, ..hd720 }).contains("allows 9"));
        let tiny = Sps {
            width_mbs: 4,
            height_mbs: 4,
            level: 52,
            ..HD
        };
        check_sps(&sps(Sps { refs: 16, ..tiny })).expect("16 of a small picture");
        assert!(refused(Sps { refs: 17, ..tiny }).contains("allows 16"));
    }

    #[test]
    fn a_vui_buffer_beyond_the_level_is_refused() {
        let err = refused(Sps {
            buffering: Some(9),
            ..HD
        });
        assert!(
            err.contains(
                "decoded picture buffer of 9 frames of 1920x1080; H.264 level 4.1 allows 4"
            ),
            "{err}"
        );
    }

    #[test]
    fn a_frame_beyond_the_levels_size_is_refused() {
        // Level 3.1 allows 3600 macroblocks; 1080p has 8160.
        let err = refused(Sps { level: 31, ..HD });
        assert!(
            err.contains("1920x1080 pictures (120x68 macroblocks) are larger than H.264 level 3.1"),
            "{err}"
        );
        // Within MaxFS but a side longer than sqrt(8 * MaxFS): 4 x 200 macroblocks at 3.1.
        let err = refused(Sps {
            level: 31,
            refs: 1,
            width_mbs: 4,
            height_mbs: 200,
            ..HD
        });
        assert!(err.contains("at most 169 a side"), "{err}");
        // Sides past 4096 pixels are refused whatever the level.
        let err = refused(Sps {
            level: 52,
            refs: 1,
            width_mbs: 257,
            height_mbs: 16,
            ..HD
        });
        assert!(err.contains("4112x256; sides of at most 4096"), "{err}");
        // Level 1b (level_idc 11 with constraint_set3 in Baseline) holds 99 macroblocks.
        let qcif = Sps {
            profile: 66,
            constraint_set3: true,
            level: 11,
            refs: 1,
            width_mbs: 11,
            height_mbs: 9,
            ..HD
        };
        check_sps(&sps(qcif)).expect("QCIF at 1b");
        let err = refused(Sps {
            width_mbs: 22,
            height_mbs: 18,
            ..qcif
        });
        assert!(err.contains("level 1b"), "{err}");
        // In High the flag does not make level_idc 11 mean 1b.
        check_sps(&sps(Sps {
            profile: 100,
            width_mbs: 22,
            height_mbs: 18,
            ..qcif
        }))
        .expect("CIF at 1.1");
    }

    #[test]
    fn an_unknown_level_is_refused() {
        let err = refused(Sps { level: 45, ..HD });
        assert!(err.contains("level_idc 45"), "{err}");
    }

    #[test]
    fn the_picture_pool_is_counted_as_openh264_allocates_it() {
        // 4096x2304 at level 5.1 allows 5 references: 7 pictures of 4160x2368 (padded by 32 a
        // side), 4:2:0, and their macroblocks' motion.
        let uhd = Sps {
            level: 51,
            refs: 5,
            width_mbs: 256,
            height_mbs: 144,
            ..HD
        };
        let info = sps(uhd);
        let mbs = 256 * 144 * DECODER_BYTES_PER_MB;
        assert_eq!(
            decoder_picture_bytes(&info),
            7 * (4160 * 2368 * 3 / 2 + mbs)
        );
        check_sps(&info).expect("4096x2304 within level 5.1");
        // Widths that are not a multiple of 32 once padded are rounded up as OpenH264 does.
        let odd = sps(Sps {
            width_mbs: 81,
            height_mbs: 45,
            refs: 1,
            ..HD
        });
        assert_eq!(
            decoder_picture_bytes(&odd),
            3 * (1376 * 800 * 3 / 2 + 81 * 45 * 165)
        );
        // Level 6.2 allows 16 references at that size, which would be 358 MiB of pictures.
        let err = refused(Sps {
            level: 62,
            refs: 16,
            ..uhd
        });
        assert!(
            err.contains("16 reference frames of 4096x2304: decoding it would hold 358 MiB"),
            "{err}"
        );
        // Within the bound, a level the decoder does not know is refused by name.
        let err = refused(Sps { level: 62, ..uhd });
        assert!(err.contains("level 6.2; levels up to 5.2"), "{err}");
    }

    #[test]
    fn every_frame_size_the_levels_allow_fits_the_pool_bound() {
        // Each frame size within level 5.2 and 4096 pixels a side, with as many references
        // as the level allows at that size.
        let mut most = (0, 0, 0);
        for w in 1..=256u32 {
            for h in 1..=256u32 {
                let Some(refs) = 184_320u32.checked_div(w * h) else {
                    continue;
                };
                let info = SpsInfo {
                    profile_idc: 100,
                    constrained: false,
                    constraint_set3: false,
                    level_idc: 52,
                    chroma_format: 1,
                    bit_depth: 8,
                    width: w * 16,
                    height: h * 16,
                    width_mbs: w,
                    height_mbs: h,
                    progressive: true,
                    ref_frames: refs.min(16),
                    max_dec_frame_buffering: None,
                };
                if check_sps(&info).is_ok() {
                    most = most.max((decoder_picture_bytes(&info), w, h));
                }
            }
        }
        assert!(
            (139 << 20..=(1401 << 20) / 10).contains(&most.0),
            "{most:?}"
        );
    }

    #[test]
    fn the_crates_own_encoder_writes_streams_that_pass() {
        // Every output size, at frame rates an engine sends: conformed clips are decoded again
        // (thumbnails, a stitch), through the same checks.
        for (w, h) in [
            (1366, 768),
            (768, 1366),
            (768, 768),
            (1024, 768),
            (768, 1024),
            (1792, 768),
        ] {
            for fps in [24.0, 60.0, 120.0] {
                let mut encoder = H264Encoder::new(w, h, fps, true).expect("encoder");
                let picture = Picture::new(w, h);
                encoder
                    .encode((&picture.y, &picture.u, &picture.v), 0, 1000)
                    .expect("a picture");
                let out = encoder.finish().expect("a stream");
                let info = parse_sps(&out.sps).expect("its SPS");
                check_sps(&info).unwrap_or_else(|e| {
                    panic!("{w}x{h} at {fps} fps, level_idc {}: {e}", info.level_idc)
                });
            }
        }
    }

    #[test]
    fn every_sps_of_the_avcc_is_checked() {
        let good = sps_nal(HD);
        let hostile = sps_nal(Sps {
            level: 62,
            refs: 16,
            width_mbs: 256,
            height_mbs: 144,
            ..HD
        });
        let config = |sps: Vec<Vec<u8>>| AvcConfig {
            length_size: 4,
            sps,
            pps: Vec::new(),
        };
        let first = checked_avcc_sps(&config(vec![good.clone()]))
            .expect("checked")
            .expect("an SPS");
        assert_eq!(first.width, 1920);
        let err = checked_avcc_sps(&config(vec![good, hostile]))
            .err()
            .expect("the second SPS is refused")
            .to_string();
        assert!(err.contains("16 reference frames of 4096x2304"), "{err}");
        assert!(checked_avcc_sps(&config(Vec::new()))
            .expect("none")
            .is_none());
    }

    #[test]
    fn an_sps_in_the_stream_is_checked_before_the_decoder_sees_it() {
        let hostile = sps_nal(Sps {
            level: 62,
            refs: 16,
            width_mbs: 256,
            height_mbs: 144,
            ..HD
        });
        let slice = [0x65, 0x88, 0x84, 0x00, 0x21, 0xff];
        let sample = |nals: &[&[u8]]| {
            let mut sample = Vec::new();
            for nal in nals {
                sample.extend_from_slice(&(nal.len() as u32).to_be_bytes());
                sample.extend_from_slice(nal);
            }
            let mut packet = Vec::new();
            avcc_to_annexb(&sample, 4, &mut packet).expect("annex b");
            packet
        };
        check_parameter_sets(&sample(&[&sps_nal(HD), &slice])).expect("a valid SPS");
        check_parameter_sets(&sample(&[&slice])).expect("no SPS");
        let err = check_parameter_sets(&sample(&[&slice, &hostile]))
            .expect_err("an SPS mid-stream")
            .to_string();
        assert!(err.contains("16 reference frames of 4096x2304"), "{err}");
        // Hidden in another unit's payload (no emulation prevention there): the decoder finds
        // the start code, so the check does too.
        let mut sei = vec![0x06, 0x05, 0x10, 0, 0, 1];
        sei.extend_from_slice(&hostile);
        let err = check_parameter_sets(&sample(&[&sei, &slice]))
            .expect_err("an SPS inside an SEI")
            .to_string();
        assert!(err.contains("16 reference frames"), "{err}");
        // Subset SPS (SVC, MVC) are not handed to the decoder at all.
        let mut subset = sps_nal(HD);
        subset[0] = 0x6f;
        let err = check_parameter_sets(&sample(&[&subset, &slice]))
            .expect_err("a subset SPS")
            .to_string();
        assert!(err.contains("subset SPS"), "{err}");
    }

    #[test]
    fn openh264_drops_an_escape_before_a_byte_above_three() {
        assert_eq!(openh264_unescape(&[1, 0, 0, 3, 1, 2]), vec![1, 0, 0, 1, 2]);
        assert_eq!(openh264_unescape(&[1, 0, 0, 3, 0x80, 2]), vec![1, 0x80, 2]);
        assert_eq!(openh264_unescape(&[1, 0, 0, 3]), vec![1, 0, 0]);
    }

    #[test]
    fn pass_through_is_bounded_by_what_the_conform_would_write() {
        // 1366x768, 96 pictures in 4 s: the encoder aims at 1366 * 768 * 24 / 10 bit/s; twice
        // that for 4 s, a mebibyte, 5 s of AAC at 576 kbit/s and a mebibyte of container.
        let aim = (1366.0 * 768.0 * 24.0 / 10.0) as u32;
        assert_eq!(video_bitrate(1366, 768, 24.0), aim);
        let cap = pass_through_max_bytes(1366, 768, 96, 4.0);
        assert_eq!(cap, u64::from(aim) + (1 << 20) + 360_000 + (1 << 20));
        // At most: 3,600 pictures in 60.5 s at 1366x768 (59.5 fps, below the 8 Mbit/s ceiling).
        let most = pass_through_max_bytes(1366, 768, 3600, 60.5);
        assert!(most < 97 << 20, "{most}");
        // 120 fps stops at the 8 Mbit/s ceiling; a clip of no length gets the fixed room only.
        assert_eq!(
            pass_through_max_bytes(1366, 768, 7260, 60.5),
            121_000_000 + (1 << 20) + 4_428_000 + (1 << 20)
        );
        assert_eq!(
            pass_through_max_bytes(768, 768, 0, 0.0),
            (1 << 20) + 72_000 + (1 << 20)
        );
    }

    /// A QuickTime file of one 48 kHz stereo 16-bit little-endian PCM track (`sowt`) holding
    /// `pcm`, every frame in one chunk; the PCM's bytes start at offset 24.
    fn pcm_file(pcm: &[u8]) -> Vec<u8> {
        let frames = (pcm.len() / 4) as u32;
        let mut out = bx(b"ftyp", b"qt  \0\0\0\0");
        out.extend(bx(b"mdat", pcm));
        let mut entry = vec![0u8; 28];
        entry[7] = 1;
        entry[16..18].copy_from_slice(&2u16.to_be_bytes());
        entry[18..20].copy_from_slice(&16u16.to_be_bytes());
        entry[24..28].copy_from_slice(&(48_000u32 << 16).to_be_bytes());
        let mut stsd = vec![0u8, 0, 0, 0, 0, 0, 0, 1];
        stsd.extend(bx(b"sowt", &entry));
        let stbl = [
            bx(b"stsd", &stsd),
            full(b"stsz", &[1, frames]),
            full(b"stsc", &[1, 1, frames, 1]),
            full(b"stts", &[1, frames, 1]),
            full(b"stco", &[1, 24]),
        ]
        .concat();
        let mdia = [
            full(b"mdhd", &[0, 0, 48_000, frames, 0]),
            full(b"hdlr", &[0, u32::from_be_bytes(*b"soun"), 0, 0, 0]),
            bx(b"minf", &bx(b"stbl", &stbl)),
        ]
        .concat();
        let moov = [
            full(b"mvhd", &[0, 0, 48_000, frames, 0]),
            bx(b"trak", &bx(b"mdia", &mdia)),
        ]
        .concat();
        out.extend(bx(b"moov", &moov));
        out
    }

    /// A source that is not in memory: every read copies, as from a file.
    struct Unmapped<'a>(&'a [u8]);

    impl ReadAt for Unmapped<'_> {
        fn size(&self) -> u64 {
            self.0.len() as u64
        }

        fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
            self.0.read_exact_at(buf, offset)
        }
    }

    #[test]
    fn pcm_in_one_chunk_larger_than_the_window_is_read_in_windows_alike() {
        // 8 s of a ramp, 1.5 MB in one chunk: read a mebibyte at a time.
        let pcm: Vec<u8> = (0..48_000 * 8)
            .flat_map(|i: i32| {
                let v = ((i % 2000) * 16 - 16_000) as i16;
                [v.to_le_bytes(), (-v).to_le_bytes()].concat()
            })
            .collect();
        assert!(pcm.len() as u64 > PCM_WINDOW_BYTES);
        let data = pcm_file(&pcm);
        let decode = |source: &dyn ReadAt| {
            let movie = Movie::parse(source).expect("parse");
            let track = movie.first(b"soun").expect("track");
            let codec = audio_codec(&movie, track).expect("codec");
            assert_eq!(codec.name(), "PCM s16le");
            decode_track(&movie, track, &codec, 10.0).expect("decode")
        };
        let slice: &[u8] = &data;
        let (a, b) = (decode(&slice), decode(&Unmapped(&data)));
        let AudioCodec::Pcm(format) = audio_codec(
            &Movie::parse(&slice).expect("parse"),
            Movie::parse(&slice)
                .expect("parse")
                .first(b"soun")
                .expect("t"),
        )
        .expect("codec") else {
            panic!("PCM")
        };
        let mut sink = audio_decode::StereoSink::new(0.0);
        format.convert_into(&pcm, &mut sink).expect("whole");
        let whole = sink.finish();
        assert_eq!((a.rate, a.channels), (whole.rate, whole.channels));
        assert_eq!(a.samples.len(), whole.samples.len());
        assert!(a.samples == whole.samples, "windows decode as the whole");
        assert!(b.samples == whole.samples, "read or borrowed alike");
    }
}
