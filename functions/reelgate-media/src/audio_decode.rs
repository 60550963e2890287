//! Audio decoding for the conform stage: uncompressed PCM (QuickTime/ISO sample entries and
//! WAV) natively, AAC through fdk-aac's decoder, MP3, FLAC, ALAC and Ogg Vorbis through
//! `symphonia` (pure Rust, MPL-2.0), then a downmix to stereo and a resample to 48 kHz.

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
use crate::MediaError;

/// Decoded audio: interleaved signed 16-bit samples.
pub(crate) struct Pcm {
    pub rate: u32,
    pub channels: u16,
    pub samples: Vec<i16>,
}

impl Pcm {
    pub fn frames(&self) -> u64 {
        (self.samples.len() / usize::from(self.channels.max(1))) as u64
    }

    /// Drops the first `frames` frames.
    pub fn skip(&mut self, frames: u64) {
        let n = (frames as usize)
            .saturating_mul(usize::from(self.channels))
            .min(self.samples.len());
        self.samples.drain(..n);
    }

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

/// Decodes raw AAC access units configured by `asc` (an AudioSpecificConfig), downmixed to at
/// most two channels, stopping after about `max_secs` seconds.
pub(crate) fn decode_aac<'a>(
    asc: &[u8],
    units: impl Iterator<Item = Result<&'a [u8], MediaError>>,
    max_secs: f64,
) -> Result<Pcm, MediaError> {
    use fdk_aac::dec::{Decoder, Transport};
    let err = |e: fdk_aac::dec::DecoderError| MediaError::AudioDecode(format!("AAC: {e}"));
    let mut decoder = Decoder::new(Transport::Raw);
    decoder.config_raw(asc).map_err(err)?;
    // Let the decoder fold surround into stereo.
    let _ = decoder.set_max_output_channels(2);
    let mut out = Vec::new();
    let mut frame = vec![0i16; 8 * 4096];
    let (mut rate, mut channels) = (0u32, 0u16);
    let mut errors = 0usize;
    let mut decoded = 0usize;
    for unit in units {
        let unit = unit?;
        let mut rest = unit;
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
                if channels != 0 && (ch != channels || info.sampleRate as u32 != rate) {
                    return Err(MediaError::AudioDecode(
                        "AAC: the channel layout or sample rate changes mid-stream".into(),
                    ));
                }
                rate = info.sampleRate as u32;
                channels = ch;
                out.extend_from_slice(&frame[..n]);
                decoded += 1;
                if out.len() as f64 >= max_secs * f64::from(rate) * f64::from(ch) {
                    break;
                }
            }
            Err(_) => errors += 1,
        }
    }
    if decoded == 0 || channels == 0 {
        return Err(MediaError::AudioDecode(format!(
            "AAC: no frame decoded ({errors} errors)"
        )));
    }
    Ok(Pcm {
        rate,
        channels,
        samples: out,
    })
}

// ---------------------------------------------------------------------------
// symphonia

fn sym_err(what: &str, e: symphonia::core::errors::Error) -> MediaError {
    MediaError::AudioDecode(format!("{what}: {e}"))
}

/// Appends a decoded buffer to `pcm` (fixing its rate and channel count on the first one).
fn append(pcm: &mut Pcm, buf: &GenericAudioBufferRef<'_>, scratch: &mut Vec<i16>) -> bool {
    let spec = buf.spec();
    let ch = spec.channels().count() as u16;
    if ch == 0 || buf.frames() == 0 {
        return true;
    }
    if pcm.channels == 0 {
        pcm.channels = ch;
        pcm.rate = spec.rate();
    } else if pcm.channels != ch || pcm.rate != spec.rate() {
        return false;
    }
    buf.copy_to_vec_interleaved(scratch);
    pcm.samples.extend_from_slice(scratch);
    true
}

/// Decodes packets of an MP3, FLAC or ALAC track demuxed from an MP4.
pub(crate) fn decode_packets<'a>(
    name: &str,
    codec: AudioCodecId,
    rate: u32,
    extra_data: Option<Vec<u8>>,
    packets: impl Iterator<Item = Result<(&'a [u8], u32), MediaError>>,
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
    let mut pcm = Pcm {
        rate,
        channels: 0,
        samples: Vec::new(),
    };
    let mut scratch = Vec::new();
    let mut pts = 0i64;
    let mut errors = 0usize;
    for packet in packets {
        let (data, duration) = packet?;
        let p = Packet::new(
            0,
            SymTimestamp::new(pts),
            SymDuration::new(u64::from(duration)),
            data.to_vec(),
        );
        pts += i64::from(duration);
        match decoder.decode(&p) {
            Ok(buf) => {
                if !append(&mut pcm, &buf, &mut scratch) {
                    return Err(MediaError::AudioDecode(format!(
                        "{name}: the channel layout or sample rate changes mid-stream"
                    )));
                }
            }
            Err(symphonia::core::errors::Error::DecodeError(_)) => errors += 1,
            Err(e) => return Err(sym_err(name, e)),
        }
        if pcm.channels != 0 && pcm.frames() as f64 >= max_secs * f64::from(pcm.rate) {
            break;
        }
    }
    if pcm.channels == 0 {
        return Err(MediaError::AudioDecode(format!(
            "{name}: no frame decoded ({errors} errors)"
        )));
    }
    Ok(pcm)
}

/// Decodes a whole audio file that symphonia can open (MP3, FLAC, Ogg Vorbis, WAV), at most
/// about `max_secs` seconds.
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
    let mut pcm = Pcm {
        rate: 0,
        channels: 0,
        samples: Vec::new(),
    };
    let mut scratch = Vec::new();
    loop {
        let packet = match format.next_packet() {
            Ok(Some(p)) => p,
            Ok(None) => break,
            // A truncated file: keep what was read.
            Err(symphonia::core::errors::Error::IoError(_)) if pcm.channels != 0 => break,
            Err(e) => return Err(sym_err(name, e)),
        };
        if packet.track_id != track_id {
            continue;
        }
        match decoder.decode(&packet) {
            Ok(buf) => {
                if !append(&mut pcm, &buf, &mut scratch) {
                    return Err(MediaError::AudioDecode(format!(
                        "{name}: the channel layout or sample rate changes mid-stream"
                    )));
                }
            }
            Err(symphonia::core::errors::Error::DecodeError(_)) => {}
            Err(e) => return Err(sym_err(name, e)),
        }
        if pcm.channels != 0 && pcm.frames() as f64 >= max_secs * f64::from(pcm.rate) {
            break;
        }
    }
    if pcm.channels == 0 {
        return Err(MediaError::AudioDecode(format!("{name}: no audio decoded")));
    }
    Ok(pcm)
}

/// Codec ids for the symphonia decoders used on MP4 tracks.
pub(crate) const SYM_MP3: AudioCodecId = CODEC_ID_MP3;
pub(crate) const SYM_FLAC: AudioCodecId = CODEC_ID_FLAC;
pub(crate) const SYM_ALAC: AudioCodecId = CODEC_ID_ALAC;
