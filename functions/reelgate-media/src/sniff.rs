//! Content sniffing by magic bytes.

/// Broad kind of an uploaded file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MediaKind {
    Image,
    Video,
    Audio,
    Pdf,
    Text,
    Other,
}

/// Result of [`sniff`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sniffed {
    pub kind: MediaKind,
    pub mime: &'static str,
}

const fn s(kind: MediaKind, mime: &'static str) -> Sniffed {
    Sniffed { kind, mime }
}

fn at(head: &[u8], offset: usize, magic: &[u8]) -> bool {
    head.len() >= offset + magic.len() && &head[offset..offset + magic.len()] == magic
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Classifies a file from its first bytes (pass at least 64; 512 or more
/// improves text and WebM detection).
///
/// Recognised: PNG, JPEG, GIF, WebP, BMP, AVIF/HEIC; MP4, QuickTime, 3GP
/// (`ftyp`), WebM/Matroska, AVI, Ogg Theora; MP3 (ID3 tag or MPEG frame sync),
/// WAV, Ogg, FLAC, M4A (`ftyp M4A`), AAC (ADTS); PDF; UTF-8 text (a trailing
/// character cut by the end of `head` is tolerated). Everything else is
/// `Other` / `application/octet-stream`.
pub fn sniff(head: &[u8]) -> Sniffed {
    use MediaKind::*;
    if at(head, 0, b"\x89PNG\r\n\x1a\n") {
        return s(Image, "image/png");
    }
    if at(head, 0, &[0xFF, 0xD8, 0xFF]) {
        return s(Image, "image/jpeg");
    }
    if at(head, 0, b"GIF87a") || at(head, 0, b"GIF89a") {
        return s(Image, "image/gif");
    }
    if at(head, 0, b"RIFF") && head.len() >= 12 {
        match &head[8..12] {
            b"WEBP" => return s(Image, "image/webp"),
            b"WAVE" => return s(Audio, "audio/wav"),
            b"AVI " => return s(Video, "video/x-msvideo"),
            _ => {}
        }
    }
    if at(head, 0, b"BM") && head.len() >= 26 {
        // BITMAPFILEHEADER: reserved words are zero and the pixel offset lies past the headers.
        let reserved_zero = head[6..10].iter().all(|b| *b == 0);
        let offset = u32::from_le_bytes([head[10], head[11], head[12], head[13]]);
        let dib = u32::from_le_bytes([head[14], head[15], head[16], head[17]]);
        if reserved_zero && offset >= 26 && matches!(dib, 12 | 40 | 52 | 56 | 64 | 108 | 124) {
            return s(Image, "image/bmp");
        }
    }
    if at(head, 4, b"ftyp") && head.len() >= 12 {
        let brand = &head[8..12];
        return match brand {
            b"M4A " | b"M4B " | b"M4P " | b"F4A " | b"F4B " => s(Audio, "audio/mp4"),
            b"qt  " => s(Video, "video/quicktime"),
            b"avif" | b"avis" => s(Image, "image/avif"),
            b"heic" | b"heix" | b"heim" | b"heis" | b"mif1" | b"msf1" => s(Image, "image/heic"),
            b if b.starts_with(b"3gp") => s(Video, "video/3gpp"),
            b if b.starts_with(b"3g2") => s(Video, "video/3gpp2"),
            _ => s(Video, "video/mp4"),
        };
    }
    if at(head, 0, &[0x1A, 0x45, 0xDF, 0xA3]) {
        return if contains(head, b"webm") {
            s(Video, "video/webm")
        } else {
            s(Video, "video/x-matroska")
        };
    }
    if at(head, 0, b"OggS") {
        return if contains(head, b"\x80theora") {
            s(Video, "video/ogg")
        } else {
            s(Audio, "audio/ogg")
        };
    }
    if at(head, 0, b"fLaC") {
        return s(Audio, "audio/flac");
    }
    if at(head, 0, b"ID3") {
        return s(Audio, "audio/mpeg");
    }
    if head.len() >= 2 && head[0] == 0xFF {
        // 12-bit sync with layer bits 00 is ADTS (AAC); 11-bit sync with a layer is MPEG audio.
        if head[1] & 0xF6 == 0xF0 {
            return s(Audio, "audio/aac");
        }
        if head[1] & 0xE0 == 0xE0 && (head[1] >> 1) & 0x3 != 0 && (head[1] >> 3) & 0x3 != 1 {
            return s(Audio, "audio/mpeg");
        }
    }
    if at(head, 0, b"%PDF-") {
        return s(Pdf, "application/pdf");
    }
    if looks_like_text(head) {
        return s(Text, "text/plain");
    }
    s(Other, "application/octet-stream")
}

fn looks_like_text(head: &[u8]) -> bool {
    let body = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    if body.is_empty() {
        return false;
    }
    let valid = match std::str::from_utf8(body) {
        Ok(t) => t,
        // A multi-byte character cut off by the end of the sniffed window is fine.
        Err(e) if e.error_len().is_none() && body.len() - e.valid_up_to() < 4 => {
            match std::str::from_utf8(&body[..e.valid_up_to()]) {
                Ok(t) => t,
                Err(_) => return false,
            }
        }
        Err(_) => return false,
    };
    let controls = valid
        .chars()
        .filter(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t' | '\x0C'))
        .count();
    !valid.is_empty() && controls * 100 <= valid.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use MediaKind::*;

    fn padded(prefix: &[u8]) -> Vec<u8> {
        let mut v = prefix.to_vec();
        v.resize(64, 0);
        v
    }

    #[test]
    fn table() {
        let mut bmp = b"BM".to_vec();
        bmp.extend_from_slice(&1000u32.to_le_bytes());
        bmp.extend_from_slice(&[0, 0, 0, 0]);
        bmp.extend_from_slice(&54u32.to_le_bytes());
        bmp.extend_from_slice(&40u32.to_le_bytes());
        let mut ebml_webm = vec![0x1A, 0x45, 0xDF, 0xA3, 0x9F, 0x42, 0x82, 0x84];
        ebml_webm.extend_from_slice(b"webm");
        let mut ogg_theora = b"OggS\0\x02".to_vec();
        ogg_theora.resize(28, 0);
        ogg_theora.extend_from_slice(b"\x80theora");
        let cases: Vec<(Vec<u8>, MediaKind, &str)> = vec![
            (padded(b"\x89PNG\r\n\x1a\n"), Image, "image/png"),
            (padded(&[0xFF, 0xD8, 0xFF, 0xE0]), Image, "image/jpeg"),
            (padded(b"GIF89a"), Image, "image/gif"),
            (padded(b"GIF87a"), Image, "image/gif"),
            (padded(b"RIFF\0\0\0\0WEBPVP8 "), Image, "image/webp"),
            (padded(&bmp), Image, "image/bmp"),
            (padded(b"\0\0\0\x1cftypavif"), Image, "image/avif"),
            (padded(b"\0\0\0\x20ftypisom\0\0\x02\0"), Video, "video/mp4"),
            (padded(b"\0\0\0\x18ftypmp42"), Video, "video/mp4"),
            (padded(b"\0\0\0\x14ftypqt  "), Video, "video/quicktime"),
            (padded(b"\0\0\0\x14ftyp3gp5"), Video, "video/3gpp"),
            (padded(&ebml_webm), Video, "video/webm"),
            (
                padded(&[0x1A, 0x45, 0xDF, 0xA3, 0x01]),
                Video,
                "video/x-matroska",
            ),
            (padded(b"RIFF\0\0\0\0AVI LIST"), Video, "video/x-msvideo"),
            (padded(&ogg_theora), Video, "video/ogg"),
            (padded(b"ID3\x04\0"), Audio, "audio/mpeg"),
            (padded(&[0xFF, 0xFB, 0x90, 0x64]), Audio, "audio/mpeg"),
            (padded(&[0xFF, 0xF1, 0x50, 0x80]), Audio, "audio/aac"),
            (padded(&[0xFF, 0xF9, 0x50, 0x80]), Audio, "audio/aac"),
            (padded(b"RIFF\0\0\0\0WAVEfmt "), Audio, "audio/wav"),
            (padded(b"OggS\0\x02\0\0"), Audio, "audio/ogg"),
            (padded(b"fLaC\0\0\0\x22"), Audio, "audio/flac"),
            (padded(b"\0\0\0\x20ftypM4A \0\0\0\0"), Audio, "audio/mp4"),
            (b"%PDF-1.7\n%\xE2\xE3".to_vec(), Pdf, "application/pdf"),
            (
                b"hello, world\nsecond line\t tab".to_vec(),
                Text,
                "text/plain",
            ),
            (
                "\u{FEFF}caf\u{e9} na\u{ef}ve \u{1F600}".as_bytes().to_vec(),
                Text,
                "text/plain",
            ),
            (b"BM but just text".to_vec(), Text, "text/plain"),
            (vec![0u8; 64], Other, "application/octet-stream"),
            (
                vec![0x00, 0x01, 0x02, 0x03, 0xFE],
                Other,
                "application/octet-stream",
            ),
            (Vec::new(), Other, "application/octet-stream"),
        ];
        for (bytes, kind, mime) in cases {
            let got = sniff(&bytes);
            assert_eq!(
                (got.kind, got.mime),
                (kind, mime),
                "input {:?}",
                &bytes[..bytes.len().min(16)]
            );
        }
    }

    #[test]
    fn text_cut_mid_character_is_text() {
        let text = "grüße aus köln".as_bytes();
        // Cut inside the two-byte 'ü'.
        let cut = &text[..3];
        assert_eq!(sniff(cut).kind, Text);
        assert_eq!(sniff(b"\xC3\x28 invalid").kind, Other);
    }
}
