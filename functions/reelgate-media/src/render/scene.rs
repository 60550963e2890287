//! What a clip's frames show, drawn layer by layer: the background (a gradient with shapes, a
//! zoom and pan over the first frame, a fade, or a source video's frames), the reference cards,
//! the captions and the progress bar.

use image::RgbImage;

use super::planes::{hsv, rgb_to_yuv, Planes, Yuv};
use super::seed::{fnv1a, Rng};
use super::spec::RenderSpec;
use crate::captions::{self as text, Caption};

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

/// Everything drawn on a clip's frames, built once from the spec.
pub(super) struct Scene {
    w: usize,
    h: usize,
    fps: u32,
    total: u32,
    seconds: u32,
    look: Look,
    background: Background,
    cards: Cards,
    captions: CaptionLayer,
}

impl Scene {
    pub(super) fn new(spec: &RenderSpec) -> Self {
        let (w, h) = (spec.width as usize, spec.height as usize);
        let fps = spec.fps;
        let total = spec.seconds * fps;
        let scene_prompt = text::without_dialogue(&spec.prompt);
        let look = Look::from_prompt(&scene_prompt);

        let background = match (&spec.first_frame, &spec.last_frame) {
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
            (Some(first), last) => Background::Motion(Box::new(Motion::new(
                first,
                last.as_ref(),
                w,
                h,
                &scene_prompt,
            ))),
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
        Scene {
            w,
            h,
            fps,
            total,
            seconds: spec.seconds,
            look,
            background,
            cards,
            captions,
        }
    }

    /// Frame `i` of the clip into `frame`.
    pub(super) fn draw(&mut self, i: u32, frame: &mut Planes) {
        let (w, h, fps, total) = (self.w, self.h, self.fps, self.total);
        let look = &self.look;
        let tau = std::f64::consts::TAU;
        let t = f64::from(i) / f64::from(fps);
        let frac = if total > 1 {
            f64::from(i) / f64::from(total - 1)
        } else {
            1.0
        };
        match &mut self.background {
            Background::Animated(g) => {
                g.draw(frame, i as usize * look.stripe_speed, look.descending);
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
            Background::Motion(m) => m.draw(frac, frame),
            Background::Source(frames) => {
                let at = ((frac * frames.len() as f64) as usize).min(frames.len() - 1);
                frame.copy_from(&frames[at]);
            }
        }
        self.cards.draw(t, f64::from(self.seconds), frame);
        self.captions.draw(t, frame);
        // Progress bar along the bottom edge.
        let bar_len = ((w as f64) * f64::from(i + 1) / f64::from(total)).round() as i64;
        frame.fill_rect(0, h as i64 - 4, bar_len, h as i64, look.accent);
    }
}
