//! Deterministic clip synthesis: H.264 (openh264) + AAC-LC (fdk-aac) in MP4.
//!
//! Pixel work is written as whole-row slice copies and fills so that it stays
//! fast even when this crate is built without optimisation (tests); the codecs
//! themselves are optimised through the workspace profile.

mod audio;
mod planes;
mod scene;
mod seed;
mod spec;

use std::sync::atomic::{AtomicBool, Ordering};

use crate::encode::{EncodedVideo, H264Encoder, MOVIE_TIMESCALE};
pub use crate::encode::{AUDIO_CHANNELS, AUDIO_SAMPLE_RATE};
use crate::error::MediaError;
use crate::mux;
use audio::encode_audio;
use planes::Planes;
use scene::Scene;
pub use spec::{AudioBed, RenderSpec, MAX_SOURCE_FRAMES};

/// Renders a real MP4: H.264 video (openh264, Constrained Baseline, IDR every
/// 2 s) and stereo 48 kHz AAC-LC audio (fdk-aac, 128 kbit/s), `moov` before
/// `mdat` (fast start). Both tracks last exactly `spec.seconds`; the AAC
/// encoder delay is hidden with an edit list.
///
/// The picture is deterministic for a given spec: a moving diagonal gradient
/// and shapes in colours taken from a hash of the prompt, or, with a first
/// frame, a slow zoom and pan over it that cross-fades into `last_frame`;
/// reference pictures appear in turn as an inset card, captions are burned in
/// at the bottom while each is on, and a thin progress bar runs along the
/// bottom edge. The audio is a prompt-derived pentatonic tone pattern
/// over a drone, plus the optional audio bed.
///
/// `progress` receives increasing values from 0 to 100 (100 once, at the
/// end). When `cancel` becomes true the render stops with
/// [`MediaError::Canceled`].
pub fn render_mp4(
    spec: &RenderSpec,
    progress: &mut dyn FnMut(u8),
    cancel: &AtomicBool,
) -> Result<Vec<u8>, MediaError> {
    spec.validate()?;
    let mut reporter = Progress::new(progress);
    reporter.report(0);
    let video = encode_video(spec, &mut reporter, cancel)?;
    if cancel.load(Ordering::Relaxed) {
        return Err(MediaError::Canceled);
    }
    let audio = encode_audio(spec)?;
    reporter.report(97);
    if cancel.load(Ordering::Relaxed) {
        return Err(MediaError::Canceled);
    }
    let out = mux::mux(spec.width, spec.height, video, &audio)?;
    reporter.report(100);
    Ok(out)
}

struct Progress<'a> {
    f: &'a mut dyn FnMut(u8),
    last: Option<u8>,
}

impl<'a> Progress<'a> {
    fn new(f: &'a mut dyn FnMut(u8)) -> Self {
        Self { f, last: None }
    }
    fn report(&mut self, pct: u8) {
        let pct = pct.min(100);
        if self.last.is_none_or(|l| pct > l) {
            self.last = Some(pct);
            (self.f)(pct);
        }
    }
}

fn encode_video(
    spec: &RenderSpec,
    reporter: &mut Progress<'_>,
    cancel: &AtomicBool,
) -> Result<EncodedVideo, MediaError> {
    let (w, h) = (spec.width as usize, spec.height as usize);
    let fps = spec.fps;
    let total = spec.seconds * fps;
    let mut scene = Scene::new(spec);

    let mut encoder = H264Encoder::new(w, h, f64::from(fps), false)?;
    let frame_ticks = MOVIE_TIMESCALE / fps;

    let mut frame = Planes::new(w, h);
    for i in 0..total {
        if cancel.load(Ordering::Relaxed) {
            return Err(MediaError::Canceled);
        }
        scene.draw(i, &mut frame);
        encoder.encode(
            (&frame.y, &frame.u, &frame.v),
            u64::from(i) * u64::from(frame_ticks),
            frame_ticks,
        )?;
        reporter.report(((u64::from(i) + 1) * 95 / u64::from(total)) as u8);
    }
    encoder.finish()
}
