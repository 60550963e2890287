//! The width and height an image declares in its header (PNG, JPEG, WebP, GIF), read from the
//! header's bytes alone.
//!
//! The `image` crate's `into_dimensions` reaches every format's decoder through its format
//! dispatch, so a function that only measures images (a Messages token count) linked all four
//! decoders for it (docs/lambda-artifacts.md, "The image header reader"). Each format's header
//! puts the size at a fixed place, or (JPEG) in the first frame header among the segments; the
//! tests check this reading against the `image` crate's for images of many sizes.

use crate::error::MediaError;

/// The declared size, `(width, height)`. An image that declares a zero side, or whose header
/// ends before its size, is refused like one that cannot be decoded.
pub fn image_dimensions(bytes: &[u8]) -> Result<(u32, u32), MediaError> {
    // The format by its signature, as every upload is recognised (`sniff`, the one list of them).
    let read = match crate::sniff::sniff(bytes).mime {
        "image/png" => png,
        "image/jpeg" => jpeg,
        "image/gif" => gif,
        "image/webp" => webp,
        _ => return Err(decode_error("unrecognised image format")),
    };
    let (width, height) =
        read(bytes).ok_or_else(|| decode_error("the image's header ends before its size"))?;
    if width == 0 || height == 0 {
        return Err(decode_error("the image declares no size"));
    }
    Ok((width, height))
}

fn decode_error(why: &str) -> MediaError {
    MediaError::ImageDecode(why.to_owned())
}

fn be16(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from(u16::from_be_bytes(
        bytes.get(at..at + 2)?.try_into().ok()?,
    )))
}

fn le16(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from(u16::from_le_bytes(
        bytes.get(at..at + 2)?.try_into().ok()?,
    )))
}

fn le24(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at + 3)?;
    Some(u32::from(b[0]) | u32::from(b[1]) << 8 | u32::from(b[2]) << 16)
}

/// The first chunk is IHDR: its width and height are big-endian words after the chunk's length
/// and type.
fn png(bytes: &[u8]) -> Option<(u32, u32)> {
    if bytes.get(12..16)? != b"IHDR" {
        return None;
    }
    let word = |at: usize| Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?));
    Some((word(16)?, word(20)?))
}

/// The logical screen's size, which is what a decoder answers for the image.
fn gif(bytes: &[u8]) -> Option<(u32, u32)> {
    Some((le16(bytes, 6)?, le16(bytes, 8)?))
}

/// The size is in the first start-of-frame segment (SOF0–SOF15 but DHT, JPG and DAC, which
/// share the range); every segment before it is skipped by its length. A scan or the image's
/// end before a frame header is not an image with a size.
fn jpeg(bytes: &[u8]) -> Option<(u32, u32)> {
    let mut at = 2;
    loop {
        if *bytes.get(at)? != 0xFF {
            return None;
        }
        // A marker may be preceded by any number of fill bytes.
        while *bytes.get(at + 1)? == 0xFF {
            at += 1;
        }
        let marker = *bytes.get(at + 1)?;
        match marker {
            // Markers that stand alone, without a length.
            0x01 | 0xD0..=0xD8 => at += 2,
            0xD9 | 0xDA => return None,
            0xC0..=0xCF if !matches!(marker, 0xC4 | 0xC8 | 0xCC) => {
                // length (2), sample precision (1), then the height and the width.
                return Some((be16(bytes, at + 7)?, be16(bytes, at + 5)?));
            }
            _ => {
                let length = be16(bytes, at + 2)? as usize;
                if length < 2 {
                    return None;
                }
                at += 2 + length;
            }
        }
    }
}

/// The first chunk after `WEBP` says which bitstream follows: a lossy `VP8 ` frame (14-bit sides
/// after its start code), a lossless `VP8L` one (14-bit sides minus one, packed after its
/// signature byte) or the extended `VP8X` header (24-bit canvas sides minus one).
fn webp(bytes: &[u8]) -> Option<(u32, u32)> {
    match bytes.get(12..16)? {
        b"VP8 " => {
            if bytes.get(23..26)? != [0x9D, 0x01, 0x2A] {
                return None;
            }
            Some((le16(bytes, 26)? & 0x3FFF, le16(bytes, 28)? & 0x3FFF))
        }
        b"VP8L" => {
            if *bytes.get(20)? != 0x2F {
                return None;
            }
            let bits = u32::from_le_bytes(bytes.get(21..25)?.try_into().ok()?);
            Some(((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1))
        }
        b"VP8X" => Some((le24(bytes, 24)? + 1, le24(bytes, 27)? + 1)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{ImageFormat, RgbImage};
    use std::io::Cursor;

    const SIZES: &[(u32, u32)] = &[(1, 1), (2, 3), (17, 5), (64, 48), (300, 7), (257, 600)];

    fn encoded(width: u32, height: u32, format: ImageFormat) -> Vec<u8> {
        let picture = RgbImage::from_fn(width, height, |x, y| {
            image::Rgb([(x % 256) as u8, (y % 256) as u8, ((x + y) % 256) as u8])
        });
        let mut out = Cursor::new(Vec::new());
        picture.write_to(&mut out, format).expect("encode");
        out.into_inner()
    }

    /// The `image` crate's reading, which every format's decoder makes.
    fn decoders_size(bytes: &[u8]) -> (u32, u32) {
        image::ImageReader::new(Cursor::new(bytes))
            .with_guessed_format()
            .expect("format")
            .into_dimensions()
            .expect("dimensions")
    }

    #[test]
    fn the_header_gives_the_size_the_decoders_give() {
        for format in [
            ImageFormat::Png,
            ImageFormat::Jpeg,
            ImageFormat::Gif,
            ImageFormat::WebP,
        ] {
            for &(w, h) in SIZES {
                let bytes = encoded(w, h, format);
                assert_eq!(
                    image_dimensions(&bytes).expect("a size"),
                    decoders_size(&bytes),
                    "{format:?} {w}x{h}"
                );
                assert_eq!(image_dimensions(&bytes).expect("a size"), (w, h));
            }
        }
    }

    #[test]
    fn a_jpeg_with_segments_and_fill_bytes_before_its_frame_header() {
        let mut bytes = encoded(40, 30, ImageFormat::Jpeg);
        // An APP1 segment and fill bytes inserted after SOI.
        let mut extra = vec![0xFF, 0xE1, 0x00, 0x06, b'E', b'x', b'i', b'f', 0xFF, 0xFF];
        extra.extend_from_slice(&bytes[2..]);
        bytes.truncate(2);
        bytes.extend(extra);
        assert_eq!(image_dimensions(&bytes).expect("a size"), (40, 30));
        assert_eq!(decoders_size(&bytes), (40, 30));
    }

    #[test]
    fn the_lossy_and_extended_webp_headers() {
        // RIFF, size, WEBP, then the chunk; only the fields the reader looks at are set.
        let mut lossy = b"RIFF\0\0\0\0WEBPVP8 \0\0\0\0".to_vec();
        lossy.extend_from_slice(&[0x10, 0x02, 0x00, 0x9D, 0x01, 0x2A]);
        lossy.extend_from_slice(&(1280u16 | 0x4000).to_le_bytes()); // scale bits set
        lossy.extend_from_slice(&720u16.to_le_bytes());
        assert_eq!(image_dimensions(&lossy).expect("a size"), (1280, 720));

        let mut extended = b"RIFF\0\0\0\0WEBPVP8X\x0a\0\0\0\x10\0\0\0".to_vec();
        extended.extend_from_slice(&[0xFF, 0x0E, 0x00]); // 3840 - 1
        extended.extend_from_slice(&[0x6F, 0x08, 0x00]); // 2160 - 1
        assert_eq!(image_dimensions(&extended).expect("a size"), (3840, 2160));
    }

    #[test]
    fn a_cut_or_foreign_header_is_refused_without_a_panic() {
        for format in [
            ImageFormat::Png,
            ImageFormat::Jpeg,
            ImageFormat::Gif,
            ImageFormat::WebP,
        ] {
            let bytes = encoded(33, 21, format);
            for end in 0..bytes.len().min(700) {
                match image_dimensions(&bytes[..end]) {
                    Ok(size) => assert_eq!(size, (33, 21), "{format:?} cut at {end}"),
                    Err(MediaError::ImageDecode(_)) => {}
                    Err(other) => panic!("{format:?} cut at {end}: {other:?}"),
                }
            }
        }
        for foreign in [&b"BM6\0\0\0"[..], b"<svg", b"\0\0\0\x18ftypmp42", b""] {
            assert!(image_dimensions(foreign).is_err());
        }
        // A GIF that declares a zero side.
        assert!(image_dimensions(b"GIF89a\0\0\x05\0").is_err());
        // A JPEG segment whose length cannot hold itself.
        assert!(image_dimensions(&[0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x01, 0xFF, 0xC0]).is_err());
    }
}
