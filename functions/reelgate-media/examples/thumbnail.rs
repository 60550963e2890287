//! Writes a JPEG thumbnail of an MP4 and prints its probe.
//!
//! `cargo run -p reelgate-media --example thumbnail -- IN.mp4 OUT.jpg [WIDTH]`

use reelgate_media::{probe_mp4, thumbnail_jpeg};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let input = args
        .next()
        .ok_or("usage: thumbnail IN.mp4 OUT.jpg [WIDTH]")?;
    let output = args
        .next()
        .ok_or("usage: thumbnail IN.mp4 OUT.jpg [WIDTH]")?;
    let width: u32 = args.next().as_deref().unwrap_or("480").parse()?;
    let bytes = std::fs::read(&input)?;
    println!("{:#?}", probe_mp4(&bytes)?);
    let started = std::time::Instant::now();
    let jpeg = thumbnail_jpeg(&bytes, width)?;
    println!("thumbnail in {:.3}s", started.elapsed().as_secs_f64());
    std::fs::write(output, jpeg)?;
    Ok(())
}
