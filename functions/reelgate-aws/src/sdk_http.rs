//! The AWS SDK's HTTP client: the SDK's requests sent through reqwest, the HTTP/1.1 client the
//! upstreams, engines, webhooks and the OTLP exporter already use.
//!
//! The SDK's own hyper client always enables HTTP/2 and carries a second connection pool, proxy
//! and TLS connector beside reqwest's; through this adapter every Lambda links one HTTP client
//! and no HTTP/2 (docs/lambda-artifacts.md, "The SDK's HTTP client"). Every AWS endpoint reelgate calls
//! (DynamoDB, S3, SQS, Step Functions, Bedrock, Lambda, STS, Secrets Manager) speaks HTTP/1.1.
//!
//! What the adapter keeps from the SDK's contract: the request goes out as signed (reqwest adds
//! only headers outside the signature, never follows a redirect, never decompresses), a streamed
//! body stays streamed both ways and every body is read through the SDK's own wrapping (its
//! stalled-stream protection counts what is read), the configured connect and read timeouts apply, and a failure
//! is classified as the SDK's retry strategy expects (timeout, I/O, user, other).

use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::body::SdkBody;
use aws_smithy_types::retry::ErrorKind;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// The SDK's client: one reqwest client per distinct timeout setting, built on first use.
pub fn sdk_http_client() -> SharedHttpClient {
    SharedHttpClient::new(ReqwestSdkClient::default())
}

type TimeoutKey = (Option<Duration>, Option<Duration>);

#[derive(Debug, Default)]
struct ReqwestSdkClient {
    /// Every SDK client of a process asks with the same settings, so this holds one entry; it
    /// is read, not written, on every operation after the first.
    connectors: RwLock<Vec<(TimeoutKey, SharedHttpConnector)>>,
}

impl HttpClient for ReqwestSdkClient {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        _components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        self.connector_for((settings.connect_timeout(), settings.read_timeout()))
    }
}

impl ReqwestSdkClient {
    fn connector_for(&self, key: TimeoutKey) -> SharedHttpConnector {
        let cached = |list: &[(TimeoutKey, SharedHttpConnector)]| {
            list.iter().find(|(k, _)| *k == key).map(|(_, c)| c.clone())
        };
        if let Some(found) = cached(&self.connectors.read().expect("connector list")) {
            return found;
        }
        let mut list = self.connectors.write().expect("connector list");
        if let Some(found) = cached(&list) {
            return found;
        }
        let connector = SharedHttpConnector::new(ReqwestConnector::new(key));
        list.push((key, connector.clone()));
        connector
    }
}

#[derive(Debug, Clone)]
struct ReqwestConnector {
    client: Arc<reqwest::Client>,
}

impl ReqwestConnector {
    fn new((connect, read): TimeoutKey) -> Self {
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .tcp_nodelay(true)
            .pool_idle_timeout(Duration::from_secs(90));
        if let Some(connect) = connect {
            builder = builder.connect_timeout(connect);
        }
        if let Some(read) = read {
            builder = builder.read_timeout(read);
        }
        // Building fails only when the TLS backend cannot initialise, which no request could
        // recover from; the SDK offers no fallible constructor here.
        let client = builder
            .build()
            .expect("the SDK's HTTP client (reqwest, rustls)");
        Self {
            client: Arc::new(client),
        }
    }
}

impl HttpConnector for ReqwestConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let request = match request.try_into_http1x() {
            Ok(request) => request,
            Err(err) => return HttpConnectorFuture::ready(Err(ConnectorError::user(err.into()))),
        };
        let (parts, body) = request.into_parts();
        // The body is always read through, never copied out of `bytes()`: the SDK's stalled-
        // stream protection wraps even an in-memory body (keeping its bytes visible) and counts
        // what is polled from it, so a body sent from a copy reads as stalled once the answer
        // takes longer than the protection's grace period (5 s).
        let body = reqwest::Body::wrap(body);
        let request = match reqwest::Request::try_from(http::Request::from_parts(parts, body)) {
            Ok(request) => request,
            Err(err) => return HttpConnectorFuture::ready(Err(ConnectorError::user(err.into()))),
        };
        let client = self.client.clone();
        HttpConnectorFuture::new(async move {
            let response = client.execute(request).await.map_err(classify)?;
            let response = http::Response::from(response).map(SdkBody::from_body_1_x);
            HttpResponse::try_from(response).map_err(|err| ConnectorError::other(err.into(), None))
        })
    }
}

/// The SDK retries timeouts and I/O failures as transient; a request it built wrong is the
/// caller's fault, and anything else is passed on unclassified, as its own client does.
fn classify(err: reqwest::Error) -> ConnectorError {
    if err.is_timeout() {
        ConnectorError::timeout(err.into())
    } else if err.is_connect() {
        ConnectorError::io(err.into())
    } else if err.is_builder() {
        ConnectorError::user(err.into())
    } else if err.is_request() || err.is_body() {
        // The connection failed while the request was written or the answer read.
        ConnectorError::other(err.into(), Some(ErrorKind::TransientError))
    } else {
        ConnectorError::other(err.into(), None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    fn connector(settings: HttpConnectorSettings) -> SharedHttpConnector {
        ReqwestSdkClient::default()
            .connector_for((settings.connect_timeout(), settings.read_timeout()))
    }

    /// A server that reads one request, hands it back over the channel and answers with
    /// `answer` as written.
    async fn one_shot(answer: &'static [u8]) -> (String, tokio::sync::oneshot::Receiver<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (tx, rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.expect("accept");
            let mut seen = Vec::new();
            let mut buf = [0u8; 4096];
            // Read until the body announced by content-length (or a chunked terminator) is in.
            loop {
                let n = socket.read(&mut buf).await.expect("read");
                seen.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&seen).to_string();
                if let Some(end) = text.find("\r\n\r\n") {
                    let head = text[..end].to_ascii_lowercase();
                    let body = &text[end + 4..];
                    let want = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length: "))
                        .map(|v| v.trim().parse::<usize>().expect("length"));
                    let done = match want {
                        Some(len) => body.len() >= len,
                        None => !head.contains("chunked") || body.ends_with("0\r\n\r\n"),
                    };
                    if done {
                        let _ = tx.send(text);
                        break;
                    }
                }
                if n == 0 {
                    break;
                }
            }
            socket.write_all(answer).await.expect("write");
        });
        (format!("http://{addr}"), rx)
    }

    fn request(uri: &str, body: SdkBody) -> HttpRequest {
        let request = http::Request::builder()
            .method("POST")
            .uri(uri)
            .header("authorization", "AWS4-HMAC-SHA256 Credential=test")
            .header("x-amz-target", "DynamoDB_20120810.GetItem")
            .body(body)
            .expect("request");
        HttpRequest::try_from(request).expect("smithy request")
    }

    #[tokio::test]
    async fn the_signed_request_goes_out_as_built_and_the_answer_comes_back() {
        let (uri, seen) = one_shot(
            b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/x-amz-json-1.0\r\ncontent-length: 17\r\nx-amzn-requestid: r1\r\n\r\n{\"__type\":\"oops\"}",
        )
        .await;
        let response = connector(HttpConnectorSettings::default())
            .call(request(
                &format!("{uri}/path?q=1"),
                SdkBody::from("{\"Key\":1}"),
            ))
            .await
            .expect("an answer");
        let seen = seen.await.expect("request seen");
        assert!(seen.starts_with("POST /path?q=1 HTTP/1.1\r\n"), "{seen}");
        let lower = seen.to_ascii_lowercase();
        assert!(
            lower.contains("authorization: aws4-hmac-sha256 credential=test"),
            "{seen}"
        );
        assert!(
            lower.contains("x-amz-target: dynamodb_20120810.getitem"),
            "{seen}"
        );
        assert!(lower.contains("content-length: 9"), "{seen}");
        assert!(seen.ends_with("{\"Key\":1}"), "{seen}");
        assert_eq!(response.status().as_u16(), 400);
        assert_eq!(response.headers().get("x-amzn-requestid"), Some("r1"));
        let body = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        assert_eq!(&body[..], b"{\"__type\":\"oops\"}");
    }

    #[tokio::test]
    async fn a_redirect_is_answered_to_the_sdk_not_followed() {
        let (uri, _seen) = one_shot(
            b"HTTP/1.1 301 Moved Permanently\r\nlocation: http://169.254.169.254/latest\r\nx-amz-bucket-region: eu-west-1\r\ncontent-length: 0\r\n\r\n",
        )
        .await;
        let response = connector(HttpConnectorSettings::default())
            .call(request(&uri, SdkBody::empty()))
            .await
            .expect("an answer");
        assert_eq!(response.status().as_u16(), 301);
        assert_eq!(
            response.headers().get("x-amz-bucket-region"),
            Some("eu-west-1")
        );
    }

    #[tokio::test]
    async fn a_streamed_body_is_sent_whole() {
        let (uri, seen) = one_shot(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").await;
        let body = SdkBody::from_body_1_x(http_body_util::Full::new(bytes::Bytes::from_static(
            b"part one, part two",
        )));
        assert!(
            body.bytes().is_none(),
            "the body must be a stream for this test"
        );
        connector(HttpConnectorSettings::default())
            .call(request(&uri, body))
            .await
            .expect("an answer");
        let seen = seen.await.expect("request seen");
        let body = seen.split("\r\n\r\n").nth(1).expect("a body");
        assert!(body.contains("part one, part two"), "{seen}");
    }

    /// What the SDK's stalled-stream protection does to every request body: it wraps the body
    /// in one that counts what is read, keeping the original bytes visible through `bytes()`.
    #[tokio::test]
    async fn the_body_is_read_through_the_sdks_wrapping_not_copied_past_it() {
        let (uri, seen) = one_shot(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").await;
        let read = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = read.clone();
        let body = SdkBody::from("{\"counted\":true}").map_preserve_contents(move |inner| {
            let counter = counter.clone();
            SdkBody::from_body_1_x(inner.map_frame(move |frame| {
                if let Some(data) = frame.data_ref() {
                    counter.fetch_add(data.len(), std::sync::atomic::Ordering::SeqCst);
                }
                frame
            }))
        });
        assert!(
            body.bytes().is_some(),
            "the wrapping keeps the bytes visible"
        );
        connector(HttpConnectorSettings::default())
            .call(request(&uri, body))
            .await
            .expect("an answer");
        // Sent chunked here: the wrapping hides the length, which the SDK sends as a header.
        assert!(seen
            .await
            .expect("request seen")
            .contains("{\"counted\":true}"));
        assert_eq!(read.load(std::sync::atomic::Ordering::SeqCst), 16);
    }

    #[tokio::test]
    async fn a_silent_server_is_a_timeout_the_sdk_retries() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let uri = format!("http://{}", listener.local_addr().expect("addr"));
        let _hold = tokio::spawn(async move {
            let (socket, _) = listener.accept().await.expect("accept");
            tokio::time::sleep(Duration::from_secs(30)).await;
            drop(socket);
        });
        let settings = HttpConnectorSettings::builder()
            .read_timeout(Duration::from_millis(200))
            .build();
        let err = connector(settings)
            .call(request(&uri, SdkBody::from("{}")))
            .await
            .expect_err("no answer in time");
        assert!(err.is_timeout(), "{err:?}");
    }

    #[tokio::test]
    async fn a_refused_connection_is_an_io_error_the_sdk_retries() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let uri = format!("http://{}", listener.local_addr().expect("addr"));
        drop(listener);
        let err = connector(HttpConnectorSettings::default())
            .call(request(&uri, SdkBody::from("{}")))
            .await
            .expect_err("nothing listens");
        assert!(err.is_io(), "{err:?}");
    }

    #[test]
    fn one_connector_per_timeout_setting() {
        let client = ReqwestSdkClient::default();
        let (a, b) = (Some(Duration::from_secs(3)), Some(Duration::from_secs(5)));
        client.connector_for((a, None));
        client.connector_for((a, None));
        client.connector_for((b, None));
        assert_eq!(client.connectors.read().expect("list").len(), 2);
    }
}
