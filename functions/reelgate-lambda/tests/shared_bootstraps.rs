//! A shared bootstrap started under a name that is not one of its members' (missing, another
//! bootstrap's member, a typo) must not serve anything: it ends at init, before reading its
//! configuration, with an error that names the variable and the names it takes. Runs the test
//! build's own binaries, as Lambda would start them.

use reelgate_lambda::functions::{SharedBootstrap, FUNCTIONS, FUNCTION_ENV, SHARED_BOOTSTRAPS};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The test build's binary of `shared` (target/<profile>/deps/<test> → target/<profile>/<name>).
fn binary(shared: &SharedBootstrap) -> PathBuf {
    let exe = std::env::current_exe().expect("test exe");
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("target profile dir")
        .join(shared.binary)
}

/// Starts `shared` with `name` in [`FUNCTION_ENV`] (or without it), and no AWS configuration;
/// its exit status and standard error, or None if it was still running after 20 s.
fn start(shared: &SharedBootstrap, name: Option<&str>) -> Option<(Option<i32>, String)> {
    let mut command = Command::new(binary(shared));
    command
        .env_remove(FUNCTION_ENV)
        .env("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(name) = name {
        command.env(FUNCTION_ENV, name);
    }
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", shared.binary));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().expect("waiting") {
            let out = child.wait_with_output().expect("stderr");
            return Some((
                status.code(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            ));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_shared_bootstrap_started_under_another_name_ends_at_init_naming_its_members() {
    for shared in SHARED_BOOTSTRAPS {
        // Another bootstrap's member: a function that exists, deployed on the wrong binary.
        let stranger = FUNCTIONS
            .iter()
            .find(|f| shared.member(f.binary).is_none())
            .expect("a function outside this bootstrap");
        for name in [None, Some(""), Some(stranger.binary), Some("api-models ")] {
            let ended = start(shared, name).unwrap_or_else(|| {
                panic!(
                    "{} under {name:?} was still running after 20 s: it must end at init",
                    shared.binary
                )
            });
            let (code, stderr) = ended;
            assert_eq!(code, Some(1), "{} under {name:?}: {stderr}", shared.binary);
            assert!(
                stderr.contains(FUNCTION_ENV),
                "{} under {name:?} should name {FUNCTION_ENV}: {stderr}",
                shared.binary
            );
            for member in shared.members {
                assert!(
                    stderr.contains(member.binary),
                    "{} under {name:?} should list {}: {stderr}",
                    shared.binary,
                    member.binary
                );
            }
        }
    }
}
