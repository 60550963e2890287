//! The local host's PDF rasterizer (`reelgate::ports::pdf`): each document is rendered by a child
//! process, `reelgate pdf-rasterize`, so a document that defeats the caps of
//! `reelgate::domain::responses::pdf` exhausts the child's limits, not the server.
//!
//! The child gets the PDF on stdin and answers on stdout; it starts with an address-space limit
//! ([`LIMIT_MEMORY_BYTES`]: an allocation past it fails and the child aborts), a CPU-time limit
//! and no core dumps (set between fork and exec), an empty environment, and is killed when
//! [`LIMIT_SECONDS`] of wall-clock time pass. At most one child per core runs at once, and the
//! cores are shared between organizations in turn (`reelgate::domain::fair_slots`): a freed
//! one goes to the waiting organization running the fewest, so one organization's burst holds
//! another's document back by one document at most. A document that waits
//! `REELGATE_PDF_WAIT_SECS` (30 s) without a core is answered as busy.
//!
//! The answer: exit status 0 and `u32` page count, then per page a `u64` length and the PNG (all
//! big-endian); exit status [`REFUSED`] and the refusal's message; anything else (a signal, an
//! abort) is a child that hit a limit.

use async_trait::async_trait;
use reelgate::domain::fair_slots::FairSlots;
use reelgate::domain::responses::pdf as render;
use reelgate::ports::pdf::{PdfError, PdfRasterizer, LIMIT_MEMORY_BYTES, LIMIT_SECONDS};
use std::io::{Read as _, Write as _};
use std::path::PathBuf;
use std::time::Duration;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// The hidden subcommand of the `reelgate` binary that is the child ([`child_main`]).
pub const SUBCOMMAND: &str = "pdf-rasterize";
/// The child's exit status for a document it refuses (its message on stdout).
pub const REFUSED: i32 = 2;

/// Runs each document in a limited child process: `program` with `args` (the `reelgate` binary
/// and [`SUBCOMMAND`]).
pub struct ChildRasterizer {
    program: PathBuf,
    args: Vec<String>,
    memory_bytes: u64,
    seconds: u64,
    slots: FairSlots,
    wait: Duration,
}

/// How long a document waits for a core by default.
pub const DEFAULT_WAIT_SECS: u64 = 30;

impl ChildRasterizer {
    pub fn new(program: PathBuf, args: Vec<String>) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        ChildRasterizer {
            program,
            args,
            memory_bytes: LIMIT_MEMORY_BYTES,
            seconds: LIMIT_SECONDS,
            slots: FairSlots::new(cores),
            wait: Duration::from_secs(DEFAULT_WAIT_SECS),
        }
    }

    /// A document waits at most `wait` for a free core.
    pub fn with_wait(mut self, wait: Duration) -> Self {
        self.wait = wait;
        self
    }

    /// This process's own executable, re-run as `reelgate pdf-rasterize`.
    pub fn this_executable() -> std::io::Result<Self> {
        Ok(Self::new(std::env::current_exe()?, vec![SUBCOMMAND.into()]))
    }

    /// Other limits than the documented ones (tests of the limits themselves).
    pub fn with_limits(mut self, memory_bytes: u64, seconds: u64) -> Self {
        self.memory_bytes = memory_bytes;
        self.seconds = seconds;
        self
    }
}

#[async_trait]
impl PdfRasterizer for ChildRasterizer {
    async fn rasterize(&self, pdf: Vec<u8>) -> Result<Vec<Vec<u8>>, PdfError> {
        let tenant = reelgate::domain::fair_slots::current_tenant();
        let _slot = self.slots.acquire(&tenant, self.wait).await.map_err(|busy| {
            tracing::warn!(%tenant, waited_secs = busy.waited.as_secs(), "no PDF renderer freed in time");
            PdfError::Busy(busy.waited.as_secs())
        })?;
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(&self.args)
            .env_clear()
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let (memory, cpu) = (self.memory_bytes, self.seconds);
        // SAFETY: between fork and exec only async-signal-safe calls are allowed; setrlimit is one,
        // and the closure allocates nothing.
        unsafe {
            command.pre_exec(move || set_limits(memory, cpu));
        }
        let mut child = command
            .spawn()
            .map_err(|e| PdfError::Unavailable(format!("starting the renderer: {e}")))?;
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(PdfError::Unavailable("the renderer has no pipes".into()));
        };
        // The answer can be no longer than the page images the child may produce, plus framing.
        let most = render::MAX_OUTPUT_BYTES + 8 * render::MAX_PAGES as u64 + 4;
        let exchange = async {
            let write = async move {
                // A child that stops reading (it refused early, or died) closes the pipe.
                let _ = stdin.write_all(&pdf).await;
                drop(stdin);
            };
            let read = async {
                let mut out = Vec::new();
                let _ = stdout.take(most + 1).read_to_end(&mut out).await;
                out
            };
            let read_err = async {
                let mut err = Vec::new();
                let _ = stderr.take(4096).read_to_end(&mut err).await;
                err
            };
            let ((), out, err) = tokio::join!(write, read, read_err);
            (out, err, child.wait().await)
        };
        let outcome = tokio::time::timeout(Duration::from_secs(self.seconds), exchange).await;
        let (out, err, status) = match outcome {
            Ok(done) => done,
            Err(_) => {
                let _ = child.kill().await;
                tracing::warn!(
                    seconds = self.seconds,
                    "PDF renderer killed at its time limit"
                );
                return Err(PdfError::too_complex());
            }
        };
        let status =
            status.map_err(|e| PdfError::Unavailable(format!("waiting for the renderer: {e}")))?;
        match status.code() {
            Some(0) => decode_pages(&out)
                .ok_or_else(|| PdfError::Unavailable("the renderer's answer is malformed".into())),
            Some(REFUSED) => Err(PdfError::Refused(
                String::from_utf8_lossy(&out).trim().to_owned(),
            )),
            code => {
                use std::os::unix::process::ExitStatusExt as _;
                let stderr = String::from_utf8_lossy(&err);
                tracing::warn!(
                    ?code,
                    signal = ?status.signal(),
                    stderr = %stderr.trim(),
                    "PDF renderer stopped at a limit"
                );
                // An allocation past the memory limit aborts (SIGABRT), the CPU limit sends
                // SIGXCPU/SIGKILL; a Rust runtime failure exits 101 or 134. All are the document.
                Err(PdfError::too_complex())
            }
        }
    }
}

fn set_limits(memory_bytes: u64, cpu_seconds: u64) -> std::io::Result<()> {
    let limit = |resource, value: u64| {
        let l = libc::rlimit {
            rlim_cur: value as libc::rlim_t,
            rlim_max: value as libc::rlim_t,
        };
        // SAFETY: a plain system call on a valid struct.
        if unsafe { libc::setrlimit(resource, &l) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    };
    limit(libc::RLIMIT_AS, memory_bytes)?;
    // The hard limit one second later: SIGXCPU first, SIGKILL if it is ignored.
    let cpu = libc::rlimit {
        rlim_cur: cpu_seconds as libc::rlim_t,
        rlim_max: (cpu_seconds + 1) as libc::rlim_t,
    };
    // SAFETY: as above.
    if unsafe { libc::setrlimit(libc::RLIMIT_CPU, &cpu) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    limit(libc::RLIMIT_CORE, 0)
}

fn encode_pages(pages: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + pages.iter().map(|p| 8 + p.len()).sum::<usize>());
    out.extend_from_slice(&(pages.len() as u32).to_be_bytes());
    for page in pages {
        out.extend_from_slice(&(page.len() as u64).to_be_bytes());
        out.extend_from_slice(page);
    }
    out
}

fn decode_pages(mut bytes: &[u8]) -> Option<Vec<Vec<u8>>> {
    let (count, rest) = bytes.split_first_chunk::<4>()?;
    bytes = rest;
    let count = u32::from_be_bytes(*count) as usize;
    if count > render::MAX_PAGES {
        return None;
    }
    let mut pages = Vec::with_capacity(count);
    for _ in 0..count {
        let (len, rest) = bytes.split_first_chunk::<8>()?;
        let len = usize::try_from(u64::from_be_bytes(*len)).ok()?;
        if rest.len() < len {
            return None;
        }
        pages.push(rest[..len].to_vec());
        bytes = &rest[len..];
    }
    bytes.is_empty().then_some(pages)
}

/// The child: reads the PDF on stdin, renders it with the caps, answers on stdout (see the
/// module documentation). Call it before anything else starts (no runtime, no threads), so the
/// address-space limit is spent on the document.
pub fn child_main() -> std::process::ExitCode {
    let mut pdf = Vec::new();
    let read = std::io::stdin()
        .lock()
        .take(render::MAX_INPUT_BYTES + 1)
        .read_to_end(&mut pdf);
    let result = match read {
        Err(_) => Err(render::PdfError::Unreadable.to_string()),
        Ok(n) if n as u64 > render::MAX_INPUT_BYTES => Err(format!(
            "the PDF is larger than {} bytes",
            render::MAX_INPUT_BYTES
        )),
        // A panic inside the renderer is a malformed file.
        Ok(_) => std::panic::catch_unwind(move || render::rasterize(pdf))
            .unwrap_or(Err(render::PdfError::Unreadable))
            .map_err(|e| e.to_string()),
    };
    let mut stdout = std::io::stdout().lock();
    match result {
        Ok(pages) => {
            if stdout.write_all(&encode_pages(&pages)).is_err() {
                return std::process::ExitCode::FAILURE;
            }
            std::process::ExitCode::SUCCESS
        }
        Err(message) => {
            let _ = stdout.write_all(message.as_bytes());
            std::process::ExitCode::from(REFUSED as u8)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_survive_the_framing_and_a_truncated_answer_does_not_parse() {
        let pages = vec![b"one".to_vec(), Vec::new(), vec![7u8; 300]];
        let wire = encode_pages(&pages);
        assert_eq!(decode_pages(&wire), Some(pages));
        assert_eq!(decode_pages(&wire[..wire.len() - 1]), None);
        let mut longer = wire.clone();
        longer.push(0);
        assert_eq!(decode_pages(&longer), None);
        assert_eq!(decode_pages(&[]), None);
    }

    fn sh(script: &str) -> ChildRasterizer {
        ChildRasterizer::new("/bin/sh".into(), vec!["-c".into(), script.into()])
    }

    #[tokio::test]
    async fn a_child_past_its_wall_clock_is_killed_and_the_document_is_too_complex() {
        let started = std::time::Instant::now();
        let out = sh("cat > /dev/null; sleep 30")
            .with_limits(LIMIT_MEMORY_BYTES, 1)
            .rasterize(b"%PDF".to_vec())
            .await;
        assert_eq!(out, Err(PdfError::too_complex()));
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn a_child_spinning_past_its_cpu_limit_is_stopped() {
        let out = sh("while :; do :; done")
            .with_limits(LIMIT_MEMORY_BYTES, 1)
            .rasterize(Vec::new())
            .await;
        assert_eq!(out, Err(PdfError::too_complex()));
    }

    #[tokio::test]
    async fn a_child_past_its_address_space_fails_to_allocate_and_the_document_is_too_complex() {
        let Some(python) = ["/usr/bin/python3", "/usr/local/bin/python3"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())
        else {
            panic!("the memory-limit test needs python3 at /usr/bin or /usr/local/bin");
        };
        // Holds 400 MiB, then answers "no pages" (a zero page count).
        let script = "b = bytearray(400 << 20); import sys; sys.stdout.buffer.write(bytes(4))";
        let child = || ChildRasterizer::new(python.into(), vec!["-c".into(), script.into()]);
        // The control: with 1 GiB the child holds it and answers.
        assert_eq!(child().rasterize(Vec::new()).await, Ok(Vec::new()));
        let out = child()
            .with_limits(256 << 20, LIMIT_SECONDS)
            .rasterize(Vec::new())
            .await;
        assert_eq!(out, Err(PdfError::too_complex()));
    }

    #[tokio::test]
    async fn a_refusal_is_relayed_with_its_message_and_a_malformed_answer_is_ours() {
        let out = sh("cat > /dev/null; printf 'the PDF has 60 pages'; exit 2")
            .rasterize(b"%PDF".to_vec())
            .await;
        assert_eq!(out, Err(PdfError::Refused("the PDF has 60 pages".into())));
        let out = sh("cat > /dev/null; printf 'xx'")
            .rasterize(Vec::new())
            .await;
        assert!(matches!(out, Err(PdfError::Unavailable(_))), "{out:?}");
        let missing = ChildRasterizer::new("/nonexistent/reelgate".into(), Vec::new())
            .rasterize(Vec::new())
            .await;
        assert!(
            matches!(missing, Err(PdfError::Unavailable(_))),
            "{missing:?}"
        );
    }
}
