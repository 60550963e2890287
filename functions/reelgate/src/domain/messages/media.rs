//! The media of a Messages request once read from its blocks: a base64 source's bytes within
//! the inline bound, and what a token count measures of an image or a PDF read from a URL
//! (Anthropic's documented image cost) before it drops their bytes.

use crate::domain::error::ApiResult;
use crate::domain::messages::body::invalid;
use crate::domain::responses::convert;
use crate::ports::pdf::PdfRasterizer;
use base64::Engine;

/// Image types the Messages API takes.
pub(super) const IMAGE_TYPES: &[&str] = &["image/jpeg", "image/png", "image/gif", "image/webp"];
/// Largest base64 image or document accepted inline (Anthropic's own request limit is 32 MB).
pub const MAX_INLINE_BYTES: usize = 32 * 1024 * 1024;

/// The bytes of a `base64` source, bounded.
pub(super) fn decode(data: &str, at: &str) -> ApiResult<Vec<u8>> {
    if data.len() > MAX_INLINE_BYTES / 3 * 4 + 4 {
        return Err(invalid(
            &format!("{at}.data"),
            format!("The data is larger than {MAX_INLINE_BYTES} bytes."),
        ));
    }
    base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|_| invalid(&format!("{at}.data"), "The data is not valid base64."))
}

/// What stands in a token count's chat request for an image read from a URL, once measured.
pub(super) const MEASURED_IMAGE: &str = "[image]";
/// What stands for a document read from a URL, once measured.
pub(super) const MEASURED_DOCUMENT: &str = "[document]";
/// Anthropic's documented image cost: `width * height / 750` tokens, after an image whose long
/// side passes 1,568 pixels is scaled down to it, and at most about 1,600.
const IMAGE_LONG_SIDE: u64 = 1_568;
const MAX_IMAGE_TOKENS: u64 = 1_600;

/// The tokens of an image as Anthropic documents them ([`IMAGE_LONG_SIDE`]), from its header.
pub(super) fn image_tokens(bytes: &[u8], param: &str) -> ApiResult<u64> {
    let (w, h) = reelgate_media::image_dimensions(bytes)
        .map_err(|e| invalid(param, format!("The image cannot be read: {e}.")))?;
    let (w, h) = (u64::from(w), u64::from(h));
    let long = w.max(h).max(1);
    let (w, h) = if long > IMAGE_LONG_SIDE {
        (w * IMAGE_LONG_SIDE / long, h * IMAGE_LONG_SIDE / long)
    } else {
        (w, h)
    };
    Ok((w * h).div_ceil(750).clamp(1, MAX_IMAGE_TOKENS))
}

/// The tokens of a PDF read from a URL, for a count: its pages rasterized as a model without
/// `file` would see them, each measured as an image and dropped.
pub(super) async fn document_tokens(
    pdf: &dyn PdfRasterizer,
    bytes: Vec<u8>,
    param: &str,
) -> ApiResult<u64> {
    let mut tokens = 0;
    for page in convert::rasterize(pdf, bytes, param).await? {
        tokens += image_tokens(&page, param)?;
    }
    Ok(tokens)
}
