//! PDF pages to PNG images, in pure Rust (`hayro`), so it runs in Lambda without layers.
//!
//! Pages are rendered at [`DPI`] on a white background, at most [`MAX_PAGES`] pages, each side at
//! most [`MAX_SIDE`] pixels (a huge page is scaled down rather than allocating gigabytes).

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

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PdfError {
    #[error("the PDF cannot be read (damaged or encrypted)")]
    Unreadable,
    #[error("the PDF has no pages")]
    Empty,
    #[error("the PDF has {0} pages; at most {MAX_PAGES} are accepted")]
    TooManyPages(usize),
    #[error("a page could not be encoded as PNG: {0}")]
    Encode(String),
}

/// Renders every page to a PNG. CPU-bound: call it from a blocking thread.
pub fn rasterize(bytes: Vec<u8>) -> Result<Vec<Vec<u8>>, PdfError> {
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
        out.push(
            pixmap
                .into_png()
                .map_err(|e| PdfError::Encode(e.to_string()))?,
        );
    }
    Ok(out)
}

/// [`rasterize`] on a blocking thread; a panic inside the renderer (a malformed file) is reported
/// as an unreadable PDF instead of taking the request down.
pub async fn rasterize_blocking(bytes: Vec<u8>) -> Result<Vec<Vec<u8>>, PdfError> {
    match tokio::task::spawn_blocking(move || rasterize(bytes)).await {
        Ok(result) => result,
        Err(_) => Err(PdfError::Unreadable),
    }
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

    #[test]
    fn garbage_is_unreadable_and_huge_pages_are_scaled_down() {
        assert!(rasterize(b"not a pdf".to_vec()).is_err());
        let pngs = rasterize(blank_pdf(&[(14400, 14400)])).expect("renders");
        assert_eq!(pngs.len(), 1);
    }
}
