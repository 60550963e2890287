//! PDF pages to PNG images, in pure Rust (`hayro`), so it runs in Lambda without layers.
//!
//! Pages are rendered at [`DPI`] on a white background, at most [`MAX_PAGES`] pages, each side at
//! most [`MAX_SIDE`] pixels (a huge page is scaled down rather than allocating gigabytes).
//!
//! hayro inflates streams without an output limit and sizes image buffers from the document's own
//! `/Width` and `/Height`, so [`rasterize`] first runs [`prescan`]: every stream is inflated with
//! a counting, bounded decoder into nothing ([`MAX_STREAM_BYTES`] each, [`MAX_DOCUMENT_BYTES`] in
//! all) and every image XObject's declared size is checked ([`MAX_IMAGE_PIXELS`]); only a document
//! that passes is handed to hayro. The pre-scan is a first line that names the limit a caller hit;
//! what it cannot see (other decompressing filters, indirect image sizes, inline images) is
//! bounded by where this runs: never in the API process, but in a child process with memory and
//! CPU limits (`reelgate pdf-rasterize`) or a Lambda function of its own, behind the
//! [`crate::ports::pdf::PdfRasterizer`] port.

use hayro::hayro_interpret::InterpreterSettings;
use hayro::hayro_syntax::Pdf;
use hayro::vello_cpu::color::palette::css::WHITE;
use hayro::{render, PixmapSettings, RenderCache, RenderSettings};

/// Pages a PDF may have to be forwarded; a longer one is refused rather than silently cut.
pub const MAX_PAGES: usize = 50;
/// Rendering resolution: readable text for vision models at a modest image size.
pub const DPI: f32 = 100.0;
/// Longest side of a page image, in pixels.
pub const MAX_SIDE: f32 = 2000.0;
/// Decompressed bytes one stream may inflate to: room for a [`MAX_IMAGE_PIXELS`] CMYK image.
pub const MAX_STREAM_BYTES: u64 = 64 * 1024 * 1024;
/// Decompressed bytes all the streams of one document may inflate to together.
pub const MAX_DOCUMENT_BYTES: u64 = 256 * 1024 * 1024;
/// Pixels (width × height) one image XObject may declare: 4096 × 4096.
pub const MAX_IMAGE_PIXELS: u64 = 4096 * 4096;
/// Bytes of PNG all the page images of one document may take together.
pub const MAX_OUTPUT_BYTES: u64 = 32 * 1024 * 1024;
/// Bytes of PDF accepted (what the Responses input accepts; a larger one never gets here).
pub const MAX_INPUT_BYTES: u64 = 50 * 1024 * 1024;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PdfError {
    #[error("the PDF cannot be read (damaged or encrypted)")]
    Unreadable,
    #[error("the PDF has no pages")]
    Empty,
    #[error("the PDF has {0} pages; at most {MAX_PAGES} are accepted")]
    TooManyPages(usize),
    #[error(
        "a stream of the PDF decompresses to more than {limit} bytes, the most one stream may"
    )]
    StreamTooLarge { limit: u64 },
    #[error(
        "the PDF's streams decompress to more than {limit} bytes in all, the most a document may"
    )]
    DocumentTooLarge { limit: u64 },
    #[error("an image of the PDF declares {width} x {height} pixels; at most {limit} pixels per image are accepted")]
    ImageTooLarge { width: u64, height: u64, limit: u64 },
    #[error("the page images of the PDF take more than {MAX_OUTPUT_BYTES} bytes")]
    OutputTooLarge,
    #[error("a page could not be encoded as PNG: {0}")]
    Encode(String),
}

/// Renders every page to a PNG after [`prescan`]. CPU-bound, and trusted with nothing: run it only
/// where a runaway is contained (see the module documentation).
pub fn rasterize(bytes: Vec<u8>) -> Result<Vec<Vec<u8>>, PdfError> {
    prescan(&bytes)?;
    let pdf = Pdf::new(bytes).map_err(|_| PdfError::Unreadable)?;
    let pages = pdf.pages();
    if pages.is_empty() {
        return Err(PdfError::Empty);
    }
    if pages.len() > MAX_PAGES {
        return Err(PdfError::TooManyPages(pages.len()));
    }
    let cache = RenderCache::new();
    let interpreter = InterpreterSettings::default();
    let render_settings = RenderSettings::default();
    let mut out = Vec::with_capacity(pages.len());
    let mut total = 0u64;
    for page in pages.iter() {
        // PDF user space is 72 units per inch.
        let (w, h) = page.render_dimensions();
        let mut scale = DPI / 72.0;
        let longest = w.max(h) * scale;
        if longest > MAX_SIDE {
            scale *= MAX_SIDE / longest;
        }
        // A degenerate page (zero size) still yields a 1-pixel image rather than a panic.
        if !(scale.is_finite() && scale > 0.0) {
            scale = 1.0;
        }
        let pixmap = render(
            page,
            &cache,
            &interpreter,
            &render_settings,
            &PixmapSettings {
                x_scale: scale,
                y_scale: scale,
                bg_color: WHITE,
            },
        );
        let png = pixmap
            .into_png()
            .map_err(|e| PdfError::Encode(e.to_string()))?;
        total += png.len() as u64;
        if total > MAX_OUTPUT_BYTES {
            return Err(PdfError::OutputTooLarge);
        }
        out.push(png);
    }
    Ok(out)
}

/// The caps [`prescan`] checks.
#[derive(Clone, Copy, Debug)]
pub struct Caps {
    pub stream_bytes: u64,
    pub document_bytes: u64,
    pub image_pixels: u64,
}

pub const CAPS: Caps = Caps {
    stream_bytes: MAX_STREAM_BYTES,
    document_bytes: MAX_DOCUMENT_BYTES,
    image_pixels: MAX_IMAGE_PIXELS,
};

/// [`prescan_within`] the documented [`CAPS`].
pub fn prescan(bytes: &[u8]) -> Result<(), PdfError> {
    prescan_within(bytes, CAPS)
}

/// Checks the document against the caps without building anything from it: each `stream`
/// keyword's data is inflated by a bounded decoder that counts and discards its output, and each
/// image XObject's `/Width` × `/Height` is compared with [`MAX_IMAGE_PIXELS`].
///
/// It reads the raw bytes rather than parsing the document, because parsing is what inflates:
/// object and cross-reference streams are decompressed by `Pdf::new` itself. Streams cannot sit
/// inside compressed objects, so every one of them is visible here. Inflation runs from the
/// keyword to the end of the zlib stream, not to the next `endstream`, so `endstream` bytes
/// planted in the compressed data cannot hide the rest of it.
pub fn prescan_within(bytes: &[u8], caps: Caps) -> Result<(), PdfError> {
    let mut document = 0u64;
    let mut at = 0;
    while let Some(found) = find(&bytes[at..], b"stream") {
        let keyword = at + found;
        at = keyword + b"stream".len();
        if keyword >= 3 && &bytes[keyword - 3..keyword] == b"end" {
            continue;
        }
        let data = match &bytes[at..] {
            [b'\r', b'\n', rest @ ..] | [b'\n', rest @ ..] | [b'\r', rest @ ..] => rest,
            _ => continue,
        };
        let dict = stream_dict(bytes, keyword);
        if is_image(dict) {
            if let (Some(width), Some(height)) =
                (int_after(dict, b"/Width"), int_after(dict, b"/Height"))
            {
                if width.saturating_mul(height) > caps.image_pixels {
                    return Err(PdfError::ImageTooLarge {
                        width,
                        height,
                        limit: caps.image_pixels,
                    });
                }
            }
        }
        // A filter chain inflates the output of the previous stage again; each stage is counted.
        let stages = count(dict, b"/FlateDecode").max(1);
        let inflated = inflated_size(data, stages, caps.stream_bytes)?;
        document += inflated;
        if document > caps.document_bytes {
            return Err(PdfError::DocumentTooLarge {
                limit: caps.document_bytes,
            });
        }
    }
    Ok(())
}

/// The dictionary text before a `stream` keyword: back to the `obj` keyword that opens its
/// object, and never more than 16 KiB (a longer stream dictionary is rare; what it hides is
/// left to the process limits).
fn stream_dict(bytes: &[u8], keyword: usize) -> &[u8] {
    let from = keyword.saturating_sub(16 * 1024);
    let window = &bytes[from..keyword];
    match rfind(window, b"obj") {
        Some(i) => &window[i..],
        None => window,
    }
}

fn is_image(dict: &[u8]) -> bool {
    let Some(i) = find(dict, b"/Subtype") else {
        return false;
    };
    let rest = &dict[i + b"/Subtype".len()..];
    let rest = &rest[rest.iter().take_while(|b| b.is_ascii_whitespace()).count()..];
    rest.starts_with(b"/Image")
}

/// The direct integer after `key` (`/Width 800`); None when the value is anything else (an
/// indirect reference is left to the renderer's process limits).
fn int_after(dict: &[u8], key: &[u8]) -> Option<u64> {
    let mut from = 0;
    while let Some(i) = find(&dict[from..], key) {
        let after = from + i + key.len();
        from = after;
        // `/Width` must not match `/WidthX`.
        if dict.get(after).is_some_and(|b| b.is_ascii_alphanumeric()) {
            continue;
        }
        let rest = &dict[after..];
        let rest = &rest[rest.iter().take_while(|b| b.is_ascii_whitespace()).count()..];
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        let value = std::str::from_utf8(&rest[..digits]).ok()?;
        // A number too long for u64 is certainly over any cap.
        let n = value.parse::<u64>().unwrap_or(u64::MAX);
        let tail = &rest[digits..];
        let tail = &tail[tail.iter().take_while(|b| b.is_ascii_whitespace()).count()..];
        // `5 0 R` is a reference, not the value 5.
        let reference = tail.iter().take_while(|b| b.is_ascii_digit()).count() > 0 && {
            let t = &tail[tail.iter().take_while(|b| b.is_ascii_digit()).count()..];
            let t = &t[t.iter().take_while(|b| b.is_ascii_whitespace()).count()..];
            t.first() == Some(&b'R')
        };
        return if reference { None } else { Some(n) };
    }
    None
}

/// How many bytes `data` inflates to through `stages` chained inflaters, the output of each
/// stage counted against `cap` (and, summed, against nothing else here). Data that is not
/// deflate at all inflates to 0; a corrupt stream counts what came out before the damage.
fn inflated_size(data: &[u8], stages: usize, cap: u64) -> Result<u64, PdfError> {
    use flate2::{Decompress, FlushDecompress, Status};
    // The first stage decides zlib or raw deflate the way the renderer does (zlib first).
    let zlib = data.len() >= 2
        && (data[0] & 0x0f) == 8
        && (u16::from(data[0]) << 8 | u16::from(data[1])) % 31 == 0;
    let mut decoders: Vec<Decompress> = (0..stages)
        .map(|i| Decompress::new(i > 0 || zlib))
        .collect();
    let mut counted = vec![0u64; stages];
    let mut done = vec![false; stages];
    let mut buffers: Vec<Vec<u8>> = vec![vec![0u8; 64 * 1024]; stages];
    // Feeds `input` to stage `i`, pushing its output through the later stages.
    fn feed(
        i: usize,
        mut input: &[u8],
        decoders: &mut [Decompress],
        buffers: &mut [Vec<u8>],
        counted: &mut [u64],
        done: &mut [bool],
        cap: u64,
    ) -> Result<(), PdfError> {
        while !done[i] {
            let before_in = decoders[i].total_in();
            let before_out = decoders[i].total_out();
            let mut out = std::mem::take(&mut buffers[i]);
            let status = decoders[i].decompress(input, &mut out, FlushDecompress::None);
            let consumed = (decoders[i].total_in() - before_in) as usize;
            let produced = (decoders[i].total_out() - before_out) as usize;
            input = &input[consumed..];
            counted[i] += produced as u64;
            if counted[i] > cap {
                return Err(PdfError::StreamTooLarge { limit: cap });
            }
            let result = if i + 1 < decoders.len() && produced > 0 {
                feed(
                    i + 1,
                    &out[..produced],
                    decoders,
                    buffers,
                    counted,
                    done,
                    cap,
                )
            } else {
                Ok(())
            };
            buffers[i] = out;
            result?;
            match status {
                Ok(Status::StreamEnd) | Err(_) => done[i] = true,
                Ok(_) if consumed == 0 && produced == 0 => break,
                Ok(_) => {}
            }
        }
        Ok(())
    }
    feed(
        0,
        data,
        &mut decoders,
        &mut buffers,
        &mut counted,
        &mut done,
        cap,
    )?;
    Ok(counted.iter().sum())
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn rfind(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).rposition(|w| w == needle)
}

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal valid PDF with one blank page per entry of `sizes` (width, height in points).
    /// The cross-reference offsets are computed rather than hand-counted.
    fn blank_pdf(sizes: &[(u32, u32)]) -> Vec<u8> {
        let n = sizes.len();
        let mut objects: Vec<String> = Vec::new();
        objects.push("<< /Type /Catalog /Pages 2 0 R >>".into());
        let kids: Vec<String> = (0..n).map(|i| format!("{} 0 R", 3 + 2 * i)).collect();
        objects.push(format!(
            "<< /Type /Pages /Kids [{}] /Count {n} >>",
            kids.join(" ")
        ));
        for (i, (w, h)) in sizes.iter().enumerate() {
            let content = format!("0 0 1 rg 10 10 {} {} re f", w / 2, h / 2);
            objects.push(format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {w} {h}] /Contents {} 0 R >>",
                4 + 2 * i
            ));
            objects.push(format!(
                "<< /Length {} >>\nstream\n{content}\nendstream",
                content.len()
            ));
        }
        let mut pdf = b"%PDF-1.4\n".to_vec();
        let mut offsets = Vec::new();
        for (i, body) in objects.iter().enumerate() {
            offsets.push(pdf.len());
            pdf.extend_from_slice(format!("{} 0 obj\n{body}\nendobj\n", i + 1).as_bytes());
        }
        let xref = pdf.len();
        pdf.extend_from_slice(
            format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
        );
        for off in offsets {
            pdf.extend_from_slice(format!("{off:010} 00000 n \n").as_bytes());
        }
        pdf.extend_from_slice(
            format!(
                "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
                objects.len() + 1
            )
            .as_bytes(),
        );
        pdf
    }

    #[test]
    fn two_pages_become_two_pngs() {
        let pngs = rasterize(blank_pdf(&[(612, 792), (300, 200)])).expect("renders");
        assert_eq!(pngs.len(), 2);
        for png in &pngs {
            assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        }
    }

    /// A one-page PDF whose content stream is `data` under the stream dictionary `dict`, and
    /// whose resources hold `extra` as object 5 (an image XObject).
    fn pdf_with(dict: &str, data: &[u8], extra: Option<(&str, &[u8])>) -> Vec<u8> {
        let mut pdf = b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n".to_vec();
        pdf.extend_from_slice(b"2 0 obj\n<< /Type /Pages /Kids [3 0 R] /Count 1 >>\nendobj\n");
        pdf.extend_from_slice(b"3 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /XObject << /Im1 5 0 R >> >> >>\nendobj\n");
        pdf.extend_from_slice(
            format!("4 0 obj\n<< {dict} /Length {} >>\nstream\n", data.len()).as_bytes(),
        );
        pdf.extend_from_slice(data);
        pdf.extend_from_slice(b"\nendstream\nendobj\n");
        if let Some((dict, data)) = extra {
            pdf.extend_from_slice(
                format!("5 0 obj\n<< {dict} /Length {} >>\nstream\n", data.len()).as_bytes(),
            );
            pdf.extend_from_slice(data);
            pdf.extend_from_slice(b"\nendstream\nendobj\n");
        }
        pdf.extend_from_slice(b"trailer\n<< /Root 1 0 R >>\n%%EOF\n");
        pdf
    }

    fn zlib(data: &[u8]) -> Vec<u8> {
        use std::io::Write as _;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        z.write_all(data).unwrap();
        z.finish().unwrap()
    }

    const SMALL: Caps = Caps {
        stream_bytes: 1 << 20,
        document_bytes: 3 << 20,
        image_pixels: 1000 * 1000,
    };

    #[test]
    fn a_stream_inflating_past_its_cap_is_refused_before_the_renderer_sees_it() {
        let bomb = zlib(&vec![0u8; (1 << 20) + 1]);
        let pdf = pdf_with("/Filter /FlateDecode", &bomb, None);
        assert_eq!(
            prescan_within(&pdf, SMALL),
            Err(PdfError::StreamTooLarge { limit: 1 << 20 })
        );
        // Just under the cap passes; raw deflate (no zlib header) is counted the same.
        let fits = pdf_with("/Filter /FlateDecode", &zlib(&vec![0u8; 1 << 20]), None);
        assert_eq!(prescan_within(&fits, SMALL), Ok(()));
        let raw = {
            use std::io::Write as _;
            let mut z = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
            z.write_all(&vec![0u8; 2 << 20]).unwrap();
            z.finish().unwrap()
        };
        assert!(matches!(
            prescan_within(&pdf_with("/Filter /FlateDecode", &raw, None), SMALL),
            Err(PdfError::StreamTooLarge { .. })
        ));
    }

    #[test]
    fn the_documents_streams_count_together_and_each_stage_of_a_chain_counts() {
        let part = zlib(&vec![0u8; 900 * 1024]);
        let image = "/Type /XObject /Subtype /Image /Width 10 /Height 10 /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode";
        // Two streams of 0.9 MiB each fit 3 MiB; four do not.
        let two = pdf_with("/Filter /FlateDecode", &part, Some((image, &part)));
        assert_eq!(prescan_within(&two, SMALL), Ok(()));
        let mut four = two.clone();
        four.extend_from_slice(&two);
        assert_eq!(
            prescan_within(&four, SMALL),
            Err(PdfError::DocumentTooLarge { limit: 3 << 20 })
        );
        // zlib inside zlib: the outer stage inflates to a few KiB, the inner one to 4 MiB.
        let double = zlib(&zlib(&vec![0u8; 4 << 20]));
        let chained = pdf_with("/Filter [/FlateDecode /FlateDecode]", &double, None);
        assert!(matches!(
            prescan_within(&chained, SMALL),
            Err(PdfError::StreamTooLarge { .. })
        ));
    }

    #[test]
    fn an_image_declaring_too_many_pixels_is_refused_and_a_reference_is_left_to_the_limits() {
        let data = zlib(&[0u8; 16]);
        let huge = "/Type /XObject /Subtype /Image /Width 2000 /Height 1000 /BitsPerComponent 1 /Filter /FlateDecode";
        assert_eq!(
            prescan_within(&pdf_with("", b"", Some((huge, &data))), SMALL),
            Err(PdfError::ImageTooLarge {
                width: 2000,
                height: 1000,
                limit: 1000 * 1000
            })
        );
        let no_spaces =
            "/Type/XObject/Subtype/Image/Width 99999999999999999999999/Height 2/Filter/FlateDecode";
        assert!(matches!(
            prescan_within(&pdf_with("", b"", Some((no_spaces, &data))), SMALL),
            Err(PdfError::ImageTooLarge { .. })
        ));
        let small = "/Type /XObject /Subtype /Image /Width 1000 /Height 1000 /Filter /FlateDecode";
        assert_eq!(
            prescan_within(&pdf_with("", b"", Some((small, &data))), SMALL),
            Ok(())
        );
        let referenced =
            "/Type /XObject /Subtype /Image /Width 6 0 R /Height 5000 /Filter /FlateDecode";
        assert_eq!(
            prescan_within(&pdf_with("", b"", Some((referenced, &data))), SMALL),
            Ok(())
        );
        // Not an image: the same numbers mean nothing.
        let form = "/Type /XObject /Subtype /Form /Width 5000 /Height 5000";
        assert_eq!(
            prescan_within(&pdf_with("", b"", Some((form, &data))), SMALL),
            Ok(())
        );
    }

    #[test]
    fn rasterize_applies_the_documented_caps() {
        let image = "/Type /XObject /Subtype /Image /Width 4097 /Height 4096 /ColorSpace /DeviceGray /BitsPerComponent 1 /Filter /FlateDecode";
        assert_eq!(
            rasterize(pdf_with("", b"", Some((image, &zlib(&[0u8; 16]))))),
            Err(PdfError::ImageTooLarge {
                width: 4097,
                height: 4096,
                limit: MAX_IMAGE_PIXELS
            })
        );
    }

    #[test]
    fn garbage_is_unreadable_and_huge_pages_are_scaled_down() {
        assert!(rasterize(b"not a pdf".to_vec()).is_err());
        let pngs = rasterize(blank_pdf(&[(14400, 14400)])).expect("renders");
        assert_eq!(pngs.len(), 1);
    }
}
