//! The local server's HTTP listener: what `axum::serve` would do, plus the connection policy of
//! docs/security.md §9 that a bare listener lacks. On AWS none of this runs: API Gateway owns the
//! connections and a Lambda instance serves one request at a time.
//!
//! - at most [`ListenerLimits::max_connections`] open connections; one more is closed at once
//!   (a client is told "no" instead of sitting in the kernel's backlog);
//! - an answer the client stops reading is given up once one write has waited
//!   [`ListenerLimits::write_timeout`]: the connection closes and frees its slot (a client that
//!   never reads could otherwise hold a slot forever);
//! - request headers must arrive within [`ListenerLimits::header_read_timeout`], counted from
//!   the moment the connection waits for a request, so an idle keep-alive connection is closed
//!   after that long too;
//! - a request body must keep up [`ListenerLimits::min_body_rate`] after a grace period and may
//!   never pause longer than [`ListenerLimits::body_idle_timeout`] (the [`MinRateBody`]);
//! - overload sheds load ([`Load`]): past [`ListenerLimits::max_in_flight`] requests, or once
//!   the runtime falls behind by more than [`ListenerLimits::shed_lag`], past
//!   [`ListenerLimits::shed_floor`] requests in flight shrunk by how far behind it is, a request
//!   is answered at once with `503 server_overloaded` and `Retry-After: 1`. `GET /health` is
//!   never shed;
//! - an answer given before its request's body was read to the end (a refusal at the front door,
//!   a missing CSRF token, a bad credential) says `Connection: close`: hyper cannot reuse that
//!   connection (the unread bytes would be taken for the next request) and closes it once the
//!   answer is out, and a client that has already sent its next request on it must learn why
//!   that request goes unanswered. A shed request's body is dropped before its answer is
//!   written, which lets hyper keep the connection when the body has already arrived (and say
//!   `Connection: close` itself when it has not).

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use axum::Router;
use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use reelgate::api::extract::BodyTooSlow;
use reelgate::domain::error::{ApiError, ErrorKind};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::time::{Instant, Sleep};
use tower::ServiceExt;

/// The local server's connection and overload bounds (docs/configuration.md, "Local server").
#[derive(Clone, Debug)]
pub struct ListenerLimits {
    /// Open connections at once (`REELGATE_MAX_CONNECTIONS`).
    pub max_connections: usize,
    /// Time a connection has to send a request's headers, idle keep-alive time included.
    pub header_read_timeout: Duration,
    /// Longest one write to the client may wait for it to read (`REELGATE_WRITE_TIMEOUT_SECS`).
    pub write_timeout: Duration,
    /// Longest pause between two pieces of a request body.
    pub body_idle_timeout: Duration,
    /// Bytes a second a request body must average once [`Self::body_rate_grace`] has passed
    /// (`REELGATE_MIN_BODY_RATE`).
    pub min_body_rate: u64,
    /// The start of a body that the minimum rate does not count.
    pub body_rate_grace: Duration,
    /// Requests in flight at once, streamed answers until their last byte
    /// (`REELGATE_MAX_IN_FLIGHT`).
    pub max_in_flight: usize,
    /// How far behind its timers the runtime may fall before requests are shed
    /// (`REELGATE_SHED_LAG_MS`; zero turns lag shedding off).
    pub shed_lag: Duration,
    /// Requests in flight a runtime lagging just past [`Self::shed_lag`] still admits, shrunk in
    /// proportion as the lag grows (never below one); 16 per CPU by default
    /// (`REELGATE_SHED_FLOOR`). Once lagging, this is how many requests share the CPUs, so it
    /// is what bounds an admitted request's wait: every await point of a request waits its turn
    /// behind the others.
    pub shed_floor: usize,
}

impl Default for ListenerLimits {
    fn default() -> Self {
        ListenerLimits {
            max_connections: 4096,
            header_read_timeout: Duration::from_secs(15),
            write_timeout: Duration::from_secs(30),
            body_idle_timeout: Duration::from_secs(15),
            min_body_rate: 16 * 1024,
            body_rate_grace: Duration::from_secs(10),
            max_in_flight: 1024,
            // Measured (docs/security.md §9): at 5 ms the CPU was already saturated before the
            // lag showed, and admitted requests waited hundreds of milliseconds at 2x and 4x
            // saturation; at 1 ms they kept a p99 under 20 ms with nothing shed at half load.
            shed_lag: Duration::from_millis(1),
            shed_floor: 16 * std::thread::available_parallelism().map_or(1, usize::from),
        }
    }
}

/// Serves `router` on `listener` under `limits` until `shutdown` resolves, then lets the open
/// connections finish their requests.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ListenerLimits,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let limits = Arc::new(limits);
    let connections = Arc::new(Semaphore::new(limits.max_connections));
    let load = Load::start(&limits);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, _peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // EMFILE and friends: wait for descriptors to come back instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let Ok(slot) = connections.clone().try_acquire_owned() else {
            drop(stream);
            continue;
        };
        if let Err(e) = stream.set_nodelay(true) {
            // Without TCP_NODELAY each SSE event can wait ~40 ms for the client's delayed ACK.
            tracing::warn!(error = %e, "could not set TCP_NODELAY");
        }
        let service = RequestService {
            router: router.clone(),
            limits: limits.clone(),
            load: load.clone(),
        };
        let watcher = graceful.watcher();
        let limits = limits.clone();
        tokio::spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_read_timeout);
            let stream = WriteDeadline::new(stream, limits.write_timeout);
            let connection = builder.serve_connection(TokioIo::new(stream), service);
            let _ = watcher.watch(connection).await;
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// A connection whose writes fail once one has waited longer than `timeout` for the client to
/// make room (the kernel's send buffer full because nothing reads it).
struct WriteDeadline {
    stream: tokio::net::TcpStream,
    timeout: Duration,
    /// Set while a write is pending: when it gives up.
    waiting: Option<Pin<Box<Sleep>>>,
}

impl WriteDeadline {
    fn new(stream: tokio::net::TcpStream, timeout: Duration) -> Self {
        WriteDeadline {
            stream,
            timeout,
            waiting: None,
        }
    }

    /// `Pending` while the deadline has not passed (registering the wake-up), else the error.
    fn check_deadline(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<usize>> {
        let timeout = self.timeout;
        let waiting = self
            .waiting
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match waiting.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the client stopped reading the answer",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl tokio::io::AsyncRead for WriteDeadline {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for WriteDeadline {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match Pin::new(&mut self.stream).poll_write(cx, buf) {
            Poll::Ready(done) => {
                self.waiting = None;
                Poll::Ready(done)
            }
            Poll::Pending => self.check_deadline(cx),
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match Pin::new(&mut self.stream).poll_write_vectored(cx, bufs) {
            Poll::Ready(done) => {
                self.waiting = None;
                Poll::Ready(done)
            }
            Poll::Pending => self.check_deadline(cx),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// One connection's request handler: sheds, bounds the body's pace, runs the router.
#[derive(Clone)]
struct RequestService {
    router: Router,
    limits: Arc<ListenerLimits>,
    load: Arc<Load>,
}

impl hyper::service::Service<hyper::Request<Incoming>> for RequestService {
    type Response = Response;
    type Error = std::convert::Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Self::Error>> + Send>>;

    fn call(&self, request: hyper::Request<Incoming>) -> Self::Future {
        let health = request.uri().path() == "/health";
        let announces_body = announces_body(request.headers());
        let ticket = if health {
            None
        } else {
            match self.load.admit() {
                Some(ticket) => Some(ticket),
                // The request, body included, is dropped here, before the answer's head is
                // written: hyper then drains a body that has already arrived (a small one
                // usually came with its headers) and keeps the connection, or else closes it and
                // says `Connection: close` itself. Closing every shed connection instead made
                // each client reconnect for its next request, and at 4x saturation the accepts
                // and handshakes of shed requests took the CPU the admitted ones needed.
                None => return Box::pin(std::future::ready(Ok(overloaded()))),
            }
        };
        let limits = self.limits.clone();
        let body_ended = Arc::new(AtomicBool::new(false));
        let ended = body_ended.clone();
        let request = request.map(|body| Body::new(MinRateBody::new(body, &limits, ended)));
        let router = self.router.clone();
        Box::pin(async move {
            let mut response = router.oneshot(request).await?;
            if announces_body && !body_ended.load(Ordering::Relaxed) {
                close_after(&mut response);
            }
            Ok(match ticket {
                // The request counts as in flight until its answer's last byte has gone out.
                Some(ticket) => response.map(|body| Body::new(Ticketed { body, ticket })),
                None => response,
            })
        })
    }
}

/// Whether a request announces a body: a non-zero length, or a chunked one.
fn announces_body(headers: &http::HeaderMap) -> bool {
    let length = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    length.is_some_and(|n| n > 0) || headers.contains_key(http::header::TRANSFER_ENCODING)
}

/// Says that the connection closes after this answer (its request's body was left unread).
fn close_after(response: &mut Response) {
    response.headers_mut().insert(
        http::header::CONNECTION,
        http::HeaderValue::from_static("close"),
    );
}

fn overloaded() -> Response {
    let mut response = ApiError::new(
        ErrorKind::Unavailable,
        "server_overloaded",
        "The server is overloaded and did not take this request; retry after the Retry-After \
         header's seconds.",
    )
    .into_response();
    response.headers_mut().insert(
        http::header::RETRY_AFTER,
        http::HeaderValue::from_static("1"),
    );
    response
}

/// How loaded the server is: requests in flight, and how late the runtime runs a timer (the
/// time a ready task waits for a worker, which is what every admitted request would wait too).
pub struct Load {
    in_flight: AtomicUsize,
    /// Smoothed lateness of the probe timer, in microseconds.
    lag_micros: AtomicU64,
    max_in_flight: usize,
    shed_lag_micros: u64,
    shed_floor: usize,
}

/// The probe's period: short enough to notice a backlog within a few tens of milliseconds.
const PROBE_PERIOD: Duration = Duration::from_millis(5);

impl Load {
    fn start(limits: &ListenerLimits) -> Arc<Load> {
        let load = Arc::new(Load {
            in_flight: AtomicUsize::new(0),
            lag_micros: AtomicU64::new(0),
            max_in_flight: limits.max_in_flight.max(1),
            shed_lag_micros: limits.shed_lag.as_micros() as u64,
            shed_floor: limits.shed_floor,
        });
        if load.shed_lag_micros > 0 {
            let probe = Arc::downgrade(&load);
            tokio::spawn(async move {
                loop {
                    let asked = Instant::now();
                    tokio::time::sleep(PROBE_PERIOD).await;
                    let Some(load) = probe.upgrade() else { return };
                    let late = asked.elapsed().saturating_sub(PROBE_PERIOD).as_micros() as u64;
                    // A quarter of each new sample: one slow tick is noise, a few are a backlog.
                    let smoothed = load.lag_micros.load(Ordering::Relaxed);
                    let next = (smoothed * 3 + late) / 4;
                    load.lag_micros.store(next, Ordering::Relaxed);
                }
            });
        }
        load
    }

    /// A ticket for one more request in flight, or None when it must be shed.
    fn admit(self: &Arc<Self>) -> Option<InFlight> {
        let now = self.in_flight.fetch_add(1, Ordering::AcqRel) + 1;
        let ticket = InFlight(self.clone());
        if now > self.max_in_flight || now > self.lagging_limit() {
            return None; // the ticket's drop gives the count back
        }
        Some(ticket)
    }

    /// Requests in flight the runtime's lag allows: no bound while it keeps up; once it lags
    /// past the threshold, the floor shrunk in proportion to how far (at four times the
    /// threshold, a quarter of the floor), never below one. A fixed floor kept admitting as
    /// many requests as before while the CPU was saturated, so every request, shed ones
    /// included, queued behind the others and admitted ones waited half a second at 4x
    /// saturation; shrinking it sheds until the lag falls back near the threshold, which is
    /// what bounds an admitted request's wait.
    fn lagging_limit(&self) -> usize {
        let lag = self.lag_micros.load(Ordering::Relaxed);
        if self.shed_lag_micros == 0 || lag <= self.shed_lag_micros {
            return usize::MAX;
        }
        let scaled = self.shed_floor as u64 * self.shed_lag_micros / lag;
        (scaled as usize).max(1)
    }
}

struct InFlight(Arc<Load>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// An answer's body that holds its request's in-flight ticket until the body is done.
struct Ticketed {
    body: Body,
    #[allow(dead_code)] // held for its Drop
    ticket: InFlight,
}

impl HttpBody for Ticketed {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A request body that fails with [`BodyTooSlow`] when the client pauses longer than the idle
/// timeout, or, after the grace period, sends slower than the minimum rate on average. The
/// clock starts when the handler first reads the body, so a request waiting for the body
/// budget is not held against its client.
pub struct MinRateBody {
    inner: Incoming,
    idle_timeout: Duration,
    min_rate: u64,
    grace: Duration,
    started: Option<Instant>,
    last_data: Instant,
    received: u64,
    deadline: Pin<Box<Sleep>>,
    failed: bool,
    /// Set once the body has been read to its end.
    ended: Arc<AtomicBool>,
}

impl MinRateBody {
    fn new(inner: Incoming, limits: &ListenerLimits, ended: Arc<AtomicBool>) -> Self {
        let now = Instant::now();
        MinRateBody {
            inner,
            idle_timeout: limits.body_idle_timeout,
            min_rate: limits.min_body_rate,
            grace: limits.body_rate_grace,
            started: None,
            last_data: now,
            received: 0,
            deadline: Box::pin(tokio::time::sleep_until(now + limits.body_idle_timeout)),
            failed: false,
            ended,
        }
    }

    /// When the body breaks a bound if nothing more arrives: the idle timeout after the last
    /// piece, or the moment the bytes so far fall below the minimum rate.
    fn next_deadline(&self, started: Instant) -> Instant {
        let idle = self.last_data + self.idle_timeout;
        if self.min_rate == 0 {
            return idle;
        }
        let earned = Duration::from_secs_f64(self.received as f64 / self.min_rate as f64);
        idle.min(started + self.grace + earned)
    }
}

impl HttpBody for MinRateBody {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        if this.failed {
            return Poll::Ready(None);
        }
        let started = match this.started {
            Some(started) => started,
            None => {
                let now = Instant::now();
                this.started = Some(now);
                this.last_data = now;
                let deadline = this.next_deadline(now);
                this.deadline.as_mut().reset(deadline);
                now
            }
        };
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.received += data.len() as u64;
                    let now = Instant::now();
                    if now > this.next_deadline(started) {
                        this.failed = true;
                        return Poll::Ready(Some(Err(Box::new(BodyTooSlow))));
                    }
                    this.last_data = now;
                    let deadline = this.next_deadline(started);
                    this.deadline.as_mut().reset(deadline);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(Box::new(e)))),
            Poll::Ready(None) => {
                this.ended.store(true, Ordering::Relaxed);
                Poll::Ready(None)
            }
            Poll::Pending => match this.deadline.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    this.failed = true;
                    Poll::Ready(Some(Err(Box::new(BodyTooSlow))))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        let ended = self.inner.is_end_stream();
        if ended {
            self.ended.store(true, Ordering::Relaxed);
        }
        ended
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_in_flight: usize) -> ListenerLimits {
        ListenerLimits {
            max_in_flight,
            shed_lag: Duration::ZERO,
            ..ListenerLimits::default()
        }
    }

    #[tokio::test]
    async fn past_the_in_flight_bound_requests_are_refused_until_one_ends() {
        let load = Load::start(&limits(2));
        let a = load.admit().expect("first");
        let _b = load.admit().expect("second");
        assert!(load.admit().is_none(), "a third is shed");
        assert!(
            load.admit().is_none(),
            "a refused ticket gave its count back"
        );
        drop(a);
        assert!(load.admit().is_some(), "one ended: one more is admitted");
    }

    #[tokio::test]
    async fn the_further_behind_the_runtime_the_fewer_requests_it_admits() {
        let load = Load::start(&ListenerLimits {
            max_in_flight: 100,
            shed_lag: Duration::from_millis(5),
            shed_floor: 16,
            ..ListenerLimits::default()
        });
        load.lag_micros.store(10_000, Ordering::Relaxed);
        assert_eq!(
            load.lagging_limit(),
            8,
            "twice the threshold: half the floor"
        );
        load.lag_micros.store(20_000, Ordering::Relaxed);
        assert_eq!(load.lagging_limit(), 4);
        let held: Vec<_> = (0..4).map(|_| load.admit().expect("within")).collect();
        assert!(load.admit().is_none(), "a fifth is shed");
        load.lag_micros.store(10_000_000, Ordering::Relaxed);
        drop(held);
        let _one = load.admit().expect("however far behind, one is admitted");
        assert!(load.admit().is_none());
        load.lag_micros.store(4_000, Ordering::Relaxed);
        assert_eq!(
            load.lagging_limit(),
            usize::MAX,
            "keeping up: no bound but max_in_flight"
        );
    }
}
