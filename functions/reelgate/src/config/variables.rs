//! The one list of the `REELGATE_*` names: those the service reads and those the project's own
//! tooling exports. A name on neither list stops start-up.

/// Every `REELGATE_*` variable the service reads, with what it sets (docs/configuration.md has
/// the full story). Host-only variables are listed too: a name is known whichever host reads it.
pub const VARIABLES: &[(&str, &str)] = &[
    // The service.
    (
        "REELGATE_PUBLIC_URL",
        "the URL clients reach the service at",
    ),
    ("REELGATE_CATALOG", "path of the catalog TOML file"),
    ("REELGATE_MAX_UPLOAD_BYTES", "largest upload, in bytes"),
    (
        "REELGATE_PRESIGN_TTL_SECS",
        "lifetime of presigned URLs, in seconds",
    ),
    (
        "REELGATE_RENDER_POLL_SECS",
        "engine poll interval, in seconds",
    ),
    (
        "REELGATE_RENDER_VISIBILITY_SECS",
        "local server: how long a render message stays hidden while a worker handles it",
    ),
    (
        "REELGATE_IDEMPOTENCY_TTL_SECS",
        "how long an Idempotency-Key is remembered, in seconds",
    ),
    (
        "REELGATE_TRANSLATION_MODEL",
        "chat model that translates Japanese prompts",
    ),
    (
        "REELGATE_CONTENT_REDIRECT",
        "redirect content routes to blob URLs (on/off)",
    ),
    (
        "REELGATE_ACCOUNT_CACHE_SECS",
        "seconds a verified API key is trusted before it is read again",
    ),
    (
        "REELGATE_ALLOW_PRIVATE_FILE_URLS",
        "let file_url reach private addresses (on/off)",
    ),
    (
        "REELGATE_FETCH_ALLOW",
        "hosts and CIDR ranges server-side fetches may reach although private",
    ),
    (
        "REELGATE_REFERENCE_ENGINE_URL",
        "URL of the reference engine",
    ),
    (
        "REELGATE_WEBHOOK_RETRY_SECS",
        "waits between webhook delivery attempts, in seconds, comma-separated",
    ),
    (
        "REELGATE_CONSOLE_LINK_TTL_SECS",
        "how long a console sign-in link stays valid, in seconds",
    ),
    ("REELGATE_MODERATOR", "rules or openai"),
    (
        "REELGATE_MODERATION_RULES",
        "path of the rule moderator's TOML file",
    ),
    (
        "REELGATE_MODERATION_BASE_URL",
        "base URL of the OpenAI-compatible moderator",
    ),
    (
        "REELGATE_MODERATION_MODEL",
        "model of the OpenAI-compatible moderator",
    ),
    (
        "REELGATE_MODERATION_API_KEY",
        "key of the OpenAI-compatible moderator",
    ),
    (
        "REELGATE_UPSTREAM_BASE_URL",
        "quick-start OpenAI-compatible chat upstream",
    ),
    (
        "REELGATE_UPSTREAM_API_KEY",
        "key of the quick-start chat upstream",
    ),
    (
        "REELGATE_UPSTREAM_CAPABILITIES",
        "capabilities of the quick-start upstream's models",
    ),
    ("REELGATE_LOG", "log filter"),
    (
        "REELGATE_LOG_FORMAT",
        "json for JSON log lines (local server)",
    ),
    (
        "REELGATE_METRICS_TOKEN",
        "bearer token of GET /metrics (unset: the route is off)",
    ),
    (
        "REELGATE_LOG_PROMPTS",
        "debugging only: request log lines carry prompt text",
    ),
    // The local server and the `reelgate` command (read by its argument parser).
    ("REELGATE_ADDR", "address the local server listens on"),
    ("REELGATE_DATA_DIR", "the local server's data directory"),
    (
        "REELGATE_ENGINE_PARALLEL",
        "renders the reference engine runs at once",
    ),
    (
        "REELGATE_ENGINE_FAULT_INJECTION",
        "serve the reference engine's fault switches",
    ),
    (
        "REELGATE_MAX_CONNECTIONS",
        "local server: open connections at once",
    ),
    (
        "REELGATE_MAX_IN_FLIGHT",
        "local server: requests in flight before 503 server_overloaded",
    ),
    (
        "REELGATE_SHED_LAG_MS",
        "local server: runtime lag that sheds requests, in milliseconds",
    ),
    (
        "REELGATE_SHED_FLOOR",
        "local server: requests in flight a lagging server still admits, fewer the further it lags",
    ),
    (
        "REELGATE_HEADER_TIMEOUT_SECS",
        "local server: time to send a request's headers, in seconds",
    ),
    (
        "REELGATE_WRITE_TIMEOUT_SECS",
        "local server: time one write of an answer may wait for the client to read, in seconds",
    ),
    (
        "REELGATE_CONFORM_CONCURRENCY",
        "conforms and stitches one process runs at once (default: one per core)",
    ),
    (
        "REELGATE_BODY_WAIT_SECS",
        "time a large request body waits for room in the body budget before a 503, in seconds",
    ),
    (
        "REELGATE_PDF_WAIT_SECS",
        "local server: time a PDF waits for a free renderer before a 503, in seconds",
    ),
    (
        "REELGATE_MIN_BODY_RATE",
        "local server: bytes a second a request body must average",
    ),
    ("REELGATE_BACKEND", "reelgate admin: local or aws"),
    ("REELGATE_ENGINE_ADDR", "reelgate engine: listen address"),
    (
        "REELGATE_ENGINE_PUBLIC_URL",
        "reelgate engine: its public URL",
    ),
    (
        "REELGATE_ENGINE_API_KEY_ENV",
        "reelgate engine: variable holding its key",
    ),
    // AWS.
    ("REELGATE_TABLE", "DynamoDB table"),
    ("REELGATE_BUCKET", "S3 bucket"),
    ("REELGATE_RENDER_QUEUE_URL", "SQS render queue URL"),
    (
        "REELGATE_WEBHOOK_QUEUE_URL",
        "SQS webhook delivery queue URL",
    ),
    (
        "REELGATE_STATE_MACHINE_ARN",
        "Step Functions state machine ARN",
    ),
    (
        "REELGATE_PDF_FUNCTION",
        "Lambda function that renders PDF inputs",
    ),
    (
        "REELGATE_SECRETS_ARN",
        "Secrets Manager secret with provider keys",
    ),
    (
        "REELGATE_RESPONSE_STREAM",
        "this Lambda function streams its responses (on/off)",
    ),
    (
        "REELGATE_FUNCTION",
        "which function a shared Lambda bootstrap runs (the pipeline's)",
    ),
    // The front door (docs/deploy.md).
    (
        "REELGATE_ORIGIN_SECRET",
        "refuse requests without this x-reelgate-origin-secret value",
    ),
    (
        "REELGATE_ORIGIN_SECRET_SECONDARY",
        "a second origin secret accepted during a rotation",
    ),
    (
        "REELGATE_ORIGIN_SECRET_ARN",
        "Secrets Manager secret holding the origin secret(s)",
    ),
    (
        "REELGATE_ENGINE_SECRETS_ARN",
        "Secrets Manager secret holding the hosted video providers' keys",
    ),
    // Console sign-in through OpenID Connect (docs/console.md).
    (
        "REELGATE_OIDC_ISSUER",
        "OpenID Connect issuer URL for console sign-in",
    ),
    (
        "REELGATE_OIDC_CLIENT_ID",
        "the console's client id at the OpenID Connect issuer",
    ),
    (
        "REELGATE_OIDC_CLIENT_SECRET",
        "the console's client secret at the issuer (confidential clients)",
    ),
    (
        "REELGATE_OIDC_NAME",
        "the issuer's name on the console's sign-in button",
    ),
];

/// Names the project's scripts and tests export (test.sh, the e2e harness, the emulator
/// script). The service may start inside that environment, so they are known, and ignored.
pub const TOOLING_VARIABLES: &[&str] = &[
    "REELGATE_TOOLS_DIR",
    "REELGATE_PYTHON",
    "REELGATE_BIN",
    "REELGATE_EMULATOR_PORT",
    "REELGATE_EMULATOR_WAIT",
    "REELGATE_SKIP_AWS_TESTS",
    "REELGATE_TEST_TABLE",
    "REELGATE_TEST_BUCKET",
    "REELGATE_BASE_URL",
    "REELGATE_API_KEY",
    "REELGATE_SECOND_API_KEY",
    "REELGATE_OTHER_ORG_API_KEY",
    "REELGATE_EMPTY_API_KEY",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variable_is_documented() {
        let docs = include_str!("../../../../docs/configuration.md");
        for (name, _) in VARIABLES {
            assert!(
                docs.contains(name),
                "{name} is missing from docs/configuration.md"
            );
        }
    }
}
