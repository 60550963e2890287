//! Renders a clip to a file and reports how long it took.
//!
//! `cargo run -p reelgate-media --example render -- OUT.mp4 [SECONDS] [ASPECT] [PROMPT]`

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use reelgate_media::{output_dimensions, render_mp4, thumbnail_jpeg, AspectRatio, RenderSpec};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let out = args
        .next()
        .ok_or("usage: render OUT.mp4 [SECONDS] [ASPECT] [PROMPT]")?;
    let seconds: u32 = args.next().as_deref().unwrap_or("4").parse()?;
    let aspect_arg = args.next().unwrap_or_else(|| "16:9".into());
    let aspect = AspectRatio::parse(&aspect_arg).ok_or("unknown aspect ratio")?;
    let prompt = args
        .next()
        .unwrap_or_else(|| "a red fox running through snow".into());
    let (width, height) = output_dimensions(aspect, None);
    let spec = RenderSpec::new(width, height, seconds, prompt);
    let started = Instant::now();
    let mp4 = render_mp4(&spec, &mut |_| {}, &AtomicBool::new(false))?;
    let render_time = started.elapsed();
    std::fs::write(&out, &mp4)?;
    let started = Instant::now();
    let jpeg = thumbnail_jpeg(&mp4, 480)?;
    let thumb_time = started.elapsed();
    std::fs::write(format!("{out}.jpg"), &jpeg)?;
    println!(
        "{width}x{height} {seconds}s: rendered in {:.2}s ({} bytes); thumbnail in {:.3}s",
        render_time.as_secs_f64(),
        mp4.len(),
        thumb_time.as_secs_f64()
    );
    Ok(())
}
