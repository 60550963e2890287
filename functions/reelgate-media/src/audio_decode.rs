//! Audio decoding for the conform stage: uncompressed PCM (QuickTime/ISO sample entries and
//! WAV) natively, AAC through fdk-aac's decoder, MP3, FLAC, ALAC and Ogg Vorbis through
//! `symphonia` (pure Rust, MPL-2.0), then a downmix to stereo and a resample to 48 kHz.

use std::borrow::Cow;
use std::io::Cursor;

use symphonia::core::audio::GenericAudioBufferRef;
use symphonia::core::codecs::audio::well_known::{CODEC_ID_ALAC, CODEC_ID_FLAC, CODEC_ID_MP3};
use symphonia::core::codecs::audio::{AudioCodecId, AudioCodecParameters, AudioDecoderOptions};
use symphonia::core::codecs::CodecParameters;
use symphonia::core::formats::probe::Hint;
use symphonia::core::formats::{FormatOptions, TrackType};
use symphonia::core::io::{MediaSourceStream, MediaSourceStreamOptions};
use symphonia::core::meta::MetadataOptions;
use symphonia::core::packet::Packet;
use symphonia::core::units::{Duration as SymDuration, Timestamp as SymTimestamp};

use crate::encode::AUDIO_SAMPLE_RATE;
use crate::error::MediaError;

/// Decoded audio: interleaved signed 16-bit samples.
pub(crate) struct Pcm {
    pub rate: u32,
    pub channels: u16,
    pub samples: Vec<i16>,
}

impl Pcm {
    /// Interleaved stereo at [`AUDIO_SAMPLE_RATE`]: more than two channels are folded into
    /// left and right (centre and surrounds at -3 dB), then the rate is converted.
    pub fn to_stereo_48k(&self) -> Result<Vec<i16>, MediaError> {
        let ch = usize::from(self.channels);
        if ch == 0 || self.rate == 0 {
            return Err(MediaError::AudioDecode(
                "audio without channels or sample rate".into(),
            ));
        }
        if ch <= 2 {
            if ch == 2 && self.rate == AUDIO_SAMPLE_RATE {
                return Ok(self.samples.clone());
            }
            return Ok(resample_stereo_48k(self.rate, self.channels, &self.samples));
        }
        // L R C LFE Ls Rs ... (the MPEG/WAV order); the LFE is left out.
        let mut stereo = Vec::with_capacity(self.samples.len() / ch * 2);
        for f in self.samples.chunks_exact(ch) {
            let s = |i: usize| f.get(i).map_or(0.0, |v| f64::from(*v));
            let c = s(2) * 0.707;
            let (ls, rs) = if ch >= 6 {
                (s(4) * 0.707, s(5) * 0.707)
            } else {
                (0.0, 0.0)
            };
            let gain = if ch >= 6 { 1.0 / 2.414 } else { 1.0 / 1.707 };
            stereo.push(((s(0) + c + ls) * gain).clamp(-32768.0, 32767.0) as i16);
            stereo.push(((s(1) + c + rs) * gain).clamp(-32768.0, 32767.0) as i16);
        }
        Ok(resample_stereo_48k(self.rate, 2, &stereo))
    }
}

/// Interleaved PCM at `rate` with one or two `channels` (neither checked here: both callers
/// have) as 48 kHz stereo, by linear interpolation; mono is copied to both sides.
pub(crate) fn resample_stereo_48k(rate: u32, channels: u16, samples: &[i16]) -> Vec<i16> {
    let ch = usize::from(channels);
    let frames_in = samples.len() / ch;
    if frames_in == 0 {
        return Vec::new();
    }
    let frames_out = (frames_in as u64 * u64::from(AUDIO_SAMPLE_RATE) / u64::from(rate)).max(1);
    let mut out = Vec::with_capacity(frames_out as usize * 2);
    let step = f64::from(rate) / f64::from(AUDIO_SAMPLE_RATE);
    for i in 0..frames_out {
        let pos = i as f64 * step;
        let i0 = (pos.floor() as usize).min(frames_in - 1);
        let i1 = (i0 + 1).min(frames_in - 1);
        let frac = pos - i0 as f64;
        for c in 0..2 {
            let src_c = c.min(ch - 1);
            let a = f64::from(samples[i0 * ch + src_c]);
            let b = f64::from(samples[i1 * ch + src_c]);
            out.push((a + (b - a) * frac).round() as i16);
        }
    }
    out
}

/// One frame of `channels` interleaved samples folded into left and right as
/// [`Pcm::to_stereo_48k`] folds it: mono to both sides, more than two channels with centre and
/// surrounds at -3 dB and the LFE left out.
fn fold(f: &[i16]) -> [i16; 2] {
    let ch = f.len();
    if ch <= 2 {
        return [f[0], f[ch - 1]];
    }
    let s = |i: usize| f.get(i).map_or(0.0, |v| f64::from(*v));
    let c = s(2) * 0.707;
    let (ls, rs) = if ch >= 6 {
        (s(4) * 0.707, s(5) * 0.707)
    } else {
        (0.0, 0.0)
    };
    let gain = if ch >= 6 { 1.0 / 2.414 } else { 1.0 / 1.707 };
    [
        ((s(0) + c + ls) * gain).clamp(-32768.0, 32767.0) as i16,
        ((s(1) + c + rs) * gain).clamp(-32768.0, 32767.0) as i16,
    ]
}

/// Decoded audio folded into 48 kHz stereo as it arrives, so that a decode holds the sound it
/// keeps at 192,000 bytes a second whatever the source's rate and channels (8 channels at
/// 192 kHz would be 3 MB a second, and a FLAC of silence a few bytes). The result is the one
/// [`Pcm::to_stereo_48k`] gives for the whole decode: the same fold, then the same linear
/// interpolation, computed a frame at a time with the source frames the next output needs.
pub(crate) struct StereoSink {
    /// The source's rate and channels, fixed by the first buffer (0 before).
    rate: u32,
    channels: u16,
    /// Seconds of source to drop first (an edit's priming or skip).
    skip_secs: f64,
    skip: u64,
    /// Source frames seen, those skipped included.
    seen: u64,
    /// Source frames kept after the skip.
    kept: u64,
    /// Folded source frames from number `base` (after the skip) on.
    window: Vec<[i16; 2]>,
    base: u64,
    /// Output frames written.
    written: u64,
    out: Vec<i16>,
}

impl StereoSink {
    pub fn new(skip_secs: f64) -> Self {
        Self {
            rate: 0,
            channels: 0,
            skip_secs: skip_secs.max(0.0),
            skip: 0,
            seen: 0,
            kept: 0,
            window: Vec::new(),
            base: 0,
            written: 0,
            out: Vec::new(),
        }
    }

    /// Whether any audio has come in.
    pub fn started(&self) -> bool {
        self.channels != 0
    }

    /// Seconds of source seen, the skipped ones included.
    pub fn seen_secs(&self) -> f64 {
        if self.rate == 0 {
            0.0
        } else {
            self.seen as f64 / f64::from(self.rate)
        }
    }

    /// Takes whole interleaved frames at `rate` with `channels`; fails when the layout
    /// changes from the first buffer's.
    pub fn push(&mut self, rate: u32, channels: u16, samples: &[i16]) -> Result<(), String> {
        let ch = usize::from(channels);
        if ch == 0 || rate == 0 {
            return Err("audio without channels or sample rate".into());
        }
        if self.channels == 0 {
            (self.rate, self.channels) = (rate, channels);
            self.skip = (self.skip_secs * f64::from(rate)).round() as u64;
        } else if (self.rate, self.channels) != (rate, channels) {
            return Err("the channel layout or sample rate changes mid-stream".into());
        }
        for frame in samples.chunks_exact(ch) {
            self.seen += 1;
            if self.skip > 0 {
                self.skip -= 1;
                continue;
            }
            self.window.push(fold(frame));
            self.kept += 1;
        }
        self.emit(false);
        Ok(())
    }

    /// Writes the output frames the window allows (all of them when `last`), then forgets the
    /// source frames no later output reads (never the last one, which the end repeats).
    fn emit(&mut self, last: bool) {
        if self.kept == 0 {
            return;
        }
        let step = f64::from(self.rate) / f64::from(AUDIO_SAMPLE_RATE);
        let end = if last {
            (self.kept * u64::from(AUDIO_SAMPLE_RATE) / u64::from(self.rate)).max(1)
        } else {
            u64::MAX
        };
        while self.written < end {
            let pos = self.written as f64 * step;
            let mut i0 = pos.floor() as u64;
            let mut i1 = i0 + 1;
            if !last && i1 >= self.kept {
                break;
            }
            i0 = i0.min(self.kept - 1);
            i1 = i1.min(self.kept - 1);
            let frac = pos - i0 as f64;
            let (a, b) = (
                self.window[(i0 - self.base) as usize],
                self.window[(i1 - self.base) as usize],
            );
            for c in 0..2 {
                let (a, b) = (f64::from(a[c]), f64::from(b[c]));
                self.out.push((a + (b - a) * frac).round() as i16);
            }
            self.written += 1;
        }
        if last {
            // Downsampling can write a frame past the whole decode's count before the end is
            // known.
            self.out.truncate(end as usize * 2);
            return;
        }
        let needed = ((self.written as f64 * step).floor() as u64).min(self.kept - 1);
        if needed > self.base {
            self.window.drain(..(needed - self.base) as usize);
            self.base = needed;
        }
    }

    /// The sound as 48 kHz stereo.
    pub fn finish(mut self) -> Pcm {
        self.emit(true);
        Pcm {
            rate: AUDIO_SAMPLE_RATE,
            channels: 2,
            samples: self.out,
        }
    }
}

// ---------------------------------------------------------------------------
// Uncompressed PCM

/// The layout of uncompressed samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PcmFormat {
    pub rate: u32,
    pub channels: u16,
    /// Bits per sample: 8, 16, 24, 32 or 64 (float).
    pub bits: u16,
    pub float: bool,
    pub big_endian: bool,
    /// 8-bit samples only: signed (QuickTime `twos`/`sowt`) or unsigned (WAV, `raw `).
    pub signed: bool,
}

impl PcmFormat {
    pub fn frame_bytes(&self) -> u64 {
        u64::from(self.channels) * u64::from(self.bits / 8)
    }

    pub fn check(&self) -> Result<(), String> {
        let ok_bits = if self.float {
            matches!(self.bits, 32 | 64)
        } else {
            matches!(self.bits, 8 | 16 | 24 | 32)
        };
        if !ok_bits {
            return Err(format!(
                "{}-bit {} PCM is not supported",
                self.bits,
                if self.float { "float" } else { "integer" }
            ));
        }
        if !(1..=32).contains(&self.channels) {
            return Err(format!("{} audio channels", self.channels));
        }
        if !(1_000..=384_000).contains(&self.rate) {
            return Err(format!("a sample rate of {} Hz", self.rate));
        }
        Ok(())
    }

    /// Hands the samples of `bytes` (whole frames) to `sink` a block of frames at a time, so that
    /// a large run of PCM is never held converted whole.
    pub fn convert_into(&self, bytes: &[u8], sink: &mut StereoSink) -> Result<(), String> {
        let block = self.frame_bytes().max(1) as usize * 4096;
        let mut scratch = Vec::new();
        for chunk in bytes.chunks(block) {
            scratch.clear();
            self.convert(chunk, &mut scratch);
            sink.push(self.rate, self.channels, &scratch)?;
        }
        Ok(())
    }

    /// Appends the samples of `bytes` (whole frames) as 16-bit.
    pub fn convert(&self, bytes: &[u8], out: &mut Vec<i16>) {
        let width = usize::from(self.bits / 8);
        let be = self.big_endian;
        for s in bytes.chunks_exact(width) {
            let v: i16 = match (self.float, width) {
                (false, 1) => {
                    if self.signed {
                        i16::from(s[0] as i8) << 8
                    } else {
                        (i16::from(s[0]) - 128) << 8
                    }
                }
                (false, 2) => {
                    if be {
                        i16::from_be_bytes([s[0], s[1]])
                    } else {
                        i16::from_le_bytes([s[0], s[1]])
                    }
                }
                // The top 16 bits of 24- and 32-bit samples.
                (false, 3) => {
                    if be {
                        i16::from_be_bytes([s[0], s[1]])
                    } else {
                        i16::from_le_bytes([s[1], s[2]])
                    }
                }
                (false, 4) => {
                    if be {
                        i16::from_be_bytes([s[0], s[1]])
                    } else {
                        i16::from_le_bytes([s[2], s[3]])
                    }
                }
                (true, 4) => {
                    let a = [s[0], s[1], s[2], s[3]];
                    let f = if be {
                        f32::from_be_bytes(a)
                    } else {
                        f32::from_le_bytes(a)
                    };
                    float_to_i16(f64::from(f))
                }
                (true, 8) => {
                    let mut a = [0u8; 8];
                    a.copy_from_slice(s);
                    let f = if be {
                        f64::from_be_bytes(a)
                    } else {
                        f64::from_le_bytes(a)
                    };
                    float_to_i16(f)
                }
                _ => 0,
            };
            out.push(v);
        }
    }
}

fn float_to_i16(f: f64) -> i16 {
    if f.is_nan() {
        0
    } else {
        (f * 32768.0).round().clamp(-32768.0, 32767.0) as i16
    }
}

/// Reads a WAV file's format and its sample bytes (whole frames).
pub(crate) fn wav(bytes: &[u8]) -> Result<(PcmFormat, &[u8], u16), MediaError> {
    let bad = |m: &str| MediaError::AudioDecode(format!("the reference WAV {m}"));
    let mut pos = 12;
    let mut fmt: Option<(PcmFormat, u16)> = None;
    while pos + 8 <= bytes.len() {
        let id = &bytes[pos..pos + 4];
        let len = u32::from_le_bytes([
            bytes[pos + 4],
            bytes[pos + 5],
            bytes[pos + 6],
            bytes[pos + 7],
        ]) as usize;
        let body_start = pos + 8;
        let body_end = body_start.saturating_add(len).min(bytes.len());
        let body = &bytes[body_start..body_end];
        if id == b"fmt " {
            if body.len() < 16 {
                return Err(bad("has a truncated fmt chunk"));
            }
            let le16 = |at: usize| u16::from_le_bytes([body[at], body[at + 1]]);
            let mut tag = le16(0);
            if tag == 0xFFFE && body.len() >= 26 {
                // WAVE_FORMAT_EXTENSIBLE: the sub-format GUID starts with the real tag.
                tag = le16(24);
            }
            let bits = le16(14);
            let format = PcmFormat {
                rate: u32::from_le_bytes([body[4], body[5], body[6], body[7]]),
                channels: le16(2),
                // Containers round odd sizes (20-bit) up to whole bytes.
                bits: bits.div_ceil(8) * 8,
                float: tag == 3,
                big_endian: false,
                signed: false,
            };
            fmt = Some((format, tag));
        } else if id == b"data" {
            let (format, tag) = fmt.ok_or_else(|| bad("has its data before its fmt chunk"))?;
            let frame = format.frame_bytes().max(1) as usize;
            let whole = body.len() / frame * frame;
            return Ok((format, &body[..whole], tag));
        }
        pos = body_start.saturating_add(len + (len & 1));
    }
    Err(bad("has no data chunk"))
}

// ---------------------------------------------------------------------------
// AAC (fdk-aac)

/// Decodes raw AAC access units configured by `asc` (an AudioSpecificConfig) into 48 kHz
/// stereo, dropping the first `skip_secs` and stopping after about `max_secs` seconds of source
/// (the skipped ones included).
pub(crate) fn decode_aac<'a>(
    asc: &[u8],
    units: impl Iterator<Item = Result<Cow<'a, [u8]>, MediaError>>,
    skip_secs: f64,
    max_secs: f64,
) -> Result<Pcm, MediaError> {
    use fdk_aac::dec::{Decoder, Transport};
    let err = |e: fdk_aac::dec::DecoderError| MediaError::AudioDecode(format!("AAC: {e}"));
    let mut decoder = Decoder::new(Transport::Raw);
    decoder.config_raw(asc).map_err(err)?;
    // Let the decoder fold surround into stereo.
    let _ = decoder.set_max_output_channels(2);
    let mut sink = StereoSink::new(skip_secs);
    let mut frame = vec![0i16; 8 * 4096];
    let mut errors = 0usize;
    for unit in units {
        let unit = unit?;
        let mut rest: &[u8] = &unit;
        while !rest.is_empty() {
            let used = decoder.fill(rest).map_err(err)?;
            if used == 0 {
                break;
            }
            rest = &rest[used..];
        }
        match decoder.decode_frame(&mut frame) {
            Ok(()) => {
                let info = decoder.stream_info();
                let ch = info.numChannels.clamp(0, 8) as u16;
                let n = decoder.decoded_frame_size().min(frame.len());
                if ch == 0 || info.sampleRate <= 0 {
                    continue;
                }
                sink.push(info.sampleRate as u32, ch, &frame[..n])
                    .map_err(|m| MediaError::AudioDecode(format!("AAC: {m}")))?;
                if sink.seen_secs() >= max_secs {
                    break;
                }
            }
            Err(_) => errors += 1,
        }
    }
    if !sink.started() {
        return Err(MediaError::AudioDecode(format!(
            "AAC: no frame decoded ({errors} errors)"
        )));
    }
    Ok(sink.finish())
}

/// How long an AAC track lasts when decoded, from a decode that keeps no sound.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct AacDecoded {
    /// Access units decoded.
    pub units: u64,
    /// Decoded length in seconds (the decoder's output rate, SBR included).
    pub secs: f64,
}

/// Decodes raw AAC access units configured by `asc`, one at a time into one frame's buffer,
/// and counts what comes out. Fails on the first unit the decoder does not take whole or
/// reports an error for (concealed output included), when the layout or rate changes, and as
/// soon as the sound runs past `max_secs` (the caller's bound on the work: a table that
/// understates its units' durations would otherwise have it decode many of them).
pub(crate) fn check_aac<'a>(
    asc: &[u8],
    units: impl Iterator<Item = Result<Cow<'a, [u8]>, MediaError>>,
    max_secs: f64,
) -> Result<AacDecoded, MediaError> {
    use fdk_aac::dec::{Decoder, Transport};
    let err = |e: fdk_aac::dec::DecoderError| MediaError::AudioDecode(format!("AAC: {e}"));
    let mut decoder = Decoder::new(Transport::Raw);
    decoder.config_raw(asc).map_err(err)?;
    let _ = decoder.set_max_output_channels(2);
    let mut frame = vec![0i16; 8 * 4096];
    let (mut rate, mut channels) = (0u32, 0usize);
    let mut frames = 0u64;
    let mut units_done = 0u64;
    for (index, unit) in units.enumerate() {
        let unit = unit?;
        let what = |m: String| {
            MediaError::AudioDecode(format!(
                "AAC access unit {index} ({} bytes) {m}",
                unit.len()
            ))
        };
        let used = decoder
            .fill(&unit)
            .map_err(|e| what(format!("was refused: {e}")))?;
        if used != unit.len() {
            return Err(what("does not fit the decoder's buffer".into()));
        }
        decoder
            .decode_frame(&mut frame)
            .map_err(|e| what(format!("does not decode: {e}")))?;
        let info = decoder.stream_info();
        let (ch, sr) = (info.numChannels, info.sampleRate);
        if ch <= 0 || sr <= 0 || info.frameSize <= 0 {
            return Err(what("decodes to no sound".into()));
        }
        if channels != 0 && (ch as usize != channels || sr as u32 != rate) {
            return Err(MediaError::AudioDecode(
                "AAC: the channel layout or sample rate changes mid-stream".into(),
            ));
        }
        (rate, channels) = (sr as u32, ch as usize);
        frames += info.frameSize as u64;
        units_done += 1;
        let secs = frames as f64 / f64::from(rate);
        if secs > max_secs {
            return Err(MediaError::AudioDecode(format!(
                "AAC: the track decodes to more than {max_secs:.2} s, longer than its sample \
                 table says"
            )));
        }
    }
    Ok(AacDecoded {
        units: units_done,
        secs: if rate == 0 {
            0.0
        } else {
            frames as f64 / f64::from(rate)
        },
    })
}

// ---------------------------------------------------------------------------
// symphonia

fn sym_err(what: &str, e: symphonia::core::errors::Error) -> MediaError {
    MediaError::AudioDecode(format!("{what}: {e}"))
}

/// Hands a decoded buffer to `sink`.
fn append(
    sink: &mut StereoSink,
    buf: &GenericAudioBufferRef<'_>,
    scratch: &mut Vec<i16>,
) -> Result<(), String> {
    let spec = buf.spec();
    let ch = spec.channels().count() as u16;
    if ch == 0 || buf.frames() == 0 {
        return Ok(());
    }
    buf.copy_to_vec_interleaved(scratch);
    sink.push(spec.rate(), ch, scratch)
}

/// Decodes packets of an MP3, FLAC or ALAC track demuxed from an MP4 into 48 kHz stereo,
/// dropping the first `skip_secs` and stopping after about `max_secs` seconds of source (the
/// skipped ones included).
pub(crate) fn decode_packets<'a>(
    name: &str,
    (codec, rate, extra_data): (AudioCodecId, u32, Option<Vec<u8>>),
    packets: impl Iterator<Item = Result<(Cow<'a, [u8]>, u32), MediaError>>,
    skip_secs: f64,
    max_secs: f64,
) -> Result<Pcm, MediaError> {
    let mut params = AudioCodecParameters::new();
    params.for_codec(codec).with_sample_rate(rate);
    if let Some(extra) = extra_data {
        params.with_extra_data(extra.into_boxed_slice());
    }
    let mut decoder = symphonia::default::get_codecs()
        .make_audio_decoder(&params, &AudioDecoderOptions::default())
        .map_err(|e| sym_err(name, e))?;
    let mut sink = StereoSink::new(skip_secs);
    let mut scratch = Vec::new();
    let mut pts = 0i64;
    let mut errors = 0usize;
    for packet in packets {
        let (data, duration) = packet?;
        let p = Packet::new(
            0,
            SymTimestamp::new(pts),
            SymDuration::new(u64::from(duration)),
            data.into_owned(),
        );
        pts += i64::from(duration);
        match decoder.decode(&p) {
            Ok(buf) => append(&mut sink, &buf, &mut scratch)
                .map_err(|m| MediaError::AudioDecode(format!("{name}: {m}")))?,
            Err(symphonia::core::errors::Error::DecodeError(_)) => errors += 1,
            Err(e) => return Err(sym_err(name, e)),
        }
        if sink.seen_secs() >= max_secs {
            break;
        }
    }
    if !sink.started() {
        return Err(MediaError::AudioDecode(format!(
            "{name}: no frame decoded ({errors} errors)"
        )));
    }
    Ok(sink.finish())
}

/// Decodes a whole audio file that symphonia can open (MP3, FLAC, Ogg Vorbis, WAV) into 48 kHz
/// stereo, at most about `max_secs` seconds.
pub(crate) fn decode_file(bytes: &[u8], name: &str, max_secs: f64) -> Result<Pcm, MediaError> {
    let source = MediaSourceStream::new(
        Box::new(Cursor::new(bytes)),
        MediaSourceStreamOptions::default(),
    );
    let mut format = symphonia::default::get_probe()
        .probe(
            &Hint::new(),
            source,
            FormatOptions::default(),
            MetadataOptions::default(),
        )
        .map_err(|e| sym_err(name, e))?;
    let track = format
        .first_track(TrackType::Audio)
        .ok_or_else(|| MediaError::AudioDecode(format!("{name}: no audio track")))?;
    let track_id = track.id;
    let Some(CodecParameters::Audio(params)) = track.codec_params.clone() else {
        return Err(MediaError::AudioDecode(format!(
            "{name}: the audio codec is unknown"
        )));
    };
    let mut decoder = symphonia::default::get_codecs()
        .make_audio_decoder(&params, &AudioDecoderOptions::default())
        .map_err(|e| match e {
            symphonia::core::errors::Error::Unsupported(_) => MediaError::UnsupportedCodec(
                format!("the reference audio ({name}) uses a codec this service does not decode"),
            ),
            e => sym_err(name, e),
        })?;
    let mut sink = StereoSink::new(0.0);
    let mut scratch = Vec::new();
    loop {
        let packet = match format.next_packet() {
            Ok(Some(p)) => p,
            Ok(None) => break,
            // A truncated file: keep what was read.
            Err(symphonia::core::errors::Error::IoError(_)) if sink.started() => break,
            Err(e) => return Err(sym_err(name, e)),
        };
        if packet.track_id != track_id {
            continue;
        }
        match decoder.decode(&packet) {
            Ok(buf) => append(&mut sink, &buf, &mut scratch)
                .map_err(|m| MediaError::AudioDecode(format!("{name}: {m}")))?,
            Err(symphonia::core::errors::Error::DecodeError(_)) => {}
            Err(e) => return Err(sym_err(name, e)),
        }
        if sink.seen_secs() >= max_secs {
            break;
        }
    }
    if !sink.started() {
        return Err(MediaError::AudioDecode(format!("{name}: no audio decoded")));
    }
    Ok(sink.finish())
}

/// Codec ids for the symphonia decoders used on MP4 tracks.
pub(crate) const SYM_MP3: AudioCodecId = CODEC_ID_MP3;
pub(crate) const SYM_FLAC: AudioCodecId = CODEC_ID_FLAC;
pub(crate) const SYM_ALAC: AudioCodecId = CODEC_ID_ALAC;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::encode_aac_stereo_48k;

    /// AudioSpecificConfig of AAC-LC, 48 kHz, stereo (what the crate's encoder writes).
    const ASC: [u8; 2] = [0x11, 0x90];

    /// One second of a 440 Hz tone encoded by the crate's AAC encoder, as access units.
    fn tone_units() -> Vec<Vec<u8>> {
        let pcm: Vec<i16> = (0..48_000)
            .flat_map(|i| {
                let v =
                    ((i as f64 * 440.0 * std::f64::consts::TAU / 48_000.0).sin() * 8000.0) as i16;
                [v, v]
            })
            .collect();
        let track = encode_aac_stereo_48k(&pcm, 48_000).expect("encode");
        track.units.into_iter().map(|u| u.data).collect()
    }

    fn check(units: &[Vec<u8>], max_secs: f64) -> Result<AacDecoded, MediaError> {
        check_aac(
            &ASC,
            units.iter().map(|u| Ok(Cow::Borrowed(u.as_slice()))),
            max_secs,
        )
    }

    /// A source of `channels` channels at `rate`: a different ramp on each channel.
    fn source(rate: u32, channels: u16, frames: usize) -> Pcm {
        let samples = (0..frames)
            .flat_map(|i| {
                (0..channels).map(move |c| {
                    (((i * (7 + usize::from(c) * 13)) % 65_536) as i64 - 32_768) as i16
                })
            })
            .collect();
        Pcm {
            rate,
            channels,
            samples,
        }
    }

    #[test]
    fn the_stereo_sink_folds_as_the_whole_decode_would() {
        for (rate, channels) in [
            (48_000, 2),
            (44_100, 1),
            (22_050, 2),
            (96_000, 6),
            (192_000, 8),
            (8_000, 3),
            (47_999, 2),
        ] {
            let pcm = source(rate, channels, 10_007);
            let whole = pcm.to_stereo_48k().expect("whole");
            let ch = usize::from(channels);
            for block in [1, 7, 1024, 20_000] {
                let mut sink = StereoSink::new(0.0);
                for part in pcm.samples.chunks(block * ch) {
                    sink.push(rate, channels, part).expect("push");
                }
                let streamed = sink.finish();
                assert_eq!((streamed.rate, streamed.channels), (48_000, 2));
                assert!(
                    streamed.samples == whole,
                    "{rate} Hz x {channels} in blocks of {block}: {} samples, whole {}",
                    streamed.samples.len(),
                    whole.len()
                );
            }
            // The skip drops the first frames before the fold, as cutting the PCM first would.
            let skip = 0.05;
            let cut = (skip * f64::from(rate)).round() as usize * ch;
            let rest = Pcm {
                rate,
                channels,
                samples: pcm.samples[cut..].to_vec(),
            };
            let mut sink = StereoSink::new(skip);
            for part in pcm.samples.chunks(333 * ch) {
                sink.push(rate, channels, part).expect("push");
            }
            assert!((sink.seen_secs() - 10_007.0 / f64::from(rate)).abs() < 1e-9);
            assert!(sink.finish().samples == rest.to_stereo_48k().expect("rest"));
        }
    }

    #[test]
    fn the_stereo_sink_keeps_only_what_the_next_frame_needs() {
        let mut sink = StereoSink::new(0.0);
        let pcm = source(192_000, 8, 192_000);
        for part in pcm.samples.chunks(4096 * 8) {
            sink.push(192_000, 8, part).expect("push");
            assert!(sink.window.len() <= 4096 + 8, "{}", sink.window.len());
        }
        assert_eq!(sink.finish().samples.len(), 48_000 * 2);
        let mut sink = StereoSink::new(0.0);
        sink.push(48_000, 2, &[0; 8]).expect("first");
        let err = sink.push(44_100, 2, &[0; 8]).expect_err("a rate change");
        assert!(err.contains("changes mid-stream"), "{err}");
    }

    #[test]
    fn aac_units_that_decode_are_counted() {
        let units = tone_units();
        let decoded = check(&units, 10.0).expect("decodes");
        assert_eq!(decoded.units, units.len() as u64);
        let expected = units.len() as f64 * 1024.0 / 48_000.0;
        assert!((decoded.secs - expected).abs() < 1e-9, "{decoded:?}");
        assert!(decoded.secs > 1.0, "{decoded:?}");
    }

    #[test]
    fn a_unit_that_does_not_decode_fails_the_check() {
        for (name, bad) in [
            ("garbage", vec![0xa5u8; 300]),
            ("empty", Vec::new()),
            (
                "another codec's frame",
                vec![0xff, 0xfb, 0x90, 0x64, 0, 0, 0, 0],
            ),
        ] {
            let mut units = tone_units();
            units[10] = bad;
            let err = check(&units, 10.0).expect_err(name).to_string();
            assert!(err.contains("AAC access unit 10"), "{name}: {err}");
        }
        // A unit cut short.
        let mut units = tone_units();
        let half = units[10].len() / 2;
        units[10].truncate(half);
        let err = check(&units, 10.0).expect_err("truncated").to_string();
        assert!(err.contains("AAC access unit 10"), "{err}");
    }

    #[test]
    fn sound_running_past_the_bound_stops_the_check() {
        let units = tone_units();
        let err = check(&units, 0.5)
            .expect_err("longer than 0.5 s")
            .to_string();
        assert!(err.contains("more than 0.50 s"), "{err}");
    }
}
