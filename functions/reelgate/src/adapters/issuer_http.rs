//! The HTTP client of the configured OpenID Connect issuer ([`IssuerHttp`]).
//!
//! The issuer is an operator setting, so this client reaches it wherever it is (a loopback
//! issuer in the tests, a company's own identity provider on a private network), but it is no
//! general fetcher: https only (plain http only to a loopback address), no redirects followed,
//! no proxy variables, one deadline per call, and the body read as a stream that stops at a byte
//! limit.

use crate::ports::issuer::{IssuerError, IssuerHttp};
use async_trait::async_trait;
use futures::StreamExt;
use std::time::Duration;

/// One call's deadline, connection and body included.
pub const TIMEOUT: Duration = Duration::from_secs(10);
/// The largest answer read (discovery documents and key sets are a few KiB).
pub const MAX_BYTES: usize = 256 * 1024;

/// The issuer's client.
#[derive(Clone)]
pub struct IssuerHttpClient {
    client: reqwest::Client,
    timeout: Duration,
}

impl Default for IssuerHttpClient {
    fn default() -> Self {
        Self::new(TIMEOUT)
    }
}

impl IssuerHttpClient {
    pub fn new(timeout: Duration) -> Self {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .connect_timeout(timeout)
            .timeout(timeout)
            .build()
            .unwrap_or_default();
        IssuerHttpClient { client, timeout }
    }
}

/// True for an `https` URL, or an `http` one whose host is a loopback address or `localhost`.
pub fn acceptable_url(url: &str) -> bool {
    crate::config::is_https_or_loopback(url)
}

fn send_error(e: reqwest::Error) -> IssuerError {
    if e.is_timeout() {
        IssuerError::Timeout
    } else {
        IssuerError::Unreachable
    }
}

async fn read_json(response: reqwest::Response) -> Result<serde_json::Value, IssuerError> {
    if response
        .content_length()
        .is_some_and(|n| n > MAX_BYTES as u64)
    {
        return Err(IssuerError::TooLarge(MAX_BYTES));
    }
    let mut bytes = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(send_error)?;
        if bytes.len() + chunk.len() > MAX_BYTES {
            return Err(IssuerError::TooLarge(MAX_BYTES));
        }
        bytes.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&bytes).map_err(|_| IssuerError::NotJson)
}

impl IssuerHttpClient {
    async fn get(&self, url: &str) -> Result<serde_json::Value, IssuerError> {
        if !acceptable_url(url) {
            return Err(IssuerError::BadUrl);
        }
        let response = self
            .client
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(send_error)?;
        let status = response.status();
        if !status.is_success() {
            return Err(IssuerError::Status(status.as_u16()));
        }
        read_json(response).await
    }

    async fn post(
        &self,
        url: &str,
        form: &[(&str, &str)],
        basic_auth: Option<(&str, &str)>,
    ) -> Result<(u16, serde_json::Value), IssuerError> {
        if !acceptable_url(url) {
            return Err(IssuerError::BadUrl);
        }
        let mut request = self
            .client
            .post(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .form(form);
        if let Some((user, password)) = basic_auth {
            // RFC 6749 §2.3.1: the client id and secret are form-encoded before Basic.
            request = request.basic_auth(form_encode(user), Some(form_encode(password)));
        }
        let response = request.send().await.map_err(send_error)?;
        let status = response.status().as_u16();
        if response.status().is_redirection() {
            return Err(IssuerError::Status(status));
        }
        Ok((status, read_json(response).await?))
    }
}

fn form_encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

#[async_trait]
impl IssuerHttp for IssuerHttpClient {
    async fn get_json(&self, url: &str) -> Result<serde_json::Value, IssuerError> {
        tokio::time::timeout(self.timeout, self.get(url))
            .await
            .unwrap_or(Err(IssuerError::Timeout))
    }

    async fn post_form(
        &self,
        url: &str,
        form: &[(&str, &str)],
        basic_auth: Option<(&str, &str)>,
    ) -> Result<(u16, serde_json::Value), IssuerError> {
        tokio::time::timeout(self.timeout, self.post(url, form, basic_auth))
            .await
            .unwrap_or(Err(IssuerError::Timeout))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_everywhere_and_plain_http_only_on_loopback() {
        assert!(acceptable_url("https://id.example.com/realms/x"));
        assert!(acceptable_url("http://127.0.0.1:8080/issuer"));
        assert!(acceptable_url("http://[::1]:8080/"));
        assert!(acceptable_url("http://localhost:9000"));
        assert!(!acceptable_url("http://id.example.com/"));
        assert!(!acceptable_url("http://10.0.0.1/"));
        assert!(!acceptable_url("file:///etc/passwd"));
        assert!(!acceptable_url("ftp://id.example.com/"));
        assert!(!acceptable_url("not a url"));
    }

    #[tokio::test]
    async fn a_redirect_is_not_followed_and_a_large_answer_is_cut() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            for answer in [
                "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/x\r\nContent-Length: 0\r\n\r\n"
                    .to_owned(),
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n\"{}\"",
                    "a".repeat(MAX_BYTES + 10)
                ),
            ] {
                let (mut s, _) = listener.accept().await.unwrap();
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
                let _ = s.write_all(answer.as_bytes()).await;
                let _ = s.shutdown().await;
            }
        });
        let client = IssuerHttpClient::default();
        let url = format!("http://{addr}/.well-known/openid-configuration");
        assert_eq!(client.get_json(&url).await, Err(IssuerError::Status(302)));
        assert_eq!(
            client.get_json(&url).await,
            Err(IssuerError::TooLarge(MAX_BYTES))
        );
        assert_eq!(
            client.get_json("http://192.0.2.1/x").await,
            Err(IssuerError::BadUrl)
        );
    }
}
