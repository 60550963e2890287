//! What every hosted video provider's adapter shares (`veo`, `runway`, `luma`, `fal`,
//! `replicate`, `xai`): calls to the provider's API with its key, the one mapping of HTTP answers to
//! [`EngineError`], the caller's input files read back from reelgate's own signed URLs when a
//! provider wants them inline, and the download of the output.
//!
//! The rules, for every provider:
//! - the key goes only to the provider's API origin (scheme, host and port of `base_url`); a
//!   URL anywhere else is called without it, and an adapter never builds an API call to another
//!   origin;
//! - transport errors, 408 and 5xx are [`EngineError::Unreachable`]; 429 is
//!   [`EngineError::Busy`] with the provider's `Retry-After`; 404 on a known render is
//!   [`EngineError::UnknownRender`]; any other refusal is [`EngineError::Rejected`] (each adapter
//!   turns its provider's content refusals into [`EngineError::ContentRefused`] first);
//! - the output is downloaded through the guarded fetcher (no private or metadata addresses, a
//!   byte cap, redirects re-checked), from the API origin or the provider's own output hosts
//!   (`output_hosts`) only, and without the key unless it is on the API origin.

pub mod fal;
pub mod luma;
pub mod replicate;
pub mod runway;
pub mod veo;
pub mod xai;

use crate::ports::engine::{ByteStream, EngineError, Render};
use crate::ports::fetch::{FetchError, Fetcher};
use bytes::Bytes;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// How a provider takes its key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Auth {
    /// `Authorization: Bearer <key>` (Runway, Luma, Replicate).
    Bearer,
    /// `Authorization: <prefix> <key>` (fal: `Key`).
    Scheme(&'static str),
    /// The key in a header of its own (the Gemini API: `x-goog-api-key`).
    Header(&'static str),
}

/// What a hosted kind's provider is, for [`ProviderApi::for_engine`].
pub struct Provider {
    /// The public endpoint, when the catalog names no `base_url`.
    pub base_url: &'static str,
    pub auth: Auth,
    /// Headers every call carries (Runway's version).
    pub headers: Vec<(&'static str, String)>,
    /// Where the provider serves outputs, when the catalog names no `output_hosts`.
    pub output_hosts: &'static [&'static str],
}

/// One provider's API: its origin, key and fixed headers, and the fetcher its outputs come
/// through.
pub struct ProviderApi {
    /// `base_url` without a trailing slash.
    base: String,
    origin: url::Origin,
    key: Option<String>,
    auth: Auth,
    headers: Vec<(&'static str, String)>,
    /// Hosts (besides the API's) the provider serves outputs from, lower case; a leading dot
    /// takes every subdomain.
    output_hosts: Vec<String>,
    http: reqwest::Client,
    fetcher: Arc<dyn Fetcher>,
}

/// One HTTP answer from the provider's API ([`ProviderApi::send`]).
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    /// The provider's `Retry-After`, in seconds.
    pub retry_after: Option<Duration>,
    pub body: Bytes,
}

impl Answer {
    /// The body as JSON (`null` when empty).
    pub fn json(&self) -> Result<Value, EngineError> {
        if self.body.is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&self.body).map_err(|_| {
            EngineError::Rejected(format!(
                "the provider answered {} with no JSON",
                self.status
            ))
        })
    }
}

/// The most redirects an output download on the API origin follows.
pub const MAX_DOWNLOAD_REDIRECTS: usize = 5;
/// The longest an output download may take (inside the render worker function's 120 s).
pub const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(90);
/// The largest image read back from reelgate's own signed URL to send inline.
pub const MAX_INLINE_IMAGE_BYTES: u64 = crate::domain::videos::create::MAX_IMAGE_BYTES;

impl ProviderApi {
    /// `base_url` must be an absolute http(s) URL; `output_hosts` are the host names the
    /// provider's output URLs may name (its CDN; `.example.com` for any subdomain).
    pub fn new(
        base_url: &str,
        key: Option<String>,
        auth: Auth,
        headers: Vec<(&'static str, String)>,
        output_hosts: Vec<String>,
        fetcher: Arc<dyn Fetcher>,
    ) -> anyhow::Result<Self> {
        let base = base_url.trim_end_matches('/').to_owned();
        let parsed = url::Url::parse(&base).map_err(|e| anyhow::anyhow!("base_url {base}: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
            anyhow::bail!("base_url {base} is not an http(s) URL");
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(ProviderApi {
            origin: parsed.origin(),
            base,
            key,
            auth,
            headers,
            output_hosts: output_hosts
                .into_iter()
                .map(|h| h.to_ascii_lowercase())
                .collect(),
            http,
            fetcher,
        })
    }

    /// The API of a catalog engine of a hosted kind: its `base_url` (`${ENV}` expanded; the
    /// provider's public endpoint when absent), its `output_hosts` (the provider's documented
    /// ones when absent) and its key (a warning at start-up when there is none: every render
    /// will be refused).
    pub fn for_engine(
        config: &crate::domain::catalog::EngineConfig,
        key: Option<String>,
        provider: Provider,
        fetcher: Arc<dyn Fetcher>,
    ) -> anyhow::Result<Self> {
        let base = config
            .base_url
            .as_deref()
            .map(crate::config::expand_env)
            .filter(|b| !b.trim().is_empty())
            .unwrap_or_else(|| provider.base_url.to_owned());
        let hosts = config.output_hosts.clone().unwrap_or_else(|| {
            provider
                .output_hosts
                .iter()
                .map(|h| (*h).to_owned())
                .collect()
        });
        if key.is_none() {
            tracing::warn!(engine = %config.id, kind = %config.kind, "hosted engine without an API key (set its api_key_env): its renders will be refused");
        }
        Self::new(&base, key, provider.auth, provider.headers, hosts, fetcher)
            .map_err(|e| anyhow::anyhow!("engine {}: {e}", config.id))
    }

    /// `base_url` + `path` (`path` starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Whether `url` is on the API's origin (where the key may go).
    pub fn on_api_origin(&self, url: &str) -> bool {
        url::Url::parse(url).is_ok_and(|u| u.origin() == self.origin)
    }

    /// Calls the API: `method` on `url` (which must be on the API origin) with an optional JSON
    /// body; `render` is the provider's id of the render the call is about (a 404 then means
    /// the provider lost it). Answers the JSON body of a 2xx.
    pub async fn call(
        &self,
        method: reqwest::Method,
        url: &str,
        body: Option<&Value>,
        render: Option<&str>,
    ) -> Result<Value, EngineError> {
        let answer = self.send(method, url, body).await?;
        if !(200..300).contains(&answer.status) {
            return Err(refusal(
                answer.status,
                &answer.body,
                render,
                answer.retry_after,
            ));
        }
        answer.json()
    }

    /// POSTs a create to `url`: a refusal whose status starts with `status_prefix` (`"HTTP 4"`,
    /// `"HTTP 400"`) and whose message `refused_content` recognises is the provider refusing
    /// the request's content, [`EngineError::ContentRefused`] with `sentence`; anything else as
    /// [`ProviderApi::call`] answers it.
    pub async fn create(
        &self,
        url: &str,
        body: &Value,
        status_prefix: &str,
        refused_content: fn(&str) -> bool,
        sentence: &str,
    ) -> Result<Value, EngineError> {
        match self
            .call(reqwest::Method::POST, url, Some(body), None)
            .await
        {
            Err(EngineError::Rejected(message))
                if message.starts_with(status_prefix) && refused_content(&message) =>
            {
                tracing::info!(reason = %message, "the provider refused the request's content");
                Err(EngineError::ContentRefused(sentence.to_owned()))
            }
            answer => answer,
        }
    }

    /// Calls the API like [`ProviderApi::call`] but answers whatever HTTP answer came back,
    /// for an adapter that must read a refusal's body itself (a provider's structured content
    /// refusal, fal's result of a failed request); transport errors are still
    /// [`EngineError::Unreachable`].
    pub async fn send(
        &self,
        method: reqwest::Method,
        url: &str,
        body: Option<&Value>,
    ) -> Result<Answer, EngineError> {
        if !self.on_api_origin(url) {
            return Err(EngineError::Rejected(format!(
                "refusing to call {url}: not on the provider's API origin"
            )));
        }
        let mut request = self
            .http
            .request(method, url)
            .timeout(Duration::from_secs(60));
        for (name, value) in &self.headers {
            request = request.header(*name, value);
        }
        if let Some(key) = &self.key {
            request = match &self.auth {
                Auth::Bearer => request.bearer_auth(key),
                Auth::Scheme(scheme) => request.header("authorization", format!("{scheme} {key}")),
                Auth::Header(name) => request.header(*name, key),
            };
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.map_err(transport)?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let body = response.bytes().await.map_err(transport)?;
        Ok(Answer {
            status,
            retry_after,
            body,
        })
    }

    /// Asks the provider to cancel render `render`: a provider that no longer knows it counts
    /// as done (the render ended, or was deleted already).
    pub async fn cancel_call(
        &self,
        method: reqwest::Method,
        url: &str,
        render: &str,
    ) -> Result<(), EngineError> {
        match self.call(method, url, None, Some(render)).await {
            Ok(_) | Err(EngineError::UnknownRender(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Downloads an output from `url`: on the API origin with the key (through the API client,
    /// following at most [`MAX_DOWNLOAD_REDIRECTS`] redirects, the key only while they stay on
    /// the API origin), elsewhere only from one of the provider's output hosts, without the key,
    /// through the guarded fetcher. At most `max_bytes`, streamed: the bytes go on to the blob
    /// store as they arrive.
    pub async fn download(&self, url: &str, max_bytes: u64) -> Result<ByteStream, EngineError> {
        let mut parsed = url::Url::parse(url)
            .map_err(|_| EngineError::Rejected("the provider's output URL is not a URL".into()))?;
        let mut redirects = 0;
        while self.on_api_origin(parsed.as_str()) {
            let mut request = self.http.get(parsed.as_str()).timeout(DOWNLOAD_TIMEOUT);
            for (name, value) in &self.headers {
                request = request.header(*name, value);
            }
            if let Some(key) = &self.key {
                request = match &self.auth {
                    Auth::Bearer => request.bearer_auth(key),
                    Auth::Scheme(scheme) => {
                        request.header("authorization", format!("{scheme} {key}"))
                    }
                    Auth::Header(name) => request.header(*name, key),
                };
            }
            let response = request.send().await.map_err(transport)?;
            let status = response.status().as_u16();
            // A redirect (the Gemini API's file downloads): on the API origin the key goes
            // along; anywhere else the target must be an output host and gets no key.
            let location = response
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .and_then(|l| parsed.join(l).ok());
            if let (300..=399, Some(next)) = (status, location) {
                redirects += 1;
                if redirects > MAX_DOWNLOAD_REDIRECTS {
                    return Err(EngineError::Rejected(
                        "the provider's output redirects too many times".into(),
                    ));
                }
                parsed = next;
                continue;
            }
            if !(200..300).contains(&status) {
                return Err(refusal(status, b"", None, None));
            }
            if response.content_length().is_some_and(|n| n > max_bytes) {
                return Err(EngineError::Rejected(format!(
                    "the output is over {max_bytes} bytes"
                )));
            }
            return Ok(response_stream(response, max_bytes));
        }
        let host = parsed.host_str().unwrap_or_default().to_ascii_lowercase();
        if !self.output_hosts.iter().any(|h| host_matches(h, &host)) {
            return Err(EngineError::Rejected(format!(
                "the provider's output is on {host}, which is not one of its output hosts"
            )));
        }
        match self.fetcher.fetch_stream(parsed.as_str(), max_bytes).await {
            Ok(body) => Ok(body),
            Err(FetchError::Unreachable | FetchError::Timeout) => Err(EngineError::Unreachable(
                "the provider's output host did not answer".into(),
            )),
            Err(FetchError::Status(status)) if status == 429 || status >= 500 => Err(
                EngineError::Unreachable(format!("the output host answered HTTP {status}")),
            ),
            Err(e) => Err(EngineError::Rejected(format!(
                "downloading the output: {e}"
            ))),
        }
    }

    /// Downloads a finished render's output ([`ProviderApi::download`], at most the workflow's
    /// cap on an engine's output).
    pub async fn download_output(&self, render: &Render) -> Result<ByteStream, EngineError> {
        let url = render
            .result_url
            .as_deref()
            .ok_or_else(|| EngineError::Rejected("the finished render names no video".into()))?;
        self.download(
            url,
            crate::domain::videos::workflow::steps::MAX_ENGINE_OUTPUT_BYTES,
        )
        .await
    }

    /// Reads one of the caller's files back from the short-lived URL reelgate signed for it
    /// (for a provider that takes images inline): its bytes and MIME type.
    pub async fn read_input(&self, signed_url: &str) -> Result<(Vec<u8>, String), EngineError> {
        let bytes = read_signed_input(&self.http, signed_url).await?;
        let mime = reelgate_media::sniff(&bytes).mime.to_owned();
        Ok((bytes, mime))
    }
}

/// Reads one of the caller's image files back from the short-lived URL reelgate signed for it,
/// at most [`MAX_INLINE_IMAGE_BYTES`].
pub(crate) async fn read_signed_input(
    http: &reqwest::Client,
    signed_url: &str,
) -> Result<Vec<u8>, EngineError> {
    let mut response = http
        .get(signed_url)
        .timeout(Duration::from_secs(60))
        .send()
        .await
        .map_err(transport)?;
    if !response.status().is_success() {
        return Err(EngineError::Unreachable(format!(
            "reading an input file: HTTP {}",
            response.status()
        )));
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(transport)? {
        bytes.extend_from_slice(&chunk);
        if bytes.len() as u64 > MAX_INLINE_IMAGE_BYTES {
            return Err(EngineError::Rejected("an input file is too large".into()));
        }
    }
    Ok(bytes)
}

/// Whether `host` is the output host `entry` names: exactly, or any subdomain of it when the
/// entry starts with a dot (`.fal.media`).
pub fn host_matches(entry: &str, host: &str) -> bool {
    match entry.strip_prefix('.') {
        Some(domain) => host.ends_with(entry) && host.len() > entry.len() || host == domain,
        None => host == entry,
    }
}

/// A render the provider accepted under its id `id` (a plain path segment), queued.
pub fn accepted(id: &str) -> Result<Render, EngineError> {
    Ok(Render {
        id: path_segment(id)?.to_owned(),
        status: crate::ports::engine::RenderStatus::Queued,
        progress: 0,
        error: None,
        result_url: None,
        created_at: crate::observability::metrics::now_millis() / 1000,
    })
}

/// A provider's id as one path segment: refused unless it is made of URL-safe characters, so
/// an id from the provider can never reshape an API path.
pub fn path_segment(id: &str) -> Result<&str, EngineError> {
    let safe = !id.is_empty()
        && id.len() <= 256
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        && id != "."
        && id != "..";
    if safe {
        Ok(id)
    } else {
        Err(EngineError::Rejected(format!(
            "the provider returned an unusable id {:?}",
            id.chars().take(80).collect::<String>()
        )))
    }
}

/// A failed HTTP exchange (connect, TLS, timeout, a dropped body) with its causes: the engine
/// may come back.
pub(crate) fn transport(e: reqwest::Error) -> EngineError {
    let mut msg = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        source = s.source();
    }
    EngineError::Unreachable(msg)
}

/// The provider's message in an error body (`error.message`, `error` as a string, `message`,
/// `detail`), else the start of the body.
pub fn error_detail(body: &[u8]) -> String {
    let parsed = serde_json::from_slice::<Value>(body).ok();
    let found = parsed.as_ref().and_then(|v| {
        [
            &v["error"]["message"],
            &v["error"],
            &v["message"],
            &v["detail"],
            &v["failure"],
        ]
        .into_iter()
        .find_map(|f| f.as_str().map(str::to_owned))
    });
    found.unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned())
}

/// A non-2xx answer as an [`EngineError`].
pub fn refusal(
    status: u16,
    body: &[u8],
    render: Option<&str>,
    retry_after: Option<Duration>,
) -> EngineError {
    let detail = error_detail(body);
    match (status, render) {
        (429, _) => EngineError::Busy {
            message: format!("HTTP 429: {detail}"),
            retry_after,
        },
        (404, Some(id)) => EngineError::UnknownRender(id.to_owned()),
        (408, _) | (500..=599, _) => EngineError::Unreachable(format!("HTTP {status}: {detail}")),
        _ => EngineError::Rejected(format!("HTTP {status}: {detail}")),
    }
}

/// The body of an HTTP answer as a [`ByteStream`] that ends in an error once more than
/// `max_bytes` have arrived (the download is abandoned there, not read to its end).
pub fn response_stream(response: reqwest::Response, max_bytes: u64) -> ByteStream {
    use futures::StreamExt;
    let mut seen = 0u64;
    Box::pin(response.bytes_stream().map(move |chunk| {
        let chunk = chunk.map_err(std::io::Error::other)?;
        seen += chunk.len() as u64;
        if seen > max_bytes {
            return Err(std::io::Error::other(format!(
                "the output is over {max_bytes} bytes"
            )));
        }
        Ok(chunk)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_map_to_engine_errors() {
        assert!(matches!(
            refusal(429, b"{}", None, Some(Duration::from_secs(7))),
            EngineError::Busy { retry_after: Some(d), .. } if d == Duration::from_secs(7)
        ));
        assert!(matches!(
            refusal(503, b"busy", Some("r1"), None),
            EngineError::Unreachable(_)
        ));
        assert!(matches!(
            refusal(404, b"{}", Some("r1"), None),
            EngineError::UnknownRender(id) if id == "r1"
        ));
        assert!(matches!(
            refusal(400, br#"{"error":{"message":"bad ratio"}}"#, None, None),
            EngineError::Rejected(m) if m.contains("bad ratio")
        ));
        assert_eq!(error_detail(br#"{"detail":"no"}"#), "no");
    }

    #[test]
    fn output_hosts_match_exactly_or_by_subdomain() {
        assert!(host_matches("replicate.delivery", "replicate.delivery"));
        assert!(!host_matches(
            "replicate.delivery",
            "evilreplicate.delivery"
        ));
        assert!(host_matches(".fal.media", "v3.fal.media"));
        assert!(host_matches(".fal.media", "fal.media"));
        assert!(!host_matches(".fal.media", "evilfal.media"));
        assert!(!host_matches(".fal.media", "fal.media.evil.test"));
    }

    #[test]
    fn ids_cannot_reshape_paths() {
        assert!(path_segment("task_123-abc.v1").is_ok());
        for bad in ["", "..", "a/b", "a?b", "a%2Fb", "a b"] {
            assert!(path_segment(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_key_stays_on_the_api_origin() {
        let api = ProviderApi::new(
            "https://api.example.test/v1/",
            Some("k".into()),
            Auth::Bearer,
            Vec::new(),
            vec!["CDN.example.test".into()],
            Arc::new(crate::adapters::guarded_fetch::GuardedFetcher::default()),
        )
        .expect("api");
        assert_eq!(api.url("/tasks"), "https://api.example.test/v1/tasks");
        assert!(api.on_api_origin("https://api.example.test/other"));
        assert!(!api.on_api_origin("https://cdn.example.test/v.mp4"));
        assert!(!api.on_api_origin("http://api.example.test/v1/tasks"));
        assert!(!api.on_api_origin("https://api.example.test.evil.test/v1"));
    }
}
