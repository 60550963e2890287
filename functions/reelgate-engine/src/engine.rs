//! The reference engine: an in-memory render queue behind the protocol's HTTP routes.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use rand::RngCore;
use reelgate_media::{render_mp4, AspectRatio, RenderSpec};
use tokio::sync::{mpsc, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::inputs;
use crate::protocol::{
    codes, ErrorBody, ErrorDetail, FaultSwitches, Render, RenderError, RenderRequest, RenderStatus,
};

/// Progress a `hang` render reports forever.
pub const HANG_PROGRESS: u8 = 50;
/// Size of `bad_output` results (which also last half the seconds asked).
pub const BAD_OUTPUT_SIZE: (u32, u32) = (640, 360);
/// Longest clip the reference engine renders.
pub const MAX_SECONDS: u32 = 60;

/// How a [`ReferenceEngine`] is set up. `Default` gives a local engine on
/// `http://127.0.0.1:8790` with no key, 1 render at a time, no faults, fault
/// injection over HTTP disabled and results kept for an hour.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Base URL under which clients reach the routes (including any prefix the
    /// router is nested under); `result_url`s are built from it.
    pub public_base_url: String,
    /// When set, every request must carry `Authorization: Bearer <key>`.
    pub api_key: Option<String>,
    /// Renders that may run at once; more wait in `queued`. At least 1.
    pub max_parallel: usize,
    /// Initial fault switches.
    pub faults: FaultSwitches,
    /// Serve `GET`/`PUT /v1/faults` so tests can flip faults over HTTP.
    pub fault_injection: bool,
    /// How long finished renders (and their MP4s) are kept.
    pub result_ttl: Duration,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            public_base_url: "http://127.0.0.1:8790".into(),
            api_key: None,
            max_parallel: 1,
            faults: FaultSwitches::default(),
            fault_injection: false,
            result_ttl: Duration::from_secs(3600),
        }
    }
}

struct Entry {
    render: Render,
    cancel_flag: Arc<AtomicBool>,
    cancel_token: CancellationToken,
    result: Option<Bytes>,
    finished_at: Option<Instant>,
    /// Callback queue; `None` without a callback URL, for hung renders, and after the terminal post.
    callback: Option<mpsc::UnboundedSender<Render>>,
    last_notified_progress: u8,
}

/// An engine that renders synthetic clips with [`reelgate_media::render_mp4`].
pub struct ReferenceEngine {
    config: EngineConfig,
    base_url: String,
    faults: RwLock<FaultSwitches>,
    renders: Mutex<HashMap<String, Entry>>,
    /// `Idempotency-Key` of a submission → the render it started (a repeated key finds it).
    by_key: Mutex<HashMap<String, String>>,
    slots: Arc<Semaphore>,
    http: reqwest::Client,
}

impl std::fmt::Debug for ReferenceEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReferenceEngine")
            .field("public_base_url", &self.base_url)
            .field("max_parallel", &self.config.max_parallel)
            .field("faults", &self.faults())
            .finish_non_exhaustive()
    }
}

fn now_unix() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn new_id() -> String {
    let mut raw = [0u8; 12];
    rand::thread_rng().fill_bytes(&mut raw);
    let mut id = String::with_capacity(28);
    id.push_str("rnd_");
    for b in raw {
        id.push_str(&format!("{b:02x}"));
    }
    id
}

/// An error response in the protocol's shape.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    kind: &'static str,
    message: String,
    param: Option<String>,
    code: Option<&'static str>,
}

impl ApiError {
    fn new(
        status: StatusCode,
        kind: &'static str,
        code: &'static str,
        message: impl Into<String>,
    ) -> Self {
        Self {
            status,
            kind,
            message: message.into(),
            param: None,
            code: Some(code),
        }
    }
    fn invalid(param: &str, message: impl Into<String>) -> Self {
        Self {
            param: Some(param.to_string()),
            ..Self::new(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                "invalid_value",
                message,
            )
        }
    }
    fn not_found(id: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found_error",
            "render_not_found",
            format!("no render with id '{id}' (it may have expired)"),
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                message: self.message,
                kind: self.kind.to_string(),
                param: self.param,
                code: self.code.map(str::to_string),
            },
        };
        (self.status, axum::Json(body)).into_response()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves plain data behind; keep serving.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn is_http_url(s: &str) -> bool {
    url::Url::parse(s).is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
}

impl ReferenceEngine {
    /// Builds the engine. Call from anywhere; renders start once it serves requests inside a Tokio runtime.
    pub fn new(config: EngineConfig) -> Arc<Self> {
        let base_url = config.public_base_url.trim_end_matches('/').to_string();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .unwrap_or_else(|_| reqwest::Client::new());
        Arc::new(Self {
            base_url,
            faults: RwLock::new(config.faults),
            renders: Mutex::new(HashMap::new()),
            by_key: Mutex::new(HashMap::new()),
            slots: Arc::new(Semaphore::new(config.max_parallel.max(1))),
            http,
            config,
        })
    }

    /// Current fault switches.
    pub fn faults(&self) -> FaultSwitches {
        *self.faults.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Replaces the fault switches. `fail`, `hang` and `bad_output` apply to
    /// renders submitted afterwards; `drop_connection` applies to every later request.
    pub fn set_faults(&self, faults: FaultSwitches) {
        *self.faults.write().unwrap_or_else(|p| p.into_inner()) = faults;
    }

    /// The current state of a render, if it exists and has not expired.
    pub fn render(&self, id: &str) -> Option<Render> {
        self.sweep();
        lock(&self.renders).get(id).map(|e| e.render.clone())
    }

    /// The protocol routes (`/v1/renders…`, plus `/v1/faults` when fault
    /// injection is enabled). Nest it under a prefix or serve it as is; set
    /// `public_base_url` to match.
    pub fn router(self: Arc<Self>) -> Router {
        let renders = Router::new()
            .route("/v1/renders", post(submit))
            .route("/v1/renders/{id}", get(get_render))
            .route("/v1/renders/{id}/cancel", post(cancel))
            .route("/v1/renders/{id}/result", get(result))
            .route_layer(middleware::from_fn_with_state(
                self.clone(),
                drop_connection,
            ));
        let mut router = renders;
        if self.config.fault_injection {
            router = router.route("/v1/faults", get(get_faults).put(put_faults));
        }
        router
            .route_layer(middleware::from_fn_with_state(self.clone(), authenticate))
            .fallback(not_found)
            .with_state(self)
    }

    fn result_url(&self, id: &str) -> String {
        format!("{}/v1/renders/{id}/result", self.base_url)
    }

    /// Drops finished renders older than the configured TTL.
    fn sweep(&self) {
        let ttl = self.config.result_ttl;
        lock(&self.renders).retain(|_, e| e.finished_at.is_none_or(|t| t.elapsed() < ttl));
    }

    /// Applies `f` to a render unless it is already terminal; posts a callback
    /// on a status change or a 5-point progress step.
    fn update(&self, id: &str, f: impl FnOnce(&mut Render, &mut Option<Bytes>)) {
        let mut renders = lock(&self.renders);
        let Some(entry) = renders.get_mut(id) else {
            return;
        };
        if entry.render.status.is_terminal() {
            return;
        }
        let before = entry.render.status;
        f(&mut entry.render, &mut entry.result);
        let after = entry.render.status;
        if after.is_terminal() {
            entry.finished_at = Some(Instant::now());
        }
        let progressed = entry.render.progress >= entry.last_notified_progress.saturating_add(5);
        if before != after || progressed {
            entry.last_notified_progress = entry.render.progress;
            if let Some(tx) = &entry.callback {
                let _ = tx.send(entry.render.clone());
            }
            if after.is_terminal() {
                entry.callback = None;
            }
        }
    }

    fn fail(&self, id: &str, error: RenderError) {
        tracing::info!(render = id, code = %error.code, message = %error.message, "render failed");
        self.update(id, |r, _| {
            r.status = RenderStatus::Failed;
            r.error = Some(error);
        });
    }

    async fn run(
        self: Arc<Self>,
        id: String,
        req: RenderRequest,
        faults: FaultSwitches,
        token: CancellationToken,
        flag: Arc<AtomicBool>,
    ) {
        if faults.hang {
            self.update(&id, |r, _| {
                r.status = RenderStatus::Rendering;
                r.progress = HANG_PROGRESS;
            });
            token.cancelled().await;
            return;
        }
        let _permit = tokio::select! {
            permit = self.slots.clone().acquire_owned() => match permit {
                Ok(p) => p,
                Err(_) => {
                    self.fail(&id, RenderError { code: codes::ENGINE_FAILURE.into(), message: "engine is shutting down".into() });
                    return;
                }
            },
            () = token.cancelled() => return,
        };
        self.update(&id, |r, _| r.status = RenderStatus::Rendering);
        if faults.fail {
            tokio::time::sleep(Duration::from_millis(50)).await;
            self.update(&id, |r, _| r.progress = 10);
            self.fail(
                &id,
                RenderError {
                    code: codes::ENGINE_FAILURE.into(),
                    message: "injected failure (fault switch 'fail')".into(),
                },
            );
            return;
        }
        let fetched = tokio::select! {
            fetched = inputs::fetch_all(&self.http, &req.inputs) => fetched,
            () = token.cancelled() => return,
        };
        let fetched = match fetched {
            Ok(f) => f,
            Err(e) => return self.fail(&id, e),
        };
        // A bad output is one no conform can make into the contract: small and too short.
        let (width, height, seconds) = if faults.bad_output {
            (
                BAD_OUTPUT_SIZE.0,
                BAD_OUTPUT_SIZE.1,
                (req.seconds / 2).max(1),
            )
        } else {
            (req.width, req.height, req.seconds)
        };
        let mut spec = RenderSpec::new(width, height, seconds, req.prompt.clone());
        spec.first_frame = fetched.first_frame;
        spec.last_frame = fetched.last_frame;
        spec.audio_bed = fetched.audio_bed;
        spec.reference_images = fetched.pictures;
        spec.source_frames = fetched.source_frames;
        spec.captions = reelgate_media::timed_captions(
            &reelgate_media::dialogue(&req.prompt),
            f64::from(seconds),
        );
        let engine = self.clone();
        let render_id = id.clone();
        let joined = tokio::task::spawn_blocking(move || {
            let mut progress = |p: u8| {
                engine.update(&render_id, |r, _| r.progress = r.progress.max(p.min(99)));
            };
            render_mp4(&spec, &mut progress, &flag)
        })
        .await;
        match joined {
            Ok(Ok(mp4)) => {
                let url = self.result_url(&id);
                let bytes = Bytes::from(mp4);
                self.update(&id, |r, result| {
                    r.status = RenderStatus::Succeeded;
                    r.progress = 100;
                    r.result_url = Some(url);
                    *result = Some(bytes);
                });
                tracing::info!(render = %id, "render succeeded");
            }
            Ok(Err(reelgate_media::MediaError::Canceled)) => {}
            Ok(Err(e)) => self.fail(
                &id,
                RenderError {
                    code: codes::ENGINE_FAILURE.into(),
                    message: e.to_string(),
                },
            ),
            Err(e) => self.fail(
                &id,
                RenderError {
                    code: codes::ENGINE_FAILURE.into(),
                    message: format!("render task crashed: {e}"),
                },
            ),
        }
    }

    fn validate(req: &RenderRequest) -> Result<(), ApiError> {
        if req.model.trim().is_empty() {
            return Err(ApiError::invalid("model", "model must not be empty"));
        }
        if req.prompt.trim().is_empty() {
            return Err(ApiError::invalid("prompt", "prompt must not be empty"));
        }
        if !(1..=MAX_SECONDS).contains(&req.seconds) {
            return Err(ApiError::invalid(
                "seconds",
                format!("seconds must be within 1..={MAX_SECONDS}"),
            ));
        }
        let aspect = AspectRatio::parse(&req.aspect_ratio).ok_or_else(|| {
            ApiError::invalid(
                "aspect_ratio",
                "aspect_ratio must be one of Auto, 21:9, 16:9, 4:3, 1:1, 3:4, 9:16",
            )
        })?;
        let allowed: Vec<(u32, u32)> = match aspect {
            AspectRatio::Auto => [
                AspectRatio::R21x9,
                AspectRatio::R16x9,
                AspectRatio::R4x3,
                AspectRatio::R1x1,
                AspectRatio::R3x4,
                AspectRatio::R9x16,
            ]
            .iter()
            .map(|a| reelgate_media::output_dimensions(*a, None))
            .collect(),
            fixed => vec![reelgate_media::output_dimensions(fixed, None)],
        };
        if !allowed.contains(&(req.width, req.height)) {
            return Err(ApiError::invalid(
                "width",
                format!(
                    "{}x{} is not a 768p size for aspect_ratio {}; expected one of {}",
                    req.width,
                    req.height,
                    aspect.as_str(),
                    allowed
                        .iter()
                        .map(|(w, h)| format!("{w}x{h}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        let inputs = &req.inputs;
        let mut urls: Vec<(String, &String)> = Vec::new();
        if let Some(u) = &inputs.first_frame_url {
            urls.push(("inputs.first_frame_url".into(), u));
        }
        if let Some(u) = &inputs.last_frame_url {
            urls.push(("inputs.last_frame_url".into(), u));
        }
        for (name, list) in [
            ("reference_image_urls", &inputs.reference_image_urls),
            ("reference_video_urls", &inputs.reference_video_urls),
            ("reference_audio_urls", &inputs.reference_audio_urls),
        ] {
            for (i, u) in list.iter().enumerate() {
                urls.push((format!("inputs.{name}[{i}]"), u));
            }
        }
        if let Some(source) = &inputs.source {
            if !crate::protocol::operations::ALL.contains(&source.operation.as_str()) {
                return Err(ApiError::invalid(
                    "inputs.source.operation",
                    format!(
                        "inputs.source.operation must be one of {}",
                        crate::protocol::operations::ALL.join(", ")
                    ),
                ));
            }
            urls.push(("inputs.source.video_url".into(), &source.video_url));
        }
        if let Some(u) = &req.callback_url {
            urls.push(("callback_url".into(), u));
        }
        for (param, u) in urls {
            if !is_http_url(u) {
                return Err(ApiError::invalid(
                    &param,
                    format!("{param} must be an absolute http(s) URL"),
                ));
            }
        }
        Ok(())
    }

    /// Accepts a submission carrying an idempotency key once: a repeated key answers the render
    /// the first submission started (as it is now) instead of starting a second one. The bool
    /// is true when this call started the render.
    fn accept_once(self: &Arc<Self>, key: &str, req: RenderRequest) -> (Render, bool) {
        let mut by_key = lock(&self.by_key);
        if let Some(existing) = by_key.get(key).and_then(|id| self.render(id)) {
            return (existing, false);
        }
        let render = self.accept(req);
        by_key.insert(key.to_owned(), render.id.clone());
        (render, true)
    }

    fn accept(self: &Arc<Self>, req: RenderRequest) -> Render {
        self.sweep();
        let id = new_id();
        let render = Render {
            id: id.clone(),
            status: RenderStatus::Queued,
            progress: 0,
            error: None,
            result_url: None,
            created_at: now_unix(),
        };
        let faults = self.faults();
        let callback = match (&req.callback_url, faults.hang) {
            (Some(url), false) => {
                let (tx, rx) = mpsc::unbounded_channel();
                tokio::spawn(deliver_callbacks(self.http.clone(), url.clone(), rx));
                let _ = tx.send(render.clone());
                Some(tx)
            }
            _ => None,
        };
        let token = CancellationToken::new();
        let flag = Arc::new(AtomicBool::new(false));
        lock(&self.renders).insert(
            id.clone(),
            Entry {
                render: render.clone(),
                cancel_flag: flag.clone(),
                cancel_token: token.clone(),
                result: None,
                finished_at: None,
                callback,
                last_notified_progress: 0,
            },
        );
        tracing::info!(render = %id, model = %req.model, seconds = req.seconds, client_reference = ?req.client_reference, ?faults, "render accepted");
        tokio::spawn(self.clone().run(id, req, faults, token, flag));
        render
    }

    fn cancel(&self, id: &str) -> Result<Render, ApiError> {
        self.sweep();
        let (token, flag) = {
            let renders = lock(&self.renders);
            let entry = renders.get(id).ok_or_else(|| ApiError::not_found(id))?;
            match entry.render.status {
                RenderStatus::Canceled => return Ok(entry.render.clone()),
                RenderStatus::Succeeded | RenderStatus::Failed => {
                    return Err(ApiError::new(
                        StatusCode::CONFLICT,
                        "conflict_error",
                        "render_finished",
                        format!("render {id} already {}", entry.render.status.as_str()),
                    ))
                }
                _ => (entry.cancel_token.clone(), entry.cancel_flag.clone()),
            }
        };
        self.update(id, |r, _| r.status = RenderStatus::Canceled);
        flag.store(true, Ordering::Relaxed);
        token.cancel();
        tracing::info!(render = id, "render canceled");
        lock(&self.renders)
            .get(id)
            .map(|e| e.render.clone())
            .ok_or_else(|| ApiError::not_found(id))
    }
}

/// Posts each Render snapshot to the callback URL in order, retrying a few times.
async fn deliver_callbacks(
    http: reqwest::Client,
    url: String,
    mut rx: mpsc::UnboundedReceiver<Render>,
) {
    while let Some(render) = rx.recv().await {
        let mut delay = Duration::from_millis(200);
        for attempt in 1..=4 {
            let sent = http
                .post(&url)
                .timeout(Duration::from_secs(5))
                .json(&render)
                .send()
                .await;
            match sent {
                Ok(resp) if resp.status().is_success() => break,
                Ok(resp) => {
                    tracing::warn!(render = %render.id, status = resp.status().as_u16(), attempt, "callback rejected")
                }
                Err(e) => {
                    tracing::warn!(render = %render.id, error = %e, attempt, "callback failed")
                }
            }
            if attempt < 4 {
                tokio::time::sleep(delay).await;
                delay *= 2;
            }
        }
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn authenticate(
    State(engine): State<Arc<ReferenceEngine>>,
    headers: HeaderMap,
    request: Request,
    next: Next,
) -> Response {
    if let Some(key) = &engine.config.api_key {
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        if !presented.is_some_and(|p| constant_time_eq(p.as_bytes(), key.as_bytes())) {
            return ApiError::new(
                StatusCode::UNAUTHORIZED,
                "authentication_error",
                "invalid_api_key",
                "missing or wrong bearer token",
            )
            .into_response();
        }
    }
    next.run(request).await
}

/// With `drop_connection` set, answers with a body that fails before its first
/// byte: the HTTP server then closes the connection without sending a response.
async fn drop_connection(
    State(engine): State<Arc<ReferenceEngine>>,
    request: Request,
    next: Next,
) -> Response {
    if engine.faults().drop_connection {
        tracing::info!(path = %request.uri().path(), "dropping connection (fault switch)");
        let failing = futures::stream::once(async {
            Err::<Bytes, std::io::Error>(std::io::Error::new(
                std::io::ErrorKind::ConnectionAborted,
                "fault switch drop_connection",
            ))
        });
        return Response::new(Body::from_stream(failing));
    }
    next.run(request).await
}

fn parse_json<T: serde::de::DeserializeOwned>(body: &Bytes) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "invalid_json",
            format!("request body is not valid JSON for this endpoint: {e}"),
        )
    })
}

async fn submit(
    State(engine): State<Arc<ReferenceEngine>>,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let req: RenderRequest = parse_json(&body)?;
    ReferenceEngine::validate(&req)?;
    let key = headers
        .get(crate::protocol::IDEMPOTENCY_KEY_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|k| !k.is_empty());
    match key {
        Some(key) => {
            let (render, started) = engine.accept_once(key, req);
            let status = if started {
                StatusCode::ACCEPTED
            } else {
                StatusCode::OK
            };
            Ok((status, axum::Json(render)).into_response())
        }
        None => {
            let render = engine.accept(req);
            Ok((StatusCode::ACCEPTED, axum::Json(render)).into_response())
        }
    }
}

async fn get_render(
    State(engine): State<Arc<ReferenceEngine>>,
    Path(id): Path<String>,
) -> Result<axum::Json<Render>, ApiError> {
    engine
        .render(&id)
        .map(axum::Json)
        .ok_or_else(|| ApiError::not_found(&id))
}

async fn cancel(
    State(engine): State<Arc<ReferenceEngine>>,
    Path(id): Path<String>,
) -> Result<axum::Json<Render>, ApiError> {
    engine.cancel(&id).map(axum::Json)
}

async fn result(
    State(engine): State<Arc<ReferenceEngine>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    engine.sweep();
    let (status, bytes) = {
        let renders = lock(&engine.renders);
        let entry = renders.get(&id).ok_or_else(|| ApiError::not_found(&id))?;
        (entry.render.status, entry.result.clone())
    };
    match (status, bytes) {
        (RenderStatus::Succeeded, Some(bytes)) => Ok((
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, "video/mp4".to_string()),
                (
                    header::CONTENT_DISPOSITION,
                    format!("attachment; filename=\"{id}.mp4\""),
                ),
            ],
            bytes,
        )
            .into_response()),
        _ => Err(ApiError::new(
            StatusCode::CONFLICT,
            "conflict_error",
            "render_not_ready",
            format!(
                "render {id} is {}; the result exists only once it succeeded",
                status.as_str()
            ),
        )),
    }
}

async fn get_faults(State(engine): State<Arc<ReferenceEngine>>) -> axum::Json<FaultSwitches> {
    axum::Json(engine.faults())
}

async fn put_faults(
    State(engine): State<Arc<ReferenceEngine>>,
    body: Bytes,
) -> Result<axum::Json<FaultSwitches>, ApiError> {
    let faults: FaultSwitches = parse_json(&body)?;
    engine.set_faults(faults);
    tracing::info!(?faults, "fault switches changed");
    Ok(axum::Json(faults))
}

async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found_error",
        "unknown_route",
        "no such route",
    )
}

/// Serves an engine's router on an already bound listener until the task is dropped.
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    engine: Arc<ReferenceEngine>,
) -> std::io::Result<()> {
    axum::serve(listener, engine.router()).await
}

/// Binds `addr` and serves a new [`ReferenceEngine`] built from `config`.
pub async fn serve(addr: SocketAddr, config: EngineConfig) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(addr = %listener.local_addr()?, base = %config.public_base_url, "reference engine listening");
    serve_on(listener, ReferenceEngine::new(config)).await
}
