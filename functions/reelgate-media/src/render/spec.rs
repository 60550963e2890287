//! What a render is asked for: the spec (size, length, prompt, pictures, captions, source
//! frames) with its limits, and the audio bed mixed under the generated sound.

use image::RgbImage;

use crate::audio_decode;
use crate::captions::Caption;
#[cfg(doc)]
use crate::encode::AUDIO_SAMPLE_RATE;
use crate::encode::MOVIE_TIMESCALE;
use crate::error::MediaError;

const MAX_SIDE: u32 = 4096;
const MAX_SECONDS: u32 = 60;

/// PCM mixed under the generated tone pattern: interleaved stereo, signed
/// 16-bit, 48 kHz. Looped when shorter than the clip, cut when longer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AudioBed {
    /// Interleaved left/right samples at [`AUDIO_SAMPLE_RATE`].
    pub samples: Vec<i16>,
}

impl AudioBed {
    /// Builds a bed from interleaved PCM with any rate and 1 or 2 channels,
    /// converting to 48 kHz stereo (linear interpolation).
    pub fn from_pcm(sample_rate: u32, channels: u16, samples: &[i16]) -> Result<Self, MediaError> {
        if sample_rate == 0 || !(1..=2).contains(&channels) {
            return Err(MediaError::InvalidSpec(format!(
                "audio bed must be mono or stereo with a non-zero rate, got {channels} channel(s) at {sample_rate} Hz"
            )));
        }
        Ok(Self {
            samples: audio_decode::resample_stereo_48k(sample_rate, channels, samples),
        })
    }

    /// Parses a RIFF/WAVE file of integer or float PCM (any rate and channel count; more than
    /// two channels are folded to stereo), through the conform stage's audio decoder.
    pub fn from_wav(bytes: &[u8]) -> Result<Self, MediaError> {
        if bytes.len() < 12 || &bytes[0..4] != b"RIFF" || &bytes[8..12] != b"WAVE" {
            return Err(MediaError::InvalidSpec(
                "audio bed WAV: not a RIFF/WAVE file".into(),
            ));
        }
        let pcm = crate::conform::decode_reference(bytes, f64::from(MAX_SECONDS))?;
        Ok(Self {
            samples: pcm.to_stereo_48k()?,
        })
    }
}

/// What to render. Build with [`RenderSpec::new`] and set the optional parts.
#[derive(Debug, Clone)]
pub struct RenderSpec {
    /// Frame width in pixels: even, 16..=4096.
    pub width: u32,
    /// Frame height in pixels: even, 16..=4096.
    pub height: u32,
    /// Clip length, 1..=60 seconds; both tracks last exactly this long.
    pub seconds: u32,
    /// Frames per second (24 by default); must divide 48000 and be at most 60.
    pub fps: u32,
    /// The (English) prompt: colours, motion and the tone pattern derive from its hash (the
    /// picture from the prompt without its `<d>…</d>` dialogue).
    pub prompt: String,
    /// Shown at the start, then zoomed into and panned across (cross-fading to `last_frame`
    /// over the second half when there is one).
    pub first_frame: Option<RgbImage>,
    /// Shown at the end, cross-faded from `first_frame` (or from a flat prompt colour).
    pub last_frame: Option<RgbImage>,
    /// Optional PCM mixed under the tone pattern.
    pub audio_bed: Option<AudioBed>,
    /// Pictures shown in turn as an inset card (reference images, stills of reference videos).
    pub reference_images: Vec<RgbImage>,
    /// Text burned in at the bottom of the picture while each caption is on.
    pub captions: Vec<Caption>,
    /// Frames sampled evenly through a source video (a remix or an edit): shown in turn in
    /// place of every other background, tinted with the prompt's colour, so the output keeps
    /// the source's picture and timing. At most [`MAX_SOURCE_FRAMES`].
    pub source_frames: Vec<RgbImage>,
}

/// The most source frames a render takes (each is held scaled to the output size).
pub const MAX_SOURCE_FRAMES: usize = 24;

impl RenderSpec {
    /// A spec at 24 fps with no images and no audio bed.
    pub fn new(width: u32, height: u32, seconds: u32, prompt: impl Into<String>) -> Self {
        Self {
            width,
            height,
            seconds,
            fps: 24,
            prompt: prompt.into(),
            first_frame: None,
            last_frame: None,
            audio_bed: None,
            reference_images: Vec::new(),
            captions: Vec::new(),
            source_frames: Vec::new(),
        }
    }

    pub(super) fn validate(&self) -> Result<(), MediaError> {
        let bad = |m: String| Err(MediaError::InvalidSpec(m));
        for (name, v) in [("width", self.width), ("height", self.height)] {
            if !(16..=MAX_SIDE).contains(&v) || v % 2 != 0 {
                return bad(format!(
                    "{name} must be even and within 16..={MAX_SIDE}, got {v}"
                ));
            }
        }
        if !(1..=MAX_SECONDS).contains(&self.seconds) {
            return bad(format!(
                "seconds must be within 1..={MAX_SECONDS}, got {}",
                self.seconds
            ));
        }
        if self.fps == 0 || self.fps > 60 || MOVIE_TIMESCALE % self.fps != 0 {
            return bad(format!(
                "fps must divide 48000 and be at most 60, got {}",
                self.fps
            ));
        }
        if self.source_frames.len() > MAX_SOURCE_FRAMES {
            return bad(format!(
                "at most {MAX_SOURCE_FRAMES} source frames, got {}",
                self.source_frames.len()
            ));
        }
        if self
            .source_frames
            .iter()
            .any(|f| f.width() == 0 || f.height() == 0)
        {
            return bad("a source frame is empty".to_owned());
        }
        for (name, img) in [
            ("first_frame", &self.first_frame),
            ("last_frame", &self.last_frame),
        ] {
            if let Some(img) = img {
                if img.width() == 0 || img.height() == 0 {
                    return bad(format!("{name} is empty"));
                }
            }
        }
        Ok(())
    }
}
