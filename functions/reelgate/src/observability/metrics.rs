//! The service's metrics: counters, gauges and histograms that the hot path updates with atomics
//! (a read lock to find a labelled series, taken for writing only the first time a label set is
//! seen), exposed as Prometheus text (`GET /metrics`, `api/metrics.rs`). The registry is sharded
//! by thread: each thread records into a shard of its own (threads beyond [`SHARDS`] share one),
//! so threads on different cores share no lock and no counter's cache line on the request path;
//! the exposition adds the shards up. On Lambda (`set_emf`), where nothing scrapes a process, every recording
//! also writes one CloudWatch Embedded Metric Format line to stdout, which CloudWatch turns into
//! metrics in the namespace [`EMF_NAMESPACE`] (the template's dashboard shows them).
//! The series are listed in docs/observability.md.

use rust_decimal::Decimal;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, RwLock};
use std::time::Duration;

/// The CloudWatch namespace of the EMF lines.
pub const EMF_NAMESPACE: &str = "reelgate";

static EMF: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Turns the EMF lines on (the Lambda hosts, once at start).
pub fn set_emf(on: bool) {
    EMF.store(on, Ordering::Relaxed);
}

static ENABLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Turns recording off (and on): for the benchmark's baseline only; the services always record.
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

fn emf_on() -> bool {
    EMF.load(Ordering::Relaxed)
}

/// The EMF document of one observation: `dimensions` (name, value) form the one dimension set
/// of every metric in `values` (name, CloudWatch unit, value).
pub fn emf_line(dimensions: &[(&str, &str)], values: &[(&str, &str, f64)]) -> String {
    let mut doc = serde_json::Map::new();
    let names: Vec<&str> = dimensions.iter().map(|(n, _)| *n).collect();
    let metrics: Vec<serde_json::Value> = values
        .iter()
        .map(|(name, unit, _)| serde_json::json!({"Name": name, "Unit": unit}))
        .collect();
    doc.insert(
        "_aws".into(),
        serde_json::json!({
            "Timestamp": now_millis(),
            "CloudWatchMetrics": [{
                "Namespace": EMF_NAMESPACE,
                "Dimensions": [names],
                "Metrics": metrics,
            }],
        }),
    );
    for (name, value) in dimensions {
        doc.insert((*name).into(), serde_json::Value::from(*value));
    }
    for (name, _, value) in values {
        doc.insert((*name).into(), serde_json::Value::from(*value));
    }
    serde_json::Value::Object(doc).to_string()
}

fn emf(dimensions: &[(&str, &str)], values: &[(&str, &str, f64)]) {
    if emf_on() {
        println!("{}", emf_line(dimensions, values));
    }
}

/// Upper bounds (seconds) of the latency histograms' buckets.
const BUCKETS: [f64; 14] = [
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 120.0,
];
/// Buckets of the render and queue-wait histograms (renders take seconds to minutes).
const SLOW_BUCKETS: [f64; 14] = [
    0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0,
];

/// A histogram: per-bucket counts, a sum (microseconds) and a count.
#[derive(Debug)]
pub struct Histogram {
    bounds: &'static [f64; 14],
    buckets: [AtomicU64; 14],
    sum_micros: AtomicU64,
    count: AtomicU64,
}

impl Histogram {
    fn new(bounds: &'static [f64; 14]) -> Self {
        Histogram {
            bounds,
            buckets: Default::default(),
            sum_micros: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }

    pub fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        if let Some(i) = self.bounds.iter().position(|b| secs <= *b) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        self.sum_micros
            .fetch_add(d.as_micros() as u64, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }
}

/// One series: its label values and its value.
type Series<V> = (Box<[String]>, Arc<V>);

/// Series of one family by label values (few: routes × statuses, models × kinds).
struct Family<V> {
    series: RwLock<Vec<Series<V>>>,
    make: fn() -> V,
}

impl<V> Family<V> {
    const fn new(make: fn() -> V) -> Self {
        Family {
            series: RwLock::new(Vec::new()),
            make,
        }
    }

    fn get(&self, labels: &[&str]) -> Arc<V> {
        let same = |k: &[String]| k.iter().map(String::as_str).eq(labels.iter().copied());
        if let Ok(series) = self.series.read() {
            if let Some((_, v)) = series.iter().find(|(k, _)| same(k)) {
                return v.clone();
            }
        }
        let mut series = self.series.write().unwrap_or_else(|e| e.into_inner());
        if let Some((_, v)) = series.iter().find(|(k, _)| same(k)) {
            return v.clone();
        }
        let v = Arc::new((self.make)());
        series.push((labels.iter().map(|s| (*s).to_owned()).collect(), v.clone()));
        v
    }

    fn snapshot(&self) -> Vec<Series<V>> {
        self.series.read().map(|s| s.clone()).unwrap_or_default()
    }
}

/// Shards of the registry: threads take one each in turn (a runtime worker per core touches its
/// own), and past this many they share.
pub const SHARDS: usize = 16;

/// Every series the service keeps, as one thread records them; aligned so that two shards never
/// share a cache line.
#[repr(align(128))]
struct Shard {
    requests: Family<Histogram>,
    overhead: Family<Histogram>,
    upstream_errors: Family<AtomicU64>,
    tokens: Family<AtomicU64>,
    spend: Family<Mutex<Decimal>>,
    video_jobs: Family<AtomicU64>,
    render: Histogram,
    queue_wait: Histogram,
    reservations_held: AtomicI64,
}

fn fast() -> Histogram {
    Histogram::new(&BUCKETS)
}

impl Shard {
    fn new() -> Self {
        Shard {
            requests: Family::new(fast),
            overhead: Family::new(fast),
            upstream_errors: Family::new(|| AtomicU64::new(0)),
            tokens: Family::new(|| AtomicU64::new(0)),
            spend: Family::new(|| Mutex::new(Decimal::ZERO)),
            video_jobs: Family::new(|| AtomicU64::new(0)),
            render: Histogram::new(&SLOW_BUCKETS),
            queue_wait: Histogram::new(&SLOW_BUCKETS),
            reservations_held: AtomicI64::new(0),
        }
    }
}

static REGISTRY: LazyLock<[Shard; SHARDS]> =
    LazyLock::new(|| std::array::from_fn(|_| Shard::new()));

/// The next thread's shard (touched once per thread, when it first records).
static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static THIS_THREADS_SHARD: usize = NEXT_SHARD.fetch_add(1, Ordering::Relaxed) % SHARDS;
}

/// The shard this thread records into.
fn shard_index() -> usize {
    THIS_THREADS_SHARD.with(|i| *i)
}

/// Unix time in milliseconds (render start and end are stored with it).
pub fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}

fn registry() -> &'static Shard {
    &REGISTRY[shard_index()]
}

/// One answered request: its route template and status, how long it took, and — for a
/// text-model request — its model and upstream time (the gateway's overhead is the difference).
pub fn request(route: &str, status: u16, took: Duration, upstream: Option<(&str, Duration)>) {
    if !enabled() {
        return;
    }
    let r = registry();
    let mut code = [0u8; 3];
    let status = status_text(status, &mut code);
    r.requests.get(&[route, status]).observe(took);
    emf(
        &[("route", route), ("status", status)],
        &[
            ("Requests", "Count", 1.0),
            (
                "RequestDuration",
                "Milliseconds",
                took.as_secs_f64() * 1000.0,
            ),
        ],
    );
    if let Some((model, upstream)) = upstream {
        let overhead = took.saturating_sub(upstream);
        r.overhead.get(&[model]).observe(overhead);
        emf(
            &[("model", model)],
            &[(
                "GatewayOverhead",
                "Milliseconds",
                overhead.as_secs_f64() * 1000.0,
            )],
        );
    }
}

fn status_text(status: u16, buf: &mut [u8; 3]) -> &str {
    let s = status.min(999);
    buf[0] = b'0' + (s / 100) as u8;
    buf[1] = b'0' + (s / 10 % 10) as u8;
    buf[2] = b'0' + (s % 10) as u8;
    std::str::from_utf8(buf).unwrap_or("000")
}

/// A failed upstream call (one deployment's attempt): `kind` is `unreachable`, `timeout`,
/// `rate_limited`, `server_error`, `rejected` or `protocol`.
pub fn upstream_error(model: &str, kind: &str) {
    if !enabled() {
        return;
    }
    registry()
        .upstream_errors
        .get(&[model, kind])
        .fetch_add(1, Ordering::Relaxed);
    emf(
        &[("model", model), ("kind", kind)],
        &[("UpstreamErrors", "Count", 1.0)],
    );
}

/// Tokens charged: `kind` is `input`, `cached_input`, `cache_write` or `output`.
pub fn tokens(model: &str, kind: &str, n: u64) {
    if n > 0 && enabled() {
        registry()
            .tokens
            .get(&[model, kind])
            .fetch_add(n, Ordering::Relaxed);
        emf(
            &[("model", model), ("kind", kind)],
            &[("Tokens", "Count", n as f64)],
        );
    }
}

/// An amount charged (tokens or a render), exact.
pub fn spend(model: &str, currency: &str, amount: Decimal) {
    if !enabled() {
        return;
    }
    let cell = registry().spend.get(&[model, currency]);
    let mut total = cell.lock().unwrap_or_else(|e| e.into_inner());
    *total += amount;
    drop(total);
    if emf_on() {
        use rust_decimal::prelude::ToPrimitive;
        emf(
            &[("model", model), ("currency", currency)],
            &[("Spend", "None", amount.to_f64().unwrap_or_default())],
        );
    }
}

/// A video job reached a terminal status (`completed`, `failed`, `canceled`); `code` is the
/// failure code (empty otherwise).
pub fn video_job(status: &str, code: &str) {
    registry()
        .video_jobs
        .get(&[status, code])
        .fetch_add(1, Ordering::Relaxed);
    emf(
        &[("status", status), ("code", code)],
        &[("VideoJobs", "Count", 1.0)],
    );
}

pub fn render_duration(d: Duration) {
    registry().render.observe(d);
    emf(&[], &[("RenderDuration", "Seconds", d.as_secs_f64())]);
}

/// Time a render waited between admission and the start of its render.
pub fn queue_wait(d: Duration) {
    registry().queue_wait.observe(d);
    emf(&[], &[("QueueWait", "Seconds", d.as_secs_f64())]);
}

/// A render reservation was taken (+1) or settled (−1) by this process. A process's gauge means
/// nothing across Lambda functions, so EMF gets the changes (`ReservationsTaken`,
/// `ReservationsSettled`) and the dashboard shows both.
pub fn reservations_held(delta: i64) {
    registry()
        .reservations_held
        .fetch_add(delta, Ordering::Relaxed);
    let name = if delta > 0 {
        "ReservationsTaken"
    } else {
        "ReservationsSettled"
    };
    emf(&[], &[(name, "Count", delta.unsigned_abs() as f64)]);
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn labels(names: &[&str], values: &[String]) -> String {
    names
        .iter()
        .zip(values)
        .map(|(n, v)| format!("{n}=\"{}\"", escape(v)))
        .collect::<Vec<_>>()
        .join(",")
}

/// A histogram's counts added up over the shards.
#[derive(Clone)]
struct HistogramTotal {
    bounds: &'static [f64; 14],
    buckets: [u64; 14],
    sum_micros: u64,
    count: u64,
}

impl HistogramTotal {
    fn add(&mut self, h: &Histogram) {
        // The bounds are the histogram's own, whichever buckets the total was started with.
        self.bounds = h.bounds;
        for (total, n) in self.buckets.iter_mut().zip(&h.buckets) {
            *total += n.load(Ordering::Relaxed);
        }
        self.sum_micros += h.sum_micros.load(Ordering::Relaxed);
        self.count += h.count.load(Ordering::Relaxed);
    }

    fn of(bounds: &'static [f64; 14]) -> Self {
        HistogramTotal {
            bounds,
            buckets: [0; 14],
            sum_micros: 0,
            count: 0,
        }
    }
}

/// One family's series added up over the shards, by label values (sorted, so the exposition's
/// order does not depend on which thread saw a series first).
fn totals<V, T>(
    family: impl Fn(&Shard) -> &Family<V>,
    zero: impl Fn() -> T,
    add: impl Fn(&mut T, &V),
) -> BTreeMap<Box<[String]>, T> {
    let mut out = BTreeMap::new();
    for shard in REGISTRY.iter() {
        for (labels, value) in family(shard).snapshot() {
            add(out.entry(labels).or_insert_with(&zero), &value);
        }
    }
    out
}

fn histogram_totals(
    family: impl Fn(&Shard) -> &Family<Histogram>,
) -> BTreeMap<Box<[String]>, HistogramTotal> {
    totals(family, || HistogramTotal::of(&BUCKETS), HistogramTotal::add)
}

fn counter_totals(family: impl Fn(&Shard) -> &Family<AtomicU64>) -> BTreeMap<Box<[String]>, u64> {
    totals(family, || 0, |t, n| *t += n.load(Ordering::Relaxed))
}

fn unlabelled_total(histogram: impl Fn(&Shard) -> &Histogram) -> HistogramTotal {
    let mut total = HistogramTotal::of(&SLOW_BUCKETS);
    for shard in REGISTRY.iter() {
        total.add(histogram(shard));
    }
    total
}

fn histogram_text(out: &mut String, name: &str, l: &str, h: &HistogramTotal) {
    let sep = if l.is_empty() { "" } else { "," };
    let mut cumulative = 0;
    for (bound, n) in h.bounds.iter().zip(&h.buckets) {
        cumulative += n;
        let _ = writeln!(out, "{name}_bucket{{{l}{sep}le=\"{bound}\"}} {cumulative}");
    }
    let count = h.count;
    let sum = h.sum_micros as f64 / 1e6;
    let _ = writeln!(out, "{name}_bucket{{{l}{sep}le=\"+Inf\"}} {count}");
    let braces = if l.is_empty() {
        String::new()
    } else {
        format!("{{{l}}}")
    };
    let _ = writeln!(out, "{name}_sum{braces} {sum}");
    let _ = writeln!(out, "{name}_count{braces} {count}");
}

/// Every series in the Prometheus text exposition format (version 0.0.4), the shards added up.
pub fn prometheus_text() -> String {
    let mut out = String::new();
    let requests = histogram_totals(|s| &s.requests);
    out.push_str("# HELP reelgate_requests_total Requests answered, by route template and status.\n# TYPE reelgate_requests_total counter\n");
    for (k, h) in &requests {
        let _ = writeln!(
            out,
            "reelgate_requests_total{{{}}} {}",
            labels(&["route", "status"], k),
            h.count
        );
    }
    out.push_str("# HELP reelgate_request_duration_seconds Time to answer (streams: to their end), by route template and status.\n# TYPE reelgate_request_duration_seconds histogram\n");
    for (k, h) in &requests {
        histogram_text(
            &mut out,
            "reelgate_request_duration_seconds",
            &labels(&["route", "status"], k),
            h,
        );
    }
    out.push_str("# HELP reelgate_gateway_overhead_seconds Request time minus upstream time of text-model requests, by model.\n# TYPE reelgate_gateway_overhead_seconds histogram\n");
    for (k, h) in &histogram_totals(|s| &s.overhead) {
        histogram_text(
            &mut out,
            "reelgate_gateway_overhead_seconds",
            &labels(&["model"], k),
            h,
        );
    }
    out.push_str("# HELP reelgate_upstream_errors_total Failed upstream calls, by model and kind.\n# TYPE reelgate_upstream_errors_total counter\n");
    for (k, n) in &counter_totals(|s| &s.upstream_errors) {
        let _ = writeln!(
            out,
            "reelgate_upstream_errors_total{{{}}} {n}",
            labels(&["model", "kind"], k),
        );
    }
    out.push_str("# HELP reelgate_tokens_total Tokens charged, by model and kind (input, cached_input, cache_write, output).\n# TYPE reelgate_tokens_total counter\n");
    for (k, n) in &counter_totals(|s| &s.tokens) {
        let _ = writeln!(
            out,
            "reelgate_tokens_total{{{}}} {n}",
            labels(&["model", "kind"], k),
        );
    }
    out.push_str("# HELP reelgate_spend_total Amount charged, by model and currency.\n# TYPE reelgate_spend_total counter\n");
    let spend = totals(
        |s| &s.spend,
        || Decimal::ZERO,
        |t, v| *t += *v.lock().unwrap_or_else(|e| e.into_inner()),
    );
    for (k, total) in &spend {
        let _ = writeln!(
            out,
            "reelgate_spend_total{{{}}} {}",
            labels(&["model", "currency"], k),
            total.normalize()
        );
    }
    out.push_str("# HELP reelgate_video_jobs_total Video jobs that reached a terminal status, by status and failure code.\n# TYPE reelgate_video_jobs_total counter\n");
    for (k, n) in &counter_totals(|s| &s.video_jobs) {
        let _ = writeln!(
            out,
            "reelgate_video_jobs_total{{{}}} {n}",
            labels(&["status", "code"], k),
        );
    }
    out.push_str("# HELP reelgate_render_duration_seconds Time a render took (engine call to output stored).\n# TYPE reelgate_render_duration_seconds histogram\n");
    histogram_text(
        &mut out,
        "reelgate_render_duration_seconds",
        "",
        &unlabelled_total(|s| &s.render),
    );
    out.push_str("# HELP reelgate_queue_wait_seconds Time a video job waited from admission to the start of its render.\n# TYPE reelgate_queue_wait_seconds histogram\n");
    histogram_text(
        &mut out,
        "reelgate_queue_wait_seconds",
        "",
        &unlabelled_total(|s| &s.queue_wait),
    );
    out.push_str("# HELP reelgate_reservations_held Render reservations taken and not yet settled by this process.\n# TYPE reelgate_reservations_held gauge\n");
    // A reservation taken on one thread and settled on another: the shards' deltas add up.
    let held: i64 = REGISTRY
        .iter()
        .map(|s| s.reservations_held.load(Ordering::Relaxed))
        .sum();
    let _ = writeln!(out, "reelgate_reservations_held {held}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emf_lines_name_their_dimensions_and_metrics() {
        let line = emf_line(
            &[("route", "/v1/models"), ("status", "200")],
            &[
                ("Requests", "Count", 1.0),
                ("RequestDuration", "Milliseconds", 2.5),
            ],
        );
        let v: serde_json::Value = serde_json::from_str(&line).expect("json");
        let cw = &v["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(cw["Namespace"], "reelgate");
        assert_eq!(cw["Dimensions"], serde_json::json!([["route", "status"]]));
        assert_eq!(cw["Metrics"][1]["Name"], "RequestDuration");
        assert_eq!(cw["Metrics"][1]["Unit"], "Milliseconds");
        assert_eq!(v["route"], "/v1/models");
        assert_eq!(v["RequestDuration"], 2.5);
        assert!(v["_aws"]["Timestamp"].as_i64().expect("ms") > 1_700_000_000_000);
    }

    #[test]
    fn statuses_are_three_digits() {
        let mut b = [0u8; 3];
        assert_eq!(status_text(200, &mut b), "200");
        assert_eq!(status_text(404, &mut b), "404");
        assert_eq!(status_text(5, &mut b), "005");
    }

    #[test]
    fn a_series_appears_and_moves() {
        request(
            "/test/route",
            201,
            Duration::from_millis(3),
            Some(("m-test", Duration::from_millis(1))),
        );
        request("/test/route", 201, Duration::from_millis(30), None);
        let text = prometheus_text();
        assert!(
            text.contains("reelgate_requests_total{route=\"/test/route\",status=\"201\"} 2"),
            "{text}"
        );
        assert!(text.contains(
            "reelgate_request_duration_seconds_bucket{route=\"/test/route\",status=\"201\",le=\"0.005\"} 1"
        ));
        assert!(text.contains("reelgate_gateway_overhead_seconds_count{model=\"m-test\"} 1"));
        spend("m-test", "usd", "0.0001851".parse().expect("d"));
        spend("m-test", "usd", "0.0000336".parse().expect("d"));
        assert!(prometheus_text()
            .contains("reelgate_spend_total{model=\"m-test\",currency=\"usd\"} 0.0002187"));
    }

    /// The contention check of the request path's metrics (issue 48): a thread that holds the
    /// locks of its own shard must not stop a thread of another shard from recording a request
    /// and a charge. With one shard (one registry for the process) no thread lies outside the
    /// held shard, and that fails; a recording that waits on the held locks fails by its timeout
    /// (the locks are released before the assertion, so the test cannot hang).
    #[test]
    fn a_held_shard_does_not_stop_another_threads_recording() {
        use std::sync::mpsc;
        let (held_tx, held_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let holder = std::thread::spawn(move || {
            let shard = registry();
            let requests = shard.requests.series.write().expect("requests");
            let spend = shard.spend.series.write().expect("spend");
            held_tx.send(shard_index()).expect("send");
            let _ = release_rx.recv_timeout(Duration::from_secs(30));
            drop((requests, spend));
        });
        let held = held_rx.recv().expect("the holder's shard");
        // Threads take shards in turn: a thread started after the holder gets another shard
        // unless the other tests' threads took exactly a multiple of SHARDS in between, so a
        // few tries are enough, and none can succeed with one shard.
        let mut recorded = None;
        for _ in 0..3 {
            let (done_tx, done_rx) = mpsc::channel();
            std::thread::spawn(move || {
                let mine = shard_index();
                if mine != held {
                    request(
                        "/test/contention",
                        200,
                        Duration::from_millis(1),
                        Some(("m-contention", Duration::ZERO)),
                    );
                    spend("m-contention", "usd", Decimal::ONE);
                }
                let _ = done_tx.send(mine);
            });
            match done_rx.recv_timeout(Duration::from_secs(5)) {
                Ok(mine) if mine == held => continue,
                Ok(mine) => {
                    recorded = Some(Ok(mine));
                    break;
                }
                Err(_) => {
                    recorded = Some(Err("waited 5 s on the held shard's locks"));
                    break;
                }
            }
        }
        let _ = release_tx.send(());
        holder.join().expect("holder");
        match recorded {
            Some(Ok(mine)) => assert_ne!(mine, held),
            Some(Err(why)) => panic!("recording on another thread {why}: a lock is shared"),
            None => panic!("every thread records into the holder's shard: one registry"),
        }
        assert!(prometheus_text()
            .contains("reelgate_requests_total{route=\"/test/contention\",status=\"200\"} 1"));
    }
}
