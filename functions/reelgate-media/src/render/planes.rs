//! Frame planes (I420) and their colours: the pixel operations every layer of a picture is
//! drawn with, written as whole-row slice copies and fills.

use image::imageops::FilterType;
use image::{DynamicImage, RgbImage};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Yuv {
    pub(super) y: u8,
    pub(super) u: u8,
    pub(super) v: u8,
}

/// BT.601 limited-range conversion (what the VUI in the stream declares).
pub(super) fn rgb_to_yuv(r: u8, g: u8, b: u8) -> Yuv {
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

pub(super) fn hsv(h: f64, s: f64, v: f64) -> Yuv {
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

#[derive(Clone)]
pub(super) struct Planes {
    pub(super) w: usize,
    pub(super) h: usize,
    pub(super) y: Vec<u8>,
    pub(super) u: Vec<u8>,
    pub(super) v: Vec<u8>,
}

impl Planes {
    pub(super) fn new(w: usize, h: usize) -> Self {
        Self {
            w,
            h,
            y: vec![16; w * h],
            u: vec![128; (w / 2) * (h / 2)],
            v: vec![128; (w / 2) * (h / 2)],
        }
    }

    pub(super) fn filled(w: usize, h: usize, c: Yuv) -> Self {
        Self {
            w,
            h,
            y: vec![c.y; w * h],
            u: vec![c.u; (w / 2) * (h / 2)],
            v: vec![c.v; (w / 2) * (h / 2)],
        }
    }

    /// Scales (cover + centre crop) and converts an RGB image.
    pub(super) fn from_image(img: &RgbImage, w: usize, h: usize) -> Self {
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
    pub(super) fn blend(a: &Planes, b: &Planes, k: u32, n: u32, out: &mut Planes) {
        let mix = |pa: &[u8], pb: &[u8], po: &mut [u8]| {
            for ((o, x), y) in po.iter_mut().zip(pa).zip(pb) {
                *o = ((u32::from(*x) * (n - k) + u32::from(*y) * k + n / 2) / n) as u8;
            }
        };
        mix(&a.y, &b.y, &mut out.y);
        mix(&a.u, &b.u, &mut out.u);
        mix(&a.v, &b.v, &mut out.v);
    }

    pub(super) fn copy_from(&mut self, other: &Planes) {
        self.y.copy_from_slice(&other.y);
        self.u.copy_from_slice(&other.u);
        self.v.copy_from_slice(&other.v);
    }

    /// Fills the rectangle `[x0, x1) x [y0, y1)`, clipped to the frame.
    pub(super) fn fill_rect(&mut self, x0: i64, y0: i64, x1: i64, y1: i64, c: Yuv) {
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
    pub(super) fn blit(&mut self, src: &Planes, x: usize, y: usize) {
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
    pub(super) fn darken_rect(&mut self, x0: usize, y0: usize, x1: usize, y1: usize) {
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

    pub(super) fn fill_circle(&mut self, cx: i64, cy: i64, r: i64, c: Yuv) {
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
