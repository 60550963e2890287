//! The `/v1/videos` surface over HTTP: every create rule, quotes, admission, agreement, list,
//! get, delete, content and thumbnail. Rendering is the workflow's and is not running here: jobs
//! stay admitted until a test settles them through the job functions.

use reelgate::domain::catalog::Catalog;
use reelgate_embedded::testing::{agree, Tenant, TestServer};
use serde_json::{json, Value};

mod common {
    pub fn tiny_png() -> Vec<u8> {
        let mut out = std::io::Cursor::new(Vec::new());
        let img =
            image::RgbImage::from_fn(4, 4, |x, y| image::Rgb([x as u8 * 60, y as u8 * 60, 90]));
        img.write_to(&mut out, image::ImageFormat::Png)
            .expect("png");
        out.into_inner()
    }
}

struct Client {
    http: reqwest::Client,
    base: String,
}

impl Client {
    fn new(server: &TestServer) -> Self {
        Client {
            http: reqwest::Client::new(),
            base: server.base_url.clone(),
        }
    }
    async fn send(&self, req: reqwest::RequestBuilder) -> (u16, Value) {
        let res = req.send().await.expect("request");
        let status = res.status().as_u16();
        let text = res.text().await.expect("body");
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }
    async fn post(&self, key: &str, path: &str, body: Value) -> (u16, Value) {
        self.send(
            self.http
                .post(format!("{}{path}", self.base))
                .bearer_auth(key)
                .json(&body),
        )
        .await
    }
    async fn get(&self, key: &str, path: &str) -> (u16, Value) {
        self.send(
            self.http
                .get(format!("{}{path}", self.base))
                .bearer_auth(key),
        )
        .await
    }
    async fn delete(&self, key: &str, path: &str) -> (u16, Value) {
        self.send(
            self.http
                .delete(format!("{}{path}", self.base))
                .bearer_auth(key),
        )
        .await
    }
    async fn upload(&self, key: &str, purpose: &str, bytes: Vec<u8>) -> String {
        let form = reqwest::multipart::Form::new()
            .text("purpose", purpose.to_owned())
            .part(
                "file",
                reqwest::multipart::Part::bytes(bytes).file_name("f.bin"),
            );
        let (status, body) = self
            .send(
                self.http
                    .post(format!("{}/v1/files", self.base))
                    .bearer_auth(key)
                    .multipart(form),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body["id"].as_str().expect("id").to_owned()
    }
}

fn job(seconds: u32) -> Value {
    json!({"model": "reel-1", "prompt": "a lighthouse at dusk", "seconds": seconds, "aspect_ratio": "16:9"})
}

fn assert_error(status: u16, body: &Value, want_status: u16, code: &str) {
    assert_eq!(status, want_status, "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(body["error"]["message"]
        .as_str()
        .is_some_and(|m| !m.is_empty()));
}

async fn agreed_tenant(server: &TestServer, credits: &str) -> Tenant {
    let t = server.tenant(credits).await;
    agree(&server.app, &t.org, &t.person).await;
    t
}

#[tokio::test]
async fn models_list_only_what_the_plan_is_entitled_to() {
    let server = TestServer::start().await;
    let c = Client::new(&server);
    let t = server.tenant("1.00").await;
    let (status, body) = c.get(&t.key, "/v1/videos/models").await;
    assert_eq!(status, 200);
    assert_eq!(body["object"], "list");
    let ids: Vec<&str> = body["data"]
        .as_array()
        .expect("data")
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert_eq!(ids, vec!["reel-1"]);
    let m = &body["data"][0];
    assert_eq!(m["object"], "video_model");
    assert_eq!(
        m["pricing"][0],
        json!({"resolution": "768p", "per_second": "0.10", "currency": "usd"})
    );
    server
        .app
        .accounts()
        .set_plan(&t.org, "pro")
        .await
        .expect("plan");
    let (_, body) = c.get(&t.key, "/v1/videos/models").await;
    assert_eq!(body["data"].as_array().map(Vec::len), Some(2));
}

#[tokio::test]
async fn agreement_is_per_person_and_console_only() {
    let server = TestServer::start().await;
    let c = Client::new(&server);
    let t = server.tenant("10.00").await;
    let (status, body) = c.get(&t.key, "/v1/videos/acceptance").await;
    assert_eq!(status, 200);
    assert_eq!(body["accepted"], false);
    assert_eq!(
        body["terms_version"],
        server.app.catalog.terms_version.as_str()
    );
    let (status, body) = c.post(&t.key, "/v1/videos", job(4)).await;
    assert_error(status, &body, 403, "agreement_required");
    // An API key cannot record agreement.
    let (status, body) = c.post(&t.key, "/v1/videos/acceptance", json!({})).await;
    assert_error(status, &body, 403, "console_login_required");
    // A console session is not an API key: its cookie secret is refused as a bearer token.
    let session = reelgate::domain::accounts::console::Console::new(server.app.store.as_ref())
        .create_session(&t.person, &t.org)
        .await
        .expect("session");
    let (status, body) = c
        .post(&session.secret, "/v1/videos/acceptance", json!({}))
        .await;
    assert_error(status, &body, 401, "invalid_api_key");
    // The console records it.
    reelgate_embedded::testing::agree(&server.app, &t.org, &t.person).await;
    let (_, body) = c.get(&t.key, "/v1/videos/acceptance").await;
    assert_eq!(body["accepted"], true);
    let (status, body) = c.post(&t.key, "/v1/videos", job(4)).await;
    assert_eq!(status, 200, "{body}");
    // A teammate who has not agreed cannot create, but can list and read.
    let mate = server.member(&t.org).await;
    let (status, body) = c.post(&mate.key, "/v1/videos", job(4)).await;
    assert_error(status, &body, 403, "agreement_required");
    let (status, list) = c.get(&mate.key, "/v1/videos").await;
    assert_eq!(status, 200);
    assert_eq!(list["data"].as_array().map(Vec::len), Some(1));
    // A new terms version asks again.
    let mut newer = (*server.app.catalog).clone();
    newer.terms_version = "2099-01-01".into();
    let mut app = server.app.clone();
    app.catalog = std::sync::Arc::new(newer);
    let caller = server
        .app
        .accounts()
        .authenticate(&t.key)
        .await
        .expect("auth")
        .expect("caller");
    let request = reelgate::domain::params::read_from(job(4)).expect("a valid create");
    let err = reelgate::domain::videos::create::admit_job(app.context(), None, &caller, &request)
        .await
        .expect_err("asks again");
    assert_eq!(err.code, "agreement_required");
}

#[tokio::test]
async fn create_returns_the_job_with_an_exact_quote() {
    let server = TestServer::start().await;
    let c = Client::new(&server);
    let t = agreed_tenant(&server, "10.00").await;
    let (status, video) = c.post(&t.key, "/v1/videos", job(7)).await;
    assert_eq!(status, 200, "{video}");
    let id = video["id"].as_str().expect("id");
    assert!(id.starts_with("video_") && id.len() > 10);
    assert_eq!(video["object"], "video");
    assert_eq!(video["status"], "moderating");
    assert_eq!(video["cost"], "0.70");
    assert_eq!(video["currency"], "usd");
    assert_eq!(video["seconds"], 7);
    assert_eq!(video["model"], "reel-1");
    assert_eq!(video["prompt"], "a lighthouse at dusk");
    assert_eq!(video["error"], Value::Null);
    assert_eq!(video["completed_at"], Value::Null);
    assert_eq!(video["thumbnail"], false);
    for field in [
        "id",
        "object",
        "model",
        "prompt",
        "seconds",
        "status",
        "error",
        "cost",
        "currency",
        "created_at",
        "completed_at",
        "thumbnail",
    ] {
        assert!(video.get(field).is_some(), "missing {field}");
    }
    let (_, again) = c.get(&t.key, &format!("/v1/videos/{id}")).await;
    assert_eq!(again["cost"], "0.70");
    let org = server.app.accounts().org(&t.org).await.expect("org");
    assert_eq!(org.reserved.to_string(), "0.70");
    assert_eq!(org.available.to_string(), "9.30");
    assert_eq!(org.balance.to_string(), "10.00");
}

#[tokio::test]
async fn every_validation_rule_is_a_400_naming_its_param() {
    let server = TestServer::start().await;
    let c = Client::new(&server);
    let t = agreed_tenant(&server, "10.00").await;
    let other = agreed_tenant(&server, "10.00").await;
    let png = c.upload(&t.key, "vision", common::tiny_png()).await;
    let png2 = c.upload(&t.key, "vision", common::tiny_png()).await;
    let foreign = c.upload(&other.key, "vision", common::tiny_png()).await;
    let audio = c
        .upload(
            &t.key,
            "audio",
            b"RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x40\x1f\x00\x00"
                .to_vec(),
        )
        .await;
    let mut cases: Vec<(Value, &str)> = Vec::new();
    let with = |patch: Value| {
        let mut b = job(4);
        for (k, v) in patch.as_object().expect("obj") {
            if v.is_null() {
                b.as_object_mut().expect("obj").remove(k);
            } else {
                b[k] = v.clone();
            }
        }
        b
    };
    cases.push((with(json!({"seconds": 3})), "seconds"));
    cases.push((with(json!({"seconds": 16})), "seconds"));
    cases.push((with(json!({"seconds": null})), "seconds"));
    cases.push((with(json!({"prompt": "x".repeat(7001)})), "prompt"));
    cases.push((with(json!({"prompt": null})), "prompt"));
    cases.push((with(json!({"model": null})), "model"));
    cases.push((with(json!({"aspect_ratio": null})), "aspect_ratio"));
    cases.push((with(json!({"aspect_ratio": "5:4"})), "aspect_ratio"));
    cases.push((with(json!({"image_reference": [{"file_id": png, "role": "first_frame"}], "references": {"images": [{"file_id": png2}]}})), "references"));
    cases.push((
        with(json!({"references": {"audio": [{"file_id": audio}]}})),
        "references",
    ));
    cases.push((
        with(json!({"image_reference": [{"file_id": png, "role": "middle"}]})),
        "image_reference[0].role",
    ));
    cases.push((with(json!({"image_reference": [{"file_id": png, "role": "first_frame"}, {"file_id": png2, "role": "first_frame"}]})), "image_reference[1].role"));
    cases.push((
        with(json!({"image_reference": [{"file_id": foreign, "role": "first_frame"}]})),
        "image_reference[0].file_id",
    ));
    cases.push((
        with(json!({"image_reference": [{"file_id": audio, "role": "last_frame"}]})),
        "image_reference[0].file_id",
    ));
    cases.push((
        with(json!({"references": {"images": [{"file_id": png}], "videos": [{"file_id": png2}]}})),
        "references.videos[0].file_id",
    ));
    cases.push((with(json!({"references": {"images": (0..9).map(|_| json!({"file_id": png})).collect::<Vec<_>>()}})), "references.images"));
    cases.push((
        with(json!({"references": {"images": [{"file_id": "file_00000000000000000000000000"}]}})),
        "references.images[0].file_id",
    ));
    for (body, param) in cases {
        let (status, err) = c.post(&t.key, "/v1/videos", body.clone()).await;
        assert_error(status, &err, 400, "invalid_request_error");
        assert_eq!(err["error"]["param"], param, "{body}");
    }
    let (status, err) = c
        .send(
            c.http
                .post(format!("{}/v1/videos", c.base))
                .bearer_auth(&t.key)
                .header("content-type", "application/json")
                .body("{not json"),
        )
        .await;
    assert_error(status, &err, 400, "invalid_request_error");
    // Nothing was admitted by any of them.
    let org = server.app.accounts().org(&t.org).await.expect("org");
    assert_eq!(org.renders_in_flight, 0);
    // A valid image-to-video request with both frames is admitted.
    let ok = with(
        json!({"image_reference": [{"file_id": png2, "role": "last_frame"}, {"file_id": png, "role": "first_frame"}]}),
    );
    let (status, body) = c.post(&t.key, "/v1/videos", ok).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn oversized_frame_image_is_refused() {
    let server = TestServer::start().await;
    let c = Client::new(&server);
    let t = agreed_tenant(&server, "10.00").await;
    // A PNG signature followed by padding: an image by its content, exactly 30 MiB.
    let mut big = common::tiny_png();
    big.resize(30 * 1024 * 1024, 0);
    let id = c.upload(&t.key, "vision", big).await;
    let mut body = job(4);
    body["image_reference"] = json!([{"file_id": id, "role": "first_frame"}]);
    let (status, err) = c.post(&t.key, "/v1/videos", body).await;
    assert_error(status, &err, 400, "invalid_request_error");
    assert_eq!(err["error"]["param"], "image_reference[0].file_id");
}

#[tokio::test]
async fn model_engine_credits_and_concurrency_errors() {
    let mut catalog = Catalog::parse(reelgate::domain::catalog::DEFAULT_CATALOG).expect("catalog");
    catalog
        .video_models
        .push(reelgate::domain::catalog::VideoModel {
            id: "reel-offline".into(),
            name: "Offline".into(),
            description: "No engine configured".into(),
            engine: None,
            plans: vec!["starter".into()],
            pricing: catalog.video_models[0].pricing.clone(),
            inputs: None,
            aspect_ratios: None,
        });
    let server = TestServer::start_with(catalog, |_| {}).await;
    let c = Client::new(&server);
    let t = agreed_tenant(&server, "0.50").await;
    let mut body = job(4);
    body["model"] = json!("no-such-model");
    let (status, err) = c.post(&t.key, "/v1/videos", body).await;
    assert_error(status, &err, 404, "model_not_found");
    let mut body = job(4);
    body["model"] = json!("reel-1-pro");
    let (status, err) = c.post(&t.key, "/v1/videos", body).await;
    assert_error(status, &err, 404, "model_not_found");
    let mut body = job(4);
    body["model"] = json!("reel-offline");
    let (status, err) = c.post(&t.key, "/v1/videos", body).await;
    assert_error(status, &err, 503, "provider_unavailable");
    // 0.50 covers one 4 s render (0.40) but not a second while the first is in flight.
    let (status, _) = c.post(&t.key, "/v1/videos", job(4)).await;
    assert_eq!(status, 200);
    let (status, err) = c.post(&t.key, "/v1/videos", job(4)).await;
    assert_error(status, &err, 402, "insufficient_credits");
    server
        .app
        .accounts()
        .add_credits(&t.org, "10".parse().expect("d"))
        .await
        .expect("credits");
    let (status, _) = c.post(&t.key, "/v1/videos", job(4)).await;
    assert_eq!(status, 200);
    let (status, err) = c.post(&t.key, "/v1/videos", job(4)).await;
    assert_error(status, &err, 429, "concurrency_limit_exceeded");
}

#[tokio::test]
async fn admission_is_exact_under_50_concurrent_creates() {
    let server = TestServer::start().await;
    reelgate_embedded::testing::store_contracts::admission_contract(server.app.store.clone()).await;
}

#[tokio::test]
async fn list_pages_newest_first_and_tenancy_holds() {
    let server = TestServer::start().await;
    let c = Client::new(&server);
    let t = agreed_tenant(&server, "100.00").await;
    server
        .app
        .accounts()
        .set_plan(&t.org, "enterprise")
        .await
        .expect("plan");
    let mut ids = Vec::new();
    for _ in 0..5 {
        let (status, v) = c.post(&t.key, "/v1/videos", job(4)).await;
        assert_eq!(status, 200, "{v}");
        ids.push(v["id"].as_str().expect("id").to_owned());
    }
    ids.reverse();
    let mut seen = Vec::new();
    let mut after = String::new();
    let mut pages = 0;
    loop {
        let path = if after.is_empty() {
            "/v1/videos?limit=2".to_owned()
        } else {
            format!("/v1/videos?limit=2&after={after}")
        };
        let (status, page) = c.get(&t.key, &path).await;
        assert_eq!(status, 200, "{page}");
        pages += 1;
        assert_eq!(page["object"], "list");
        seen.extend(
            page["data"]
                .as_array()
                .expect("data")
                .iter()
                .map(|v| v["id"].as_str().expect("id").to_owned()),
        );
        assert_eq!(page["first_id"], page["data"][0]["id"]);
        if page["has_more"] != true {
            break;
        }
        after = page["last_id"].as_str().expect("last_id").to_owned();
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, ids);
    let (_, all) = c.get(&t.key, "/v1/videos").await;
    assert_eq!(all["data"].as_array().map(Vec::len), Some(5));
    for bad in ["limit=0", "limit=101", "limit=abc", "after=nope"] {
        let (status, err) = c.get(&t.key, &format!("/v1/videos?{bad}")).await;
        assert_error(status, &err, 400, "invalid_request_error");
    }
    let stranger = agreed_tenant(&server, "1.00").await;
    let (status, err) = c
        .get(&stranger.key, &format!("/v1/videos/{}", ids[0]))
        .await;
    assert_error(status, &err, 404, "video_not_found");
    let (_, theirs) = c.get(&stranger.key, "/v1/videos").await;
    assert_eq!(theirs["data"].as_array().map(Vec::len), Some(0));
    let (status, err) = c
        .delete(&stranger.key, &format!("/v1/videos/{}", ids[0]))
        .await;
    assert_error(status, &err, 404, "video_not_found");
}

#[tokio::test]
async fn delete_conflicts_while_running_then_removes_outputs() {
    let server = TestServer::start().await;
    let c = Client::new(&server);
    let t = agreed_tenant(&server, "10.00").await;
    let (_, v) = c.post(&t.key, "/v1/videos", job(4)).await;
    let id = v["id"].as_str().expect("id").to_owned();
    let (status, err) = c.delete(&t.key, &format!("/v1/videos/{id}")).await;
    assert_error(status, &err, 409, "conflict");
    for path in [
        format!("/v1/videos/{id}/content"),
        format!("/v1/videos/{id}/thumbnail"),
    ] {
        let (status, err) = c.get(&t.key, &path).await;
        assert_error(status, &err, 400, "invalid_request_error");
    }
    // Complete it by hand (the workflow's charge path) with an output and a thumbnail.
    let mp4: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
    server
        .app
        .blobs
        .put_bytes(
            &reelgate::domain::videos::output_blob_key(&t.org, &id),
            "video/mp4",
            mp4.clone().into(),
        )
        .await
        .expect("put");
    server
        .app
        .blobs
        .put_bytes(
            &reelgate::domain::videos::thumbnail_blob_key(&t.org, &id),
            "image/jpeg",
            b"\xff\xd8\xff jpeg".to_vec().into(),
        )
        .await
        .expect("put");
    let done = reelgate::ports::store::Update::new()
        .set("status", "completed")
        .set("thumbnail", true)
        .set("progress", 100i64)
        .set("completed_at", reelgate::ports::store::now_secs());
    let settled = reelgate::domain::videos::settlement::charge(
        server.app.store.as_ref(),
        &t.org,
        &id,
        "0.40".parse().expect("d"),
        "usd",
        done,
        reelgate::domain::billing::render_charges::RenderUsage {
            model: "test-video",
            key: "console",
            seconds: 4,
        },
    )
    .await
    .expect("charge");
    assert_eq!(
        settled,
        reelgate::domain::videos::settlement::Settlement::Settled
    );
    // The settlement wrote the job's unsent-event marker; nothing queued the event here (as if
    // the process had died), so the recovery pass emits it and the marker goes.
    let marker = reelgate::domain::table_keys::unsent_marker(&id);
    assert!(server.app.store.get(&marker).await.expect("get").is_some());
    let emitted = reelgate::domain::videos::events::recover_unsent(
        server.app.context(),
        std::time::Duration::ZERO,
    )
    .await
    .expect("recover");
    assert!(emitted >= 1);
    assert!(server.app.store.get(&marker).await.expect("get").is_none());
    let full = c
        .http
        .get(format!("{}/v1/videos/{id}/content", c.base))
        .bearer_auth(&t.key)
        .send()
        .await
        .expect("content");
    assert_eq!(full.status(), 200);
    assert_eq!(full.headers()["content-type"], "video/mp4");
    assert_eq!(full.headers()["content-length"], "10000");
    assert_eq!(full.headers()["accept-ranges"], "bytes");
    assert_eq!(full.bytes().await.expect("bytes").to_vec(), mp4);
    let part = c
        .http
        .get(format!("{}/v1/videos/{id}/content", c.base))
        .bearer_auth(&t.key)
        .header("range", "bytes=100-199")
        .send()
        .await
        .expect("range");
    assert_eq!(part.status(), 206);
    assert_eq!(part.headers()["content-range"], "bytes 100-199/10000");
    assert_eq!(
        part.bytes().await.expect("bytes").to_vec(),
        mp4[100..200].to_vec()
    );
    let thumb = c
        .http
        .get(format!("{}/v1/videos/{id}/thumbnail", c.base))
        .bearer_auth(&t.key)
        .send()
        .await
        .expect("thumb");
    assert_eq!(thumb.status(), 200);
    assert_eq!(thumb.headers()["content-type"], "image/jpeg");
    let (status, deleted) = c.delete(&t.key, &format!("/v1/videos/{id}")).await;
    assert_eq!(status, 200);
    assert_eq!(
        deleted,
        json!({"id": id, "object": "video", "deleted": true})
    );
    let (status, err) = c.get(&t.key, &format!("/v1/videos/{id}")).await;
    assert_error(status, &err, 404, "video_not_found");
    assert!(server
        .app
        .blobs
        .head(&reelgate::domain::videos::output_blob_key(&t.org, &id))
        .await
        .expect("head")
        .is_none());
    assert!(server
        .app
        .blobs
        .head(&reelgate::domain::videos::thumbnail_blob_key(&t.org, &id))
        .await
        .expect("head")
        .is_none());
    let org = server.app.accounts().org(&t.org).await.expect("org");
    assert_eq!(org.balance.to_string(), "9.60");
    assert_eq!(org.reserved.to_string(), "0.00");
    assert_eq!(org.renders_in_flight, 0);
}

#[tokio::test]
async fn thumbnail_absent_is_404_and_failed_jobs_release_unbilled() {
    let server = TestServer::start().await;
    let c = Client::new(&server);
    let t = agreed_tenant(&server, "10.00").await;
    let (_, v) = c.post(&t.key, "/v1/videos", job(5)).await;
    let id = v["id"].as_str().expect("id").to_owned();
    reelgate::domain::videos::jobs::fail(
        server.app.context(),
        &t.org,
        &id,
        "moderation_blocked",
        "blocked",
    )
    .await
    .expect("fail");
    let (_, failed) = c.get(&t.key, &format!("/v1/videos/{id}")).await;
    assert_eq!(failed["status"], "failed");
    assert_eq!(
        failed["error"],
        json!({"code": "moderation_blocked", "message": reelgate::domain::videos::jobs::failure_message("moderation_blocked")})
    );
    assert_eq!(failed["cost"], "0.50");
    let org = server.app.accounts().org(&t.org).await.expect("org");
    assert_eq!(
        (
            org.balance.to_string(),
            org.available.to_string(),
            org.reserved.to_string()
        ),
        ("10.00".into(), "10.00".into(), "0.00".into())
    );
    // A second failure of the same job changes nothing.
    reelgate::domain::videos::jobs::fail(
        server.app.context(),
        &t.org,
        &id,
        "engine_unavailable",
        "again",
    )
    .await
    .expect("fail");
    let org = server.app.accounts().org(&t.org).await.expect("org");
    assert_eq!(org.available.to_string(), "10.00");
    let (_, again) = c.get(&t.key, &format!("/v1/videos/{id}")).await;
    assert_eq!(again["error"]["code"], "moderation_blocked");
    let (status, err) = c.get(&t.key, &format!("/v1/videos/{id}/thumbnail")).await;
    assert_error(status, &err, 400, "invalid_request_error");

    let (_, v) = c.post(&t.key, "/v1/videos", job(4)).await;
    let id = v["id"].as_str().expect("id").to_owned();
    let done = reelgate::ports::store::Update::new()
        .set("status", "completed")
        .set("thumbnail", false);
    reelgate::domain::videos::settlement::charge(
        server.app.store.as_ref(),
        &t.org,
        &id,
        "0.40".parse().expect("d"),
        "usd",
        done,
        reelgate::domain::billing::render_charges::RenderUsage {
            model: "test-video",
            key: "console",
            seconds: 4,
        },
    )
    .await
    .expect("charge");
    let (status, err) = c.get(&t.key, &format!("/v1/videos/{id}/thumbnail")).await;
    assert_error(status, &err, 404, "thumbnail_not_found");
}

#[tokio::test]
async fn content_can_redirect_to_a_short_lived_url() {
    let catalog = Catalog::parse(reelgate::domain::catalog::DEFAULT_CATALOG).expect("catalog");
    let server = TestServer::start_with(catalog, |app| {
        let mut settings = (*app.settings).clone();
        settings.content_redirect = true;
        app.settings = std::sync::Arc::new(settings);
    })
    .await;
    let c = Client::new(&server);
    let t = agreed_tenant(&server, "10.00").await;
    let (_, v) = c.post(&t.key, "/v1/videos", job(4)).await;
    let id = v["id"].as_str().expect("id").to_owned();
    let mp4 = b"not really an mp4 but bytes all the same".to_vec();
    server
        .app
        .blobs
        .put_bytes(
            &reelgate::domain::videos::output_blob_key(&t.org, &id),
            "video/mp4",
            mp4.clone().into(),
        )
        .await
        .expect("put");
    let done = reelgate::ports::store::Update::new().set("status", "completed");
    reelgate::domain::videos::settlement::charge(
        server.app.store.as_ref(),
        &t.org,
        &id,
        "0.40".parse().expect("d"),
        "usd",
        done,
        reelgate::domain::billing::render_charges::RenderUsage {
            model: "test-video",
            key: "console",
            seconds: 4,
        },
    )
    .await
    .expect("charge");
    let no_follow = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let res = no_follow
        .get(format!("{}/v1/videos/{id}/content", c.base))
        .bearer_auth(&t.key)
        .send()
        .await
        .expect("content");
    assert_eq!(res.status(), 302);
    let location = res.headers()["location"]
        .to_str()
        .expect("location")
        .to_owned();
    let fetched = reqwest::get(&location).await.expect("follow");
    assert_eq!(fetched.status(), 200);
    assert_eq!(fetched.bytes().await.expect("bytes").to_vec(), mp4);
}

/// One body a source operation is sent: JSON, raw bytes, or a form (text fields, then file
/// parts by field name).
enum Sent {
    Json(Value),
    Raw(&'static str),
    Form(Vec<(&'static str, &'static str)>, Vec<&'static str>),
}

/// The remix, edit, extension and character bodies' refusals, pinned as they were answered
/// before the bodies were typed at the edge: each shape fault names its parameter, in the
/// route's own words, in JSON and in the SDK's form alike.
#[tokio::test]
async fn source_operation_bodies_are_refused_by_name() {
    use Sent::{Form, Json, Raw};
    let server = TestServer::start().await;
    let c = Client::new(&server);
    let t = agreed_tenant(&server, "10.00").await;
    let remix = "/v1/videos/video_00000000000000000000000000/remix";
    let (edits, extensions, characters) = (
        "/v1/videos/edits",
        "/v1/videos/extensions",
        "/v1/videos/characters",
    );
    let not_object = "The request body must be a JSON object.";
    let remix_unknown = |p: &str| {
        format!(
            "Unknown parameter: {p}. A remix keeps the source's model, seconds, aspect ratio and \
             inputs; it takes prompt and characters."
        )
    };
    let edit_unknown = |p: &str| {
        format!(
            "Unknown parameter: {p}. An edit keeps the source's seconds and aspect ratio; it \
             takes prompt, video and model (with a file)."
        )
    };
    let extension_unknown = |p: &str| {
        format!(
            "Unknown parameter: {p}. An extension keeps the source's aspect ratio; it takes \
             prompt, seconds, video, model (with a file) and characters."
        )
    };
    let character = "Each character is the id of one of your characters (char_…).";
    let video_shape = "video must be an MP4 file or {\"id\": \"video_…\"}, a completed video of \
                       your organization (the SDK: extra_body={\"video\": {\"id\": …}}).";
    let video_id = "video.id must be the id of a completed video.";
    let by_id_model = "A video by id keeps its own model; model is taken only with a source file.";
    let file_model = "A source sent as a file needs model, the video model to render with (the \
                      SDK: extra_body={\"model\": …}).";
    let twice = "Send video once: a file, or the id of a completed video.";
    let not_a_file = |p: &str| {
        format!(
            "{p} cannot be a file here: upload it with POST /v1/files and refer to it by file_id \
             (image_reference or references)."
        )
    };
    let id = json!({"id": "video_00000000000000000000000000"});
    let cases: Vec<(&str, Sent, u16, &str, String)> = vec![
        // remix
        (remix, Raw("{not json"), 400, "", "The request body is not valid JSON: key must be a string at line 1 column 2".into()),
        (remix, Json(json!([1])), 400, "", not_object.into()),
        (remix, Json(json!("prompt")), 400, "", not_object.into()),
        (remix, Json(json!({})), 400, "prompt", "prompt is required.".into()),
        (remix, Json(json!({"prompt": null})), 400, "prompt", "prompt must be a string.".into()),
        (remix, Json(json!({"prompt": 3})), 400, "prompt", "prompt must be a string.".into()),
        (remix, Json(json!({"prompt": "x", "seconds": 8})), 400, "seconds", remix_unknown("seconds")),
        (remix, Json(json!({"prompt": "x", "model": "reel-1"})), 400, "model", remix_unknown("model")),
        (remix, Json(json!({"prompt": "x", "characters": "char_1"})), 400, "characters", "characters must be an array.".into()),
        (remix, Json(json!({"prompt": "x", "characters": ["char_1", 2]})), 400, "characters[1]", character.into()),
        (remix, Json(json!({"prompt": "x", "characters": [""]})), 400, "characters[0]", character.into()),
        (remix, Json(json!({"prompt": "x", "characters": ["a", "b", "c"]})), 400, "characters", "characters holds at most 2 ids.".into()),
        (remix, Json(json!({"prompt": "x", "characters": {"a": 1}})), 400, "characters", "characters must be an array.".into()),
        (remix, Form(vec![("prompt", "x"), ("seconds", "8")], vec![]), 400, "seconds", remix_unknown("seconds")),
        (remix, Form(vec![("prompt", "x"), ("characters[]", "a"), ("characters[]", "b"), ("characters[]", "c")], vec![]), 400, "characters", "characters holds at most 2 ids.".into()),
        (remix, Form(vec![("prompt", "x")], vec!["video"]), 400, "video", not_a_file("video")),
        (remix, Form(vec![("prompt[", "x")], vec![]), 400, "prompt", "The form field name 'prompt[' is not understood.".into()),
        (remix, Form(vec![("prompt[a]", "x")], vec![]), 400, "prompt", "prompt must be a string.".into()),
        // edits
        (edits, Raw("{not json"), 400, "", "The request body is not valid JSON: key must be a string at line 1 column 2".into()),
        (edits, Json(json!([1])), 400, "", not_object.into()),
        (edits, Json(json!({"video": id})), 400, "prompt", "prompt is required.".into()),
        (edits, Json(json!({"prompt": 1, "video": id})), 400, "prompt", "prompt must be a string.".into()),
        (edits, Json(json!({"prompt": "x"})), 400, "video", "video is required.".into()),
        (edits, Json(json!({"prompt": "x", "video": "video_1"})), 400, "video", video_shape.into()),
        (edits, Json(json!({"prompt": "x", "video": null})), 400, "video", video_shape.into()),
        (edits, Json(json!({"prompt": "x", "video": ["video_1"]})), 400, "video", video_shape.into()),
        (edits, Json(json!({"prompt": "x", "video": {}})), 400, "video.id", video_id.into()),
        (edits, Json(json!({"prompt": "x", "video": {"id": ""}})), 400, "video.id", video_id.into()),
        (edits, Json(json!({"prompt": "x", "video": {"id": 3}})), 400, "video.id", video_id.into()),
        (edits, Json(json!({"prompt": "x", "video": {"id": null}})), 400, "video.id", video_id.into()),
        (edits, Json(json!({"prompt": "x", "video": {"id": "v", "url": "u"}})), 400, "video.url", "video holds id only.".into()),
        (edits, Json(json!({"prompt": "x", "video": id, "model": "reel-1"})), 400, "model", by_id_model.into()),
        (edits, Json(json!({"prompt": "x", "video": id, "model": null})), 400, "model", by_id_model.into()),
        (edits, Json(json!({"prompt": "x", "video": id, "model": 3})), 400, "model", by_id_model.into()),
        (edits, Json(json!({"prompt": "x", "video": id, "seconds": 4})), 400, "seconds", edit_unknown("seconds")),
        (edits, Form(vec![("prompt", "x"), ("video[id]", "video_1"), ("aspect_ratio", "1:1")], vec![]), 400, "aspect_ratio", edit_unknown("aspect_ratio")),
        (edits, Form(vec![("prompt", "x"), ("video[id]", "video_1"), ("video[url]", "u")], vec![]), 400, "video.url", "video holds id only.".into()),
        (edits, Form(vec![("prompt", "x")], vec!["video"]), 400, "model", file_model.into()),
        (edits, Form(vec![("prompt", "x"), ("video[id]", "video_1")], vec!["video"]), 400, "video", twice.into()),
        (edits, Form(vec![("prompt", "x"), ("video", "video_1")], vec!["video"]), 400, "video", twice.into()),
        (edits, Form(vec![("prompt", "x"), ("model[a]", "reel-1")], vec!["video"]), 400, "model", "model must be a video model id.".into()),
        (edits, Form(vec![("prompt", "x"), ("model", "")], vec!["video"]), 400, "model", "model must be a video model id.".into()),
        (edits, Form(vec![("prompt", "x")], vec!["video", "video"]), 400, "video", "Send one video file.".into()),
        (edits, Form(vec![("prompt", "x")], vec!["image"]), 400, "image", not_a_file("image")),
        (edits, Form(vec![("video[id]", "video_1")], vec![]), 400, "prompt", "prompt is required.".into()),
        // extensions
        (extensions, Raw("[1, "), 400, "", "The request body is not valid JSON: EOF while parsing a value at line 1 column 4".into()),
        (extensions, Json(json!(7)), 400, "", not_object.into()),
        (extensions, Json(json!({"prompt": "x", "video": id})), 400, "seconds", "seconds is required.".into()),
        (extensions, Json(json!({"seconds": "4", "video": id})), 400, "prompt", "prompt is required.".into()),
        (extensions, Json(json!({"prompt": "x", "seconds": 4})), 400, "video", "video is required.".into()),
        (extensions, Json(json!({"prompt": "x", "seconds": 4, "video": "video_1"})), 400, "video", video_shape.into()),
        (extensions, Json(json!({"prompt": "x", "seconds": 4, "video": {"id": ""}})), 400, "video.id", video_id.into()),
        (extensions, Json(json!({"prompt": "x", "seconds": 4, "video": {"id": "v", "url": "u"}})), 400, "video.url", "video holds id only.".into()),
        (extensions, Json(json!({"prompt": "x", "seconds": 4, "video": id, "model": "m"})), 400, "model", by_id_model.into()),
        (extensions, Json(json!({"prompt": "x", "seconds": 4, "video": id, "aspect_ratio": "1:1"})), 400, "aspect_ratio", extension_unknown("aspect_ratio")),
        (extensions, Json(json!({"prompt": "x", "seconds": 4, "video": id, "characters": "c"})), 400, "characters", "characters must be an array.".into()),
        (extensions, Json(json!({"prompt": "x", "seconds": 4, "video": id, "characters": [1]})), 400, "characters[0]", character.into()),
        (extensions, Json(json!({"prompt": "x", "seconds": 4, "video": id, "characters": ["a", "b", "c"]})), 400, "characters", "characters holds at most 2 ids.".into()),
        (extensions, Form(vec![("prompt", "x"), ("seconds", "4")], vec!["video"]), 400, "model", file_model.into()),
        (extensions, Form(vec![("prompt", "x"), ("seconds", "4"), ("video[id]", "video_1"), ("size", "1366x768")], vec![]), 400, "size", extension_unknown("size")),
        // characters (JSON; the form is read by the handler)
        (characters, Raw("{not json"), 400, "", "The request body is not valid JSON: key must be a string at line 1 column 2".into()),
        (characters, Json(json!([1])), 400, "", not_object.into()),
        (characters, Json(json!({})), 400, "name", "name is required.".into()),
        (characters, Json(json!({"name": null, "file_id": "file_1"})), 400, "name", "name is required.".into()),
        (characters, Json(json!({"name": 3, "file_id": "file_1"})), 400, "name", "name must be a string.".into()),
        (characters, Json(json!({"name": "Mika"})), 400, "file_id", "file_id is required.".into()),
        (characters, Json(json!({"name": "Mika", "file_id": null})), 400, "file_id", "file_id is required.".into()),
        (characters, Json(json!({"name": "Mika", "file_id": 7})), 400, "file_id", "file_id must be a string.".into()),
        (characters, Json(json!({"name": "Mika", "file_id": "file_1", "video": "v"})), 400, "video", "Unknown parameter: video. A character takes name and file_id (JSON), or name and a video part (a form).".into()),
        (characters, Json(json!({"name": " ", "file_id": "file_1"})), 400, "name", "name must not be empty.".into()),
        (characters, Form(vec![("name", "Mika")], vec![]), 400, "video", "video is required.".into()),
        (characters, Form(vec![("colour", "red")], vec![]), 400, "colour", "Unknown parameter: colour. A character takes name and video.".into()),
    ];
    let mut wrong = Vec::new();
    for (path, sent, status, param, message) in cases {
        let url = format!("{}{path}", c.base);
        let req = c.http.post(url).bearer_auth(&t.key);
        let (shown, req) = match sent {
            Json(body) => (body.to_string(), req.json(&body)),
            Raw(text) => (
                text.to_owned(),
                req.header("content-type", "application/json").body(text),
            ),
            Form(fields, files) => {
                let shown = format!("form {fields:?} files {files:?}");
                let mut form = reqwest::multipart::Form::new();
                for (k, v) in fields {
                    form = form.text(k, v);
                }
                for name in files {
                    let part = reqwest::multipart::Part::bytes(b"not an mp4".to_vec())
                        .file_name("source.mp4");
                    form = form.part(name, part);
                }
                (shown, req.multipart(form))
            }
        };
        let (got_status, err) = c.send(req).await;
        let got = (
            got_status,
            err["error"]["param"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            err["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
        if got != (status, param.to_owned(), message.clone()) {
            wrong.push(format!(
                "{path} {shown}:\n  got  {got:?}\n  want {:?}",
                (status, param, message)
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    let org = server.app.accounts().org(&t.org).await.expect("org");
    assert_eq!(org.renders_in_flight, 0, "nothing was admitted");
}
