//! The `bedrock` video engine (Amazon Nova Reel through Bedrock's asynchronous invoke) against
//! `FakeNovaReel`, a fake of Bedrock's `StartAsyncInvoke` / `GetAsyncInvoke` written from the
//! Amazon Nova user guide, which writes its MP4 into the emulator's S3 as Bedrock does; then the
//! conform stage turns Nova Reel's 1280x720, silent, 6-second-step clip into the contract.
//! Needs the emulator (`tests/contract.rs` says how) and ffmpeg (scripts/test-tools.sh).

mod support;

use aws_config::Region;
use aws_sdk_dynamodb::config::Credentials;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use reelgate::ports::engine::{
    EngineError, RenderInputs, RenderRequest, RenderStatus, VideoEngine,
};
use reelgate_aws::bedrock_video::BedrockVideoEngine;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const MODEL: &str = "amazon.nova-reel-v1:1";

/// One invocation the fake started.
struct Invocation {
    arn: String,
    output_uri: String,
    polls: u32,
}

/// What the fake knows: invocations by their client request token, and how many it started.
struct FakeNovaReel {
    s3: aws_sdk_s3::Client,
    invocations: Mutex<HashMap<String, Invocation>>,
    starts: Mutex<u32>,
}

fn validation(message: impl Into<String>) -> Response {
    (
        StatusCode::BAD_REQUEST,
        [("x-amzn-errortype", "ValidationException")],
        axum::Json(json!({ "message": message.into() })),
    )
        .into_response()
}

/// Nova Reel's documented input rules: TEXT_VIDEO is one 6 s shot (text up to 512 characters,
/// at most one image); MULTI_SHOT_AUTOMATED takes 12 to 120 s in steps of 6 (text up to 4000
/// characters, no image); MULTI_SHOT_MANUAL takes 2 to 20 shots and no durationSeconds. Every
/// task renders at 24 fps and 1280x720 only. Returns the seconds the clip lasts.
fn check_model_input(input: &Value) -> Result<u32, String> {
    let config = &input["videoGenerationConfig"];
    if config["fps"] != 24 || config["dimension"] != "1280x720" {
        return Err(format!("fps must be 24 and dimension 1280x720: {config}"));
    }
    let duration = config["durationSeconds"].as_u64();
    match input["taskType"].as_str() {
        Some("TEXT_VIDEO") => {
            let params = &input["textToVideoParams"];
            let text = params["text"].as_str().unwrap_or_default();
            if text.is_empty() || text.chars().count() > 512 {
                return Err("textToVideoParams.text must be 1 to 512 characters".into());
            }
            if params["images"].as_array().is_some_and(|i| i.len() > 1) {
                return Err("at most one image".into());
            }
            if duration != Some(6) {
                return Err(format!("durationSeconds must be 6, got {duration:?}"));
            }
            Ok(6)
        }
        Some("MULTI_SHOT_AUTOMATED") => {
            let text = input["multiShotAutomatedParams"]["text"]
                .as_str()
                .unwrap_or_default();
            if text.is_empty() || text.chars().count() > 4000 {
                return Err("multiShotAutomatedParams.text must be 1 to 4000 characters".into());
            }
            match duration {
                Some(d) if d % 6 == 0 && (12..=120).contains(&d) => Ok(d as u32),
                other => Err(format!(
                    "durationSeconds must be a multiple of 6 in [12, 120], got {other:?}"
                )),
            }
        }
        Some("MULTI_SHOT_MANUAL") => {
            if duration.is_some() {
                return Err("durationSeconds is not allowed with MULTI_SHOT_MANUAL".into());
            }
            let shots = input["multiShotManualParams"]["shots"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if !(2..=20).contains(&shots.len()) {
                return Err("2 to 20 shots".into());
            }
            Ok(shots.len() as u32 * 6)
        }
        other => Err(format!("unknown taskType {other:?}")),
    }
}

/// A silent 1280x720 24 fps x264 High-profile clip, as Nova Reel delivers.
fn nova_clip(seconds: u32) -> Vec<u8> {
    let dir = std::env::temp_dir().join(format!(
        "reelgate-nova-{}",
        reelgate::domain::ids::new_id("clip")
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("output.mp4");
    let status = std::process::Command::new("ffmpeg")
        .args(["-v", "error", "-y", "-f", "lavfi", "-i"])
        .arg("testsrc2=size=1280x720:rate=24")
        .args([
            "-t",
            &seconds.to_string(),
            "-c:v",
            "libx264",
            "-profile:v",
            "high",
        ])
        .args(["-pix_fmt", "yuv420p", "-an"])
        .arg(&path)
        .status()
        .expect("ffmpeg must be installed (scripts/test-tools.sh installs it)");
    assert!(status.success(), "ffmpeg failed");
    let bytes = std::fs::read(&path).expect("clip");
    let _ = std::fs::remove_dir_all(&dir);
    bytes
}

async fn handle(State(fake): State<Arc<FakeNovaReel>>, request: Request) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let body = axum::body::to_bytes(request.into_body(), 1 << 24)
        .await
        .unwrap_or_default();
    if method == "POST" && path == "/async-invoke" {
        let Ok(body) = serde_json::from_slice::<Value>(&body) else {
            return validation("malformed body");
        };
        if body["modelId"] != MODEL {
            return validation(format!("unknown model {}", body["modelId"]));
        }
        let seconds = match check_model_input(&body["modelInput"]) {
            Ok(s) => s,
            Err(e) => return validation(e),
        };
        let Some(uri) = body["outputDataConfig"]["s3OutputDataConfig"]["s3Uri"]
            .as_str()
            .filter(|u| u.starts_with("s3://"))
        else {
            return validation("outputDataConfig.s3OutputDataConfig.s3Uri must be an s3:// URI");
        };
        let token = body["clientRequestToken"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| reelgate::domain::ids::new_id("token"));
        // The same client request token answers the invocation it started (no second render).
        if let Some(known) = fake.invocations.lock().expect("lock").get(&token) {
            return axum::Json(json!({ "invocationArn": known.arn })).into_response();
        }
        *fake.starts.lock().expect("lock") += 1;
        let id = reelgate::domain::ids::new_id("inv").replace('_', "");
        let output_uri = format!("{}/{id}", uri.trim_end_matches('/'));
        let rest = output_uri.trim_start_matches("s3://");
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        let clip = nova_clip(seconds);
        fake.s3
            .put_object()
            .bucket(bucket)
            .key(format!("{prefix}/output.mp4"))
            .body(clip.into())
            .send()
            .await
            .expect("the fake writes its output to S3");
        let arn = format!("arn:aws:bedrock:us-east-1:000000000000:async-invoke/{id}");
        fake.invocations.lock().expect("lock").insert(
            token,
            Invocation {
                arn: arn.clone(),
                output_uri,
                polls: 0,
            },
        );
        return axum::Json(json!({ "invocationArn": arn })).into_response();
    }
    if method == "GET" {
        if let Some(encoded) = path.strip_prefix("/async-invoke/") {
            let arn = encoded
                .replace("%3A", ":")
                .replace("%3a", ":")
                .replace("%2F", "/")
                .replace("%2f", "/");
            let mut invocations = fake.invocations.lock().expect("lock");
            let Some(found) = invocations.values_mut().find(|i| i.arn == arn) else {
                return (
                    StatusCode::NOT_FOUND,
                    [("x-amzn-errortype", "ResourceNotFoundException")],
                    axum::Json(json!({ "message": "no such invocation" })),
                )
                    .into_response();
            };
            found.polls += 1;
            let status = if found.polls < 2 {
                "InProgress"
            } else {
                "Completed"
            };
            return axum::Json(json!({
                "invocationArn": found.arn,
                "modelArn": format!("arn:aws:bedrock:us-east-1::foundation-model/{MODEL}"),
                "status": status,
                "submitTime": "2026-11-26T00:00:00Z",
                "outputDataConfig": { "s3OutputDataConfig": { "s3Uri": found.output_uri } },
            }))
            .into_response();
        }
    }
    (StatusCode::NOT_FOUND, "no route").into_response()
}

async fn bedrock_client(endpoint: &str) -> aws_sdk_bedrockruntime::Client {
    let config = reelgate_aws::sdk_loader()
        .region(Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .credentials_provider(Credentials::new("test", "test", None, None, "fake-nova"))
        .load()
        .await;
    aws_sdk_bedrockruntime::Client::new(&config)
}

fn request(seconds: u32, reference: &str) -> RenderRequest {
    RenderRequest {
        model: "far-nova".into(),
        prompt: "a lighthouse over a stormy sea".into(),
        seconds,
        aspect_ratio: "16:9".into(),
        width: 1280,
        height: 720,
        inputs: RenderInputs::default(),
        callback_url: None,
        client_reference: Some(reference.into()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nova_reel_render_is_conformed_to_the_contract() {
    let Some((config, _)) = support::s3_adapter().await else {
        return;
    };
    let s3 = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&config)
            .force_path_style(true)
            .build(),
    );
    let fake = Arc::new(FakeNovaReel {
        s3: s3.clone(),
        invocations: Mutex::new(HashMap::new()),
        starts: Mutex::new(0),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
    let app = axum::Router::new()
        .fallback(handle)
        .with_state(fake.clone());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let engine = BedrockVideoEngine::with_clients(
        bedrock_client(&endpoint).await,
        s3,
        MODEL,
        &format!("s3://{}/nova-output", support::bucket_name()),
    );

    // A 13 s job maps onto one 18 s multi-shot clip; a redelivered submit (same job id) finds
    // the invocation it started.
    let reference = reelgate::domain::ids::new_id("video");
    let render = engine
        .submit(&request(18, &reference))
        .await
        .expect("submit");
    let again = engine
        .submit(&request(18, &reference))
        .await
        .expect("resubmit");
    assert_eq!(render.id, again.id);
    assert_eq!(*fake.starts.lock().expect("lock"), 1);
    let mut status = engine.status(&render.id).await.expect("status");
    for _ in 0..10 {
        if status.status.is_terminal() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        status = engine.status(&render.id).await.expect("status");
    }
    assert_eq!(status.status, RenderStatus::Succeeded, "{status:?}");
    let mp4: Vec<bytes::Bytes> =
        futures::TryStreamExt::try_collect(engine.fetch_result(&status).await.expect("output"))
            .await
            .expect("body");
    let mp4 = mp4.concat();
    let source = reelgate_media::probe_mp4(&mp4).expect("probe");
    assert_eq!(source.audio, None, "Nova Reel renders no audio");

    let conformed = reelgate_media::conform_mp4(
        &mp4,
        &reelgate_media::ConformTarget {
            aspect: reelgate_media::AspectRatio::R16x9,
            seconds: 13,
            fallback_audio: None,
        },
    )
    .expect("conform");
    let probe = reelgate_media::probe_mp4(&conformed.mp4).expect("probe");
    let video = probe.video.expect("video");
    assert_eq!((video.width, video.height), (1366, 768));
    assert_eq!(probe.audio.expect("a silent AAC track").codec, "aac");
    assert!(
        (probe.duration_secs - 13.0).abs() <= 0.5,
        "{}",
        probe.duration_secs
    );

    // What Nova Reel does not render is refused before Bedrock is called.
    assert!(matches!(
        engine.submit(&request(8, "video_other")).await,
        Err(EngineError::Rejected(_))
    ));
    assert_eq!(*fake.starts.lock().expect("lock"), 1);
}
