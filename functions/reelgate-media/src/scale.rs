//! Scales YUV 4:2:0 pictures to cover a target frame and crops the centre, working on the three
//! planes directly with a separable filter in fixed-point arithmetic: a tent (bilinear) filter
//! whose support widens with the shrink factor, so enlarging is bilinear interpolation and
//! shrinking averages every source pixel under the output pixel (an area-like filter).

/// Fractional bits of the filter weights.
const WEIGHT_BITS: u32 = 14;
/// Fractional bits kept between the vertical and the horizontal pass.
const MID_BITS: u32 = 7;

/// The filter of one axis: for output `i`, `taps` weights applied to the source samples from
/// `starts[i]`.
struct Axis {
    taps: usize,
    starts: Vec<usize>,
    weights: Vec<i32>,
}

impl Axis {
    /// `dst_len` outputs over `src_len` inputs: output `i`'s centre lies at source position
    /// `offset + (i + 0.5) * step` (in pixels from the source's left/top edge).
    fn new(src_len: usize, dst_len: usize, offset: f64, step: f64) -> Self {
        let radius = step.max(1.0);
        let mut spans: Vec<(i64, Vec<f64>)> = Vec::with_capacity(dst_len);
        let mut taps = 1usize;
        for i in 0..dst_len {
            let c = offset + (i as f64 + 0.5) * step - 0.5;
            let lo = (c - radius).ceil() as i64;
            let hi = (c + radius).floor() as i64;
            let mut w: Vec<f64> = (lo..=hi)
                .map(|j| (1.0 - (j as f64 - c).abs() / radius).max(0.0))
                .collect();
            // Trim zero weights at both ends (an exact hit needs one tap, not three).
            let first = w.iter().position(|x| *x > 1e-9).unwrap_or(0);
            let last = w.iter().rposition(|x| *x > 1e-9).unwrap_or(first);
            w = w[first..=last].to_vec();
            taps = taps.max(w.len());
            spans.push((lo + first as i64, w));
        }
        let taps = taps.min(src_len.max(1));
        let mut starts = Vec::with_capacity(dst_len);
        let mut weights = vec![0i32; dst_len * taps];
        let one = f64::from(1u32 << WEIGHT_BITS);
        for (i, (lo, w)) in spans.iter().enumerate() {
            // A window of `taps` source samples inside the picture; taps that fall outside
            // are folded onto the nearest edge sample.
            let start = (*lo).clamp(0, (src_len - taps) as i64) as usize;
            let mut acc = vec![0f64; taps];
            let sum: f64 = w.iter().sum::<f64>().max(1e-12);
            for (k, x) in w.iter().enumerate() {
                let j = (lo + k as i64).clamp(0, src_len as i64 - 1) as usize;
                let slot = j.clamp(start, start + taps - 1) - start;
                acc[slot] += x / sum;
            }
            let row = &mut weights[i * taps..(i + 1) * taps];
            let mut total = 0i32;
            for (dst, x) in row.iter_mut().zip(&acc) {
                *dst = (x * one).round() as i32;
                total += *dst;
            }
            // Make the weights sum exactly to one.
            if let Some(max) = (0..taps).max_by_key(|k| row[*k]) {
                row[max] += (1 << WEIGHT_BITS) - total;
            }
            starts.push(start);
        }
        Self {
            taps,
            starts,
            weights,
        }
    }
}

/// Scaling of one plane with its filters and scratch rows.
struct PlaneScaler {
    horizontal: Axis,
    vertical: Axis,
    /// The source columns the horizontal filter reads.
    cols: std::ops::Range<usize>,
    dst_w: usize,
    dst_h: usize,
    acc: Vec<i32>,
    mid: Vec<u16>,
}

impl PlaneScaler {
    fn new(
        (src_w, src_h): (usize, usize),
        (dst_w, dst_h): (usize, usize),
        (x0, y0): (f64, f64),
        step: f64,
    ) -> Self {
        let horizontal = Axis::new(src_w, dst_w, x0, step);
        let vertical = Axis::new(src_h, dst_h, y0, step);
        let lo = horizontal.starts.iter().copied().min().unwrap_or(0);
        let hi = horizontal
            .starts
            .iter()
            .map(|s| s + horizontal.taps)
            .max()
            .unwrap_or(0);
        Self {
            horizontal,
            vertical,
            cols: lo..hi,
            dst_w,
            dst_h,
            acc: vec![0; hi - lo],
            mid: vec![0; hi - lo],
        }
    }

    /// Scales `src` (rows `stride` bytes apart) into `dst` (`dst_w` x `dst_h`, packed).
    fn run(&mut self, src: &[u8], stride: usize, dst: &mut [u8]) {
        let (lo, hi) = (self.cols.start, self.cols.end);
        let vt = self.vertical.taps;
        for oy in 0..self.dst_h {
            let start = self.vertical.starts[oy];
            let weights = &self.vertical.weights[oy * vt..(oy + 1) * vt];
            let row = |k: usize| &src[(start + k) * stride + lo..(start + k) * stride + hi];
            let mid = &mut self.mid[..];
            match vt {
                1 => vertical::<1>([row(0)], weights, mid),
                2 => vertical::<2>([row(0), row(1)], weights, mid),
                3 => vertical::<3>([row(0), row(1), row(2)], weights, mid),
                4 => vertical::<4>([row(0), row(1), row(2), row(3)], weights, mid),
                _ => {
                    let acc = &mut self.acc;
                    acc.fill(0);
                    for (k, w) in weights.iter().enumerate() {
                        for (a, p) in acc.iter_mut().zip(row(k)) {
                            *a = a.wrapping_add(w.wrapping_mul(i32::from(*p)));
                        }
                    }
                    for (m, a) in mid.iter_mut().zip(acc.iter()) {
                        *m = narrow(*a);
                    }
                }
            }
            let out = &mut dst[oy * self.dst_w..(oy + 1) * self.dst_w];
            let (hs, hw) = (&self.horizontal.starts[..], &self.horizontal.weights[..]);
            let mid = &self.mid[..];
            match self.horizontal.taps {
                1 => horizontal::<1>(mid, lo, hs, hw, out),
                2 => horizontal::<2>(mid, lo, hs, hw, out),
                3 => horizontal::<3>(mid, lo, hs, hw, out),
                4 => horizontal::<4>(mid, lo, hs, hw, out),
                5 => horizontal::<5>(mid, lo, hs, hw, out),
                6 => horizontal::<6>(mid, lo, hs, hw, out),
                7 => horizontal::<7>(mid, lo, hs, hw, out),
                8 => horizontal::<8>(mid, lo, hs, hw, out),
                n => {
                    for (x, o) in out.iter_mut().enumerate() {
                        let s = hs[x] - lo;
                        let sum = mid[s..s + n]
                            .iter()
                            .zip(&hw[x * n..(x + 1) * n])
                            .fold(0i32, |acc, (p, w)| {
                                acc.wrapping_add(i32::from(*p).wrapping_mul(*w))
                            });
                        *o = to_pixel(sum);
                    }
                }
            }
        }
    }
}

/// From vertical-pass sums (weights of [`WEIGHT_BITS`]) to the intermediate precision.
#[inline(always)]
fn narrow(sum: i32) -> u16 {
    let shift = WEIGHT_BITS - MID_BITS;
    (sum.wrapping_add(1 << (shift - 1)) >> shift).clamp(0, i32::from(u16::MAX)) as u16
}

/// From horizontal-pass sums to a pixel.
#[inline(always)]
fn to_pixel(sum: i32) -> u8 {
    let shift = 2 * WEIGHT_BITS - MID_BITS;
    (sum.wrapping_add(1 << (shift - 1)) >> shift).clamp(0, 255) as u8
}

/// One output row of the vertical pass from `T` source rows (a loop the compiler vectorises).
#[inline(always)]
fn vertical<const T: usize>(rows: [&[u8]; T], weights: &[i32], mid: &mut [u16]) {
    let n = mid.len();
    let rows: [&[u8]; T] = rows.map(|r| &r[..n]);
    let w: [i32; T] = std::array::from_fn(|k| weights[k]);
    if T == 1 {
        for (m, p) in mid.iter_mut().zip(rows[0]) {
            *m = u16::from(*p) << MID_BITS;
        }
        return;
    }
    for (x, m) in mid.iter_mut().enumerate() {
        let mut sum = 0i32;
        for k in 0..T {
            sum = sum.wrapping_add(w[k].wrapping_mul(i32::from(rows[k][x])));
        }
        *m = narrow(sum);
    }
}

/// One output row of the horizontal pass with `T` taps per pixel.
#[inline(always)]
fn horizontal<const T: usize>(
    mid: &[u16],
    lo: usize,
    starts: &[usize],
    weights: &[i32],
    out: &mut [u8],
) {
    for ((o, s), w) in out.iter_mut().zip(starts).zip(weights.chunks_exact(T)) {
        let s = s - lo;
        let Some(p) = mid.get(s..s + T) else { continue };
        let mut sum = 0i32;
        for k in 0..T {
            sum = sum.wrapping_add(i32::from(p[k]).wrapping_mul(w[k]));
        }
        *o = to_pixel(sum);
    }
}

/// Scales `src_w`x`src_h` YUV 4:2:0 pictures to cover `dst_w`x`dst_h` (even sides) and keeps
/// the centre.
pub(crate) struct CoverScaler {
    luma: PlaneScaler,
    chroma: PlaneScaler,
    dst_w: usize,
    dst_h: usize,
}

/// One YUV 4:2:0 picture in memory: packed planes of `w`x`h` and `w/2`x`h/2`.
pub(crate) struct Picture {
    pub y: Vec<u8>,
    pub u: Vec<u8>,
    pub v: Vec<u8>,
}

impl Picture {
    pub fn new(w: usize, h: usize) -> Self {
        Self {
            y: vec![0; w * h],
            u: vec![128; (w / 2) * (h / 2)],
            v: vec![128; (w / 2) * (h / 2)],
        }
    }
}

impl CoverScaler {
    pub fn new(src_w: usize, src_h: usize, dst_w: usize, dst_h: usize) -> Self {
        let (sw, sh) = (src_w as f64, src_h as f64);
        let scale = (dst_w as f64 / sw).max(dst_h as f64 / sh);
        let step = 1.0 / scale;
        // The source region that fills the frame, centred.
        let x0 = (sw - dst_w as f64 * step) / 2.0;
        let y0 = (sh - dst_h as f64 * step) / 2.0;
        let luma = PlaneScaler::new((src_w, src_h), (dst_w, dst_h), (x0, y0), step);
        let chroma = PlaneScaler::new(
            (src_w / 2, src_h / 2),
            (dst_w / 2, dst_h / 2),
            (x0 / 2.0, y0 / 2.0),
            step,
        );
        Self {
            luma,
            chroma,
            dst_w,
            dst_h,
        }
    }

    /// Scales one picture given as planes with their strides into `out`.
    pub fn scale(
        &mut self,
        (y, u, v): (&[u8], &[u8], &[u8]),
        (y_stride, uv_stride): (usize, usize),
        out: &mut Picture,
    ) {
        debug_assert_eq!(out.y.len(), self.dst_w * self.dst_h);
        self.luma.run(y, y_stride, &mut out.y);
        self.chroma.run(u, uv_stride, &mut out.u);
        self.chroma.run(v, uv_stride, &mut out.v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scale_plane(src: &[u8], sw: usize, sh: usize, dw: usize, dh: usize) -> Vec<u8> {
        let mut s = CoverScaler::new(sw, sh, dw, dh);
        let mut out = Picture::new(dw, dh);
        let cu = vec![128u8; (sw / 2) * (sh / 2)];
        s.scale((src, &cu, &cu), (sw, sw / 2), &mut out);
        out.y
    }

    #[test]
    fn identity_is_a_copy() {
        let src: Vec<u8> = (0..64 * 32).map(|i| (i * 7 % 251) as u8).collect();
        assert_eq!(scale_plane(&src, 64, 32, 64, 32), src);
    }

    #[test]
    fn flat_stays_flat_when_shrinking_and_enlarging() {
        let src = vec![77u8; 100 * 60];
        for (dw, dh) in [(30, 18), (256, 300), (40, 40), (14, 2)] {
            assert!(scale_plane(&src, 100, 60, dw, dh).iter().all(|p| *p == 77));
        }
    }

    #[test]
    fn covers_and_crops_the_centre() {
        // Left quarter black, middle half grey, right quarter white; a square crop keeps the
        // middle half only.
        let (w, h) = (64, 16);
        let src: Vec<u8> = (0..w * h)
            .map(|i| match i % w {
                x if x < 16 => 0,
                x if x < 48 => 128,
                _ => 255,
            })
            .collect();
        let out = scale_plane(&src, w, h, 16, 16);
        // The crop spans source columns 24..40, all grey.
        assert!(out.iter().all(|p| *p == 128), "{out:?}");
        // Shrinking 4x keeps the halves' averages.
        let out = scale_plane(&src, w, h, 16, 4);
        assert_eq!(out[0], 0);
        assert_eq!(out[8], 128);
        assert_eq!(out[15], 255);
    }
}
