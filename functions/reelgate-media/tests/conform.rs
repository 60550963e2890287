//! The conform stage against clips made by ffmpeg at test time (x264 High profile with B-frames,
//! AAC, PCM, no audio, High 10, HEVC) and checked with ffprobe. ffmpeg and ffprobe are required:
//! without them these tests fail and say to run scripts/test-tools.sh.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;

use image::RgbImage;
use reelgate_media::{
    conform_mp4, conform_source, decode_image, render_mp4, sample_frames_jpeg, AspectRatio,
    ConformTarget, Conformed, FileSource, MediaError, RenderSpec,
};

/// A scratch directory for one test, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("reelgate-conform-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Self(dir)
    }

    fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }

    /// Runs ffmpeg with `args` (inputs and options) writing `file`, and returns its bytes.
    fn ffmpeg(&self, args: &[&str], file: &str) -> Vec<u8> {
        let out = self.path(file);
        let result = Command::new("ffmpeg")
            .args(["-hide_banner", "-v", "error", "-y"])
            .args(args)
            .arg(&out)
            .output()
            .unwrap_or_else(|e| {
                panic!("ffmpeg is needed by the conform tests ({e}): run scripts/test-tools.sh")
            });
        assert!(
            result.status.success(),
            "ffmpeg {args:?} failed: {}",
            String::from_utf8_lossy(&result.stderr)
        );
        std::fs::read(&out).expect("ffmpeg output")
    }

    fn write(&self, file: &str, bytes: &[u8]) -> PathBuf {
        let p = self.path(file);
        std::fs::write(&p, bytes).expect("write");
        p
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn has_encoder(name: &str) -> bool {
    Command::new("ffmpeg")
        .args(["-hide_banner", "-encoders"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains(name))
        .unwrap_or(false)
}

/// `ffprobe -show_streams -show_format` of a file, as JSON.
fn ffprobe(path: &Path) -> serde_json::Value {
    let out = Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-show_streams",
            "-show_format",
            "-of",
            "json",
        ])
        .arg(path)
        .output()
        .unwrap_or_else(|e| {
            panic!("ffprobe is needed by the conform tests ({e}): run scripts/test-tools.sh")
        });
    assert!(
        out.status.success(),
        "ffprobe failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("ffprobe JSON")
}

/// Checks the contract with ffprobe: H.264 at `width`x`height`, AAC, `seconds` long (±0.1 s),
/// `moov` before `mdat`. Returns the ffprobe output.
fn assert_contract(
    scratch: &Scratch,
    c: &Conformed,
    (width, height): (u32, u32),
    seconds: f64,
) -> serde_json::Value {
    assert_eq!((c.width, c.height), (width, height));
    assert!((c.duration_secs - seconds).abs() < 1e-6, "{c:?}");
    let path = scratch.write("conformed.mp4", &c.mp4);
    let probe = ffprobe(&path);
    let streams = probe["streams"].as_array().expect("streams");
    let video: Vec<_> = streams
        .iter()
        .filter(|s| s["codec_type"] == "video")
        .collect();
    let audio: Vec<_> = streams
        .iter()
        .filter(|s| s["codec_type"] == "audio")
        .collect();
    assert_eq!(video.len(), 1, "{probe}");
    assert_eq!(audio.len(), 1, "{probe}");
    assert_eq!(video[0]["codec_name"], "h264");
    assert_eq!(video[0]["width"], width);
    assert_eq!(video[0]["height"], height);
    assert_eq!(audio[0]["codec_name"], "aac");
    let duration: f64 = probe["format"]["duration"]
        .as_str()
        .and_then(|d| d.parse().ok())
        .expect("format duration");
    assert!(
        (duration - seconds).abs() <= 0.1,
        "format duration {duration} for {seconds} s"
    );
    let moov = c.mp4.windows(4).position(|w| w == b"moov").expect("moov");
    let mdat = c.mp4.windows(4).position(|w| w == b"mdat").expect("mdat");
    assert!(moov < mdat, "moov should precede mdat");
    probe
}

/// Loudness of the audio between `from` and `to` seconds: (mean, max) in dB, from ffmpeg's
/// volumedetect.
fn volume(path: &Path, from: f64, to: f64) -> (f64, f64) {
    let out = Command::new("ffmpeg")
        .args(["-hide_banner", "-nostats", "-i"])
        .arg(path)
        .args([
            "-map",
            "0:a",
            "-af",
            &format!("atrim={from}:{to},volumedetect"),
            "-f",
            "null",
            "-",
        ])
        .output()
        .expect("ffmpeg volumedetect");
    let log = String::from_utf8_lossy(&out.stderr);
    let read = |key: &str| -> f64 {
        log.lines()
            .find_map(|l| l.split(key).nth(1))
            .and_then(|v| v.trim().trim_end_matches("dB").trim().parse().ok())
            .unwrap_or(-200.0)
    };
    (read("mean_volume:"), read("max_volume:"))
}

/// The frame in the middle of a clip, 192 pixels wide.
fn middle_frame(mp4: &[u8]) -> RgbImage {
    let jpeg = sample_frames_jpeg(mp4, 192, 1).expect("frame").remove(0);
    decode_image(&jpeg).expect("jpeg")
}

fn target(aspect: AspectRatio, seconds: u32) -> ConformTarget {
    ConformTarget {
        aspect,
        seconds,
        fallback_audio: None,
    }
}

#[test]
fn conforms_1080p_high_profile_with_aac_to_16x9() {
    let s = Scratch::new("1080p");
    let input = s.ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=1920x1080:rate=24",
            "-f",
            "lavfi",
            "-i",
            "sine=frequency=440:sample_rate=44100",
            "-c:v",
            "libx264",
            "-profile:v",
            "high",
            "-pix_fmt",
            "yuv420p",
            "-c:a",
            "aac",
            "-t",
            "3",
        ],
        "in.mp4",
    );
    let c = conform_mp4(&input, &target(AspectRatio::R16x9, 3)).expect("conform");
    assert!(!c.passed_through);
    assert!(
        c.source
            .starts_with("H.264 High 1920x1080 24.00 fps, AAC 44100 Hz"),
        "{}",
        c.source
    );
    assert_eq!(c.audio, "kept");
    let probe = assert_contract(&s, &c, (1366, 768), 3.0);
    let audio = probe["streams"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["codec_type"] == "audio"))
        .expect("audio");
    assert_eq!(audio["sample_rate"], "44100", "the AAC is copied as it is");
    // The same picture, only smaller: the middle frames match.
    let (a, b) = (middle_frame(&input), middle_frame(&c.mp4));
    assert_eq!(a.dimensions(), b.dimensions());
    let diff: u64 = a
        .as_raw()
        .iter()
        .zip(b.as_raw())
        .map(|(x, y)| u64::from(x.abs_diff(*y)))
        .sum();
    let mean = diff as f64 / a.as_raw().len() as f64;
    assert!(mean < 12.0, "mean difference {mean:.1} per channel");
}

/// Red left quarter, green middle half, blue right quarter: cropping the centre of a 16:9
/// picture to a narrower frame keeps (mostly) green, stretching it would keep the bands.
#[test]
fn crops_the_centre_of_a_720p_clip_without_audio() {
    let s = Scratch::new("crop");
    let input = s.ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "color=c=0x00c000:size=1280x720:rate=24",
            "-vf",
            "drawbox=x=0:y=0:w=320:h=720:color=red:t=fill,drawbox=x=960:y=0:w=320:h=720:color=blue:t=fill",
            "-c:v",
            "libx264",
            "-profile:v",
            "high",
            "-pix_fmt",
            "yuv420p",
            "-t",
            "4",
        ],
        "in.mp4",
    );
    let green = |p: &image::Rgb<u8>| p[1] > 120 && p[0] < 80 && p[2] < 80;
    for (aspect, size) in [
        (AspectRatio::R1x1, (768, 768)),
        (AspectRatio::R9x16, (768, 1366)),
    ] {
        let c = conform_mp4(&input, &target(aspect, 3)).expect("conform");
        assert_eq!(c.audio, "silence added");
        assert!(c.source.contains("no audio, 4.00 s"), "{}", c.source);
        assert_contract(&s, &c, size, 3.0);
        let frame = middle_frame(&c.mp4);
        let (w, h) = frame.dimensions();
        for x in [w * 15 / 100, w / 2, w * 85 / 100] {
            let p = frame.get_pixel(x, h / 2);
            assert!(
                green(p),
                "{aspect}: pixel at x={x} of {w} is {p:?}, not green"
            );
        }
        let path = s.write("silent.mp4", &c.mp4);
        let (_, max) = volume(&path, 0.0, 3.0);
        assert!(max < -80.0, "the added track is silent: {max} dB");
    }
}

#[test]
fn auto_keeps_a_portrait_engine_clip_portrait() {
    let s = Scratch::new("portrait");
    let input = s.ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=720x1280:rate=15",
            "-c:v",
            "libx264",
            "-profile:v",
            "high",
            "-pix_fmt",
            "yuv420p",
            "-t",
            "2",
        ],
        "in.mp4",
    );
    let c = conform_mp4(&input, &target(AspectRatio::Auto, 2)).expect("conform");
    assert_contract(&s, &c, (768, 1366), 2.0);
}

#[test]
fn reencodes_pcm_audio_and_lays_reference_audio_under_silent_clips() {
    let s = Scratch::new("audio");
    let video = ["-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=12"];
    // PCM in QuickTime.
    let mut args = video.to_vec();
    args.extend([
        "-f",
        "lavfi",
        "-i",
        "sine=frequency=300:sample_rate=48000",
        "-c:v",
        "libx264",
        "-c:a",
        "pcm_s16le",
        "-t",
        "2",
        "-f",
        "mov",
    ]);
    let mov = s.ffmpeg(&args, "pcm.mov");
    let c = conform_mp4(&mov, &target(AspectRatio::R16x9, 2)).expect("conform pcm");
    assert_eq!(c.audio, "re-encoded from PCM s16le");
    // The same read from the file a window at a time.
    let from_file = conform_source(
        &FileSource::open(s.path("pcm.mov")).expect("open"),
        &target(AspectRatio::R16x9, 2),
    )
    .expect("conform pcm from the file");
    assert!(from_file.mp4 == c.mp4, "the same clip from the file");
    assert_contract(&s, &c, (1366, 768), 2.0);
    let (mean, _) = volume(&s.write("pcm.mp4", &c.mp4), 0.2, 1.8);
    assert!(mean > -40.0, "the tone survives: {mean} dB");

    // No audio of its own, a 1 s WAV (24-bit stereo) as the caller's reference audio.
    let wav = s.ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "sine=frequency=500:sample_rate=44100",
            "-ac",
            "2",
            "-c:a",
            "pcm_s24le",
            "-t",
            "1",
        ],
        "ref.wav",
    );
    let mut args = video.to_vec();
    args.extend(["-c:v", "libx264", "-t", "2"]);
    let silent = s.ffmpeg(&args, "silent.mp4");
    let mut t = target(AspectRatio::R4x3, 2);
    t.fallback_audio = Some(wav);
    let c = conform_mp4(&silent, &t).expect("conform with reference audio");
    assert_eq!(c.audio, "reference audio mixed");
    assert_contract(&s, &c, (1024, 768), 2.0);
    let path = s.write("mixed.mp4", &c.mp4);
    let (mean, _) = volume(&path, 0.1, 0.9);
    assert!(mean > -40.0, "the reference audio plays: {mean} dB");
    let (_, max) = volume(&path, 1.2, 2.0);
    assert!(max < -60.0, "silence after the reference audio: {max} dB");

    // A reference file that is not audio.
    t.fallback_audio = Some(b"definitely not audio".to_vec());
    let err = conform_mp4(&silent, &t).expect_err("undecodable reference audio");
    assert!(matches!(err, MediaError::UnsupportedCodec(_)), "{err}");
}

#[test]
fn refuses_what_it_cannot_conform() {
    let s = Scratch::new("refuse");
    let clip = |codec: &[&str], file: &str| {
        let mut args = vec!["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=12"];
        args.extend_from_slice(codec);
        args.extend(["-t", "2"]);
        s.ffmpeg(&args, file)
    };
    let high10 = clip(
        &[
            "-c:v",
            "libx264",
            "-profile:v",
            "high10",
            "-pix_fmt",
            "yuv420p10le",
        ],
        "high10.mp4",
    );
    let err = conform_mp4(&high10, &target(AspectRatio::R16x9, 2)).expect_err("High 10");
    assert!(
        matches!(&err, MediaError::UnsupportedCodec(m) if m.contains("High 10")),
        "{err}"
    );

    let (args, name): (&[&str], &str) = if has_encoder("libx265") {
        (
            &["-c:v", "libx265", "-x265-params", "log-level=none"],
            "H.265/HEVC",
        )
    } else {
        (&["-c:v", "mpeg4"], "MPEG-4 Part 2")
    };
    let other = clip(args, "other.mp4");
    let err = conform_mp4(&other, &target(AspectRatio::R16x9, 2)).expect_err(name);
    assert!(
        matches!(&err, MediaError::UnsupportedCodec(m) if m.contains(name)),
        "{err}"
    );

    let short = clip(&["-c:v", "libx264"], "short.mp4");
    let err = conform_mp4(&short, &target(AspectRatio::R16x9, 4)).expect_err("too short");
    assert!(
        err.to_string()
            .contains("the engine's clip lasts 2.00 s, shorter than the 4 s asked"),
        "{err}"
    );

    // Garbage and a truncated file fail without panicking.
    for bad in [
        &b"not an mp4 at all"[..],
        &short[..short.len() / 2],
        &short[..64],
    ] {
        assert!(conform_mp4(bad, &target(AspectRatio::R16x9, 2)).is_err());
    }
}

#[test]
fn a_stream_declaring_a_huge_picture_buffer_is_refused_before_decoding() {
    let s = Scratch::new("refs");
    let clip = s.ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=4096x2304:rate=12",
            "-frames:v",
            "3",
            "-c:v",
            "libx264",
            "-x264-params",
            "ref=16:level=6.2",
        ],
        "refs.mp4",
    );
    let err =
        conform_mp4(&clip, &target(AspectRatio::R16x9, 1)).expect_err("16 references at 4096x2304");
    assert!(
        err.to_string().contains("16 reference frames of 4096x2304"),
        "{err}"
    );
}

#[test]
fn a_sample_table_pointing_samples_at_the_same_bytes_is_refused() {
    let s = Scratch::new("overlap");
    let clip = s.ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=320x240:rate=12",
            "-f",
            "lavfi",
            "-i",
            "sine=frequency=440:sample_rate=44100",
            "-c:v",
            "libx264",
            "-c:a",
            "aac",
            "-t",
            "2",
            "-movflags",
            "+faststart",
        ],
        "clip.mp4",
    );
    conform_mp4(&clip, &target(AspectRatio::R16x9, 2)).expect("the clip as written conforms");
    // Every chunk of the audio track (the one after the `soun` handler) pointed at its first
    // chunk's bytes: small on disk, many copies of the same bytes when read.
    let mut hostile = clip.clone();
    let find = |from: usize, what: &[u8]| {
        hostile[from..]
            .windows(what.len())
            .position(|w| w == what)
            .map(|i| i + from)
    };
    let soun = find(0, b"soun").expect("an audio handler");
    let stco = find(soun, b"stco").expect("the audio chunk offsets");
    let be32 = |b: &[u8], at: usize| u32::from_be_bytes(b[at..at + 4].try_into().expect("4"));
    let count = be32(&hostile, stco + 8) as usize;
    assert!(count > 1, "the audio track has several chunks");
    let first = hostile[stco + 12..stco + 16].to_vec();
    for k in 1..count {
        let at = stco + 12 + 4 * k;
        hostile[at..at + 4].copy_from_slice(&first);
    }
    let err =
        conform_mp4(&hostile, &target(AspectRatio::R16x9, 2)).expect_err("overlapping samples");
    assert!(err.to_string().contains("share bytes"), "{err}");
}

#[test]
fn the_reference_renderers_output_passes_through() {
    let spec = RenderSpec::new(1366, 768, 4, "a lighthouse at dusk");
    let mp4 = render_mp4(&spec, &mut |_| {}, &AtomicBool::new(false)).expect("render");
    for aspect in [AspectRatio::R16x9, AspectRatio::Auto] {
        let c = conform_mp4(&mp4, &target(aspect, 4)).expect("conform");
        assert!(c.passed_through, "{c:?}");
        assert_eq!(c.mp4, mp4, "byte for byte");
        assert_eq!((c.width, c.height), (1366, 768));
        assert_eq!(c.audio, "kept");
    }
}

#[test]
fn a_stitch_joins_two_clips_into_one_stream_with_no_silence_at_the_seam() {
    let scratch = Scratch::new("stitch");
    let clip = |colour: &str, hz: u32, file: &str| {
        scratch.ffmpeg(
            &[
                "-f",
                "lavfi",
                "-i",
                &format!("color=c={colour}:size=1366x768:rate=24"),
                "-f",
                "lavfi",
                "-i",
                &format!("sine=frequency={hz}:sample_rate=48000"),
                "-t",
                "4",
                "-c:v",
                "libx264",
                "-profile:v",
                "high",
                "-pix_fmt",
                "yuv420p",
                "-c:a",
                "aac",
                "-shortest",
            ],
            file,
        )
    };
    let (red, blue) = (clip("red", 440, "red.mp4"), clip("blue", 660, "blue.mp4"));
    let started = std::time::Instant::now();
    let joined = reelgate_media::stitch_mp4(&red, &blue).expect("stitch");
    eprintln!("stitched 4 s + 4 s at 1366x768 in {:?}", started.elapsed());
    assert_contract(&scratch, &joined, (1366, 768), 8.0);
    let path = scratch.write("joined.mp4", &joined.mp4);
    // The sound carries on across the seam (no gap of silence).
    let (mean, _) = volume(&path, 3.8, 4.2);
    assert!(mean > -40.0, "the seam is silent: {mean} dB");
    let first =
        decode_image(&reelgate_media::first_frame_jpeg(&joined.mp4).expect("first")).expect("jpeg");
    let last =
        decode_image(&reelgate_media::last_frame_jpeg(&joined.mp4).expect("last")).expect("jpeg");
    let (f, l) = (first.get_pixel(683, 384).0, last.get_pixel(683, 384).0);
    assert!(f[0] > 150 && f[2] < 100, "opens red: {f:?}");
    assert!(l[2] > 150 && l[0] < 100, "ends blue: {l:?}");
    // A part that is not an MP4 is refused, not joined.
    assert!(reelgate_media::stitch_mp4(&red, b"not a clip at all").is_err());
}

/// The boxes' payload offsets of the audio track's tables (the first `stsz`, `stsc`, `stco`
/// and `stts` after the `soun` handler): a test's way to reach into a clip ffmpeg wrote.
fn audio_table(mp4: &[u8], kind: &[u8; 4]) -> usize {
    let find = |from: usize, what: &[u8]| {
        mp4[from..]
            .windows(what.len())
            .position(|w| w == what)
            .map(|i| i + from)
    };
    let soun = find(0, b"soun").expect("an audio handler");
    find(soun, kind).expect("the audio table") + 4
}

fn be32(b: &[u8], at: usize) -> usize {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes")) as usize
}

/// Where each audio sample lies: (offset, size).
fn audio_samples(mp4: &[u8]) -> Vec<(usize, usize)> {
    let (stsz, stsc, stco) = (
        audio_table(mp4, b"stsz"),
        audio_table(mp4, b"stsc"),
        audio_table(mp4, b"stco"),
    );
    let fixed = be32(mp4, stsz + 4);
    let count = be32(mp4, stsz + 8);
    let size = |i: usize| {
        if fixed != 0 {
            fixed
        } else {
            be32(mp4, stsz + 12 + 4 * i)
        }
    };
    let chunks = be32(mp4, stco + 4);
    let entries = be32(mp4, stsc + 4);
    let mut out = Vec::new();
    for e in 0..entries {
        let at = stsc + 8 + 12 * e;
        let first = be32(mp4, at) - 1;
        let per_chunk = be32(mp4, at + 4);
        let end = if e + 1 < entries {
            be32(mp4, at + 12) - 1
        } else {
            chunks
        };
        for chunk in first..end {
            let mut offset = be32(mp4, stco + 8 + 4 * chunk);
            for _ in 0..per_chunk {
                if out.len() == count {
                    return out;
                }
                let s = size(out.len());
                out.push((offset, s));
                offset += s;
            }
        }
    }
    out
}

/// Every audio sample's bytes overwritten: the table is intact, the sound is not AAC.
fn scramble_audio(mp4: &[u8]) -> Vec<u8> {
    let mut out = mp4.to_vec();
    let samples = audio_samples(mp4);
    assert!(samples.len() > 10, "the clip has audio samples");
    for (offset, size) in samples {
        for (k, b) in out[offset..offset + size].iter_mut().enumerate() {
            *b = 0xa5 ^ (k as u8);
        }
    }
    out
}

#[test]
fn kept_aac_that_does_not_decode_fails_the_conform() {
    let s = Scratch::new("bad-aac");
    let clip = |size: &str, file: &str| {
        s.ffmpeg(
            &[
                "-f",
                "lavfi",
                "-i",
                &format!("testsrc2=size={size}:rate=24"),
                "-f",
                "lavfi",
                "-i",
                "sine=frequency=440:sample_rate=48000",
                "-c:v",
                "libx264",
                "-pix_fmt",
                "yuv420p",
                "-c:a",
                "aac",
                "-t",
                "2",
                "-movflags",
                "+faststart",
            ],
            file,
        )
    };
    // Copied: the picture is conformed, the AAC units are kept.
    let copied = clip("640x360", "copied.mp4");
    let c = conform_mp4(&copied, &target(AspectRatio::R16x9, 2)).expect("as written");
    assert_eq!((c.passed_through, c.audio.as_str()), (false, "kept"));
    let err = conform_mp4(&scramble_audio(&copied), &target(AspectRatio::R16x9, 2))
        .expect_err("scrambled AAC");
    assert!(
        matches!(&err, MediaError::AudioDecode(m) if m.contains("AAC access unit 0")),
        "{err}"
    );
    // Passed through: already the contract's size, seconds and codecs.
    let through = clip("1366x768", "through.mp4");
    let c = conform_mp4(&through, &target(AspectRatio::R16x9, 2)).expect("as written");
    assert!(c.passed_through, "{c:?}");
    let err = conform_mp4(&scramble_audio(&through), &target(AspectRatio::R16x9, 2))
        .expect_err("scrambled AAC");
    assert!(matches!(err, MediaError::AudioDecode(_)), "{err}");
}

#[test]
fn an_audio_table_claiming_more_sound_than_it_decodes_to_fails_the_conform() {
    let s = Scratch::new("long-aac");
    let clip = s.ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=640x360:rate=24",
            "-f",
            "lavfi",
            "-i",
            "sine=frequency=440:sample_rate=48000:duration=1",
            "-c:v",
            "libx264",
            "-pix_fmt",
            "yuv420p",
            "-c:a",
            "aac",
            "-t",
            "3",
            "-movflags",
            "+faststart",
        ],
        "short-audio.mp4",
    );
    // As written, the table says the sound stops after 1 s: it is decoded and padded.
    let c = conform_mp4(&clip, &target(AspectRatio::R16x9, 3)).expect("as written");
    assert_eq!(c.audio, "re-encoded from AAC");
    // Each unit claimed to last four times as long: the table now covers the 3 s.
    let mut lying = clip.clone();
    let stts = audio_table(&lying, b"stts");
    for e in 0..be32(&lying, stts + 4) {
        let at = stts + 12 + 8 * e;
        let delta = (be32(&lying, at) * 4) as u32;
        lying[at..at + 4].copy_from_slice(&delta.to_be_bytes());
    }
    let err = conform_mp4(&lying, &target(AspectRatio::R16x9, 3)).expect_err("the table lies");
    assert!(
        matches!(&err, MediaError::AudioDecode(m) if m.contains("shorter than the 3.00 s of video")),
        "{err}"
    );
}
