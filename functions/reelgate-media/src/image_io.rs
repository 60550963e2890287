//! Still-image decoding for first/last frames.

use std::io::Cursor;

use image::RgbImage;

use crate::error::MediaError;

/// Largest accepted width or height of an input image.
const MAX_IMAGE_SIDE: u32 = 16_384;
/// Upper bound on memory the decoder may allocate for one image.
const MAX_IMAGE_ALLOC: u64 = 512 * 1024 * 1024;

/// Decodes PNG, JPEG, WebP or GIF (first frame) bytes to 8-bit RGB; alpha is
/// dropped. The format is detected from the content, not a name. Images wider
/// or taller than 16384 px are refused.
pub fn decode_image(bytes: &[u8]) -> Result<RgbImage, MediaError> {
    let mut reader = image::ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| MediaError::ImageDecode(e.to_string()))?;
    match reader.format() {
        Some(
            image::ImageFormat::Png
            | image::ImageFormat::Jpeg
            | image::ImageFormat::WebP
            | image::ImageFormat::Gif,
        ) => {}
        Some(other) => {
            return Err(MediaError::ImageDecode(format!(
                "unsupported image format {other:?} (PNG, JPEG, WebP and GIF are supported)"
            )))
        }
        None => return Err(MediaError::ImageDecode("unrecognised image format".into())),
    }
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_IMAGE_SIDE);
    limits.max_image_height = Some(MAX_IMAGE_SIDE);
    limits.max_alloc = Some(MAX_IMAGE_ALLOC);
    reader.limits(limits);
    let img = reader
        .decode()
        .map_err(|e| MediaError::ImageDecode(e.to_string()))?;
    Ok(img.into_rgb8())
}

/// An image fitted to a frame of `width` x `height`: scaled to cover it and centre-cropped, as
/// JPEG. Engines that take a first frame often require it at the size they render (the OpenAI
/// Videos API's `input_reference`, Nova Reel's 1280x720), so it is sent at that size.
pub fn fit_frame_jpeg(bytes: &[u8], width: u32, height: u32) -> Result<Vec<u8>, MediaError> {
    if !(16..=4096).contains(&width) || !(16..=4096).contains(&height) {
        return Err(MediaError::InvalidSpec(format!(
            "a frame of {width}x{height} is outside 16..=4096"
        )));
    }
    let image = decode_image(bytes)?;
    let fitted = image::DynamicImage::ImageRgb8(image).resize_to_fill(
        width,
        height,
        image::imageops::FilterType::Triangle,
    );
    let mut out = Cursor::new(Vec::new());
    fitted
        .write_with_encoder(image::codecs::jpeg::JpegEncoder::new_with_quality(
            &mut out, 92,
        ))
        .map_err(|e| MediaError::ImageEncode(e.to_string()))?;
    Ok(out.into_inner())
}

/// An image re-encoded as JPEG at most `max_width` pixels wide (aspect kept), refused before it
/// is decoded when its header declares more than `max_pixels` (a small file may declare a huge
/// picture; its decoding would hold every pixel).
pub fn bounded_image_jpeg(
    bytes: &[u8],
    max_width: u32,
    max_pixels: u64,
) -> Result<Vec<u8>, MediaError> {
    let (w, h) = image::ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| MediaError::ImageDecode(e.to_string()))?
        .into_dimensions()
        .map_err(|e| MediaError::ImageDecode(e.to_string()))?;
    if u64::from(w) * u64::from(h) > max_pixels {
        return Err(MediaError::ImageDecode(format!(
            "the image is {w}x{h}; at most {max_pixels} pixels are accepted"
        )));
    }
    let image = image::DynamicImage::ImageRgb8(decode_image(bytes)?);
    let image = if image.width() > max_width {
        let height = ((f64::from(image.height()) * f64::from(max_width) / f64::from(image.width()))
            .round() as u32)
            .max(1);
        image.resize_exact(max_width, height, image::imageops::FilterType::Triangle)
    } else {
        image
    };
    let mut out = Cursor::new(Vec::new());
    image
        .write_with_encoder(image::codecs::jpeg::JpegEncoder::new_with_quality(
            &mut out, 90,
        ))
        .map_err(|e| MediaError::ImageEncode(e.to_string()))?;
    Ok(out.into_inner())
}
