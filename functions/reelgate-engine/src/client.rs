//! HTTP client for any engine that speaks the protocol.

use std::time::Duration;

use bytes::Bytes;

use crate::protocol::{ErrorBody, FaultSwitches, Render, RenderRequest};

/// Why an engine call failed.
#[derive(Debug, thiserror::Error)]
pub enum EngineClientError {
    /// No HTTP response: connection refused or reset, DNS failure, timeout, or
    /// the connection closed before a complete response arrived.
    #[error("engine unreachable: {0}")]
    Unreachable(String),
    /// The engine answered with a non-2xx status.
    #[error("engine rejected the request (HTTP {status}, {code}): {message}")]
    Rejected {
        status: u16,
        code: String,
        message: String,
    },
    /// A 2xx response whose body is not the expected JSON.
    #[error("engine sent an invalid response: {0}")]
    InvalidResponse(String),
    /// The configured base URL or a render id cannot form a URL.
    #[error("invalid engine URL: {0}")]
    InvalidUrl(String),
}

impl EngineClientError {
    /// True for failures worth retrying later: unreachable, HTTP 408/429 or 5xx.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Unreachable(_) => true,
            Self::Rejected { status, .. } => matches!(status, 408 | 429) || *status >= 500,
            Self::InvalidResponse(_) | Self::InvalidUrl(_) => false,
        }
    }
}

/// Client of one engine. `base_url` is where the routes live (e.g.
/// `http://engine:8790` or `https://host/engine`), without a trailing slash.
#[derive(Debug, Clone)]
pub struct EngineClient {
    pub base_url: String,
    /// Sent as `Authorization: Bearer …` to URLs under `base_url` only.
    pub api_key: Option<String>,
    pub http: reqwest::Client,
}

/// Classifies a transport error: anything without an HTTP status is "unreachable".
fn transport(e: reqwest::Error) -> EngineClientError {
    match e.status() {
        Some(status) => EngineClientError::Rejected {
            status: status.as_u16(),
            code: format!("http_{}", status.as_u16()),
            message: e.to_string(),
        },
        None => {
            // Include the source chain: "error sending request" alone says little.
            let mut msg = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                msg.push_str(": ");
                msg.push_str(&s.to_string());
                source = s.source();
            }
            EngineClientError::Unreachable(msg)
        }
    }
}

impl EngineClient {
    /// A client with a 5 s connect timeout and a 60 s overall request timeout.
    pub fn new(
        base_url: impl Into<String>,
        api_key: Option<String>,
    ) -> Result<Self, EngineClientError> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| EngineClientError::InvalidUrl(format!("cannot build HTTP client: {e}")))?;
        Ok(Self::with_http(base_url, api_key, http))
    }

    /// A client that uses the given `reqwest::Client` (timeouts, proxies, TLS as configured there).
    pub fn with_http(
        base_url: impl Into<String>,
        api_key: Option<String>,
        http: reqwest::Client,
    ) -> Self {
        Self {
            base_url: base_url.into().trim_end_matches('/').to_string(),
            api_key,
            http,
        }
    }

    fn url(&self, path: &str) -> Result<String, EngineClientError> {
        let url = format!("{}{path}", self.base_url);
        url::Url::parse(&url).map_err(|e| EngineClientError::InvalidUrl(format!("{url}: {e}")))?;
        Ok(url)
    }

    fn id_path(id: &str) -> Result<&str, EngineClientError> {
        if id.is_empty()
            || !id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(EngineClientError::InvalidUrl(format!(
                "invalid render id {id:?}"
            )));
        }
        Ok(id)
    }

    fn authorize(&self, builder: reqwest::RequestBuilder, url: &str) -> reqwest::RequestBuilder {
        match &self.api_key {
            Some(key) if url.starts_with(&format!("{}/", self.base_url)) => {
                builder.bearer_auth(key)
            }
            _ => builder,
        }
    }

    async fn rejected(response: reqwest::Response) -> EngineClientError {
        let status = response.status().as_u16();
        let body = match response.bytes().await {
            Ok(b) => b,
            Err(e) => return transport(e),
        };
        match serde_json::from_slice::<ErrorBody>(&body) {
            Ok(err) => EngineClientError::Rejected {
                status,
                code: err.error.code.unwrap_or(err.error.kind),
                message: err.error.message,
            },
            Err(_) => EngineClientError::Rejected {
                status,
                code: format!("http_{status}"),
                message: String::from_utf8_lossy(&body[..body.len().min(500)]).into_owned(),
            },
        }
    }

    async fn render_call(
        &self,
        builder: reqwest::RequestBuilder,
        url: &str,
    ) -> Result<Render, EngineClientError> {
        let response = self
            .authorize(builder, url)
            .send()
            .await
            .map_err(transport)?;
        if !response.status().is_success() {
            return Err(Self::rejected(response).await);
        }
        let body = response.bytes().await.map_err(transport)?;
        serde_json::from_slice(&body)
            .map_err(|e| EngineClientError::InvalidResponse(format!("not a Render object: {e}")))
    }

    /// `POST /v1/renders`.
    pub async fn submit(&self, request: &RenderRequest) -> Result<Render, EngineClientError> {
        let url = self.url("/v1/renders")?;
        let mut call = self.http.post(&url).json(request);
        if let Some(reference) = &request.client_reference {
            // The job id: a repeated submission of the same job finds the same render.
            call = call.header(crate::protocol::IDEMPOTENCY_KEY_HEADER, reference);
        }
        self.render_call(call, &url).await
    }

    /// `GET /v1/renders/{id}`.
    pub async fn get(&self, id: &str) -> Result<Render, EngineClientError> {
        let url = self.url(&format!("/v1/renders/{}", Self::id_path(id)?))?;
        self.render_call(self.http.get(&url), &url).await
    }

    /// `POST /v1/renders/{id}/cancel`.
    pub async fn cancel(&self, id: &str) -> Result<Render, EngineClientError> {
        let url = self.url(&format!("/v1/renders/{}/cancel", Self::id_path(id)?))?;
        self.render_call(self.http.post(&url), &url).await
    }

    /// `PUT /v1/faults` on a reference engine started with fault injection enabled.
    pub async fn set_faults(
        &self,
        faults: &FaultSwitches,
    ) -> Result<FaultSwitches, EngineClientError> {
        let url = self.url("/v1/faults")?;
        let response = self
            .authorize(self.http.put(&url).json(faults), &url)
            .send()
            .await
            .map_err(transport)?;
        if !response.status().is_success() {
            return Err(Self::rejected(response).await);
        }
        let body = response.bytes().await.map_err(transport)?;
        serde_json::from_slice(&body).map_err(|e| {
            EngineClientError::InvalidResponse(format!("not a FaultSwitches object: {e}"))
        })
    }

    /// Downloads a `result_url` whole (the bearer token is sent only when it lies under
    /// `base_url`).
    pub async fn download_result(&self, url: &str) -> Result<Bytes, EngineClientError> {
        self.open_result(url)
            .await?
            .bytes()
            .await
            .map_err(transport)
    }

    /// Opens a `result_url` for reading as it arrives: the answer, once it says success.
    pub async fn open_result(&self, url: &str) -> Result<reqwest::Response, EngineClientError> {
        url::Url::parse(url).map_err(|e| EngineClientError::InvalidUrl(format!("{url}: {e}")))?;
        let response = self
            .authorize(self.http.get(url), url)
            .send()
            .await
            .map_err(transport)?;
        if !response.status().is_success() {
            return Err(Self::rejected(response).await);
        }
        Ok(response)
    }
}
