//! The aging test (docs/data.md): everything a tenant stores on the local host, swept at later
//! and later instants, until nothing is left but what the inventory says must stay. The sweep
//! takes its `now` as an argument, which is the injectable clock: records carry absolute expiry
//! times and blob files their write times, so sweeping "at" a later instant is exactly what the
//! server's own sweep does when that instant comes.

use reelgate::domain::accounts::{Caller, Credential};
use reelgate::domain::responses::items::{ContentPart, ConversationItem, ItemRole};
use reelgate::domain::responses::persist::{self, Stored};
use reelgate::ports::blobs::BlobStore;
use reelgate::ports::store::{now_secs, ItemExt, PK, SK};
use reelgate_embedded::retention::sweep;
use reelgate_embedded::testing::{agree, Tenant, TestServer};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

const DAY: i64 = 24 * 3600;

fn tiny_png() -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    let img = image::RgbImage::from_fn(2, 2, |x, y| image::Rgb([x as u8 * 90, y as u8 * 90, 40]));
    img.write_to(&mut out, image::ImageFormat::Png)
        .expect("png");
    out.into_inner()
}

async fn call(server: &TestServer, t: &Tenant, method: &str, path: &str, body: Value) -> Value {
    let http = reqwest::Client::new();
    let req = match method {
        "POST" => http.post(server.url(path)).json(&body),
        "DELETE" => http.delete(server.url(path)),
        _ => http.get(server.url(path)),
    };
    let res = req.bearer_auth(&t.key).send().await.expect("request");
    let status = res.status();
    let v: Value = res.json().await.expect("json");
    assert!(status.is_success(), "{method} {path}: {status} {v}");
    v
}

async fn finished(server: &TestServer, t: &Tenant, id: &str) -> Value {
    let start = Instant::now();
    loop {
        let v = call(server, t, "GET", &format!("/v1/videos/{id}"), Value::Null).await;
        if ["completed", "failed", "canceled"].contains(&v["status"].as_str().unwrap_or("")) {
            return v;
        }
        assert!(
            start.elapsed() < Duration::from_secs(180),
            "{id} stuck: {v}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// An upload through a presigned PUT; completed or left pending. Returns (upload id, file id).
async fn upload(server: &TestServer, t: &Tenant, complete: bool) -> (String, String) {
    let png = tiny_png();
    let created = call(
        server,
        t,
        "POST",
        "/v1/uploads",
        json!({"purpose": "vision", "filename": "frame.png", "bytes": png.len(), "mime_type": "image/png"}),
    )
    .await;
    let put = reqwest::Client::new()
        .put(created["upload_url"].as_str().expect("url"))
        .header("content-type", "image/png")
        .body(png)
        .send()
        .await
        .expect("put");
    assert!(put.status().is_success(), "{}", put.status());
    let upload_id = created["id"].as_str().expect("id").to_owned();
    let mut file_id = String::new();
    if complete {
        let file = call(
            server,
            t,
            "POST",
            &format!("/v1/uploads/{upload_id}/complete"),
            Value::Null,
        )
        .await;
        file_id = file["id"].as_str().expect("file id").to_owned();
    }
    (upload_id, file_id)
}

/// The organization's records as `sk` (prefixed with the person for per-person partitions).
async fn records(server: &TestServer, org: &str) -> BTreeSet<String> {
    let items = server
        .backend
        .store
        .partition_family(&format!("ORG#{org}"))
        .await
        .expect("records");
    items
        .iter()
        .map(|it| {
            let pk = it.str_attr(PK).unwrap_or_default();
            let sk = it.str_attr(SK).unwrap_or_default();
            match pk.split_once("#PERSON#") {
                Some((_, person)) => format!("{person}/{sk}"),
                None => sk.to_owned(),
            }
        })
        .collect()
}

/// The organization's blobs, its upload staging area included.
async fn blob_files(server: &TestServer, org: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for prefix in [format!("{org}/"), format!("staging/{org}/")] {
        let listed = server.backend.blobs.list(&prefix).await.expect("blobs");
        found.extend(listed.into_iter().map(|b| b.key));
    }
    found
}

fn set(items: &[String]) -> BTreeSet<String> {
    items.iter().cloned().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_stored_byte_expires_as_the_inventory_says() {
    let server = TestServer::start_full(0.05, |_| {}).await;
    let alice = server.tenant("20.00").await;
    let bob = server.member(&alice.org).await;
    agree(&server.app, &alice.org, &alice.person).await;
    let org = alice.org.clone();

    // Jobs: one completed, one failed by moderation, one completed and then deleted.
    let job = |prompt: &str| json!({"model": "reel-1", "prompt": prompt, "seconds": 4, "aspect_ratio": "1:1"});
    // One at a time: the plan admits two renders at once.
    let mut ids = Vec::new();
    for (prompt, outcome) in [
        ("a paper boat", "completed"),
        ("a scene of graphic gore", "failed"),
        ("a red kite", "completed"),
    ] {
        let id = call(&server, &alice, "POST", "/v1/videos", job(prompt)).await["id"]
            .as_str()
            .expect("id")
            .to_owned();
        assert_eq!(finished(&server, &alice, &id).await["status"], outcome);
        ids.push(id);
    }
    let (completed, failed, deleted) = (ids[0].clone(), ids[1].clone(), ids[2].clone());
    call(
        &server,
        &alice,
        "DELETE",
        &format!("/v1/videos/{deleted}"),
        Value::Null,
    )
    .await;

    // Files: one uploaded and completed, one upload abandoned after its bytes arrived.
    let (done_upload, file) = upload(&server, &alice, true).await;
    let (abandoned_upload, _) = upload(&server, &alice, false).await;
    let abandoned_blob = {
        let blobs = blob_files(&server, &org).await;
        let staged: Vec<_> = blobs
            .iter()
            .filter(|k| k.starts_with("staging/"))
            .cloned()
            .collect();
        assert_eq!(staged.len(), 1, "the abandoned upload's bytes: {blobs:?}");
        staged[0].clone()
    };

    // Stored responses for two persons: Alice's is large enough to live in the blob store.
    let caller = |t: &Tenant| Caller {
        org: t.org.clone(),
        person: t.person.clone(),
        credential: Credential::ApiKey {
            key_id: "key_test".into(),
        },
        limits: Default::default(),
        budget: None,
    };
    let stored = |id: &str, text: String| Stored {
        response: json!({"id": id, "object": "response", "output": []}),
        input_items: vec![ConversationItem::Message {
            id: format!("msg_{id}"),
            role: ItemRole::User,
            content: vec![ContentPart::InputText { text }],
            status: "completed".into(),
        }],
        own_item_ids: vec![format!("msg_{id}")],
        previous_response_id: None,
    };
    persist::save(
        server.app.context(),
        &caller(&alice),
        &stored("resp_alice", "x".repeat(400_000)),
    )
    .await
    .expect("save alice");
    persist::save(
        server.app.context(),
        &caller(&bob),
        &stored("resp_bob", "hello".into()),
    )
    .await
    .expect("save bob");

    // A character made from an image: its record and its one frame.
    let character = reelgate::domain::videos::characters::create(
        server.app.context(),
        &org,
        reelgate::domain::videos::characters::CharacterCreateRequest {
            name: "Dot".into(),
            video: Some(tiny_png().into()),
            file_id: None,
        },
    )
    .await
    .expect("character")
    .id;

    // A blob no record claims (a crash between writing bytes and their record), and a partial
    // upload a crash left in the blob directory.
    let orphan = format!("{org}/files/file_orphaned");
    server
        .app
        .blobs
        .put_bytes(&orphan, "image/png", tiny_png().into())
        .await
        .expect("orphan");
    let partial_dir = server
        .dir
        .path()
        .join("blobs/data")
        .join(&org)
        .join("files");
    std::fs::write(partial_dir.join(".upload-crashed"), b"half").expect("partial");
    assert!(std::fs::read_dir(&partial_dir)
        .expect("dir")
        .any(|e| e.expect("entry").file_name() == ".upload-crashed"));

    let t0 = now_secs();
    // What must stay whatever happens: the organization, its members, the agreement and the
    // render charges (the operator's ledger), and each person's back-reference to the index
    // entries that find them (email, sign-in subject), which only erasure removes.
    let permanent: BTreeSet<String> = records(&server, &org)
        .await
        .into_iter()
        .filter(|sk| {
            [
                "ORG",
                "MEMBER#",
                "AGREEMENT#",
                "APIKEY#",
                "CHARGE#",
                "LEDGER#",
                "USAGE#",
            ]
            .iter()
            .any(|p| sk == "ORG" || (p.ends_with('#') && sk.starts_with(p)))
                || sk.contains("/IDENTITY#EMAIL#")
        })
        .collect();
    assert!(permanent.contains("ORG"));
    assert_eq!(
        permanent
            .iter()
            .filter(|s| s.contains("/IDENTITY#EMAIL#"))
            .count(),
        2,
        "both people are indexed by email: {permanent:?}"
    );
    assert_eq!(
        permanent
            .iter()
            .filter(|s| s.starts_with("CHARGE#"))
            .count(),
        2,
        "two completed renders were charged: {permanent:?}"
    );
    let with = |extra: &[String]| -> BTreeSet<String> {
        permanent
            .iter()
            .cloned()
            .chain(extra.iter().cloned())
            .collect()
    };

    let day0_records = with(&[
        format!("CHARACTER#{character}"),
        format!("VIDEO#{completed}"),
        format!("VIDEO#{failed}"),
        format!("MODERATION#{completed}"),
        format!("MODERATION#{failed}"),
        format!("MODERATION#{deleted}"),
        format!("FILE#{file}"),
        format!("UPLOAD#{done_upload}"),
        format!("UPLOAD#{abandoned_upload}"),
        format!("{}/RESPONSE#resp_alice", alice.person),
        format!("{}/ITEM#msg_resp_alice", alice.person),
        format!("{}/RESPONSE#resp_bob", bob.person),
        format!("{}/ITEM#msg_resp_bob", bob.person),
    ]);
    let alice_blobs: Vec<String> = blob_files(&server, &org)
        .await
        .into_iter()
        .filter(|k| k.contains("/responses/"))
        .collect();
    assert!(!alice_blobs.is_empty(), "the large response lives in blobs");
    let day0_blobs: BTreeSet<String> = set(&[
        format!("{org}/videos/{completed}/video.mp4"),
        format!("{org}/videos/{completed}/thumbnail.jpg"),
        format!("{org}/videos/{completed}/spritesheet.jpg"),
        format!("{org}/characters/{character}/frame_0.jpg"),
        format!("{org}/files/{file}"),
        abandoned_blob.clone(),
        orphan.clone(),
    ])
    .into_iter()
    .chain(alice_blobs.iter().cloned())
    .collect();
    assert_eq!(records(&server, &org).await, day0_records);
    assert_eq!(blob_files(&server, &org).await, day0_blobs);

    // Now: nothing has expired.
    let report = sweep(&server.backend, t0).await.expect("sweep");
    assert_eq!(report.records, 0, "{report:?}");
    assert_eq!(records(&server, &org).await, day0_records);
    assert_eq!(blob_files(&server, &org).await, day0_blobs);

    // Two days on: the uploads' records are gone; the abandoned upload took its bytes with it,
    // the completed one left them to its file; the crashed partial upload is cleared.
    sweep(&server.backend, t0 + 2 * DAY).await.expect("sweep");
    let mut day2_records = day0_records.clone();
    day2_records.remove(&format!("UPLOAD#{done_upload}"));
    day2_records.remove(&format!("UPLOAD#{abandoned_upload}"));
    let mut day2_blobs = day0_blobs.clone();
    day2_blobs.remove(&abandoned_blob);
    assert_eq!(records(&server, &org).await, day2_records);
    assert_eq!(blob_files(&server, &org).await, day2_blobs);
    assert!(!partial_dir.join(".upload-crashed").exists());

    // 29 days on: still everything the 30-day retention keeps.
    let report = sweep(&server.backend, t0 + 29 * DAY).await.expect("sweep");
    assert_eq!(report.records + report.aged_blobs, 0, "{report:?}");
    assert_eq!(records(&server, &org).await, day2_records);
    assert_eq!(blob_files(&server, &org).await, day2_blobs);

    // 31 days on: finished jobs with their outputs, files, stored responses of both persons
    // (with the large one's blobs) and moderation records are gone; the orphaned blob went by
    // age. What stays is exactly the permanent set, and no byte.
    let report = sweep(&server.backend, t0 + 31 * DAY).await.expect("sweep");
    assert_eq!(report.deferred, 0, "{report:?}");
    assert_eq!(records(&server, &org).await, permanent);
    assert_eq!(blob_files(&server, &org).await, BTreeSet::new());
    // The organization still works: its balance reflects the two charges.
    let state = server.app.accounts().org(&org).await.expect("org");
    assert_eq!(state.renders_in_flight, 0);
    assert!(state.balance < "20.00".parse().expect("decimal"));
}

/// A tenant with a completed video, a file, a stored response per person, and a render still
/// in flight (the engine hangs), for the erasure tests.
struct Populated {
    server: TestServer,
    alice: Tenant,
    bob: Tenant,
    completed: String,
    hanging: String,
}

async fn populated() -> Populated {
    let server = TestServer::start_full(0.05, |_| {}).await;
    let alice = server.tenant("20.00").await;
    let bob = server.member(&alice.org).await;
    agree(&server.app, &alice.org, &alice.person).await;
    agree(&server.app, &bob.org, &bob.person).await;
    let job = |prompt: &str| json!({"model": "reel-1", "prompt": prompt, "seconds": 4, "aspect_ratio": "1:1"});
    let completed = call(&server, &alice, "POST", "/v1/videos", job("a paper boat")).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    assert_eq!(
        finished(&server, &alice, &completed).await["status"],
        "completed"
    );
    upload(&server, &alice, true).await;
    for (t, id) in [(&alice, "resp_a"), (&bob, "resp_b")] {
        let caller = Caller {
            org: t.org.clone(),
            person: t.person.clone(),
            credential: Credential::ApiKey {
                key_id: "key_test".into(),
            },
            limits: Default::default(),
            budget: None,
        };
        let stored = Stored {
            response: json!({"id": id, "object": "response", "output": []}),
            input_items: vec![],
            own_item_ids: vec![],
            previous_response_id: None,
        };
        persist::save(server.app.context(), &caller, &stored)
            .await
            .expect("save");
    }
    // Bob's render never finishes: the engine hangs.
    let engine = server.services.as_ref().expect("services").engine.clone();
    engine.set_faults(reelgate_engine::FaultSwitches {
        hang: true,
        ..Default::default()
    });
    let hanging = call(&server, &bob, "POST", "/v1/videos", job("a slow river")).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let start = Instant::now();
    while server
        .app
        .accounts()
        .org(&alice.org)
        .await
        .expect("org")
        .renders_in_flight
        == 0
    {
        assert!(start.elapsed() < Duration::from_secs(30));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Populated {
        server,
        alice,
        bob,
        completed,
        hanging,
    }
}

async fn status_of(server: &TestServer, key: &str) -> u16 {
    reqwest::Client::new()
        .get(server.url("/v1/models"))
        .bearer_auth(key)
        .send()
        .await
        .expect("request")
        .status()
        .as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn erasing_an_organization_leaves_only_what_the_operator_keeps() {
    let p = populated().await;
    let (server, org) = (&p.server, p.alice.org.clone());
    let cx = server.app.context();
    assert_eq!(status_of(server, &p.alice.key).await, 200);
    let stored = reelgate::domain::erasure::stored_bytes(cx, &org)
        .await
        .expect("stored bytes");
    assert!(stored["video_outputs"] > 10_000, "{stored:?}");
    assert!(
        stored["thumbnails"] > 0 && stored["files"] > 0,
        "{stored:?}"
    );

    // A render in flight refuses the erasure until it is forced.
    let refused = reelgate::domain::erasure::erase_org(cx, &org, false)
        .await
        .expect_err("refused while rendering");
    assert_eq!(reelgate::api::envelope::status(refused.kind).as_u16(), 409);
    assert!(refused.message.contains(&p.hanging), "{}", refused.message);
    assert!(records(server, &org)
        .await
        .contains(&format!("VIDEO#{}", p.completed)));

    let report = reelgate::domain::erasure::erase_org(cx, &org, true)
        .await
        .expect("forced erasure");
    assert_eq!(report.renders_stopped, 1, "{report:?}");
    assert!(
        report.blobs_deleted >= 3 && report.bytes_deleted > 10_000,
        "{report:?}"
    );

    // Left: the account, the ledger (one charge: the hanging render was canceled unbilled) and
    // the moderation records. No byte, no membership, no agreement, no stored response.
    let left = records(server, &org).await;
    let expected: BTreeSet<String> = [
        "ORG".to_owned(),
        format!("CHARGE#{}", p.completed),
        format!("MODERATION#{}", p.completed),
        format!("MODERATION#{}", p.hanging),
    ]
    .into_iter()
    .collect();
    // The ledger's daily usage rollup of that charge stays with it (amounts, model, key id).
    let (usage, left): (BTreeSet<String>, BTreeSet<String>) =
        left.into_iter().partition(|sk| sk.starts_with("USAGE#"));
    assert_eq!(left, expected);
    assert_eq!(usage.len(), 1, "{usage:?}");
    assert!(usage.iter().all(|sk| sk.contains("#video#")), "{usage:?}");
    assert_eq!(blob_files(server, &org).await, BTreeSet::new());
    let account = server.app.accounts().org(&org).await.expect("org");
    assert_eq!(account.renders_in_flight, 0);
    assert_eq!(account.reserved.to_string(), "0.00");
    // Both persons' keys stop working, and the persons are gone.
    assert_eq!(status_of(server, &p.alice.key).await, 401);
    assert_eq!(status_of(server, &p.bob.key).await, 401);
    assert!(server.app.accounts().person(&p.bob.person).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn removing_a_person_takes_their_own_data_and_leaves_the_organizations() {
    let p = populated().await;
    let (server, org) = (&p.server, p.alice.org.clone());
    let cx = server.app.context();
    let refused = reelgate::domain::erasure::remove_person(cx, &org, &p.bob.person, false)
        .await
        .expect_err("bob's render is in flight");
    assert_eq!(reelgate::api::envelope::status(refused.kind).as_u16(), 409);
    let report = reelgate::domain::erasure::remove_person(cx, &org, &p.bob.person, true)
        .await
        .expect("forced removal");
    assert_eq!(report.renders_stopped, 1, "{report:?}");

    let left = records(server, &org).await;
    assert!(!left.iter().any(|r| r.contains(&p.bob.person)), "{left:?}");
    assert!(left.contains(&format!("{}/RESPONSE#resp_a", p.alice.person)));
    assert!(left.contains(&format!("VIDEO#{}", p.completed)));
    assert!(left.contains(&format!("MEMBER#{}", p.alice.person)));
    // Bob's canceled render stays with the organization, unbilled.
    let bobs_job = call(
        server,
        &p.alice,
        "GET",
        &format!("/v1/videos/{}", p.hanging),
        Value::Null,
    )
    .await;
    assert_eq!(bobs_job["status"], "canceled");
    let account = server.app.accounts().org(&org).await.expect("org");
    assert_eq!(account.renders_in_flight, 0);
    assert_eq!(account.reserved.to_string(), "0.00");
    assert_eq!(status_of(server, &p.bob.key).await, 401);
    assert_eq!(status_of(server, &p.alice.key).await, 200);
}
