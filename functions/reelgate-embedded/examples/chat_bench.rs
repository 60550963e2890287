//! Benchmark: the chat gateway's added latency over calling the same upstream directly.
//!
//!     cargo run --release -p reelgate-embedded --example chat_bench --features testing -- \
//!         [--rates 50,100,200,400,800] [--seconds 3] [--limiter-rate 1000] [--limiter-rounds 1]
//!         [--limiter-only] [--log-json] [--no-metrics] [--otlp]
//!
//! A fast local upstream (an OpenAI-compatible HTTP server in this process that answers at
//! once: a small completion, or eight chunks + usage + `[DONE]` when streamed) is called at a
//! fixed, open-loop request rate, first directly and then through a real reelgate server (a
//! `TestServer`: SQLite store, authentication, validation, billing with a ledger write per
//! request). For each rate and for non-streamed and streamed requests it prints the latency
//! percentiles of both, the added latency (gateway − direct, per percentile), and the request
//! rate the gateway actually completed. Streamed latency is the time to the end of the stream.
//! Load generator, gateway and upstream share this machine's cores, so the figures are an
//! upper bound of what the gateway adds on a dedicated host. The gateway's listener sets
//! TCP_NODELAY (see the note at the end of the output).
//!
//! Metrics (`observability::metrics`) are recorded unless `--no-metrics` (the baseline that isolates
//! their cost). `--log-json` also installs the JSON log
//! subscriber the servers use (`REELGATE_LOG_FORMAT=json`, level info) writing to a sink, so
//! every request's log line is formatted as in production; without it no subscriber is
//! installed and log events cost only their level check (docs/observability.md has figures).
//! `--otlp` installs what the server installs when `OTEL_EXPORTER_OTLP_ENDPOINT` is set: the
//! JSON log lines (to a sink) plus the OpenTelemetry layer, with the store/blob/queue span
//! decorators, exporting over OTLP/HTTP to a sink in this process that reads every export (so
//! the exporter really serialises and sends); the spans and bytes it received are printed last.
//!
//! Gateway-neutral mode (scripts/bench-vs-litellm.sh): `--serve-upstream 127.0.0.1:PORT` serves only
//! the fast upstream until killed; `--upstream URL --gateways "name|url|key|model;…"` sends the same
//! open-loop load to the upstream directly and to each gateway in turn at each rate, plain and
//! streamed, and prints one JSON line per (mode, rate, target) with total-time and
//! time-to-first-byte percentiles, the completed rate and the errors.
//!
//! Overload mode (scripts/bench-overload.sh): `--overload "url|key|model" --server-pid PID`
//! sends plain requests at each open-loop rate to a running gateway and prints one JSON line per
//! rate with the admitted rate and latency, the requests shed (503), `/health`'s latency and the
//! server's peak RSS.
//!
//! A last section measures the rate limiter (docs/traffic-control.md): one open-loop stream at
//! `--limiter-rate` requests per second whose requests alternate between a key whose plan sets
//! no limits and one whose plan sets limits it never reaches (so every second request pays the
//! limiter's conditional writes); the added latency is the difference between the two halves'
//! percentiles, which saw the same moments of the run.
//! `--limiter-rounds N` alternates the two N times and prints the median of the rounds' added
//! percentiles as well (one round is at the mercy of whatever else the machine does);
//! `--limiter-only` skips the main table.

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use futures::StreamExt;
use reelgate::domain::catalog::{Catalog, ChatModel, UpstreamConfig, DEFAULT_CATALOG};
use reelgate_embedded::testing::TestServer;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

async fn fast_upstream(Json(body): Json<Value>) -> Response {
    let base = json!({"id": "up", "created": 0, "model": body["model"]});
    if body["stream"].as_bool() != Some(true) {
        return Json(json!({
            "id": "up", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello there, how can I help?"},
                "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20},
        }))
        .into_response();
    }
    let mut events: Vec<String> = Vec::new();
    for (i, word) in ["Hello", " there", ",", " how", " can", " I", " help", "?"]
        .iter()
        .enumerate()
    {
        let mut delta = json!({"content": word});
        if i == 0 {
            delta["role"] = json!("assistant");
        }
        let mut chunk = base.clone();
        chunk["object"] = json!("chat.completion.chunk");
        chunk["choices"] = json!([{"index": 0, "delta": delta, "finish_reason": null}]);
        events.push(format!("data: {chunk}\n\n"));
    }
    let mut done = base.clone();
    done["object"] = json!("chat.completion.chunk");
    done["choices"] = json!([{"index": 0, "delta": {}, "finish_reason": "stop"}]);
    events.push(format!("data: {done}\n\n"));
    let mut usage = base.clone();
    usage["object"] = json!("chat.completion.chunk");
    usage["choices"] = json!([]);
    usage["usage"] = json!({"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20});
    events.push(format!("data: {usage}\n\n"));
    events.push("data: [DONE]\n\n".to_owned());
    let stream = futures::stream::iter(events.into_iter().map(Ok::<_, std::convert::Infallible>));
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap_or_default()
}

struct Target {
    url: String,
    key: Option<String>,
    model: String,
}

#[derive(Default)]
struct Stats {
    latencies: Vec<Duration>,
    /// Time to the first byte of the body (for a stream: the first event).
    first_bytes: Vec<Duration>,
    errors: usize,
    /// Answers `503 server_overloaded` (the gateway shed the request).
    shed: usize,
    elapsed: Duration,
    /// How long sending the schedule took (longer than planned when the generator fell behind).
    sending: Duration,
}

fn percentile_of(values: &[Duration], p: f64) -> Duration {
    if values.is_empty() {
        return Duration::ZERO;
    }
    let mut sorted = values.to_vec();
    sorted.sort();
    let rank = ((p / 100.0) * (sorted.len() as f64 - 1.0)).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

impl Stats {
    fn percentile(&self, p: f64) -> Duration {
        percentile_of(&self.latencies, p)
    }
    fn first_byte_percentile(&self, p: f64) -> Duration {
        percentile_of(&self.first_bytes, p)
    }
    fn rate(&self) -> f64 {
        self.latencies.len() as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// One request read to the end: (time to the last byte, time to the first byte of the body).
async fn one(
    client: &reqwest::Client,
    target: &Target,
    stream: bool,
) -> Result<(Duration, Duration), String> {
    let mut body =
        json!({"model": target.model, "messages": [{"role": "user", "content": "Say hello"}]});
    if stream {
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
    }
    let started = Instant::now();
    let mut request = client.post(&target.url).json(&body);
    if let Some(key) = &target.key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.map_err(|e| e.to_string())?;
    if !response.status().is_success() {
        return Err(format!("status {}", response.status()));
    }
    // Read to the end: for a stream that is `[DONE]`.
    let mut body = response.bytes_stream();
    let mut tail = Vec::new();
    let mut first_byte = None;
    while let Some(piece) = body.next().await {
        let piece = piece.map_err(|e| e.to_string())?;
        if first_byte.is_none() && !piece.is_empty() {
            first_byte = Some(started.elapsed());
        }
        tail = piece.to_vec();
    }
    if stream && !String::from_utf8_lossy(&tail).contains("[DONE]") {
        return Err("the stream did not end with [DONE]".into());
    }
    let total = started.elapsed();
    Ok((total, first_byte.unwrap_or(total)))
}

/// Sends `rate` requests a second for `seconds`, each at its scheduled time whatever the
/// previous ones are doing (open loop), and waits for all of them.
async fn run(
    client: &reqwest::Client,
    target: &Target,
    stream: bool,
    rate: u32,
    seconds: f64,
) -> Stats {
    let mut stats = run_alternating(client, &[target], stream, rate, seconds).await;
    stats.pop().unwrap_or_default()
}

/// One open-loop stream of requests at `rate`, the i-th sent to `targets[i % n]`: the targets
/// share every moment of the run (the machine's other work, the store's state), so the
/// difference between their percentiles is theirs alone, not the difference between two runs.
async fn run_alternating(
    client: &reqwest::Client,
    targets: &[&Target],
    stream: bool,
    rate: u32,
    seconds: f64,
) -> Vec<Stats> {
    let total = (rate as f64 * seconds).round() as usize;
    let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / rate as f64));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(total);
    for i in 0..total {
        ticker.tick().await;
        let client = client.clone();
        let target = targets[i % targets.len()];
        let target = Target {
            url: target.url.clone(),
            key: target.key.clone(),
            model: target.model.clone(),
        };
        tasks.push(tokio::spawn(
            async move { one(&client, &target, stream).await },
        ));
    }
    let sending = started.elapsed();
    let mut stats: Vec<Stats> = targets.iter().map(|_| Stats::default()).collect();
    for (i, task) in tasks.into_iter().enumerate() {
        let stats = &mut stats[i % targets.len()];
        match task.await {
            Ok(Ok((latency, first_byte))) => {
                stats.latencies.push(latency);
                stats.first_bytes.push(first_byte);
            }
            Ok(Err(e)) if e.starts_with("status 503") => stats.shed += 1,
            _ => stats.errors += 1,
        }
    }
    let elapsed = started.elapsed();
    for s in &mut stats {
        s.elapsed = elapsed;
        s.sending = sending;
    }
    stats
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// What the in-process OTLP sink received (`--otlp`).
#[derive(Default)]
struct ExportSink {
    requests: std::sync::atomic::AtomicU64,
    bytes: std::sync::atomic::AtomicU64,
}

/// `--otlp`: an OTLP/HTTP sink in this process (it reads each export and answers 200, as a
/// collector does), and the subscriber `reelgate serve` installs when OTEL_EXPORTER_OTLP_ENDPOINT
/// is set: JSON log lines (to a sink here) plus the OpenTelemetry layer exporting to it.
async fn install_otlp(sink: std::sync::Arc<ExportSink>) -> anyhow::Result<()> {
    use std::sync::atomic::Ordering;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::Layer as _;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let endpoint = format!("http://{}/v1/traces", listener.local_addr()?);
    let receiver = Router::new().route(
        "/v1/traces",
        post(move |body: axum::body::Bytes| {
            let sink = sink.clone();
            async move {
                sink.requests.fetch_add(1, Ordering::Relaxed);
                sink.bytes.fetch_add(body.len() as u64, Ordering::Relaxed);
                (
                    [("content-type", "application/x-protobuf")],
                    Vec::<u8>::new(),
                )
            }
        }),
    );
    tokio::spawn(async move {
        let _ = axum::serve(listener, receiver).await;
    });
    let export = reelgate::config::TraceExport {
        endpoint,
        headers: Vec::new(),
        service_name: "chat-bench".into(),
    };
    let logs = tracing_subscriber::fmt::layer()
        .json()
        .with_writer(std::io::sink)
        .with_filter(tracing_subscriber::EnvFilter::new("info,hyper=warn"));
    tracing_subscriber::registry()
        .with(logs)
        .with(reelgate::adapters::otel::layer(&export)?)
        .init();
    Ok(())
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let rates: Vec<u32> = arg("--rates")
        .unwrap_or_else(|| "50,100,200,400,800".into())
        .split(',')
        .map(|r| r.trim().parse())
        .collect::<Result<_, _>>()?;
    let seconds: f64 = arg("--seconds").unwrap_or_else(|| "3".into()).parse()?;
    if let Some(addr) = arg("--serve-upstream") {
        return serve_upstream(&addr).await;
    }
    if let (Some(upstream), Some(gateways)) = (arg("--upstream"), arg("--gateways")) {
        return compare(&upstream, &gateways, &rates, seconds).await;
    }
    if let Some(gateway) = arg("--overload") {
        let pid = arg("--server-pid").map(|p| p.parse()).transpose()?;
        return overload(&gateway, &rates, seconds, pid).await;
    }
    if std::env::args().any(|a| a == "--no-metrics") {
        reelgate::observability::metrics::set_enabled(false);
        println!("metrics: off");
    }
    let otlp = std::env::args().any(|a| a == "--otlp");
    let exported = std::sync::Arc::new(ExportSink::default());
    if otlp {
        install_otlp(exported.clone()).await?;
        println!("traces: exported over OTLP/HTTP to an in-process sink; JSON log lines to a sink");
    } else if std::env::args().any(|a| a == "--log-json") {
        tracing_subscriber::fmt()
            .json()
            .with_env_filter(tracing_subscriber::EnvFilter::new("info,hyper=warn"))
            .with_writer(std::io::sink)
            .init();
        println!("log lines: JSON, info, to a sink");
    }

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let upstream_url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move {
        let _ = axum::serve(
            listener,
            Router::new().route("/v1/chat/completions", post(fast_upstream)),
        )
        .await;
    });

    let mut catalog = Catalog::parse(DEFAULT_CATALOG)?;
    catalog.upstreams.push(UpstreamConfig {
        id: "fast".into(),
        kind: "openai".into(),
        base_url: Some(upstream_url.clone()),
        api_key_env: None,
        region: None,
        extra_headers: Default::default(),
    });
    catalog.chat_models.push(ChatModel {
        id: "bench-model".into(),
        upstream: "fast".into(),
        upstream_model: Some("fast-model".into()),
        deployments: Vec::new(),
        capabilities: vec!["text".into(), "tools".into()],
        reasoning_efforts: vec![],
        context_window: 8192,
        input_per_million: "0.15".parse()?,
        output_per_million: "0.60".parse()?,
        cached_input_per_million: None,
        cache_write_per_million: None,
        auto_cache: false,
        cache_min_tokens: None,
        currency: "usd".into(),
        owned_by: None,
    });
    let limiter_rate: u32 = arg("--limiter-rate")
        .unwrap_or_else(|| "1000".into())
        .parse()?;
    // A plan whose limits are never reached, so the limiter's write is measured, not refusals.
    catalog.plans.push(reelgate::domain::catalog::Plan {
        id: "bench-limited".into(),
        max_concurrent_renders: 1,
        key_limits: reelgate::domain::catalog::RateLimits {
            requests_per_minute: Some(100_000_000),
            tokens_per_minute: Some(100_000_000_000),
            video_creates_per_minute: None,
        },
        org_limits: reelgate::domain::catalog::RateLimits {
            requests_per_minute: Some(100_000_000),
            tokens_per_minute: Some(100_000_000_000),
            video_creates_per_minute: None,
        },
    });
    let server = TestServer::start_with(catalog, |app| {
        if otlp {
            // What `app::assemble` does while traces are exported.
            use reelgate::adapters::traced::{TracedBlobs, TracedQueue, TracedStore};
            app.store = std::sync::Arc::new(TracedStore(app.store.clone()));
            app.blobs = std::sync::Arc::new(TracedBlobs(app.blobs.clone()));
            app.render_queue = std::sync::Arc::new(TracedQueue(app.render_queue.clone()));
        }
    })
    .await;
    // The enterprise plan sets no rate limits: the main table measures the gateway without them.
    let unlimited = server
        .app
        .accounts()
        .create_org("bench", "enterprise", "usd", "1000000".parse()?)
        .await
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let tenant = server.member(&unlimited.id).await;
    let limited = server
        .app
        .accounts()
        .create_org("bench-limited", "bench-limited", "usd", "1000000".parse()?)
        .await
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let limited_tenant = server.member(&limited.id).await;
    // The same app behind a listener that sets TCP_NODELAY on every connection, as a production
    // server should: without it, each SSE event after the first waits for the client's delayed
    // ACK (Nagle), about 40 ms. The table measures this one; one line at the end shows the
    // TestServer's plain listener for comparison.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let gateway_url = format!("http://{}/v1/chat/completions", listener.local_addr()?);
    let router = reelgate::api::router(server.app.clone());
    tokio::spawn(async move {
        use axum::serve::ListenerExt;
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let _ = axum::serve(listener, router).await;
    });
    let direct = Target {
        url: format!("{upstream_url}/v1/chat/completions"),
        key: None,
        model: "fast-model".into(),
    };
    let gateway = Target {
        url: gateway_url,
        key: Some(tenant.key.clone()),
        model: "bench-model".into(),
    };
    let gateway_limited = Target {
        url: gateway.url.clone(),
        key: Some(limited_tenant.key.clone()),
        model: "bench-model".into(),
    };
    let plain_listener = Target {
        url: server.url("/v1/chat/completions"),
        key: Some(tenant.key.clone()),
        model: "bench-model".into(),
    };
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(4096)
        .tcp_nodelay(true)
        .build()?;

    // Warm up connections, the SQLite file and the upstream client.
    for stream in [false, true] {
        run(&client, &direct, stream, 100, 1.0).await;
        run(&client, &gateway, stream, 100, 1.0).await;
    }

    if !std::env::args().any(|a| a == "--limiter-only") {
        main_table(&client, &direct, &gateway, &plain_listener, &rates, seconds).await;
    }

    let rounds: usize = arg("--limiter-rounds")
        .unwrap_or_else(|| "1".into())
        .parse()?;
    run(&client, &gateway_limited, false, 100, 1.0).await;
    let (mut added50, mut added99) = (Vec::new(), Vec::new());
    for round in 1..=rounds.max(1) {
        // Every other request of one stream carries the limited key.
        let mut both = run_alternating(
            &client,
            &[&gateway, &gateway_limited],
            false,
            limiter_rate,
            seconds,
        )
        .await;
        let (with, without) = (both.pop().unwrap(), both.pop().unwrap());
        let (a50, a99) = (
            ms(with.percentile(50.0)) - ms(without.percentile(50.0)),
            ms(with.percentile(99.0)) - ms(without.percentile(99.0)),
        );
        added50.push(a50);
        added99.push(a99);
        println!(
            "\nrate limiter at {limiter_rate}/s (plain, round {round}, alternate requests): without limits p50 {:.2}ms p99 {:.2}ms ({} ok, {} errors); \
             with key + organization limits p50 {:.2}ms p99 {:.2}ms ({} ok, {} errors); \
             added by the limiter: p50 {a50:+.3}ms, p99 {a99:+.3}ms",
            ms(without.percentile(50.0)),
            ms(without.percentile(99.0)),
            without.latencies.len(),
            without.errors,
            ms(with.percentile(50.0)),
            ms(with.percentile(99.0)),
            with.latencies.len(),
            with.errors,
        );
    }
    if rounds > 1 {
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        println!(
            "\nrate limiter, median of {rounds} rounds: added p50 {:+.3}ms, p99 {:+.3}ms",
            median(&mut added50),
            median(&mut added99)
        );
    }
    if otlp {
        reelgate::adapters::otel::flush().await;
        println!(
            "\nOTLP sink received {} exports, {} bytes of protobuf",
            exported.requests.load(std::sync::atomic::Ordering::Relaxed),
            exported.bytes.load(std::sync::atomic::Ordering::Relaxed),
        );
    }
    Ok(())
}

/// One row of the main table: direct and gateway percentiles of `measure`, and their difference.
fn print_row(
    label: &str,
    rate: u32,
    d: &Stats,
    g: &Stats,
    measure: impl Fn(&Stats, f64) -> f64,
    tail: &str,
) {
    println!(
        "{label:<9} {rate:>7} | {:>7.2}ms {:>7.2}ms | {:>7.2}ms {:>7.2}ms | {:>7.2}ms {:>7.2}ms |{tail}",
        measure(d, 50.0),
        measure(d, 99.0),
        measure(g, 50.0),
        measure(g, 99.0),
        measure(g, 50.0) - measure(d, 50.0),
        measure(g, 99.0) - measure(d, 99.0),
    );
}

async fn main_table(
    client: &reqwest::Client,
    direct: &Target,
    gateway: &Target,
    plain_listener: &Target,
    rates: &[u32],
    seconds: f64,
) {
    println!("chat gateway added latency over a direct call to the same local upstream");
    println!(
        "({} cores; {seconds} s per rate; open-loop load; latency = time to the last byte, and \
         for streams also to the first byte of the body)\n",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );
    println!(
        "{:<9} {:>7} | {:>9} {:>9} | {:>9} {:>9} | {:>9} {:>9} | {:>9} {:>6}",
        "mode",
        "rate/s",
        "direct50",
        "direct99",
        "gw p50",
        "gw p99",
        "added50",
        "added99",
        "gw req/s",
        "errors"
    );
    for stream in [false, true] {
        for &rate in rates {
            let d = run(client, direct, stream, rate, seconds).await;
            let g = run(client, gateway, stream, rate, seconds).await;
            let mode = if stream { "streamed" } else { "plain" };
            let last = |s: &Stats, p| ms(s.percentile(p));
            let tail = format!(" {:>9.0} {:>6}", g.rate(), g.errors + d.errors);
            print_row(mode, rate, &d, &g, last, &tail);
            if stream {
                let first = |s: &Stats, p| ms(s.first_byte_percentile(p));
                print_row("1st byte", rate, &d, &g, first, "");
            }
        }
    }
    let rate = rates.first().copied().unwrap_or(100);
    let d = run(client, direct, true, rate, seconds).await;
    let g = run(client, plain_listener, true, rate, seconds).await;
    println!(
        "\nfor comparison, streamed at {rate}/s through a listener without TCP_NODELAY: added p50 {:.2}ms, p99 {:.2}ms",
        ms(g.percentile(50.0)) - ms(d.percentile(50.0)),
        ms(g.percentile(99.0)) - ms(d.percentile(99.0)),
    );
}

/// `--serve-upstream ADDR`: only the fast upstream, until the process is killed.
async fn serve_upstream(addr: &str) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    eprintln!("fast upstream on http://{}", listener.local_addr()?);
    axum::serve(
        listener,
        Router::new().route("/v1/chat/completions", post(fast_upstream)),
    )
    .await?;
    Ok(())
}

/// `--upstream URL --gateways "name|url|key|model;…"`: the same open-loop load against the
/// upstream directly (`direct`, model `fast-model`) and each gateway, one after the other at each
/// rate, plain then streamed. One JSON line per (mode, rate, target) on stdout.
async fn compare(
    upstream: &str,
    gateways: &str,
    rates: &[u32],
    seconds: f64,
) -> anyhow::Result<()> {
    let mut targets = vec![(
        "direct".to_owned(),
        Target {
            url: format!("{}/v1/chat/completions", upstream.trim_end_matches('/')),
            key: None,
            model: "fast-model".into(),
        },
    )];
    for spec in gateways.split(';').filter(|s| !s.trim().is_empty()) {
        let parts: Vec<&str> = spec.split('|').collect();
        let [name, url, key, model] = parts[..] else {
            anyhow::bail!("a gateway is name|base url|key|model, not {spec}");
        };
        targets.push((
            name.to_owned(),
            Target {
                url: format!("{}/v1/chat/completions", url.trim_end_matches('/')),
                key: Some(key.to_owned()),
                model: model.to_owned(),
            },
        ));
    }
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(4096)
        .tcp_nodelay(true)
        .timeout(Duration::from_secs(30))
        .build()?;
    for stream in [false, true] {
        for (_, target) in &targets {
            run(&client, target, stream, 50, 1.0).await;
        }
    }
    for stream in [false, true] {
        for &rate in rates {
            for (name, target) in &targets {
                let s = run(&client, target, stream, rate, seconds).await;
                println!(
                    "{}",
                    json!({
                        "mode": if stream { "streamed" } else { "plain" },
                        "rate": rate,
                        "target": name,
                        "seconds": seconds,
                        "completed": s.latencies.len(),
                        "errors": s.errors,
                        "achieved_rps": s.rate(),
                        "p50_ms": ms(s.percentile(50.0)),
                        "p99_ms": ms(s.percentile(99.0)),
                        "ttfb_p50_ms": ms(s.first_byte_percentile(50.0)),
                        "ttfb_p99_ms": ms(s.first_byte_percentile(99.0)),
                    })
                );
                // A gateway that fell behind keeps working on requests whose clients gave up;
                // the next target starts once the machine is quiet again.
                let waited = until_quiet().await;
                if waited > Duration::from_secs(2) {
                    eprintln!("waited {waited:.1?} for the machine to go quiet after {name}");
                }
            }
        }
    }
    Ok(())
}

/// `--overload "url|key|model" [--server-pid PID]` (scripts/bench-overload.sh): plain chat
/// requests at each open-loop rate, while `/health` is asked every 50 ms on connections of its
/// own and the server's resident memory is sampled every 50 ms. One JSON line per rate: what
/// was offered and sent, what the gateway admitted (200s, their latency), shed (503) and failed,
/// how `/health` fared, and the server's peak RSS during the run.
async fn overload(
    gateway: &str,
    rates: &[u32],
    seconds: f64,
    server_pid: Option<u32>,
) -> anyhow::Result<()> {
    let parts: Vec<&str> = gateway.split('|').collect();
    let [url, key, model] = parts[..] else {
        anyhow::bail!("--overload wants url|key|model, not {gateway}");
    };
    let base = url.trim_end_matches('/').to_owned();
    let target = Target {
        url: format!("{base}/v1/chat/completions"),
        key: Some(key.to_owned()),
        model: model.to_owned(),
    };
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(4096)
        .tcp_nodelay(true)
        .timeout(Duration::from_secs(30))
        .build()?;
    run(&client, &target, false, 50, 1.0).await;
    for &rate in rates {
        // The server drains what the last rate left before this one starts (at most 20 s: on a
        // machine busy with other work the run goes on, and says how long it waited).
        let quiet_wait = until_quiet_within(Duration::from_secs(20)).await;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let health = tokio::spawn(probe_health(format!("{base}/health"), stop.clone()));
        let rss = tokio::spawn(sample_rss(server_pid, stop.clone()));
        let s = run(&client, &target, false, rate, seconds).await;
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let (health_ms, health_failed) = health.await?;
        let peak_rss_kib = rss.await?;
        let sent = (rate as f64 * seconds).round();
        println!(
            "{}",
            json!({
                "offered_rps": rate,
                "quiet_wait_s": quiet_wait.as_secs_f64(),
                "sent_rps": sent / s.sending.as_secs_f64().max(1e-9),
                "admitted_rps": s.rate(),
                "shed": s.shed,
                "errors": s.errors,
                "admitted_p50_ms": ms(s.percentile(50.0)),
                "admitted_p99_ms": ms(s.percentile(99.0)),
                "health_p50_ms": ms(percentile_of(&health_ms, 50.0)),
                "health_p99_ms": ms(percentile_of(&health_ms, 99.0)),
                "health_max_ms": ms(percentile_of(&health_ms, 100.0)),
                "health_failed": health_failed,
                "peak_rss_mib": peak_rss_kib / 1024,
            })
        );
    }
    Ok(())
}

/// Asks `url` every 50 ms until `stop`, each time on a new connection (a prober that reused one
/// would not see a full accept queue): the latencies of the answers, and how many failed.
async fn probe_health(
    url: String,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> (Vec<Duration>, usize) {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(10))
        .build()
        .expect("client");
    let mut latencies = Vec::new();
    let mut failed = 0;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let started = Instant::now();
        match client.get(&url).send().await {
            Ok(r) if r.status().is_success() => latencies.push(started.elapsed()),
            _ => failed += 1,
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (latencies, failed)
}

/// The largest VmRSS of `pid` seen every 50 ms until `stop`, in KiB (0 without a pid).
async fn sample_rss(pid: Option<u32>, stop: std::sync::Arc<std::sync::atomic::AtomicBool>) -> u64 {
    let Some(pid) = pid else { return 0 };
    let mut peak = 0;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
            let rss = status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap_or(0);
            peak = peak.max(rss);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    peak
}

/// Busy and total CPU time (jiffies) of the whole machine, from `/proc/stat`.
fn cpu_times() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let fields: Vec<u64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal …
    let idle = fields.get(3)? + fields.get(4).copied().unwrap_or(0);
    let total: u64 = fields.iter().take(8).sum();
    Some((total - idle, total))
}

/// Waits until the machine's CPUs are less than a quarter busy over half a second (at most two
/// minutes); without `/proc/stat`, half a second. Returns how long it waited.
async fn until_quiet() -> Duration {
    until_quiet_within(Duration::from_secs(120)).await
}

/// As [`until_quiet`], waiting at most `limit`.
async fn until_quiet_within(limit: Duration) -> Duration {
    const WINDOW: Duration = Duration::from_millis(500);
    let start = Instant::now();
    while start.elapsed() < limit {
        let Some((busy0, total0)) = cpu_times() else {
            tokio::time::sleep(WINDOW).await;
            break;
        };
        tokio::time::sleep(WINDOW).await;
        let Some((busy1, total1)) = cpu_times() else {
            break;
        };
        if (busy1 - busy0) * 4 < (total1 - total0).max(1) {
            break;
        }
    }
    start.elapsed()
}
