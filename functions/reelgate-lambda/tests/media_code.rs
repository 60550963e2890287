//! Which Lambda binaries carry video codec code (issue #16: HTTP functions carry no video codecs),
//! and that each carries one TLS crypto library and no HTTP/2.
//!
//! Every binary links the same library, and the linker keeps only what the binary's entry point
//! reaches, so the split is a property of each built binary, not of the dependency tree (which
//! is the same for all). This reads the binaries of this build: with a symbol table (the dev
//! profile) it looks for the codecs' entry points with `nm`; stripped (the release profile) it
//! looks for the H.264 decoder's C++ type name, which stays in the binary's read-only data.
//! A control checks that the pipeline bootstrap (whose finalize step probes MP4s and decodes a
//! frame for the thumbnail) does carry the decoder, so the check cannot pass for want of a marker.

use reelgate_lambda::functions::{bootstrap, bootstraps, Serves, FUNCTIONS};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The codecs' C entry points (openh264's decoder and encoder, fdk-aac's encoder).
const CODEC_SYMBOLS: &[&str] = &["WelsCreateDecoder", "WelsCreateSVCEncoder", "aacEncOpen"];
/// In a stripped binary: the decoder's RTTI type name (`WelsDec::CWelsDecoder`).
const STRIPPED_MARKER: &[u8] = b"CWelsDecoder";

/// aws-lc's symbols (aws-lc-sys prefixes every one), which the AWS SDK's default HTTPS client
/// would bring beside ring; and ring's, the control that the symbol check can see a library.
const AWS_LC_PREFIX: &str = " aws_lc_";
const RING_PREFIX: &str = " ring_core_";
/// The `h2` crate's symbols (legacy mangling: the crate's name with its length): HTTP/2, which
/// the AWS SDK's own hyper client brought into every function (1.2 MB with its second client;
/// docs/lambda-artifacts.md, "The SDK's HTTP client") and nothing in reelgate speaks.
const H2_PREFIX: &str = " _ZN2h2";

/// The binaries whose work is media: the pipeline's shared bootstrap (its finalize step probes,
/// thumbnails and makes spritesheets, stitch joins an extension's segment after its source,
/// moderate reads frames of reference videos and of a remix's source), the characters' create,
/// and the bootstrap of edits and extensions, which check a caller's video with the conform
/// stage's reading and decode it before they answer (a video without decodable pictures is a
/// 400, not a failed job later).
const MAY_CARRY_CODECS: &[&str] = &["pipeline", "api-video-characters", "video-edit-extend"];

/// The HTTP functions whose answer needs a decoded picture (by function; their bootstraps are
/// the last two of [`MAY_CARRY_CODECS`]).
const DECODES_BEFORE_ANSWERING: &[&str] = &[
    "api-video-characters",
    "api-video-edits",
    "api-video-extensions",
];

fn binary(name: &str) -> PathBuf {
    // target/<profile>/deps/<test> → target/<profile>/<name>
    let exe = std::env::current_exe().expect("test exe");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target profile dir");
    dir.join(name)
}

/// The defined symbols of `path`, one per line; None when it has no symbol table (stripped).
fn symbols(path: &Path) -> Option<String> {
    let out = Command::new("nm")
        .arg("--defined-only")
        .arg(path)
        .output()
        .unwrap_or_else(|e| panic!("running nm (binutils) on {}: {e}", path.display()));
    let symbols = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.success() && !symbols.trim().is_empty()).then_some(symbols)
}

/// `read` of each named binary, each on a thread of its own (`nm` over 31 binaries), with the
/// binary's name, in the order given.
fn read_each<T: Send + 'static>(names: &[&str], read: fn(&Path) -> T) -> Vec<(String, T)> {
    let handles: Vec<_> = names
        .iter()
        .map(|b| {
            let (name, path) = (b.to_string(), binary(b));
            std::thread::spawn(move || (name, read(&path)))
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().expect("checking a binary"))
        .collect()
}

/// The codec markers found in `path`.
fn codec_markers(path: &Path) -> Vec<String> {
    if let Some(symbols) = symbols(path) {
        return CODEC_SYMBOLS
            .iter()
            .filter(|s| symbols.lines().any(|l| l.ends_with(&format!(" {s}"))))
            .map(|s| s.to_string())
            .collect();
    }
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if bytes
        .windows(STRIPPED_MARKER.len())
        .any(|w| w == STRIPPED_MARKER)
    {
        vec![String::from_utf8_lossy(STRIPPED_MARKER).into_owned()]
    } else {
        Vec::new()
    }
}

#[test]
fn only_the_media_steps_link_video_codecs() {
    let finalize = binary("pipeline");
    assert!(
        finalize.exists(),
        "{} is missing: the package's binaries are built for its tests",
        finalize.display()
    );
    assert!(
        !codec_markers(&finalize).is_empty(),
        "the control failed: the pipeline bootstrap (its finalize step) should carry the H.264 decoder, so the markers are wrong"
    );
    let checked: Vec<&str> = bootstraps()
        .into_iter()
        .filter(|b| !MAY_CARRY_CODECS.contains(b))
        .collect();
    let mut carrying = Vec::new();
    for (name, markers) in read_each(&checked, codec_markers) {
        if !markers.is_empty() {
            carrying.push(format!("{name}: {}", markers.join(", ")));
        }
    }
    assert!(
        carrying.is_empty(),
        "these functions link video codec code they never run:\n  {}",
        carrying.join("\n  ")
    );
    // Every HTTP function is among the checked ones, but those whose answer needs a decoded
    // picture.
    for f in FUNCTIONS {
        if f.serves.http_routes().is_some() && !DECODES_BEFORE_ANSWERING.contains(&f.binary) {
            assert!(
                checked.contains(&bootstrap(f)),
                "{} ({}) was not checked",
                f.binary,
                bootstrap(f)
            );
        }
    }
    for f in FUNCTIONS
        .iter()
        .filter(|f| DECODES_BEFORE_ANSWERING.contains(&f.binary))
    {
        assert!(
            !codec_markers(&binary(bootstrap(f))).is_empty(),
            "{} decodes a caller's video: its bootstrap {} should carry the H.264 decoder",
            f.binary,
            bootstrap(f)
        );
    }
}

#[test]
fn every_function_links_one_tls_crypto_library() {
    let all: Vec<&str> = bootstraps().into_iter().collect();
    for (name, symbols) in read_each(&all, symbols) {
        let symbols = symbols.unwrap_or_else(|| {
            panic!("{name} has no symbol table: this check reads the test profile's binaries")
        });
        assert!(
            symbols.lines().any(|l| l.contains(RING_PREFIX)),
            "the control failed: {name} should link ring (reqwest's and the SDK's TLS)"
        );
        assert!(
            !symbols.lines().any(|l| l.contains(AWS_LC_PREFIX)),
            "{name} links aws-lc beside ring: an SDK client was built with its default HTTPS client"
        );
        assert!(
            !symbols.lines().any(|l| l.contains(H2_PREFIX)),
            "{name} links HTTP/2 (h2): an SDK client was given another HTTP client than \
             reelgate_aws::sdk_loader's, or reqwest's `http2` feature was turned on"
        );
    }
}

/// The PDF renderer's code (hayro, `reelgate::domain::responses::pdf`): with a symbol table,
/// any symbol of the `hayro` crates; stripped, a message of hayro's font code.
fn pdf_renderer_markers(path: &Path) -> usize {
    if let Some(symbols) = symbols(path) {
        return symbols.lines().filter(|l| l.contains("hayro")).count();
    }
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    bytes.windows(5).filter(|w| *w == b"hayro").count()
}

/// Issue #30: a hostile PDF is rendered only by the renderer function, so no other binary
/// (the responses function included) carries the renderer at all.
#[test]
fn only_the_pdf_rasterizer_links_the_pdf_renderer() {
    let renderer = binary("pdf-rasterizer");
    assert!(
        renderer.exists(),
        "{} is missing: the package's binaries are built for its tests",
        renderer.display()
    );
    assert!(
        pdf_renderer_markers(&renderer) > 0,
        "the control failed: pdf-rasterizer should carry hayro, so the markers are wrong"
    );
    let others: Vec<&str> = FUNCTIONS
        .iter()
        .filter(|f| !matches!(f.serves, Serves::PdfRasterizer))
        .map(bootstrap)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert!(others.contains(&"api-responses"));
    let carrying: Vec<String> = read_each(&others, pdf_renderer_markers)
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(name, n)| format!("{name}: {n} hayro symbols"))
        .collect();
    assert!(
        carrying.is_empty(),
        "these functions link the PDF renderer they must only invoke:\n  {}",
        carrying.join("\n  ")
    );
}
