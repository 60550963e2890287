use std::sync::atomic::{AtomicBool, Ordering};

use image::{Rgb, RgbImage};
use reelgate_media::{
    decode_image, output_dimensions, probe_mp4, render_mp4, sniff, thumbnail_jpeg, AspectRatio,
    AudioBed, MediaError, MediaKind, RenderSpec,
};

const X264_BFRAMES: &[u8] = include_bytes!("fixtures/x264_bframes.mp4");

fn render(spec: &RenderSpec) -> (Vec<u8>, Vec<u8>) {
    let mut seen = Vec::new();
    let mp4 = render_mp4(spec, &mut |p| seen.push(p), &AtomicBool::new(false)).expect("render");
    (mp4, seen)
}

fn assert_clip(mp4: &[u8], width: u32, height: u32, seconds: f64) {
    let probe = probe_mp4(mp4).expect("probe");
    assert!(
        (probe.duration_secs - seconds).abs() <= 0.05,
        "movie {probe:?}"
    );
    let video = probe.video.as_ref().expect("video track");
    assert_eq!(video.codec, "avc1");
    assert_eq!((video.width, video.height), (width, height));
    assert!(
        (video.duration_secs - seconds).abs() <= 0.05,
        "video {video:?}"
    );
    assert_eq!(video.frames, (seconds * 24.0).round() as u32);
    let audio = probe.audio.as_ref().expect("audio track");
    assert_eq!(audio.codec, "aac");
    assert_eq!((audio.sample_rate, audio.channels), (48_000, 2));
    assert!(
        (audio.duration_secs - seconds).abs() <= 0.05,
        "audio {audio:?}"
    );
    // Fast start: moov before mdat.
    let moov = mp4.windows(4).position(|w| w == b"moov").expect("moov");
    let mdat = mp4.windows(4).position(|w| w == b"mdat").expect("mdat");
    assert!(moov < mdat, "moov should precede mdat");
}

fn assert_thumbnail(jpeg: &[u8], width: u32, height: u32) {
    assert_eq!(sniff(jpeg).mime, "image/jpeg");
    let img = decode_image(jpeg).expect("thumbnail decodes");
    assert_eq!((img.width(), img.height()), (width, height));
    let first = *img.get_pixel(0, 0);
    assert!(
        img.pixels()
            .any(|p| p.0.iter().zip(first.0).any(|(a, b)| a.abs_diff(b) > 24)),
        "thumbnail is uniform"
    );
}

#[test]
fn renders_16x9_clip_with_video_audio_and_thumbnail() {
    let (w, h) = output_dimensions(AspectRatio::R16x9, None);
    let spec = RenderSpec::new(w, h, 4, "a lighthouse at dusk, waves crashing");
    let (mp4, progress) = render(&spec);
    assert_clip(&mp4, 1366, 768, 4.0);
    assert_eq!(progress.first(), Some(&0));
    assert_eq!(progress.last(), Some(&100));
    assert!(
        progress.windows(2).all(|p| p[0] < p[1]),
        "progress must increase: {progress:?}"
    );
    assert!(
        progress.len() > 20,
        "progress should be reported as frames are encoded"
    );
    assert_thumbnail(&thumbnail_jpeg(&mp4, 480).expect("thumbnail"), 480, 270);
}

#[test]
fn renders_9x16_clip() {
    let (w, h) = output_dimensions(AspectRatio::R9x16, None);
    let spec = RenderSpec::new(w, h, 4, "vertical city timelapse");
    let (mp4, _) = render(&spec);
    assert_clip(&mp4, 768, 1366, 4.0);
    assert_thumbnail(&thumbnail_jpeg(&mp4, 480).expect("thumbnail"), 480, 854);
}

#[test]
fn rendering_is_deterministic_and_prompt_dependent() {
    let a = render(&RenderSpec::new(320, 180, 1, "same prompt")).0;
    let b = render(&RenderSpec::new(320, 180, 1, "same prompt")).0;
    let c = render(&RenderSpec::new(320, 180, 1, "another prompt")).0;
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn crossfades_between_first_and_last_frame() {
    let red = RgbImage::from_pixel(640, 480, Rgb([220, 30, 30]));
    let blue = RgbImage::from_pixel(300, 300, Rgb([20, 40, 230]));
    let mut spec = RenderSpec::new(320, 240, 2, "fade");
    spec.first_frame = Some(red);
    spec.last_frame = Some(blue);
    spec.audio_bed = Some(AudioBed::from_pcm(16_000, 1, &[1000; 16_000]).expect("bed"));
    let (mp4, _) = render(&spec);
    let probe = probe_mp4(&mp4).expect("probe");
    let video = probe.video.expect("video");
    assert_eq!((video.width, video.height), (320, 240));
    // Near the start the picture is the red first frame.
    let thumb = decode_image(&thumbnail_jpeg(&mp4, 64).expect("thumbnail")).expect("jpeg");
    let p = thumb.get_pixel(32, 20).0;
    assert!(
        p[0] > 150 && p[2] < 120,
        "expected reddish start, got {p:?}"
    );
}

#[test]
fn cancel_stops_render() {
    let cancel = AtomicBool::new(false);
    let spec = RenderSpec::new(640, 360, 4, "cancel me");
    let mut calls = 0;
    let result = render_mp4(
        &spec,
        &mut |p| {
            calls += 1;
            if p >= 10 {
                cancel.store(true, Ordering::Relaxed);
            }
        },
        &cancel,
    );
    assert!(matches!(result, Err(MediaError::Canceled)), "{result:?}");
    assert!(calls > 1);
}

#[test]
fn rejects_bad_specs() {
    let never = AtomicBool::new(false);
    for spec in [
        RenderSpec::new(1365, 768, 4, "odd width"),
        RenderSpec::new(1366, 768, 0, "zero seconds"),
        RenderSpec::new(8, 8, 1, "tiny"),
        RenderSpec {
            fps: 7,
            ..RenderSpec::new(64, 64, 1, "fps")
        },
    ] {
        assert!(matches!(
            render_mp4(&spec, &mut |_| {}, &never),
            Err(MediaError::InvalidSpec(_))
        ));
    }
}

#[test]
fn probe_rejects_garbage() {
    assert!(matches!(probe_mp4(b""), Err(MediaError::NotMp4(_))));
    assert!(matches!(
        probe_mp4(b"definitely not a video file at all"),
        Err(MediaError::NotMp4(_))
    ));
    assert!(matches!(
        probe_mp4(&[0u8; 4096]),
        Err(MediaError::NotMp4(_))
    ));
    // A PNG header.
    assert!(probe_mp4(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").is_err());
    // A plausible ftyp followed by junk.
    let mut fake = b"\0\0\0\x18ftypisom\0\0\x02\0isomiso2".to_vec();
    fake.extend_from_slice(&[0xAB; 100]);
    assert!(probe_mp4(&fake).is_err());
    // Truncated real file: the moov is at the front, so cutting into it must fail cleanly.
    let mp4 = render(&RenderSpec::new(64, 64, 1, "truncate")).0;
    assert!(probe_mp4(&mp4[..200]).is_err());
    assert!(thumbnail_jpeg(b"garbage", 480).is_err());
}

fn mp4_box(kind: &[u8; 4], payload: &[u8]) -> Vec<u8> {
    let mut out = ((payload.len() + 8) as u32).to_be_bytes().to_vec();
    out.extend_from_slice(kind);
    out.extend_from_slice(payload);
    out
}

#[test]
fn probe_rejects_hostile_box_trees_without_hanging() {
    let ftyp = mp4_box(b"ftyp", b"isom\0\0\x02\0isom");
    // A nested box of size 0 (would make a naive parser loop forever).
    let mut zero = vec![0, 0, 0, 0];
    zero.extend_from_slice(b"abcd");
    let hostile = [ftyp.clone(), mp4_box(b"moov", &mp4_box(b"trak", &zero))].concat();
    assert!(matches!(probe_mp4(&hostile), Err(MediaError::NotMp4(_))));
    assert!(thumbnail_jpeg(&hostile, 480).is_err());
    // A child that claims to be larger than its parent.
    let mut big = 4000u32.to_be_bytes().to_vec();
    big.extend_from_slice(b"stbl");
    let hostile = [ftyp.clone(), mp4_box(b"moov", &mp4_box(b"trak", &big))].concat();
    assert!(matches!(probe_mp4(&hostile), Err(MediaError::NotMp4(_))));
    // A moov without tracks or mvhd.
    let empty = [ftyp, mp4_box(b"moov", &[])].concat();
    assert!(probe_mp4(&empty).is_err());
}

#[test]
fn probes_and_thumbnails_x264_stream_with_b_frames() {
    let probe = probe_mp4(X264_BFRAMES).expect("probe");
    let video = probe.video.expect("video");
    assert_eq!(
        (video.codec.as_str(), video.width, video.height),
        ("avc1", 320, 180)
    );
    assert!((video.duration_secs - 2.0).abs() < 0.05, "{video:?}");
    let audio = probe.audio.expect("audio");
    assert_eq!(audio.codec, "aac");
    assert!((audio.duration_secs - 2.0).abs() < 0.05, "{audio:?}");
    assert_thumbnail(
        &thumbnail_jpeg(X264_BFRAMES, 480).expect("thumbnail"),
        480,
        270,
    );
}

#[test]
fn decode_image_formats() {
    let img = RgbImage::from_fn(40, 30, |x, y| Rgb([x as u8 * 6, y as u8 * 8, 100]));
    for format in [
        image::ImageFormat::Png,
        image::ImageFormat::Jpeg,
        image::ImageFormat::Gif,
    ] {
        let mut buf = std::io::Cursor::new(Vec::new());
        image::DynamicImage::ImageRgb8(img.clone())
            .write_to(&mut buf, format)
            .expect("encode");
        let back = decode_image(buf.get_ref()).expect("decode");
        assert_eq!((back.width(), back.height()), (40, 30));
        assert_eq!(sniff(buf.get_ref()).kind, MediaKind::Image);
    }
    assert!(matches!(
        decode_image(b"not an image"),
        Err(MediaError::ImageDecode(_))
    ));
    assert!(matches!(
        decode_image(X264_BFRAMES),
        Err(MediaError::ImageDecode(_))
    ));
}

#[test]
fn sniffs_rendered_mp4_as_video() {
    let s = sniff(X264_BFRAMES);
    assert_eq!((s.kind, s.mime), (MediaKind::Video, "video/mp4"));
}

#[test]
fn audio_bed_from_wav() {
    let mut wav = b"RIFF\0\0\0\0WAVEfmt ".to_vec();
    wav.extend_from_slice(&16u32.to_le_bytes());
    wav.extend_from_slice(&1u16.to_le_bytes()); // PCM
    wav.extend_from_slice(&1u16.to_le_bytes()); // mono
    wav.extend_from_slice(&24_000u32.to_le_bytes());
    wav.extend_from_slice(&48_000u32.to_le_bytes());
    wav.extend_from_slice(&2u16.to_le_bytes());
    wav.extend_from_slice(&16u16.to_le_bytes());
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&(2u32 * 240).to_le_bytes());
    for i in 0..240i16 {
        wav.extend_from_slice(&(i * 10).to_le_bytes());
    }
    let bed = AudioBed::from_wav(&wav).expect("wav");
    // 240 mono samples at 24 kHz become 480 stereo frames at 48 kHz.
    assert_eq!(bed.samples.len(), 960);
    assert_eq!(&bed.samples[..4], &[0, 0, 5, 5]);
    assert!(AudioBed::from_wav(b"RIFF\0\0\0\0WAVE").is_err());
    assert!(AudioBed::from_wav(b"nope").is_err());
}

#[test]
fn a_spritesheet_is_a_grid_of_frames_in_order_and_the_first_frame_is_full_size() {
    let red = RgbImage::from_pixel(320, 240, Rgb([220, 30, 30]));
    let blue = RgbImage::from_pixel(320, 240, Rgb([20, 40, 230]));
    let mut spec = RenderSpec::new(320, 240, 2, "fade");
    spec.first_frame = Some(red);
    spec.last_frame = Some(blue);
    let (mp4, _) = render(&spec);

    let sheet = reelgate_media::spritesheet_jpeg(&mp4, 80).expect("spritesheet");
    assert_eq!(sniff(&sheet).mime, "image/jpeg");
    let sheet = decode_image(&sheet).expect("jpeg");
    let (columns, rows) = (
        reelgate_media::SPRITESHEET_COLUMNS,
        reelgate_media::SPRITESHEET_FRAMES / reelgate_media::SPRITESHEET_COLUMNS,
    );
    assert_eq!((sheet.width(), sheet.height()), (80 * columns, 60 * rows));
    // The first tile is the reddish start, the last the bluish end: frames run in order.
    let first = sheet.get_pixel(40, 10).0;
    let last = sheet.get_pixel(80 * columns - 40, 60 * rows - 10).0;
    assert!(first[0] > 150 && first[2] < 120, "first tile {first:?}");
    assert!(last[2] > 150 && last[0] < 120, "last tile {last:?}");

    let opening =
        decode_image(&reelgate_media::first_frame_jpeg(&mp4).expect("first frame")).expect("jpeg");
    assert_eq!((opening.width(), opening.height()), (320, 240));
    let p = opening.get_pixel(160, 120).0;
    assert!(
        p[0] > 150 && p[2] < 120,
        "the first frame is the red one: {p:?}"
    );

    assert!(matches!(
        reelgate_media::spritesheet_jpeg(b"not an mp4 at all", 80),
        Err(MediaError::NotMp4(_))
    ));
}
