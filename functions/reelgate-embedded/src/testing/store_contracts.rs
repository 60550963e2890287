//! The store contracts: the same scenarios run against each store adapter (the embedded one in
//! this crate's tests, DynamoDB's in reelgate-aws's), so that both keep the guarantees the
//! domain relies on: admission, rate limits, webhooks and video listing.

use crate::backend::LocalBackend;
use reelgate::app::App;
use reelgate::config::Settings;
use reelgate::domain::catalog::Catalog;
use rust_decimal::Decimal;
use std::sync::Arc;

use crate::testing::agree;

/// Admission contract, run against each store adapter: 50 concurrent creates at a balance that
/// covers exactly 7 quotes admit exactly 7 (402 for the rest); at a plan limit of 2 with ample
/// credits, exactly 2 (429 for the rest). The reservations add up to what was admitted.
pub async fn admission_contract(store: Arc<dyn reelgate::ports::store::ItemStore>) {
    use reelgate::domain::accounts::Caller;
    let dir = tempfile::tempdir().expect("tempdir");
    let backend = LocalBackend::open(dir.path(), "http://127.0.0.1:9").expect("backend");
    let catalog =
        Arc::new(Catalog::parse(reelgate::domain::catalog::DEFAULT_CATALOG).expect("catalog"));
    let app = App::new(
        store,
        backend.blobs.clone(),
        backend.render_queue.clone(),
        catalog,
        Settings::default(),
    );
    let body = serde_json::json!({"model": "reel-1", "prompt": "waves", "seconds": 4, "aspect_ratio": "16:9"});
    let body = reelgate::domain::params::read_from(body).expect("a valid create");
    async fn fire(
        app: &App,
        caller: &Caller,
        body: &reelgate::domain::videos::create::VideoCreateRequest,
        n: usize,
    ) -> (usize, Vec<String>) {
        let mut tasks = Vec::new();
        for _ in 0..n {
            let (app, caller, body) = (app.clone(), caller.clone(), body.clone());
            tasks.push(tokio::spawn(async move {
                reelgate::domain::videos::create::admit_job(app.context(), None, &caller, &body)
                    .await
            }));
        }
        let mut admitted = 0;
        let mut codes = Vec::new();
        for t in tasks {
            match t.await.expect("join") {
                Ok(_) => admitted += 1,
                Err(e) => codes.push(e.code),
            }
        }
        (admitted, codes)
    }

    // Credits: 7 × (0.10 × 4) = 2.80 on a plan with room for 32 renders.
    let accounts = app.accounts();
    let org = accounts
        .create_org("credits", "enterprise", "usd", "2.80".parse().expect("d"))
        .await
        .expect("org");
    let person = accounts
        .create_person(&org.id, "c@example.test")
        .await
        .expect("person");
    agree(&app, &org.id, &person.id).await;
    let caller = Caller {
        org: org.id.clone(),
        person: person.id.clone(),
        credential: reelgate::domain::accounts::Credential::ApiKey {
            key_id: "key_test".into(),
        },
        limits: Default::default(),
        budget: None,
    };
    let (admitted, codes) = fire(&app, &caller, &body, 50).await;
    assert_eq!(admitted, 7, "credits cover exactly 7: {codes:?}");
    assert!(
        codes.iter().all(|c| c == "insufficient_credits"),
        "{codes:?}"
    );
    let after = accounts.org(&org.id).await.expect("org");
    assert_eq!(after.reserved, "2.80".parse::<Decimal>().expect("d"));
    assert_eq!(after.available, Decimal::ZERO);
    assert_eq!(after.balance, "2.80".parse::<Decimal>().expect("d"));
    assert_eq!(after.renders_in_flight, 7);

    // Concurrency: the starter plan allows 2 renders in flight.
    let org = accounts
        .create_org("slots", "starter", "usd", "1000".parse().expect("d"))
        .await
        .expect("org");
    let person = accounts
        .create_person(&org.id, "s@example.test")
        .await
        .expect("person");
    agree(&app, &org.id, &person.id).await;
    let caller = Caller {
        org: org.id.clone(),
        person: person.id.clone(),
        credential: caller.credential.clone(),
        limits: Default::default(),
        budget: None,
    };
    let (admitted, codes) = fire(&app, &caller, &body, 50).await;
    assert_eq!(admitted, 2, "{codes:?}");
    assert!(
        codes.iter().all(|c| c == "concurrency_limit_exceeded"),
        "{codes:?}"
    );
    assert_eq!(
        accounts.org(&org.id).await.expect("org").renders_in_flight,
        2
    );
}

/// Webhook contract, run against each store adapter: 40 concurrent creates of one
/// organization's endpoints make exactly `MAX_ENDPOINTS` (the count is raised in the
/// transaction that writes the endpoint); a delete frees exactly one place; an organization
/// whose endpoints predate the count is counted from what it has. Then the delivery slots:
/// 10 concurrent deliveries to one endpoint put at most `ENDPOINT_IN_FLIGHT` POSTs in flight,
/// 5 to each of 3 endpoints of one organization at most `ORG_IN_FLIGHT`, and every delivery
/// that found no slot is back on the queue, unattempted.
pub async fn webhook_contract(store: Arc<dyn reelgate::ports::store::ItemStore>) {
    use reelgate::domain::webhooks::delivery::{ENDPOINT_IN_FLIGHT, ORG_IN_FLIGHT};
    use reelgate::domain::webhooks::{self, endpoints::MAX_ENDPOINTS, events::Delivery};
    use reelgate::ports::queue::MessageQueue;
    use reelgate::ports::store::{item, ItemExt};
    let dir = tempfile::tempdir().expect("tempdir");
    let backend = LocalBackend::open(dir.path(), "http://127.0.0.1:9").expect("backend");
    let catalog =
        Arc::new(Catalog::parse(reelgate::domain::catalog::DEFAULT_CATALOG).expect("catalog"));
    let mut app = App::new(
        store.clone(),
        backend.blobs.clone(),
        backend.render_queue.clone(),
        catalog,
        Settings::default(),
    );
    let fetcher = Arc::new(FakeSlowEndpoints::default());
    app.fetcher = fetcher.clone();
    let url = "https://93.184.216.34/hook";
    let hook = || serde_json::from_value(serde_json::json!({ "url": url })).expect("body");

    let org = reelgate::domain::ids::new_id("org");
    let tasks: Vec<_> = (0..40)
        .map(|_| {
            let (app, org, hook) = (app.clone(), org.clone(), hook());
            tokio::spawn(async move { webhooks::create(app.context(), &org, hook).await })
        })
        .collect();
    let mut created = 0;
    for t in tasks {
        match t.await.expect("join") {
            Ok(_) => created += 1,
            Err(e) => assert_eq!(e.param.as_deref(), Some("url"), "{}", e.message),
        }
    }
    assert_eq!(created, MAX_ENDPOINTS);
    let listed = webhooks::list(app.context(), &org).await.expect("list");
    assert_eq!(listed.len(), MAX_ENDPOINTS);
    let count = |org: String| {
        let store = store.clone();
        async move {
            store
                .get(&reelgate::domain::table_keys::webhook_count(&org))
                .await
                .expect("get")
                .and_then(|c| c.i64_attr("count"))
        }
    };
    assert_eq!(count(org.clone()).await, Some(MAX_ENDPOINTS as i64));
    webhooks::delete(app.context(), &org, &listed[0].id)
        .await
        .expect("delete");
    assert_eq!(count(org.clone()).await, Some(MAX_ENDPOINTS as i64 - 1));
    webhooks::create(app.context(), &org, hook())
        .await
        .expect("the freed place");
    assert!(webhooks::create(app.context(), &org, hook()).await.is_err());

    // Endpoints written before the count existed.
    let old = reelgate::domain::ids::new_id("org");
    let mut old_ids = Vec::new();
    for _ in 0..3 {
        let id = reelgate::domain::ids::new_id("wh");
        let mut it = item(&webhooks::endpoint_key(&old, &id));
        it.insert("id".into(), id.clone().into());
        it.insert("url".into(), "https://93.184.216.34/old".into());
        store.put(it, None).await.expect("put");
        old_ids.push(id);
    }
    webhooks::create(app.context(), &old, hook())
        .await
        .expect("create");
    assert_eq!(count(old.clone()).await, Some(4));
    webhooks::delete(app.context(), &old, &old_ids[1])
        .await
        .expect("delete");
    assert_eq!(count(old.clone()).await, Some(3));

    // Delivery slots.
    let queue = backend.webhook_queue.clone();
    let org = reelgate::domain::ids::new_id("org");
    let mut endpoints = Vec::new();
    for _ in 0..3 {
        endpoints.push(
            webhooks::create(app.context(), &org, hook())
                .await
                .expect("create")
                .id,
        );
    }
    let delivery = |endpoint: &str, n: usize| {
        serde_json::to_string(&Delivery {
            org: org.clone(),
            endpoint_id: endpoint.to_owned(),
            event_id: format!("evt_{n}"),
            event_type: webhooks::EVENT_COMPLETED.into(),
            payload: "{}".into(),
            attempt: 1,
            due_at: 0,
        })
        .expect("json")
    };
    let run = |bodies: Vec<String>| {
        let (app, queue) = (app.clone(), queue.clone());
        async move {
            let tasks: Vec<_> = bodies
                .into_iter()
                .map(|body| {
                    let (app, queue) = (app.clone(), queue.clone());
                    tokio::spawn(async move {
                        webhooks::deliver(app.context(), queue.as_ref(), &body).await
                    })
                })
                .collect();
            for t in tasks {
                t.await.expect("join").expect("deliver");
            }
        }
    };
    let queued = |queue: Arc<crate::queue::SqliteQueue>| async move {
        // Requeued deliveries wait BUSY_WAIT (5 s); look without waiting for them.
        let mut n = 0;
        while let Ok(got) = queue
            .receive(
                10,
                std::time::Duration::from_secs(60),
                std::time::Duration::from_secs(6),
            )
            .await
        {
            if got.is_empty() {
                break;
            }
            for m in &got {
                queue.delete(&m.receipt).await.expect("delete");
            }
            n += got.len();
        }
        n
    };
    run((0..10).map(|n| delivery(&endpoints[0], n)).collect()).await;
    let posts = fetcher.posts.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        fetcher.peak.load(std::sync::atomic::Ordering::SeqCst) <= ENDPOINT_IN_FLIGHT,
        "more than {ENDPOINT_IN_FLIGHT} POSTs to one endpoint at once"
    );
    assert!(posts >= 1);
    assert_eq!(
        posts + queued(queue.clone()).await,
        10,
        "every delivery posted or requeued"
    );

    fetcher.reset();
    run(endpoints
        .iter()
        .flat_map(|e| (0..5).map(move |n| (e.clone(), n)))
        .map(|(e, n)| delivery(&e, n))
        .collect())
    .await;
    let posts = fetcher.posts.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        fetcher.peak.load(std::sync::atomic::Ordering::SeqCst) <= ORG_IN_FLIGHT,
        "more than {ORG_IN_FLIGHT} POSTs of one organization at once"
    );
    assert_eq!(
        posts + queued(queue.clone()).await,
        15,
        "every delivery posted or requeued"
    );
    // Every slot was freed.
    let slots = store
        .query(
            reelgate::ports::store::Query::partition(reelgate::domain::table_keys::org_pk(&org))
                .prefix(reelgate::domain::table_keys::WEBHOOK_SLOT_PREFIX),
        )
        .await
        .expect("query");
    assert!(slots.items.is_empty(), "{:?}", slots.items);
}

/// Webhook endpoints that take 300 ms to answer 204 (a fake, for tests), counting the POSTs in
/// flight at once.
#[derive(Default)]
pub struct FakeSlowEndpoints {
    in_flight: std::sync::atomic::AtomicUsize,
    pub peak: std::sync::atomic::AtomicUsize,
    pub posts: std::sync::atomic::AtomicUsize,
}

impl FakeSlowEndpoints {
    fn reset(&self) {
        self.peak.store(0, std::sync::atomic::Ordering::SeqCst);
        self.posts.store(0, std::sync::atomic::Ordering::SeqCst);
    }
}

#[async_trait::async_trait]
impl reelgate::ports::fetch::Fetcher for FakeSlowEndpoints {
    async fn fetch(
        &self,
        _url: &str,
        _max_bytes: u64,
    ) -> Result<reelgate::ports::fetch::Fetched, reelgate::ports::fetch::FetchError> {
        Err(reelgate::ports::fetch::FetchError::Unreachable)
    }

    async fn post(
        &self,
        _url: &str,
        _headers: &[(&str, String)],
        _body: Vec<u8>,
    ) -> Result<u16, reelgate::ports::fetch::FetchError> {
        use std::sync::atomic::Ordering::SeqCst;
        self.posts.fetch_add(1, SeqCst);
        let now = self.in_flight.fetch_add(1, SeqCst) + 1;
        self.peak.fetch_max(now, SeqCst);
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        self.in_flight.fetch_sub(1, SeqCst);
        Ok(204)
    }

    async fn check(&self, _url: &str) -> Result<(), reelgate::ports::fetch::FetchError> {
        Ok(())
    }
}

/// Video list contract, run against each store adapter: an organization's jobs listed with
/// each filter (status, model, prompt text, together, none), both orders and several page sizes
/// page through exactly the matching jobs, in order, every page full but the last and `has_more`
/// false only on the last; another organization's matching jobs never appear. With a scan budget
/// smaller than the gaps between matches, pages come back short (even empty) with `has_more`,
/// and following `last_id` still yields exactly the matching jobs.
pub async fn video_list_contract(store: Arc<dyn reelgate::ports::store::ItemStore>) {
    use reelgate::api::envelope::List;
    use reelgate::domain::params::ListQuery;
    use reelgate::domain::videos::queries::{list_matching, VideoListQuery, MAX_SCANNED};
    use reelgate::domain::videos::{JobRecord, JobStatus, Reservation, Video};
    let dir = tempfile::tempdir().expect("tempdir");
    let backend = LocalBackend::open(dir.path(), "http://127.0.0.1:9").expect("backend");
    let catalog =
        Arc::new(Catalog::parse(reelgate::domain::catalog::DEFAULT_CATALOG).expect("catalog"));
    let app = App::new(
        store.clone(),
        backend.blobs.clone(),
        backend.render_queue.clone(),
        catalog,
        Settings::default(),
    );
    let job = |org: &str, status: JobStatus, model: &str, prompt: String| JobRecord {
        id: reelgate::domain::ids::new_id("video"),
        org: org.to_owned(),
        person: "user_list".into(),
        key: "key_list".into(),
        model: model.to_owned(),
        engine: Some("reference".into()),
        prompt,
        seconds: 4,
        aspect_ratio: "16:9".into(),
        status,
        progress: 0,
        cost: "0.40".parse().expect("d"),
        currency: "usd".into(),
        created_at: reelgate::ports::store::now_secs(),
        completed_at: None,
        thumbnail: false,
        reservation: Reservation::Held,
        inputs: Default::default(),
        budget_month: None,
        engine_prompt: None,
        render_id: None,
        render_started_ms: None,
        size: None,
        error_code: None,
        error_message: None,
        expires_at: None,
        remixed_from: None,
        extended_from: None,
        extension_base_seconds: None,
        edited_from: None,
        source_operation: None,
    };
    let org = reelgate::domain::ids::new_id("org");
    let other = reelgate::domain::ids::new_id("org");
    let statuses = [
        JobStatus::Completed,
        JobStatus::Failed,
        JobStatus::InProgress,
        JobStatus::Canceled,
    ];
    // Oldest first, as created.
    let mut jobs = Vec::new();
    for i in 0..41 {
        let model = if i % 5 == 0 { "reel-1-pro" } else { "reel-1" };
        let prompt = if i % 3 == 0 {
            format!("A paper LANTERN over the river, take {i}")
        } else {
            format!("a quiet street at dawn, take {i}")
        };
        jobs.push(job(&org, statuses[i % 4], model, prompt));
    }
    for i in 0..6 {
        let prompt = format!("a paper lantern, another organization's {i}");
        jobs.push(job(&other, JobStatus::Completed, "reel-1-pro", prompt));
    }
    for j in &jobs {
        store.put(j.to_item(), None).await.expect("put");
    }

    // Every page of a list as a client follows it: `after` = the previous page's `last_id`.
    let pages = |query: VideoListQuery, budget: usize| {
        let app = app.clone();
        let org = org.clone();
        async move {
            let filter = query.filter(app.context().catalog).expect("filter");
            let mut pages: Vec<List<Video>> = Vec::new();
            let mut page = query.page.clone();
            loop {
                let found = list_matching(app.context(), &org, &page, &filter, budget)
                    .await
                    .expect("list");
                let list = List::page(found, |v| v.id.clone());
                let next = list.last_id.clone();
                let more = list.has_more;
                pages.push(list);
                assert!(pages.len() <= 100, "the paging does not end");
                if !more {
                    return pages;
                }
                page.after = Some(next.expect("a page with more names where to continue"));
            }
        }
    };
    let ids = |pages: &[List<Video>]| -> Vec<String> {
        pages
            .iter()
            .flat_map(|p| p.data.iter().map(|v| v.id.clone()))
            .collect()
    };
    type Case = (
        Option<&'static str>,
        Option<&'static str>,
        Option<&'static str>,
    );
    let cases: [Case; 7] = [
        (None, None, None),
        (Some("completed"), None, None),
        (None, Some("reel-1-pro"), None),
        (None, None, Some("  paper Lantern ")),
        (Some("failed"), None, Some("lantern")),
        (Some("in_progress"), Some("reel-1"), Some("LANTERN")),
        (Some("moderating"), None, None),
    ];
    for (status, model, q) in cases {
        for order in ["desc", "asc"] {
            for limit in [1usize, 3, 7, 100] {
                let query = VideoListQuery {
                    page: ListQuery {
                        limit: Some(limit.to_string()),
                        order: Some(order.into()),
                        after: None,
                    },
                    status: status.map(str::to_owned),
                    model: model.map(str::to_owned),
                    q: q.map(str::to_owned),
                };
                let filter = query.filter(app.context().catalog).expect("filter");
                let mut want: Vec<String> = jobs
                    .iter()
                    .filter(|j| j.org == org && filter.matches(j))
                    .map(|j| j.id.clone())
                    .collect();
                if order == "desc" {
                    want.reverse();
                }
                let what =
                    format!("status={status:?} model={model:?} q={q:?} {order} limit={limit}");
                let got = pages(query, MAX_SCANNED).await;
                assert_eq!(ids(&got), want, "{what}");
                // Full pages but the last, and has_more exact: no empty page at the end.
                assert_eq!(got.len(), want.len().div_ceil(limit).max(1), "{what}");
                for (n, page) in got.iter().enumerate() {
                    let last = n + 1 == got.len();
                    assert_eq!(page.has_more, !last, "{what} page {n}");
                    if !last {
                        assert_eq!(page.data.len(), limit, "{what} page {n}");
                    }
                    assert_eq!(
                        page.last_id,
                        page.data.last().map(|v| v.id.clone()),
                        "{what} page {n}"
                    );
                }
            }
        }
    }

    // A budget of 4 jobs a request, against matches 3 jobs apart: short and empty pages that
    // say where the scan stopped, and still exactly the matching jobs.
    for order in ["desc", "asc"] {
        let query = VideoListQuery {
            page: ListQuery {
                limit: Some("2".into()),
                order: Some(order.into()),
                after: None,
            },
            q: Some("lantern".into()),
            status: Some("completed".into()),
            ..Default::default()
        };
        let filter = query.filter(app.context().catalog).expect("filter");
        let mut want: Vec<String> = jobs
            .iter()
            .filter(|j| j.org == org && filter.matches(j))
            .map(|j| j.id.clone())
            .collect();
        if order == "desc" {
            want.reverse();
        }
        let got = pages(query, 4).await;
        assert_eq!(ids(&got), want, "{order}");
        assert!(
            got.iter()
                .any(|p| p.has_more && p.data.is_empty() && p.last_id.is_some()),
            "the budget leaves empty pages that continue ({order})"
        );
        assert!(got.iter().all(|p| p.data.len() <= 2));
    }
}

/// Rate-limit contract, run against each store adapter: 200 concurrent requests on a fresh key
/// limited to 50 per minute admit exactly 50, each told a different remaining count; a
/// tokens-per-minute reservation is settled with the real count, freeing the difference; an
/// organization's limit binds across its keys, and a key that admitted while the organization
/// refused gives its unit back.
pub async fn rate_limit_contract(store: Arc<dyn reelgate::ports::store::ItemStore>) {
    use reelgate::domain::accounts::{Caller, Credential};
    use reelgate::domain::billing::rate_limits::{acquire, settle, AcquireError, Kind};
    use reelgate::domain::catalog::{Plan, RateLimits};
    // Keep the burst inside one minute's window: start at least 15 s before the minute ends.
    let into_minute = reelgate::ports::store::now_secs().rem_euclid(60);
    if into_minute > 45 {
        tokio::time::sleep(std::time::Duration::from_secs((61 - into_minute) as u64)).await;
    }
    let org = reelgate::domain::ids::new_id("org");
    let caller = |key: &str, limits: RateLimits| Caller {
        org: org.clone(),
        person: "user_rate".into(),
        credential: Credential::ApiKey {
            key_id: format!("key_{key}_{}", reelgate::domain::ids::new_id("k")),
        },
        limits,
        budget: None,
    };

    let fifty = caller(
        "rpm",
        RateLimits {
            requests_per_minute: Some(50),
            ..Default::default()
        },
    );
    let mut tasks = Vec::new();
    for _ in 0..200 {
        let (store, fifty) = (store.clone(), fifty.clone());
        tasks.push(tokio::spawn(async move {
            acquire(store.as_ref(), &fifty, None, Kind::Text, 0).await
        }));
    }
    let mut remaining = Vec::new();
    let mut refused = 0;
    for t in tasks {
        match t.await.expect("join") {
            Ok(grant) => remaining.push(grant.status.requests.expect("a limit").remaining),
            Err(AcquireError::Limited(l)) => {
                assert!(l.retry_after_secs >= 1 && l.retry_after_secs <= 60);
                refused += 1;
            }
            Err(e) => panic!("store failure: {e}"),
        }
    }
    remaining.sort_unstable();
    assert_eq!(
        remaining,
        (0..50).collect::<Vec<u64>>(),
        "exactly 50 admitted"
    );
    assert_eq!(refused, 150);

    // Tokens: a reservation of 60 of 100, settled at 10, leaves room for another 60.
    let tokens = caller(
        "tpm",
        RateLimits {
            tokens_per_minute: Some(100),
            ..Default::default()
        },
    );
    let first = acquire(store.as_ref(), &tokens, None, Kind::Text, 60)
        .await
        .expect("first 60");
    assert_eq!(first.status.tokens.expect("limit").remaining, 40);
    assert!(matches!(
        acquire(store.as_ref(), &tokens, None, Kind::Text, 60).await,
        Err(AcquireError::Limited(_))
    ));
    settle(store.as_ref(), &first, 10).await;
    let second = acquire(store.as_ref(), &tokens, None, Kind::Text, 60)
        .await
        .expect("room after settling");
    assert_eq!(second.status.tokens.expect("limit").remaining, 30);
    // A request larger than the whole limit is refused without touching the store.
    assert!(matches!(
        acquire(store.as_ref(), &tokens, None, Kind::Text, 101).await,
        Err(AcquireError::Limited(_))
    ));

    // The organization's limit (3 video creates) binds across keys whose own limit is 5.
    let plan = Plan {
        id: "limited".into(),
        max_concurrent_renders: 1,
        key_limits: RateLimits {
            video_creates_per_minute: Some(5),
            ..Default::default()
        },
        org_limits: RateLimits {
            video_creates_per_minute: Some(3),
            ..Default::default()
        },
    };
    let a = caller("a", RateLimits::default());
    let b = caller("b", RateLimits::default());
    let mut admitted = 0;
    for who in [&a, &a, &b, &b, &a] {
        if acquire(store.as_ref(), who, Some(&plan), Kind::VideoCreate, 0)
            .await
            .is_ok()
        {
            admitted += 1;
        }
    }
    assert_eq!(
        admitted, 3,
        "the organization's 3 per minute bind across keys"
    );
    // Key a admitted twice and was refused once by the organization: its refused unit went
    // back, so a has 3 of its 5 left — seen through another organization-free acquire: with the
    // organization full, a's own window must read 2 requests.
    let window = reelgate::domain::table_keys::rate_window(
        &reelgate::domain::table_keys::rate_key_scope(
            &a.org,
            match &a.credential {
                Credential::ApiKey { key_id } => key_id,
                _ => unreachable!(),
            },
        ),
        reelgate::domain::billing::rate_limits::Kind::VideoCreate.tag(),
        reelgate::ports::store::now_secs().div_euclid(60),
    );
    let item = store.get(&window).await.expect("get").expect("a's window");
    use reelgate::ports::store::ItemExt;
    assert_eq!(item.i64_attr("requests"), Some(2), "{item:?}");
}
