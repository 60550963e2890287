//! Facts about the request being served, gathered where they are known (the caller's
//! organization at authentication, upstream time around each upstream call, the prompt when the
//! operator asked for it) and written by the API's request-id middleware as the request's one
//! log line (`api/request_id.rs`, docs/observability.md).
//!
//! The facts travel in a task-local, like the request id: code deep in the domain notes a fact
//! without the request being threaded through every signature. Outside a request (workflow
//! steps, workers, admin) noting a fact does nothing.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

tokio::task_local! {
    static FACTS: Arc<RequestFacts>;
}

/// Whether request lines may carry prompt text (`REELGATE_LOG_PROMPTS`, a debugging aid; off
/// by default). Set once at assembly.
static LOG_PROMPTS: AtomicBool = AtomicBool::new(false);

pub fn set_log_prompts(on: bool) {
    LOG_PROMPTS.store(on, Ordering::Relaxed);
}

pub fn log_prompts() -> bool {
    LOG_PROMPTS.load(Ordering::Relaxed)
}

/// Prompt text kept in a request line at most (characters).
pub const PROMPT_LOG_CHARS: usize = 2000;

/// What one request's log line reports besides what the middleware itself knows.
#[derive(Debug, Default)]
pub struct RequestFacts {
    org: OnceLock<String>,
    key: OnceLock<String>,
    model: OnceLock<String>,
    prompt: OnceLock<String>,
    /// Time spent waiting on upstream models, microseconds (summed over calls and retries).
    upstream_micros: AtomicU64,
    upstream_calls: AtomicU64,
}

impl RequestFacts {
    pub fn org(&self) -> Option<&str> {
        self.org.get().map(String::as_str)
    }
    pub fn key(&self) -> Option<&str> {
        self.key.get().map(String::as_str)
    }
    pub fn model(&self) -> Option<&str> {
        self.model.get().map(String::as_str)
    }
    pub fn prompt(&self) -> Option<&str> {
        self.prompt.get().map(String::as_str)
    }
    /// Upstream time in milliseconds, when the request called an upstream.
    pub fn upstream_ms(&self) -> Option<f64> {
        self.upstream_time().map(|d| d.as_secs_f64() * 1000.0)
    }
    /// Upstream time, when the request called an upstream.
    pub fn upstream_time(&self) -> Option<Duration> {
        (self.upstream_calls.load(Ordering::Relaxed) > 0)
            .then(|| Duration::from_micros(self.upstream_micros.load(Ordering::Relaxed)))
    }
}

/// Runs `fut` with `facts` as the current request's facts.
pub async fn scope<F: std::future::Future>(facts: Arc<RequestFacts>, fut: F) -> F::Output {
    FACTS.scope(facts, fut).await
}

fn with(f: impl FnOnce(&RequestFacts)) {
    let _ = FACTS.try_with(|facts| f(facts));
}

/// The authenticated caller's organization and key id (`console` for the console).
pub fn note_caller(org: &str, key: &str) {
    with(|f| {
        let _ = f.org.set(org.to_owned());
        let _ = f.key.set(key.to_owned());
    });
}

/// The model a request asked for (catalog id).
pub fn note_model(model: &str) {
    with(|f| {
        let _ = f.model.set(model.to_owned());
    });
}

/// The request's prompt text, kept only while `REELGATE_LOG_PROMPTS` is on (the closure is not
/// even called otherwise).
pub fn note_prompt(prompt: impl FnOnce() -> String) {
    if !log_prompts() {
        return;
    }
    with(|f| {
        let mut text = prompt();
        if let Some((cut, _)) = text.char_indices().nth(PROMPT_LOG_CHARS) {
            text.truncate(cut);
        }
        let _ = f.prompt.set(text);
    });
}

/// Times one upstream call: the time from here until the guard drops (for a stream, until the
/// stream is finished or dropped) is added to the request's upstream time.
pub struct UpstreamTimer {
    facts: Option<Arc<RequestFacts>>,
    started: Instant,
}

pub fn upstream_timer() -> UpstreamTimer {
    UpstreamTimer {
        facts: FACTS.try_with(Arc::clone).ok(),
        started: Instant::now(),
    }
}

impl UpstreamTimer {
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

impl Drop for UpstreamTimer {
    fn drop(&mut self) {
        if let Some(facts) = &self.facts {
            let micros = self.started.elapsed().as_micros() as u64;
            facts.upstream_micros.fetch_add(micros, Ordering::Relaxed);
            facts.upstream_calls.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn facts_are_noted_inside_a_request_only() {
        note_caller("org_outside", "key_outside"); // no request: ignored, no panic
        let facts = Arc::new(RequestFacts::default());
        scope(facts.clone(), async {
            note_caller("org_1", "key_1");
            note_model("m");
            note_prompt(|| "secret prompt".into());
            let t = upstream_timer();
            tokio::time::sleep(Duration::from_millis(5)).await;
            drop(t);
        })
        .await;
        assert_eq!(facts.org(), Some("org_1"));
        assert_eq!(facts.key(), Some("key_1"));
        assert_eq!(facts.model(), Some("m"));
        assert_eq!(
            facts.prompt(),
            None,
            "prompts are not kept unless asked for"
        );
        assert!(facts.upstream_ms().expect("timed") >= 5.0);
    }
}
