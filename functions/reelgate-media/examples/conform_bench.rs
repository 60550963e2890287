//! Measures the conform stage on clips like hosted engines deliver, made with ffmpeg:
//! a 15 s 1920x1080 30 fps x264 High profile clip with AAC, conformed to 16:9 for 15 s, and a
//! 15 s 720x1280 30 fps clip without audio, conformed to 9:16 (silence added).
//!
//! Then the stitch step's join: a 12 s and an 8 s 1366x768 24 fps clip with AAC (as the conform
//! stage writes them) joined into one 20 s clip, with the ratio of its wall time to the output's
//! length.
//!
//! `cargo run --release -p reelgate-media --example conform_bench [-- OUT_DIR]`
//!
//! `cargo run --release -p reelgate-media --example conform_bench -- OUT_DIR --file MP4 SECONDS`
//! conforms only that file (to 16:9 for SECONDS), so that the process's peak RSS is the
//! conform's own: the file is read through a [`FileSource`], never whole (unless passed
//! through).
//!
//! For each it prints the input size, the wall time and the CPU time of the conform (getrusage
//! RUSAGE_SELF, user + system; the stage runs on one thread), the process's peak RSS (VmHWM)
//! before and after, the output size and ffprobe's view of the output.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use reelgate_media::{conform_source, AspectRatio, ConformTarget, FileSource, ReadAt};

fn cpu_secs() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a zeroed rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// The process's peak resident set (VmHWM) in MiB.
fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn ffmpeg(args: &[&str], out: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let status = Command::new("ffmpeg")
        .args(["-hide_banner", "-v", "error", "-y"])
        .args(args)
        .arg(out)
        .status()
        .map_err(|e| format!("ffmpeg is needed ({e}): run scripts/test-tools.sh"))?;
    if !status.success() {
        return Err(format!("ffmpeg {args:?} failed").into());
    }
    Ok(())
}

fn ffprobe_summary(path: &Path) -> String {
    let out = Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-show_entries",
            "stream=codec_name,profile,width,height,r_frame_rate,sample_rate,channels,duration,bit_rate:format=duration",
            "-of",
            "compact=p=0",
        ])
        .arg(path)
        .output();
    match out {
        Ok(o) => String::from_utf8_lossy(&o.stdout)
            .trim()
            .replace('\n', "\n    "),
        Err(e) => format!("(ffprobe failed: {e})"),
    }
}

fn bench(
    name: &str,
    slug: &str,
    input: &Path,
    aspect: AspectRatio,
    seconds: u32,
    out_dir: &Path,
) -> Result<(), Box<dyn std::error::Error>> {
    let source = FileSource::open(input)?;
    let target = ConformTarget {
        aspect,
        seconds,
        fallback_audio: None,
    };
    let rss_before = peak_rss_mib();
    let cpu_before = cpu_secs();
    let started = Instant::now();
    let c = conform_source(&source, &target)?;
    let wall = started.elapsed().as_secs_f64();
    let cpu = cpu_secs() - cpu_before;
    let rss_after = peak_rss_mib();
    let out = out_dir.join(format!("{slug}.conformed.mp4"));
    std::fs::write(&out, &c.mp4)?;
    println!("{name}:");
    println!("  source:  {}", c.source);
    println!(
        "  input:   {:.2} MB (read through a FileSource)",
        source.size() as f64 / 1e6
    );
    println!("  wall:    {wall:.2} s");
    println!("  cpu:     {cpu:.2} s (user + system)");
    println!("  peak RSS (VmHWM): {rss_before:.1} MiB before, {rss_after:.1} MiB after");
    println!(
        "  output:  {:.2} MB, {}x{}, {:.3} s, audio {}, passed through: {}",
        c.mp4.len() as f64 / 1e6,
        c.width,
        c.height,
        c.duration_secs,
        c.audio,
        c.passed_through
    );
    println!("  ffprobe: {}", ffprobe_summary(&out));
    Ok(())
}

/// A `secs` long 1366x768 24 fps H.264 clip with a sine of `hz` as AAC, as the conform stage
/// leaves a 16:9 render.
fn clip_768p(out_dir: &Path, secs: u32, hz: u32) -> Result<PathBuf, Box<dyn std::error::Error>> {
    let path = out_dir.join(format!("1366x768-24fps-aac-{secs}s.mp4"));
    ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=1366x768:rate=24",
            "-f",
            "lavfi",
            "-i",
            &format!("sine=frequency={hz}:sample_rate=48000"),
            "-ac",
            "2",
            "-c:v",
            "libx264",
            "-pix_fmt",
            "yuv420p",
            "-c:a",
            "aac",
            "-t",
            &secs.to_string(),
        ],
        &path,
    )?;
    Ok(path)
}

fn stitch_bench(out_dir: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let first = std::fs::read(clip_768p(out_dir, 12, 440)?)?;
    let second = std::fs::read(clip_768p(out_dir, 8, 660)?)?;
    let rss_before = peak_rss_mib();
    let cpu_before = cpu_secs();
    let started = Instant::now();
    let joined = reelgate_media::stitch_mp4(&first, &second)?;
    let wall = started.elapsed().as_secs_f64();
    let cpu = cpu_secs() - cpu_before;
    let rss_after = peak_rss_mib();
    let out = out_dir.join("stitched-12s-8s.mp4");
    std::fs::write(&out, &joined.mp4)?;
    println!("stitch 12 s + 8 s at 1366x768:");
    println!("  parts:   {}", joined.source);
    println!(
        "  wall:    {wall:.2} s for {:.2} s of output: {:.2}x real time",
        joined.duration_secs,
        wall / joined.duration_secs
    );
    println!("  cpu:     {cpu:.2} s (user + system)");
    println!("  peak RSS (VmHWM): {rss_before:.1} MiB before, {rss_after:.1} MiB after");
    println!("  output:  {:.2} MB", joined.mp4.len() as f64 / 1e6);
    println!("  ffprobe: {}", ffprobe_summary(&out));
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out_dir: PathBuf = match std::env::args().nth(1) {
        Some(d) => d.into(),
        None => std::env::temp_dir().join("reelgate-conform-bench"),
    };
    std::fs::create_dir_all(&out_dir)?;
    let args: Vec<String> = std::env::args().collect();
    if args.get(2).map(String::as_str) == Some("--file") {
        let input = PathBuf::from(args.get(3).ok_or("--file MP4 SECONDS")?);
        let seconds: u32 = args.get(4).ok_or("--file MP4 SECONDS")?.parse()?;
        return bench(
            &format!("{} -> 16:9 {seconds} s", input.display()),
            "file",
            &input,
            AspectRatio::R16x9,
            seconds,
            &out_dir,
        );
    }
    let landscape = out_dir.join("1920x1080-30fps-high-aac-15s.mp4");
    ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=1920x1080:rate=30",
            "-f",
            "lavfi",
            "-i",
            "sine=frequency=440:sample_rate=48000",
            "-ac",
            "2",
            "-c:v",
            "libx264",
            "-profile:v",
            "high",
            "-pix_fmt",
            "yuv420p",
            "-c:a",
            "aac",
            "-t",
            "15",
        ],
        &landscape,
    )?;
    let portrait = out_dir.join("720x1280-30fps-high-noaudio-15s.mp4");
    ffmpeg(
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=size=720x1280:rate=30",
            "-c:v",
            "libx264",
            "-profile:v",
            "high",
            "-pix_fmt",
            "yuv420p",
            "-t",
            "15",
        ],
        &portrait,
    )?;
    println!("files in {}", out_dir.display());
    // First, so that the process's high-water mark after it is the stitch's own.
    stitch_bench(&out_dir)?;
    bench(
        "1920x1080 High + AAC -> 16:9 15 s",
        "landscape",
        &landscape,
        AspectRatio::R16x9,
        15,
        &out_dir,
    )?;
    bench(
        "720x1280 High, no audio -> 9:16 15 s",
        "portrait",
        &portrait,
        AspectRatio::R9x16,
        15,
        &out_dir,
    )?;
    Ok(())
}
