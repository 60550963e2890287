//! The encoders shared by the reference renderer and the conform stage: H.264 through openh264
//! (one picture at a time, from YUV 4:2:0 planes) and AAC-LC through fdk-aac (48 kHz stereo).
//! The tracks they produce ([`EncodedVideo`], [`AacTrack`]) are defined here, where they are
//! made, so that `mux` only reads them.

use fdk_aac::enc::{
    AudioObjectType as AacObjectType, BitRate as AacBitRate, ChannelMode, Encoder as AacEncoder,
    EncoderParams, Transport,
};
use openh264::encoder::{
    BitRate, Encoder, EncoderConfig, FrameRate, FrameType, IntraFramePeriod, RateControlMode,
    UsageType, VuiConfig,
};
use openh264::formats::YUVSlices;
use openh264::{OpenH264API, Timestamp};

use crate::error::MediaError;

/// Sample rate of generated audio tracks.
pub const AUDIO_SAMPLE_RATE: u32 = 48_000;
/// Channel count of generated audio tracks (stereo).
pub const AUDIO_CHANNELS: u16 = 2;

/// Movie and video timescale: every common frame rate and the audio rate divide it, so the
/// durations of generated clips are exact.
pub(crate) const MOVIE_TIMESCALE: u32 = 48_000;
/// PCM frames per AAC-LC access unit.
pub(crate) const AAC_FRAME: u64 = 1024;
/// Bit rate of generated AAC tracks.
pub(crate) const AAC_BITRATE: u32 = 128_000;

/// One coded picture in MP4 form (length-prefixed NAL units).
pub(crate) struct VideoSample {
    pub data: Vec<u8>,
    pub sync: bool,
    /// Display duration in [`MOVIE_TIMESCALE`] ticks.
    pub duration: u32,
}

/// An H.264 track ready to mux.
pub(crate) struct EncodedVideo {
    pub sps: Vec<u8>,
    pub pps: Vec<u8>,
    pub samples: Vec<VideoSample>,
}

/// One AAC access unit as stored in the MP4.
pub(crate) struct AacUnit {
    pub data: Vec<u8>,
    /// In the track's timescale (1024 for AAC-LC at the track's sample rate).
    pub duration: u32,
}

/// An AAC track ready to mux.
pub(crate) struct AacTrack {
    /// Object type, sampling frequency and channel configuration written to `esds`.
    pub config: mp4::AacConfig,
    /// Media timescale (the sample rate).
    pub timescale: u32,
    pub units: Vec<AacUnit>,
    /// Leading samples (encoder delay) the edit list skips, in `timescale` units.
    pub priming: u64,
    /// Presented length after the priming, in `timescale` units.
    pub presented: u64,
}

fn strip_start_code(nal: &[u8]) -> &[u8] {
    if nal.starts_with(&[0, 0, 0, 1]) {
        &nal[4..]
    } else if nal.starts_with(&[0, 0, 1]) {
        &nal[3..]
    } else {
        nal
    }
}

/// openh264 with the crate's settings (Constrained Baseline, buffer-based rate control at a bit
/// rate scaled to the picture size and frame rate, an IDR frame every 2 s, BT.601 VUI, one
/// thread), turning YUV 4:2:0 pictures into MP4 samples one at a time.
pub(crate) struct H264Encoder {
    encoder: Encoder,
    width: usize,
    height: usize,
    /// What the rate control aims at, in bits per second.
    bitrate: u32,
    /// Coded picture bytes so far.
    bytes: u64,
    out: EncodedVideo,
}

/// The frame rate an encoder is configured with: `fps` within 1..=120, 24 when it is not a
/// number.
fn sane_fps(fps: f64) -> f64 {
    if fps.is_finite() {
        fps.clamp(1.0, 120.0)
    } else {
        24.0
    }
}

/// What the rate control of an encoder for `width`x`height` at `fps` aims at, in bits per
/// second: `width * height * fps / 10`, within 0.3..=8 Mbit/s.
pub(crate) fn video_bitrate(width: usize, height: usize, fps: f64) -> u32 {
    ((width * height) as f64 * sane_fps(fps) / 10.0).clamp(300_000.0, 8_000_000.0) as u32
}

impl H264Encoder {
    /// An encoder for `width`x`height` pictures (even sides) at about `fps` frames per second.
    /// `strict_bitrate` holds the bit rate (openh264's bit-rate mode, for camera-like
    /// pictures); otherwise the rate control is buffer-based (the reference renderer's
    /// synthetic pictures).
    pub fn new(
        width: usize,
        height: usize,
        fps: f64,
        strict_bitrate: bool,
    ) -> Result<Self, MediaError> {
        let fps = sane_fps(fps);
        let bitrate = video_bitrate(width, height, fps);
        let config = EncoderConfig::new()
            .bitrate(BitRate::from_bps(bitrate))
            .max_frame_rate(FrameRate::from_hz(fps as f32))
            .rate_control_mode(if strict_bitrate {
                RateControlMode::Bitrate
            } else {
                RateControlMode::Bufferbased
            })
            .skip_frames(false)
            .usage_type(UsageType::CameraVideoRealTime)
            .intra_frame_period(IntraFramePeriod::from_num_frames(
                ((fps * 2.0).round() as u32).max(1),
            ))
            .num_threads(1)
            .vui(VuiConfig::bt601());
        let encoder = Encoder::with_api_config(OpenH264API::from_source(), config)
            .map_err(|e| MediaError::VideoEncode(e.to_string()))?;
        Ok(Self {
            encoder,
            width,
            height,
            bitrate,
            bytes: 0,
            out: EncodedVideo {
                sps: Vec::new(),
                pps: Vec::new(),
                samples: Vec::new(),
            },
        })
    }

    /// Encodes one picture (planes of `width`x`height`, `width/2`x`height/2`, tightly packed)
    /// presented at `start` and for `duration` [`MOVIE_TIMESCALE`] ticks.
    pub fn encode(
        &mut self,
        (y, u, v): (&[u8], &[u8], &[u8]),
        start: u64,
        duration: u32,
    ) -> Result<(), MediaError> {
        let (w, h) = (self.width, self.height);
        let source = YUVSlices::new((y, u, v), (w, h), (w, w / 2, w / 2));
        let millis = start * 1000 / u64::from(MOVIE_TIMESCALE);
        let bitstream = self
            .encoder
            .encode_at(&source, Timestamp::from_millis(millis))
            .map_err(|e| MediaError::VideoEncode(e.to_string()))?;
        let sync = bitstream.frame_type() == FrameType::IDR;
        let out = &mut self.out;
        let mut data = Vec::new();
        for l in 0..bitstream.num_layers() {
            let Some(layer) = bitstream.layer(l) else {
                continue;
            };
            for n in 0..layer.nal_count() {
                let Some(nal) = layer.nal_unit(n) else {
                    continue;
                };
                let nal = strip_start_code(nal);
                let Some(&head) = nal.first() else { continue };
                match head & 0x1f {
                    7 => {
                        if out.sps.is_empty() {
                            out.sps = nal.to_vec();
                        }
                    }
                    8 => {
                        if out.pps.is_empty() {
                            out.pps = nal.to_vec();
                        }
                    }
                    9 => {} // access unit delimiter: not needed in MP4
                    _ => {
                        data.extend_from_slice(&(nal.len() as u32).to_be_bytes());
                        data.extend_from_slice(nal);
                    }
                }
            }
        }
        self.bytes += data.len() as u64;
        if data.is_empty() {
            // A skipped frame: extend the previous picture's display time.
            match out.samples.last_mut() {
                Some(prev) => prev.duration += duration,
                None => {
                    return Err(MediaError::VideoEncode(
                        "encoder produced no first frame".into(),
                    ))
                }
            }
        } else {
            out.samples.push(VideoSample {
                data,
                sync,
                duration,
            });
        }
        Ok(())
    }

    /// What the rate control aims at, in bits per second.
    pub fn bitrate(&self) -> u32 {
        self.bitrate
    }

    /// Coded picture bytes so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Shows the last encoded picture `ticks` longer.
    pub fn extend_last(&mut self, ticks: u32) {
        if let Some(last) = self.out.samples.last_mut() {
            last.duration += ticks;
        }
    }

    /// The encoded track; fails when nothing usable came out.
    pub fn finish(self) -> Result<EncodedVideo, MediaError> {
        let out = self.out;
        if out.sps.is_empty() || out.pps.is_empty() {
            return Err(MediaError::VideoEncode("encoder emitted no SPS/PPS".into()));
        }
        if !out.samples.first().is_some_and(|s| s.sync) {
            return Err(MediaError::VideoEncode(
                "stream does not start with an IDR frame".into(),
            ));
        }
        Ok(out)
    }
}

/// Encodes interleaved stereo 48 kHz PCM as AAC-LC (128 kbit/s) presenting exactly `samples`
/// frames: `pcm` is cut or padded with silence to that length, and the encoder delay is
/// recorded as the track's priming (hidden with an edit list when muxed).
pub(crate) fn encode_aac_stereo_48k(pcm: &[i16], samples: u64) -> Result<AacTrack, MediaError> {
    let err = |e: fdk_aac::enc::EncoderError| MediaError::AudioEncode(e.to_string());
    let encoder = AacEncoder::new(EncoderParams {
        bit_rate: AacBitRate::Cbr(AAC_BITRATE),
        sample_rate: AUDIO_SAMPLE_RATE,
        transport: Transport::Raw,
        channels: ChannelMode::Stereo,
        audio_object_type: AacObjectType::Mpeg4LowComplexity,
    })
    .map_err(err)?;
    let info = encoder.info().map_err(err)?;
    let priming = u64::from(info.nDelayCore);
    let needed = (priming + samples).div_ceil(AAC_FRAME) as usize;
    let channels = usize::from(AUDIO_CHANNELS);
    let pcm = &pcm[..pcm.len().min(samples as usize * channels) / channels * channels];
    let mut buf = vec![0u8; (info.maxOutBufBytes as usize).max(8192)];
    let silence = vec![0i16; AAC_FRAME as usize * channels];
    let mut units = Vec::with_capacity(needed);
    let mut pos = 0usize;
    let mut calls = 0usize;
    while units.len() < needed {
        calls += 1;
        if calls > needed * 4 + 64 {
            return Err(MediaError::AudioEncode(
                "encoder stopped producing frames".into(),
            ));
        }
        let input = if pos < pcm.len() {
            &pcm[pos..]
        } else {
            &silence[..]
        };
        let r = encoder.encode(input, &mut buf).map_err(err)?;
        if pos < pcm.len() {
            pos += r.input_consumed;
        }
        if r.output_size > 0 {
            units.push(AacUnit {
                data: buf[..r.output_size].to_vec(),
                duration: AAC_FRAME as u32,
            });
        }
    }
    Ok(AacTrack {
        config: mp4::AacConfig {
            bitrate: AAC_BITRATE,
            profile: mp4::AudioObjectType::AacLowComplexity,
            freq_index: mp4::SampleFreqIndex::Freq48000,
            chan_conf: mp4::ChannelConfig::Stereo,
        },
        timescale: AUDIO_SAMPLE_RATE,
        units,
        priming,
        presented: samples,
    })
}
