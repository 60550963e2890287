//! Which adapters each function links (issue #16, small artifacts): the AWS ones, and the core
//! crate's chat-upstream kinds and video engines (hosted providers, the HTTP engine protocol,
//! the OpenAI Videos API), which only the functions declaring [`Port::Chat`] and
//! [`Port::VideoEngines`] link.
//!
//! `App` holds each port as a trait object, and a trait object's vtable links every method of
//! its adapter wherever the adapter is built, whether the function calls it or not. So the
//! choice is made at compile time: each manifest entry (`functions::API_MODELS`, ...) carries
//! [`Adapters`], one constructor per port it declares (a plain function pointer in a `const`), and
//! a binary names only its own entry. A constructor no entry of the binary names is never
//! referenced, and the linker leaves its adapter and its AWS SDK client out.
//!
//! A port a function does not declare is filled by [`Absent`]: every call fails with an error
//! naming the port and the function, logged at error level, and never succeeds.
//! `tests/function_ports.rs` drives every route of every HTTP function over an App in which only
//! its declared ports work, and fails if one of them reaches an absent port.
//!
//! The item store (DynamoDB) and the Secrets Manager read are in every function: every route
//! authenticates against the store.

use async_trait::async_trait;
use reelgate::domain::catalog::providers::Engines;
use reelgate::domain::catalog::{Catalog, UpstreamConfig};
use reelgate::domain::chat::upstreams::UpstreamConnector;
use reelgate::ports::blobs::{
    BlobError, BlobListing, BlobMeta, BlobRead, BlobStore, ByteRange, ByteStream,
};
use reelgate::ports::engine::{EngineError, Render, RenderRequest, VideoEngine};
use reelgate::ports::moderator::{ModerationError, ModerationInput, Moderator, Verdict};
use reelgate::ports::pdf::{PdfError, PdfRasterizer};
use reelgate::ports::queue::{MessageQueue, QueueError, Received};
use reelgate::ports::upstream::{ChatUpstream, UpstreamError};
use reelgate::ports::workflow::{Workflow, WorkflowError};
use reelgate_aws::AwsSettings;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A port a function may or may not be assembled with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Port {
    /// S3: uploaded files, rendered videos and thumbnails, stored responses, presigned URLs.
    Blobs,
    /// Presigned S3 URLs only, signed without the S3 client ([`UrlsOnly`]): for functions whose
    /// routes hand out links to blobs and never read or write one (about 0.5 MB less bootstrap).
    BlobUrls,
    /// SQS: the render queue and the webhook delivery queue.
    Queues,
    /// Step Functions: starting, stopping and resuming the video state machine.
    Workflow,
    /// The text-model upstreams of kinds only this host links (Bedrock Converse).
    Chat,
    /// The video engines only this host links (Bedrock asynchronous invoke).
    VideoEngines,
    /// The PDF renderer function (Lambda invoke; the documents travel through S3).
    Pdf,
    /// The moderator of `REELGATE_MODERATION` (the rules, with their image checks, or an
    /// OpenAI-compatible moderation endpoint): the moderation step's.
    Moderation,
}

impl Port {
    pub const ALL: [Port; 8] = [
        Port::Blobs,
        Port::BlobUrls,
        Port::Queues,
        Port::Workflow,
        Port::Chat,
        Port::VideoEngines,
        Port::Pdf,
        Port::Moderation,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Port::Blobs => "blobs (S3)",
            Port::BlobUrls => "blob URLs (S3 presigning)",
            Port::Queues => "queues (SQS)",
            Port::Workflow => "workflow (Step Functions)",
            Port::Chat => "chat upstreams (OpenAI-compatible, Anthropic, Bedrock)",
            Port::VideoEngines => "video engines (the catalog's hosted, HTTP and Bedrock engines)",
            Port::Pdf => "PDF renderer (Lambda)",
            Port::Moderation => "moderator",
        }
    }
}

pub type BlobsAdapter = fn(&aws_config::SdkConfig, &AwsSettings) -> Arc<dyn BlobStore>;
/// The SDK configuration, the resources and the function (named by the refusals of
/// [`UrlsOnly`]).
pub type BlobUrlsAdapter =
    fn(&aws_config::SdkConfig, &AwsSettings, &'static str) -> Arc<dyn BlobStore>;
pub type QueueAdapter = fn(&aws_config::SdkConfig, &str) -> Arc<dyn MessageQueue>;
pub type WorkflowAdapter = fn(&aws_config::SdkConfig, &str) -> Arc<dyn Workflow>;
/// Every chat-upstream kind (`openai`, `anthropic`, `bedrock`).
pub type ChatAdapter = fn() -> reelgate::adapters::CatalogConnector;
pub type VideoEnginesAdapter = fn(&aws_config::SdkConfig, &Catalog, &Engines) -> anyhow::Result<()>;
/// The SDK configuration, the renderer function's name and the bucket the documents go through.
pub type PdfAdapter =
    fn(&aws_config::SdkConfig, &str, Arc<dyn BlobStore>) -> Arc<dyn PdfRasterizer>;

/// The adapters of the ports one function declares (`None`: not linked, [`Absent`] instead).
#[derive(Clone, Copy)]
pub struct Adapters {
    pub blobs: Option<BlobsAdapter>,
    /// Only when `blobs` is `None`: the whole store presigns as well.
    pub blob_urls: Option<BlobUrlsAdapter>,
    pub queues: Option<QueueAdapter>,
    pub workflow: Option<WorkflowAdapter>,
    pub chat: Option<ChatAdapter>,
    /// The catalog's engines this crate does not build (hosted providers, the HTTP engine
    /// protocol, the OpenAI Videos API), with `video_engines` (Bedrock's).
    pub catalog_engines: Option<reelgate::adapters::CatalogEngines>,
    pub video_engines: Option<VideoEnginesAdapter>,
    pub pdf: Option<PdfAdapter>,
    pub moderator: Option<reelgate::adapters::ModeratorBuilder>,
}

impl Adapters {
    /// The item store only.
    pub const STORE: Adapters = Adapters {
        blobs: None,
        blob_urls: None,
        queues: None,
        workflow: None,
        chat: None,
        catalog_engines: None,
        video_engines: None,
        pdf: None,
        moderator: None,
    };

    /// Every port but the PDF renderer (the workflow steps and the workers), which
    /// only the functions that convert Responses inputs invoke.
    pub const ALL: Adapters = Adapters::STORE
        .blobs()
        .queues()
        .workflow()
        .chat()
        .video_engines()
        .moderation();

    pub const fn blobs(self) -> Self {
        Adapters {
            blobs: Some(s3_blobs),
            blob_urls: None,
            ..self
        }
    }

    /// Presigned URLs of the bucket, without the S3 client (see [`Port::BlobUrls`]).
    pub const fn blob_urls(self) -> Self {
        Adapters {
            blob_urls: if self.blobs.is_some() {
                None
            } else {
                Some(s3_presigned_urls)
            },
            ..self
        }
    }

    pub const fn queues(self) -> Self {
        Adapters {
            queues: Some(sqs_queue),
            ..self
        }
    }

    pub const fn workflow(self) -> Self {
        Adapters {
            workflow: Some(step_functions),
            ..self
        }
    }

    pub const fn chat(self) -> Self {
        Adapters {
            chat: Some(every_chat_kind),
            ..self
        }
    }

    pub const fn video_engines(self) -> Self {
        Adapters {
            catalog_engines: Some(reelgate::adapters::engines_from_catalog_with_key),
            video_engines: Some(bedrock_video),
            ..self
        }
    }

    pub const fn moderation(self) -> Self {
        Adapters {
            moderator: Some(reelgate::adapters::moderator_from_config),
            ..self
        }
    }

    /// The PDF renderer, which reaches its documents through the bucket: declares blobs too.
    pub const fn pdf(self) -> Self {
        Adapters {
            pdf: Some(lambda_pdf),
            ..self.blobs()
        }
    }

    pub fn declares(&self, port: Port) -> bool {
        match port {
            Port::Blobs => self.blobs.is_some(),
            Port::BlobUrls => self.blob_urls.is_some(),
            Port::Queues => self.queues.is_some(),
            Port::Workflow => self.workflow.is_some(),
            Port::Chat => self.chat.is_some(),
            Port::VideoEngines => self.video_engines.is_some(),
            Port::Pdf => self.pdf.is_some(),
            Port::Moderation => self.moderator.is_some(),
        }
    }

    /// The declared ports.
    pub fn ports(&self) -> Vec<Port> {
        Port::ALL
            .into_iter()
            .filter(|p| self.declares(*p))
            .collect()
    }
}

impl std::fmt::Debug for Adapters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.ports()).finish()
    }
}

fn s3_blobs(config: &aws_config::SdkConfig, settings: &AwsSettings) -> Arc<dyn BlobStore> {
    Arc::new(reelgate_aws::S3BlobStore::new(
        config,
        &settings.bucket,
        settings.endpoint_url.is_some(),
    ))
}

fn s3_presigned_urls(
    config: &aws_config::SdkConfig,
    settings: &AwsSettings,
    function: &'static str,
) -> Arc<dyn BlobStore> {
    Arc::new(UrlsOnly::new(
        reelgate_aws::S3Presigner::new(config, &settings.bucket, settings.endpoint_url.is_some()),
        Absent::new(Port::Blobs, function),
    ))
}

fn sqs_queue(config: &aws_config::SdkConfig, url: &str) -> Arc<dyn MessageQueue> {
    Arc::new(reelgate_aws::SqsQueue::new(config, url))
}

fn step_functions(config: &aws_config::SdkConfig, arn: &str) -> Arc<dyn Workflow> {
    Arc::new(reelgate_aws::StepFunctionsWorkflow::new(config, arn))
}

fn every_chat_kind() -> reelgate::adapters::CatalogConnector {
    reelgate_aws::upstream_connector()
}

fn bedrock_video(
    config: &aws_config::SdkConfig,
    catalog: &Catalog,
    engines: &Engines,
) -> anyhow::Result<()> {
    reelgate_aws::bedrock_video::register_bedrock_engines(config, catalog, engines)
}

fn lambda_pdf(
    config: &aws_config::SdkConfig,
    function: &str,
    blobs: Arc<dyn BlobStore>,
) -> Arc<dyn PdfRasterizer> {
    Arc::new(reelgate_aws::pdf_lambda::LambdaPdfRasterizer::new(
        config, function, blobs,
    ))
}

/// Every call to an absent port this process has seen, as (port, function, operation): the
/// test of the mapping reads it (an error a handler swallows must still fail the test).
static CALLED: Mutex<Vec<(Port, &'static str, &'static str)>> = Mutex::new(Vec::new());

/// The calls made to absent ports so far (see [`Absent`]).
pub fn absent_calls() -> Vec<(Port, &'static str, &'static str)> {
    CALLED.lock().map(|c| c.clone()).unwrap_or_default()
}

/// The stand-in of a port `function` was not assembled with: every operation fails with an error
/// naming the port and the function, and logs it at error level. Reaching one is a bug in the
/// function's manifest entry (a route uses a port its entry does not declare).
#[derive(Clone, Copy, Debug)]
pub struct Absent {
    pub port: Port,
    pub function: &'static str,
}

impl Absent {
    pub fn new(port: Port, function: &'static str) -> Self {
        Absent { port, function }
    }

    fn refuse(&self, operation: &'static str) -> String {
        if let Ok(mut called) = CALLED.lock() {
            called.push((self.port, self.function, operation));
        }
        let message = format!(
            "the {} port is not assembled in the {} function ({operation}); its manifest entry \
             must declare it",
            self.port.name(),
            self.function
        );
        tracing::error!(
            port = self.port.name(),
            function = self.function,
            operation,
            "{message}"
        );
        message
    }
}

#[async_trait]
impl BlobStore for Absent {
    async fn put_stream(
        &self,
        _key: &str,
        _content_type: &str,
        _body: ByteStream,
        _max_bytes: u64,
    ) -> Result<u64, BlobError> {
        Err(BlobError::Unavailable(self.refuse("put_stream")))
    }
    async fn put_bytes(
        &self,
        _key: &str,
        _content_type: &str,
        _bytes: bytes::Bytes,
    ) -> Result<(), BlobError> {
        Err(BlobError::Unavailable(self.refuse("put_bytes")))
    }
    async fn head(&self, _key: &str) -> Result<Option<BlobMeta>, BlobError> {
        Err(BlobError::Unavailable(self.refuse("head")))
    }
    async fn get(&self, _key: &str, _range: Option<ByteRange>) -> Result<BlobRead, BlobError> {
        Err(BlobError::Unavailable(self.refuse("get")))
    }
    async fn delete(&self, _key: &str) -> Result<(), BlobError> {
        Err(BlobError::Unavailable(self.refuse("delete")))
    }
    async fn list(&self, _prefix: &str) -> Result<Vec<BlobListing>, BlobError> {
        Err(BlobError::Unavailable(self.refuse("list")))
    }
    async fn presign_get(&self, _key: &str, _ttl: Duration) -> Result<String, BlobError> {
        Err(BlobError::Unavailable(self.refuse("presign_get")))
    }
    async fn presign_put(
        &self,
        _key: &str,
        _content_type: &str,
        _ttl: Duration,
    ) -> Result<String, BlobError> {
        Err(BlobError::Unavailable(self.refuse("presign_put")))
    }
}

/// What hands out presigned URLs: the S3 signer in a function, any blob store in a test.
#[async_trait]
pub trait PresignUrls: Send + Sync + 'static {
    async fn presign_get(&self, key: &str, ttl: Duration) -> Result<String, BlobError>;
    async fn presign_put(
        &self,
        key: &str,
        content_type: &str,
        ttl: Duration,
    ) -> Result<String, BlobError>;
}

#[async_trait]
impl PresignUrls for reelgate_aws::S3Presigner {
    async fn presign_get(&self, key: &str, ttl: Duration) -> Result<String, BlobError> {
        reelgate_aws::S3Presigner::presign_get(self, key, ttl).await
    }
    async fn presign_put(
        &self,
        key: &str,
        content_type: &str,
        ttl: Duration,
    ) -> Result<String, BlobError> {
        reelgate_aws::S3Presigner::presign_put(self, key, content_type, ttl).await
    }
}

#[async_trait]
impl PresignUrls for Arc<dyn BlobStore> {
    async fn presign_get(&self, key: &str, ttl: Duration) -> Result<String, BlobError> {
        self.as_ref().presign_get(key, ttl).await
    }
    async fn presign_put(
        &self,
        key: &str,
        content_type: &str,
        ttl: Duration,
    ) -> Result<String, BlobError> {
        self.as_ref().presign_put(key, content_type, ttl).await
    }
}

/// The blobs port of a function declaring [`Port::BlobUrls`]: presigns through `urls`, and
/// every other operation is refused by its [`Absent`] blobs port, loudly.
pub struct UrlsOnly<P> {
    urls: P,
    absent: Absent,
}

impl<P: PresignUrls> UrlsOnly<P> {
    pub fn new(urls: P, absent: Absent) -> Self {
        UrlsOnly { urls, absent }
    }
}

#[async_trait]
impl<P: PresignUrls> BlobStore for UrlsOnly<P> {
    async fn put_stream(
        &self,
        key: &str,
        content_type: &str,
        body: ByteStream,
        max_bytes: u64,
    ) -> Result<u64, BlobError> {
        self.absent
            .put_stream(key, content_type, body, max_bytes)
            .await
    }
    async fn put_bytes(
        &self,
        key: &str,
        content_type: &str,
        bytes: bytes::Bytes,
    ) -> Result<(), BlobError> {
        self.absent.put_bytes(key, content_type, bytes).await
    }
    async fn head(&self, key: &str) -> Result<Option<BlobMeta>, BlobError> {
        self.absent.head(key).await
    }
    async fn get(&self, key: &str, range: Option<ByteRange>) -> Result<BlobRead, BlobError> {
        self.absent.get(key, range).await
    }
    async fn delete(&self, key: &str) -> Result<(), BlobError> {
        BlobStore::delete(&self.absent, key).await
    }
    async fn list(&self, prefix: &str) -> Result<Vec<BlobListing>, BlobError> {
        self.absent.list(prefix).await
    }
    async fn presign_get(&self, key: &str, ttl: Duration) -> Result<String, BlobError> {
        self.urls.presign_get(key, ttl).await
    }
    async fn presign_put(
        &self,
        key: &str,
        content_type: &str,
        ttl: Duration,
    ) -> Result<String, BlobError> {
        self.urls.presign_put(key, content_type, ttl).await
    }
}

#[async_trait]
impl MessageQueue for Absent {
    async fn send(&self, _body: &str, _delay: Duration) -> Result<String, QueueError> {
        Err(QueueError::Unavailable(self.refuse("send")))
    }
    async fn receive(
        &self,
        _max: usize,
        _visibility: Duration,
        _wait: Duration,
    ) -> Result<Vec<Received>, QueueError> {
        Err(QueueError::Unavailable(self.refuse("receive")))
    }
    async fn delete(&self, _receipt: &str) -> Result<(), QueueError> {
        Err(QueueError::Unavailable(self.refuse("delete")))
    }
    async fn change_visibility(
        &self,
        _receipt: &str,
        _visibility: Duration,
    ) -> Result<(), QueueError> {
        Err(QueueError::Unavailable(self.refuse("change_visibility")))
    }
    async fn dead_letter_count(&self) -> Result<usize, QueueError> {
        Err(QueueError::Unavailable(self.refuse("dead_letter_count")))
    }
}

#[async_trait]
impl Workflow for Absent {
    async fn start(&self, _name: &str, _input: Value) -> Result<String, WorkflowError> {
        Err(WorkflowError::Unavailable(self.refuse("start")))
    }
    async fn exists(&self, _name: &str) -> Result<bool, WorkflowError> {
        Err(WorkflowError::Unavailable(self.refuse("exists")))
    }
    async fn task_success(&self, _token: &str, _output: Value) -> Result<(), WorkflowError> {
        Err(WorkflowError::Unavailable(self.refuse("task_success")))
    }
    async fn task_failure(
        &self,
        _token: &str,
        _error: &str,
        _cause: &str,
    ) -> Result<(), WorkflowError> {
        Err(WorkflowError::Unavailable(self.refuse("task_failure")))
    }
    async fn task_heartbeat(&self, _token: &str) -> Result<(), WorkflowError> {
        Err(WorkflowError::Unavailable(self.refuse("task_heartbeat")))
    }
    async fn stop(&self, _name: &str, _cause: &str) -> Result<(), WorkflowError> {
        Err(WorkflowError::Unavailable(self.refuse("stop")))
    }
}

#[async_trait]
impl VideoEngine for Absent {
    async fn submit(&self, _request: &RenderRequest) -> Result<Render, EngineError> {
        Err(EngineError::Unreachable(self.refuse("submit")))
    }
    async fn status(&self, _render_id: &str) -> Result<Render, EngineError> {
        Err(EngineError::Unreachable(self.refuse("status")))
    }
    async fn cancel(&self, _render_id: &str) -> Result<(), EngineError> {
        Err(EngineError::Unreachable(self.refuse("cancel")))
    }
    async fn fetch_result(
        &self,
        _render: &Render,
    ) -> Result<reelgate::ports::engine::ByteStream, EngineError> {
        Err(EngineError::Unreachable(self.refuse("fetch_result")))
    }
}

/// Refuses to connect an upstream (not retried on another deployment: the refusal is a
/// protocol error, not an outage).
#[async_trait]
impl PdfRasterizer for Absent {
    async fn rasterize(&self, _pdf: Vec<u8>) -> Result<Vec<Vec<u8>>, PdfError> {
        Err(PdfError::Unavailable(self.refuse("rasterize")))
    }
}

#[async_trait]
impl Moderator for Absent {
    async fn check(&self, _input: &ModerationInput) -> Result<Verdict, ModerationError> {
        Err(ModerationError::Unavailable(self.refuse("check")))
    }
}

#[async_trait]
impl UpstreamConnector for Absent {
    async fn connect(
        &self,
        _config: &UpstreamConfig,
    ) -> Result<Arc<dyn ChatUpstream>, UpstreamError> {
        Err(UpstreamError::Protocol(self.refuse("connect")))
    }
}

/// Registers an [`Absent`] engine for every catalog engine (each kind [`Port::VideoEngines`]
/// stands for), so a video of any model fails loudly in a function without the port instead
/// of looking like an unconfigured engine.
pub fn register_absent_video_engines(catalog: &Catalog, engines: &Engines, function: &'static str) {
    for e in &catalog.engines {
        engines.insert(&e.id, Arc::new(Absent::new(Port::VideoEngines, function)));
    }
}
