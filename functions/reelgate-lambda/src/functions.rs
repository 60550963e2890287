//! The manifest of the Lambda binaries: which route path, workflow step or queue each one serves.
//! `infra/template.yaml` declares one function per entry (chat, responses and the console have a
//! second, streaming function from the same binary); `tests/infra_consistency.rs` keeps the
//! manifest, the
//! template, `src/bin/` and `reelgate::api::API_ROUTES` in agreement, and the emulator test
//! deploys from it.

/// What a binary serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Serves {
    /// Every method of one API path (API Gateway routes each method here). `stream` marks the
    /// paths whose answers may be SSE streams: the template also gives their binary a function
    /// URL in `RESPONSE_STREAM` mode.
    Http { path: &'static str, stream: bool },
    /// One state of `statemachine/video.asl.json`, by its `ReelgateStep` name.
    Step {
        step: &'static str,
        placeholder: &'static str,
    },
    /// The render queue's consumer.
    RenderWorker,
    /// The webhook queue's consumer (`reelgate::domain::webhooks::deliver`).
    WebhookWorker,
    /// EventBridge's "execution status change" of the state machine (failed, timed out,
    /// aborted): fails a job its execution left running, unbilled.
    ExecutionEnded,
    /// The console playground: every method of [`CONSOLE_PATHS`] (pages, JSON routes, sign-in).
    Console,
}

/// The HTTP API paths of the console function (API Gateway's greedy `{proxy+}` covers every page
/// and route under `/console/`).
pub const CONSOLE_PATHS: &[&str] = &["/console", "/console/{proxy+}"];

/// The console route whose answers may be SSE streams (the chat page): the template gives the
/// console binary a streaming twin for it, as for the streamed API paths, and the distribution
/// sends this path to the twin's function URL.
pub const CONSOLE_STREAM_PATH: &str = "/console/api/chat/completions";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LambdaFunction {
    /// The binary (`src/bin/<binary>.rs`), also the `BuildProperties.Binary` in the template.
    pub binary: &'static str,
    /// The function's logical id in `infra/template.yaml`.
    pub logical_id: &'static str,
    pub serves: Serves,
}

const fn http(
    binary: &'static str,
    logical_id: &'static str,
    path: &'static str,
) -> LambdaFunction {
    LambdaFunction {
        binary,
        logical_id,
        serves: Serves::Http {
            path,
            stream: false,
        },
    }
}

const fn streamed(
    binary: &'static str,
    logical_id: &'static str,
    path: &'static str,
) -> LambdaFunction {
    LambdaFunction {
        binary,
        logical_id,
        serves: Serves::Http { path, stream: true },
    }
}

const fn step(
    binary: &'static str,
    logical_id: &'static str,
    step: &'static str,
    placeholder: &'static str,
) -> LambdaFunction {
    LambdaFunction {
        binary,
        logical_id,
        serves: Serves::Step { step, placeholder },
    }
}

pub const FUNCTIONS: &[LambdaFunction] = &[
    http("api-files", "ApiFilesFunction", "/v1/files"),
    http(
        "api-file-item",
        "ApiFileItemFunction",
        "/v1/files/{file_id}",
    ),
    http(
        "api-file-content",
        "ApiFileContentFunction",
        "/v1/files/{file_id}/content",
    ),
    http("api-uploads", "ApiUploadsFunction", "/v1/uploads"),
    http(
        "api-upload-complete",
        "ApiUploadCompleteFunction",
        "/v1/uploads/{upload_id}/complete",
    ),
    http("api-videos", "ApiVideosFunction", "/v1/videos"),
    http(
        "api-video-models",
        "ApiVideoModelsFunction",
        "/v1/videos/models",
    ),
    http(
        "api-video-acceptance",
        "ApiVideoAcceptanceFunction",
        "/v1/videos/acceptance",
    ),
    http(
        "api-video-item",
        "ApiVideoItemFunction",
        "/v1/videos/{video_id}",
    ),
    http(
        "api-video-content",
        "ApiVideoContentFunction",
        "/v1/videos/{video_id}/content",
    ),
    http(
        "api-video-thumbnail",
        "ApiVideoThumbnailFunction",
        "/v1/videos/{video_id}/thumbnail",
    ),
    http(
        "api-video-cancel",
        "ApiVideoCancelFunction",
        "/v1/videos/{video_id}/cancel",
    ),
    http("api-webhooks", "ApiWebhooksFunction", "/v1/webhooks"),
    http(
        "api-webhook-item",
        "ApiWebhookItemFunction",
        "/v1/webhooks/{webhook_id}",
    ),
    http(
        "api-webhook-rotate-secret",
        "ApiWebhookRotateSecretFunction",
        "/v1/webhooks/{webhook_id}/rotate_secret",
    ),
    http("api-usage", "ApiUsageFunction", "/v1/usage"),
    http("api-models", "ApiModelsFunction", "/v1/models"),
    http("api-openapi", "ApiOpenApiFunction", "/openapi.json"),
    http(
        "api-model-item",
        "ApiModelItemFunction",
        "/v1/models/{model}",
    ),
    streamed(
        "api-chat-completions",
        "ApiChatCompletionsFunction",
        "/v1/chat/completions",
    ),
    streamed("api-responses", "ApiResponsesFunction", "/v1/responses"),
    http(
        "api-response-item",
        "ApiResponseItemFunction",
        "/v1/responses/{response_id}",
    ),
    http(
        "api-response-input-items",
        "ApiResponseInputItemsFunction",
        "/v1/responses/{response_id}/input_items",
    ),
    step(
        "step-moderate",
        "StepModerateFunction",
        "moderate",
        "ModerateFunctionArn",
    ),
    step(
        "step-translate",
        "StepTranslateFunction",
        "translate",
        "TranslateFunctionArn",
    ),
    step(
        "step-finalize",
        "StepFinalizeFunction",
        "finalize",
        "FinalizeFunctionArn",
    ),
    step(
        "step-fail-job",
        "StepFailJobFunction",
        "fail_job",
        "FailJobFunctionArn",
    ),
    LambdaFunction {
        binary: "render-worker",
        logical_id: "RenderWorkerFunction",
        serves: Serves::RenderWorker,
    },
    LambdaFunction {
        binary: "webhook-worker",
        logical_id: "WebhookWorkerFunction",
        serves: Serves::WebhookWorker,
    },
    LambdaFunction {
        binary: "console",
        logical_id: "ConsoleFunction",
        serves: Serves::Console,
    },
    LambdaFunction {
        binary: "execution-ended",
        logical_id: "ExecutionEndedFunction",
        serves: Serves::ExecutionEnded,
    },
];

/// The logical id of the streaming twin of a streamed HTTP function and of the console
/// function (for [`CONSOLE_STREAM_PATH`]).
pub fn stream_logical_id(f: &LambdaFunction) -> Option<String> {
    match f.serves {
        Serves::Http { stream: true, .. } | Serves::Console => {
            Some(f.logical_id.replace("Function", "StreamFunction"))
        }
        _ => None,
    }
}

/// The function serving `path`.
pub fn for_path(path: &str) -> Option<&'static LambdaFunction> {
    FUNCTIONS
        .iter()
        .find(|f| matches!(f.serves, Serves::Http { path: p, .. } if p == path))
}

/// The function running `step`.
pub fn for_step(name: &str) -> Option<&'static LambdaFunction> {
    FUNCTIONS
        .iter()
        .find(|f| matches!(f.serves, Serves::Step { step, .. } if step == name))
}
