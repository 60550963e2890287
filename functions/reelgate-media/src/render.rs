//! Deterministic clip synthesis: H.264 (openh264) + AAC-LC (fdk-aac) in MP4.
//!
//! Pixel work is written as whole-row slice copies and fills so that it stays
//! fast even when this crate is built without optimisation (tests); the codecs
//! themselves are optimised through the workspace profile.

use std::sync::atomic::{AtomicBool, Ordering};

use image::imageops::FilterType;
use image::{DynamicImage, RgbImage};

use crate::audio_decode;
use crate::captions::{self as text, Caption};
use crate::encode::{encode_aac_stereo_48k, AacTrack, EncodedVideo, H264Encoder, MOVIE_TIMESCALE};
pub use crate::encode::{AUDIO_CHANNELS, AUDIO_SAMPLE_RATE};
use crate::error::MediaError;
use crate::mux;

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

    fn validate(&self) -> Result<(), MediaError> {
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

// ---------------------------------------------------------------------------
// Deterministic parameters from the prompt

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// splitmix64 sequence seeded by the prompt hash.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Yuv {
    y: u8,
    u: u8,
    v: u8,
}

/// BT.601 limited-range conversion (what the VUI in the stream declares).
fn rgb_to_yuv(r: u8, g: u8, b: u8) -> Yuv {
    let (r, g, b) = (i32::from(r), i32::from(g), i32::from(b));
    let y = ((66 * r + 129 * g + 25 * b + 128) >> 8) + 16;
    let u = ((-38 * r - 74 * g + 112 * b + 128) >> 8) + 128;
    let v = ((112 * r - 94 * g - 18 * b + 128) >> 8) + 128;
    Yuv {
        y: y.clamp(0, 255) as u8,
        u: u.clamp(0, 255) as u8,
        v: v.clamp(0, 255) as u8,
    }
}

fn hsv(h: f64, s: f64, v: f64) -> Yuv {
    let h = h.rem_euclid(1.0) * 6.0;
    let i = h.floor();
    let f = h - i;
    let (p, q, t) = (v * (1.0 - s), v * (1.0 - s * f), v * (1.0 - s * (1.0 - f)));
    let (r, g, b) = match i as u32 {
        0 => (v, t, p),
        1 => (q, v, p),
        2 => (p, v, t),
        3 => (p, q, v),
        4 => (t, p, v),
        _ => (v, p, q),
    };
    let c = |x: f64| (x * 255.0).round().clamp(0.0, 255.0) as u8;
    rgb_to_yuv(c(r), c(g), c(b))
}

struct Look {
    grad_a: Yuv,
    grad_b: Yuv,
    shape: Yuv,
    accent: Yuv,
    flat: Yuv,
    stripe_speed: usize,
    descending: bool,
    phase: f64,
    bars: usize,
}

impl Look {
    fn from_prompt(prompt: &str) -> Self {
        let mut rng = Rng(fnv1a(prompt.trim().as_bytes()));
        let hue = rng.unit();
        Look {
            grad_a: hsv(hue, 0.65, 0.85),
            grad_b: hsv(hue + 0.33 + rng.unit() * 0.2, 0.7, 0.35),
            shape: hsv(hue + 0.5, 0.8, 0.95),
            accent: hsv(hue + 0.15, 0.5, 1.0),
            flat: hsv(hue, 0.5, 0.5),
            stripe_speed: 2 + rng.below(5) as usize,
            descending: rng.below(2) == 1,
            phase: rng.unit() * std::f64::consts::TAU,
            bars: 3 + rng.below(4) as usize,
        }
    }
}

// ---------------------------------------------------------------------------
// Frame planes (I420)

#[derive(Clone)]
struct Planes {
    w: usize,
    h: usize,
    y: Vec<u8>,
    u: Vec<u8>,
    v: Vec<u8>,
}

impl Planes {
    fn new(w: usize, h: usize) -> Self {
        Self {
            w,
            h,
            y: vec![16; w * h],
            u: vec![128; (w / 2) * (h / 2)],
            v: vec![128; (w / 2) * (h / 2)],
        }
    }

    fn filled(w: usize, h: usize, c: Yuv) -> Self {
        Self {
            w,
            h,
            y: vec![c.y; w * h],
            u: vec![c.u; (w / 2) * (h / 2)],
            v: vec![c.v; (w / 2) * (h / 2)],
        }
    }

    /// Scales (cover + centre crop) and converts an RGB image.
    fn from_image(img: &RgbImage, w: usize, h: usize) -> Self {
        let scaled = if img.width() as usize == w && img.height() as usize == h {
            img.clone()
        } else {
            DynamicImage::ImageRgb8(img.clone())
                .resize_to_fill(w as u32, h as u32, FilterType::Triangle)
                .into_rgb8()
        };
        let raw = scaled.as_raw();
        let mut p = Planes::new(w, h);
        let cw = w / 2;
        for cy in 0..h / 2 {
            for cx in 0..cw {
                let mut su = 0i32;
                let mut sv = 0i32;
                for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                    let x = cx * 2 + dx;
                    let y = cy * 2 + dy;
                    let i = (y * w + x) * 3;
                    let c = rgb_to_yuv(raw[i], raw[i + 1], raw[i + 2]);
                    p.y[y * w + x] = c.y;
                    su += i32::from(c.u);
                    sv += i32::from(c.v);
                }
                p.u[cy * cw + cx] = ((su + 2) / 4) as u8;
                p.v[cy * cw + cx] = ((sv + 2) / 4) as u8;
            }
        }
        p
    }

    /// `a*(n-k)/n + b*k/n`, byte by byte.
    fn blend(a: &Planes, b: &Planes, k: u32, n: u32, out: &mut Planes) {
        let mix = |pa: &[u8], pb: &[u8], po: &mut [u8]| {
            for ((o, x), y) in po.iter_mut().zip(pa).zip(pb) {
                *o = ((u32::from(*x) * (n - k) + u32::from(*y) * k + n / 2) / n) as u8;
            }
        };
        mix(&a.y, &b.y, &mut out.y);
        mix(&a.u, &b.u, &mut out.u);
        mix(&a.v, &b.v, &mut out.v);
    }

    fn copy_from(&mut self, other: &Planes) {
        self.y.copy_from_slice(&other.y);
        self.u.copy_from_slice(&other.u);
        self.v.copy_from_slice(&other.v);
    }

    /// Fills the rectangle `[x0, x1) x [y0, y1)`, clipped to the frame.
    fn fill_rect(&mut self, x0: i64, y0: i64, x1: i64, y1: i64, c: Yuv) {
        let (w, h) = (self.w as i64, self.h as i64);
        let (x0, x1) = (x0.clamp(0, w), x1.clamp(0, w));
        let (y0, y1) = (y0.clamp(0, h), y1.clamp(0, h));
        if x0 >= x1 || y0 >= y1 {
            return;
        }
        for y in y0..y1 {
            let row = y as usize * self.w;
            self.y[row + x0 as usize..row + x1 as usize].fill(c.y);
        }
        let cw = self.w / 2;
        let (cx0, cx1) = ((x0 / 2) as usize, (((x1 + 1) / 2) as usize).min(cw));
        for cy in (y0 / 2) as usize..(((y1 + 1) / 2) as usize).min(self.h / 2) {
            let row = cy * cw;
            self.u[row + cx0..row + cx1].fill(c.u);
            self.v[row + cx0..row + cx1].fill(c.v);
        }
    }

    /// Copies `src` with its top-left corner at (`x`, `y`), clipped to the frame (`x`, `y` even).
    fn blit(&mut self, src: &Planes, x: usize, y: usize) {
        let (x, y) = (x & !1, y & !1);
        if x >= self.w || y >= self.h {
            return;
        }
        let cols = src.w.min(self.w - x);
        for row in 0..src.h.min(self.h - y) {
            let d = (y + row) * self.w + x;
            self.y[d..d + cols].copy_from_slice(&src.y[row * src.w..row * src.w + cols]);
        }
        let (cw, scw) = (self.w / 2, src.w / 2);
        let ccols = (cols / 2).min(scw);
        for crow in 0..(src.h / 2).min(self.h / 2 - y / 2) {
            let d = (y / 2 + crow) * cw + x / 2;
            self.u[d..d + ccols].copy_from_slice(&src.u[crow * scw..crow * scw + ccols]);
            self.v[d..d + ccols].copy_from_slice(&src.v[crow * scw..crow * scw + ccols]);
        }
    }

    /// Halves the brightness and the colour of `[x0, x1) x [y0, y1)` (a caption band).
    fn darken_rect(&mut self, x0: usize, y0: usize, x1: usize, y1: usize) {
        let (x1, y1) = (x1.min(self.w), y1.min(self.h));
        if x0 >= x1 || y0 >= y1 {
            return;
        }
        for y in y0..y1 {
            for p in &mut self.y[y * self.w + x0..y * self.w + x1] {
                *p = 16 + (*p).saturating_sub(16) / 3;
            }
        }
        let cw = self.w / 2;
        for cy in y0 / 2..(y1 / 2).min(self.h / 2) {
            for i in cy * cw + x0 / 2..cy * cw + (x1 / 2).min(cw) {
                self.u[i] = ((i32::from(self.u[i]) - 128) / 2 + 128) as u8;
                self.v[i] = ((i32::from(self.v[i]) - 128) / 2 + 128) as u8;
            }
        }
    }

    fn fill_circle(&mut self, cx: i64, cy: i64, r: i64, c: Yuv) {
        for dy in -r..=r {
            let half = isqrt(r * r - dy * dy);
            self.fill_rect(cx - half, cy + dy, cx + half + 1, cy + dy + 1, c);
        }
    }
}

fn isqrt(v: i64) -> i64 {
    if v <= 0 {
        return 0;
    }
    let mut x = (v as f64).sqrt() as i64;
    while x * x > v {
        x -= 1;
    }
    while (x + 1) * (x + 1) <= v {
        x += 1;
    }
    x
}

/// Diagonal gradient drawn by copying windows of a precomputed stripe.
struct Gradient {
    period: usize,
    y: Vec<u8>,
    u: Vec<u8>,
    v: Vec<u8>,
}

impl Gradient {
    fn new(look: &Look, w: usize, h: usize) -> Self {
        // Even period, long enough that the bands read as a gradient.
        let period = ((w.max(h) * 2) / 2) * 2;
        let tri = |i: usize| {
            let p = (i % period) as f64 / period as f64;
            1.0 - (2.0 * p - 1.0).abs()
        };
        let lerp =
            |a: u8, b: u8, t: f64| (f64::from(a) + (f64::from(b) - f64::from(a)) * t).round() as u8;
        let (a, b) = (look.grad_a, look.grad_b);
        let y = (0..period + w).map(|i| lerp(a.y, b.y, tri(i))).collect();
        let u = (0..period / 2 + w / 2)
            .map(|i| lerp(a.u, b.u, tri(2 * i)))
            .collect();
        let v = (0..period / 2 + w / 2)
            .map(|i| lerp(a.v, b.v, tri(2 * i)))
            .collect();
        Self { period, y, u, v }
    }

    fn draw(&self, p: &mut Planes, shift: usize, descending: bool) {
        let (w, h, cw) = (p.w, p.h, p.w / 2);
        let start = |row: usize| {
            let base = if descending {
                self.period - row % self.period
            } else {
                row
            };
            (base + shift) % self.period
        };
        for row in 0..h {
            let s = start(row);
            p.y[row * w..(row + 1) * w].copy_from_slice(&self.y[s..s + w]);
        }
        for crow in 0..h / 2 {
            let s = start(crow * 2) / 2;
            p.u[crow * cw..(crow + 1) * cw].copy_from_slice(&self.u[s..s + cw]);
            p.v[crow * cw..(crow + 1) * cw].copy_from_slice(&self.v[s..s + cw]);
        }
    }
}

enum Background {
    Animated(Box<Gradient>),
    /// The first frame, slowly zooming in and panning (a Ken Burns move), cross-fading into the
    /// last frame over the second half when there is one.
    Motion(Box<Motion>),
    /// Cross-fade between two fixed pictures, recomputed only when the blend step changes.
    Fade {
        from: Box<Planes>,
        to: Box<Planes>,
        steps: u32,
        cached_step: Option<u32>,
        cached: Box<Planes>,
    },
    /// A source video's frames in turn, each already tinted (a remix or an edit).
    Source(Vec<Planes>),
}

/// How far the first frame zooms in over the clip (1.0 + this).
const MOTION_ZOOM: f64 = 0.18;
/// Zoom levels computed up front; each frame crops one of them (row copies, no per-frame resize).
const MOTION_LEVELS: usize = 24;

struct Motion {
    w: usize,
    h: usize,
    /// The first frame scaled to cover `w×h` at zoom 1.0 … 1.0 + [`MOTION_ZOOM`].
    levels: Vec<Planes>,
    /// Where the window drifts to, as fractions of the free margin (0 = left/top).
    pan: (f64, f64),
    last: Option<Planes>,
    window: Planes,
}

impl Motion {
    fn new(first: &RgbImage, last: Option<&RgbImage>, w: usize, h: usize, prompt: &str) -> Self {
        let mut rng = Rng(fnv1a(prompt.trim().as_bytes()) ^ 0x6b65_6e62_7572_6e73);
        let pan = (rng.unit(), rng.unit());
        let levels = (0..MOTION_LEVELS)
            .map(|i| {
                let z = 1.0 + MOTION_ZOOM * i as f64 / (MOTION_LEVELS - 1) as f64;
                let lw = ((w as f64 * z / 2.0).round() as usize * 2).max(w);
                let lh = ((h as f64 * z / 2.0).round() as usize * 2).max(h);
                Planes::from_image(first, lw, lh)
            })
            .collect();
        Motion {
            w,
            h,
            levels,
            pan,
            last: last.map(|img| Planes::from_image(img, w, h)),
            window: Planes::new(w, h),
        }
    }

    /// The picture at `frac` (0 at the first frame, 1 at the last) into `out`.
    fn draw(&mut self, frac: f64, out: &mut Planes) {
        let (w, h) = (self.w, self.h);
        let index = ((frac * (MOTION_LEVELS - 1) as f64).round() as usize).min(MOTION_LEVELS - 1);
        let level = &self.levels[index];
        let (lw, lh) = (level.w, level.h);
        // Even offsets keep the chroma planes aligned.
        let ox = (((lw - w) as f64 * self.pan.0 * frac) as usize) & !1;
        let oy = (((lh - h) as f64 * self.pan.1 * frac) as usize) & !1;
        let target = if self.last.is_some() {
            &mut self.window
        } else {
            &mut *out
        };
        for row in 0..h {
            let src = (oy + row) * lw + ox;
            target.y[row * w..(row + 1) * w].copy_from_slice(&level.y[src..src + w]);
        }
        let (cw, lcw) = (w / 2, lw / 2);
        for crow in 0..h / 2 {
            let src = (oy / 2 + crow) * lcw + ox / 2;
            target.u[crow * cw..(crow + 1) * cw].copy_from_slice(&level.u[src..src + cw]);
            target.v[crow * cw..(crow + 1) * cw].copy_from_slice(&level.v[src..src + cw]);
        }
        if let Some(last) = &self.last {
            // Cross-fade over the second half, eased, in 64 steps.
            let x = ((frac - 0.5) * 2.0).clamp(0.0, 1.0);
            let eased = x * x * (3.0 - 2.0 * x);
            let k = (eased * 64.0).round() as u32;
            Planes::blend(&self.window, last, k, 64, out);
        }
    }
}

/// Reference pictures shown in turn as an inset card in the top-left corner with a white frame.
struct Cards {
    cards: Vec<Planes>,
    x: usize,
    y: usize,
}

const CARD_BORDER: usize = 4;

impl Cards {
    fn new(images: &[RgbImage], w: usize, h: usize) -> Self {
        let margin = ((w.min(h) / 24) & !1).max(2);
        let cards = images
            .iter()
            .filter(|img| img.width() > 0 && img.height() > 0)
            .map(|img| {
                // A third of the frame's height, keeping the picture's shape, at most half as wide.
                let ch = ((h / 3) & !1).max(2);
                let ratio = f64::from(img.width()) / f64::from(img.height());
                let cw = (((ch as f64 * ratio) as usize) & !1).clamp(2, ((w / 2) & !1).max(2));
                Planes::from_image(img, cw, ch)
            })
            .collect();
        Cards {
            cards,
            x: margin,
            y: margin,
        }
    }

    fn draw(&self, t: f64, seconds: f64, frame: &mut Planes) {
        if self.cards.is_empty() {
            return;
        }
        let slot = seconds / self.cards.len() as f64;
        let i = ((t / slot) as usize).min(self.cards.len() - 1);
        let card = &self.cards[i];
        let white = rgb_to_yuv(255, 255, 255);
        let (x, y, b) = (self.x as i64, self.y as i64, CARD_BORDER as i64);
        frame.fill_rect(
            x - b,
            y - b,
            x + card.w as i64 + b,
            y + card.h as i64 + b,
            white,
        );
        frame.blit(card, self.x, self.y);
    }
}

/// Captions drawn at the bottom centre on a dark band, glyphs scaled by whole pixels.
struct CaptionLayer {
    /// Each caption: its time span and its wrapped lines.
    items: Vec<(f64, f64, Vec<String>)>,
    scale: usize,
    w: usize,
    h: usize,
}

impl CaptionLayer {
    fn new(captions: &[Caption], w: usize, h: usize) -> Self {
        // 48 px tall text at 768p; never under 2x (32 px).
        let scale = (w.min(h) / 256).max(2);
        let max_px = (w * 9 / 10) / scale;
        let items = captions
            .iter()
            .map(|c| {
                let mut lines = text::wrap(&c.text, max_px);
                lines.truncate(3);
                (c.start, c.end, lines)
            })
            .collect();
        CaptionLayer { items, scale, w, h }
    }

    fn draw(&self, t: f64, frame: &mut Planes) {
        let Some((_, _, lines)) = self.items.iter().find(|(s, e, _)| t >= *s && t < *e) else {
            return;
        };
        let s = self.scale;
        let line_h = 18 * s;
        let block_h = line_h * lines.len() + 2 * s;
        let bottom = self.h.saturating_sub(self.h / 12);
        let top = bottom.saturating_sub(block_h);
        let widest = lines.iter().map(|l| text::text_width(l)).max().unwrap_or(0) * s;
        let band_l = self.w.saturating_sub(widest) / 2;
        let pad = 4 * s;
        frame.darken_rect(
            band_l.saturating_sub(pad),
            top.saturating_sub(pad),
            (band_l + widest + pad).min(self.w),
            (bottom + pad).min(self.h),
        );
        let white = rgb_to_yuv(255, 255, 255);
        for (n, line) in lines.iter().enumerate() {
            let lw = text::text_width(line) * s;
            let x0 = (self.w.saturating_sub(lw) / 2) as i64;
            let y0 = (top + s + n * line_h) as i64;
            text::for_each_pixel(line, |x, y| {
                let (px, py) = (x0 + (x * s) as i64, y0 + (y * s) as i64);
                frame.fill_rect(px, py, px + s as i64, py + s as i64, white);
            });
        }
    }
}

// ---------------------------------------------------------------------------
// Video

fn encode_video(
    spec: &RenderSpec,
    reporter: &mut Progress<'_>,
    cancel: &AtomicBool,
) -> Result<EncodedVideo, MediaError> {
    let (w, h) = (spec.width as usize, spec.height as usize);
    let fps = spec.fps;
    let total = spec.seconds * fps;
    let scene = text::without_dialogue(&spec.prompt);
    let look = Look::from_prompt(&scene);

    let mut background = match (&spec.first_frame, &spec.last_frame) {
        _ if !spec.source_frames.is_empty() => {
            // A fifth of the prompt's colour over each source frame: the prompt's guidance.
            let tint = Planes::filled(w, h, look.flat);
            let frames = spec
                .source_frames
                .iter()
                .map(|f| {
                    let mut tinted = Planes::new(w, h);
                    Planes::blend(&Planes::from_image(f, w, h), &tint, 1, 5, &mut tinted);
                    tinted
                })
                .collect();
            Background::Source(frames)
        }
        (None, None) => Background::Animated(Box::new(Gradient::new(&look, w, h))),
        (Some(first), last) => {
            Background::Motion(Box::new(Motion::new(first, last.as_ref(), w, h, &scene)))
        }
        (None, Some(last)) => Background::Fade {
            // Only a last frame: fade in from a flat prompt colour.
            from: Box::new(Planes::filled(w, h, look.flat)),
            to: Box::new(Planes::from_image(last, w, h)),
            steps: total.clamp(1, 48),
            cached_step: None,
            cached: Box::new(Planes::new(w, h)),
        },
    };
    let cards = Cards::new(&spec.reference_images, w, h);
    let captions = CaptionLayer::new(&spec.captions, w, h);

    let mut encoder = H264Encoder::new(w, h, f64::from(fps), false)?;
    let frame_ticks = MOVIE_TIMESCALE / fps;

    let mut frame = Planes::new(w, h);
    let tau = std::f64::consts::TAU;
    for i in 0..total {
        if cancel.load(Ordering::Relaxed) {
            return Err(MediaError::Canceled);
        }
        let t = f64::from(i) / f64::from(fps);
        let frac = if total > 1 {
            f64::from(i) / f64::from(total - 1)
        } else {
            1.0
        };
        match &mut background {
            Background::Animated(g) => {
                g.draw(&mut frame, i as usize * look.stripe_speed, look.descending);
                // Equaliser-like bars rising from the bottom.
                let bar_w = (w / (look.bars * 3)).max(2) as i64;
                for b in 0..look.bars {
                    let level = 0.5 + 0.5 * (t * 2.3 + b as f64 * 1.7 + look.phase).sin();
                    let bh = ((h as f64) * 0.05 + (h as f64) * 0.3 * level) as i64;
                    let x0 = (w as i64 * (2 * b as i64 + 1)) / (2 * look.bars as i64) - bar_w / 2;
                    frame.fill_rect(
                        x0,
                        h as i64 - bh - 10,
                        x0 + bar_w,
                        h as i64 - 10,
                        look.accent,
                    );
                }
                // A disc on a Lissajous path.
                let r = (h.min(w) / 7) as i64;
                let cx = w as f64 / 2.0
                    + (w as f64 / 2.0 - r as f64 - 4.0) * (tau * t / 5.0 + look.phase).sin();
                let cy = h as f64 / 2.0 + (h as f64 / 2.0 - r as f64 - 4.0) * (tau * t / 3.0).cos();
                frame.fill_circle(cx as i64, cy as i64, r, look.shape);
            }
            Background::Fade {
                from,
                to,
                steps,
                cached_step,
                cached,
            } => {
                let step = (frac * f64::from(*steps)).round() as u32;
                if *cached_step != Some(step) {
                    Planes::blend(from, to, step, *steps, cached);
                    *cached_step = Some(step);
                }
                frame.copy_from(cached);
            }
            Background::Motion(m) => m.draw(frac, &mut frame),
            Background::Source(frames) => {
                let at = ((frac * frames.len() as f64) as usize).min(frames.len() - 1);
                frame.copy_from(&frames[at]);
            }
        }
        cards.draw(t, f64::from(spec.seconds), &mut frame);
        captions.draw(t, &mut frame);
        // Progress bar along the bottom edge.
        let bar_len = ((w as f64) * f64::from(i + 1) / f64::from(total)).round() as i64;
        frame.fill_rect(0, h as i64 - 4, bar_len, h as i64, look.accent);

        encoder.encode(
            (&frame.y, &frame.u, &frame.v),
            u64::from(i) * u64::from(frame_ticks),
            frame_ticks,
        )?;
        reporter.report(((u64::from(i) + 1) * 95 / u64::from(total)) as u8);
    }
    encoder.finish()
}

// ---------------------------------------------------------------------------
// Audio

/// Pentatonic tone pattern over a soft drone, interleaved stereo.
fn synthesize_pcm(spec: &RenderSpec) -> Vec<i16> {
    let rate = f64::from(AUDIO_SAMPLE_RATE);
    let n = (u64::from(spec.seconds) * u64::from(AUDIO_SAMPLE_RATE)) as usize;
    let mut rng = Rng(fnv1a(spec.prompt.trim().as_bytes()) ^ 0x5eed_a0d1_0000_0000);
    let base = 196.0 * 2f64.powf(rng.below(12) as f64 / 12.0);
    const SCALE: [f64; 8] = [0.0, 2.0, 4.0, 7.0, 9.0, 12.0, 14.0, 16.0];
    let pattern: Vec<f64> = (0..8)
        .map(|_| base * 2f64.powf(SCALE[rng.below(8) as usize] / 12.0))
        .collect();
    let step = rate * 0.25; // a note every quarter second
    let tau = std::f64::consts::TAU;
    let mut out = Vec::with_capacity(n * 2);
    for i in 0..n {
        let t = i as f64 / rate;
        let note_index = (i as f64 / step) as usize;
        let note_t = (i as f64 - note_index as f64 * step) / rate;
        let f = pattern[note_index % pattern.len()];
        let attack = (note_t / 0.01).min(1.0);
        let env = attack * (-note_t * 6.0).exp();
        let tone = ((tau * f * t).sin() + 0.3 * (tau * 2.0 * f * t).sin()) * env * 0.35;
        let drone = (tau * base / 2.0 * t).sin() * 0.08;
        // Fade the whole clip in and out over 20 ms to avoid clicks.
        let edge = (t / 0.02)
            .min((spec.seconds as f64 - t) / 0.02)
            .clamp(0.0, 1.0);
        let pan = if note_index % 2 == 0 { 0.35 } else { 0.65 };
        let left = (tone * (1.0 - pan) * 2.0 + drone) * edge;
        let right = (tone * pan * 2.0 + drone) * edge;
        out.push((left * 32767.0).clamp(-32768.0, 32767.0) as i16);
        out.push((right * 32767.0).clamp(-32768.0, 32767.0) as i16);
    }
    if let Some(bed) = spec.audio_bed.as_ref().filter(|b| !b.samples.is_empty()) {
        let len = bed.samples.len() & !1;
        if len > 0 {
            for (i, s) in out.iter_mut().enumerate() {
                let b = i32::from(bed.samples[i % len]) / 2;
                *s = (i32::from(*s) + b).clamp(-32768, 32767) as i16;
            }
        }
    }
    out
}

fn encode_audio(spec: &RenderSpec) -> Result<AacTrack, MediaError> {
    let samples = u64::from(spec.seconds) * u64::from(AUDIO_SAMPLE_RATE);
    encode_aac_stereo_48k(&synthesize_pcm(spec), samples)
}
