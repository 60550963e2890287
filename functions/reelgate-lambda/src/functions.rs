//! The manifest of the Lambda binaries: which route path, workflow step or queue each one serves.
//! A function's path is its route's declaration's (`reelgate::api::operation::Operation`), never
//! restated here.
//! `infra/template.yaml` declares one function per entry (chat, responses and the console have a
//! second, streaming function from the same binary); `tests/infra_consistency.rs` keeps the
//! manifest, the
//! template, `src/bin/` and `reelgate::api::API_ROUTES` in agreement, and the emulator test
//! deploys from it.

use crate::ports::Adapters;
use reelgate::api::PathRoutes;

/// What a binary serves.
#[derive(Clone, Copy, Debug)]
pub enum Serves {
    /// Every method of one API path (API Gateway routes each method here), through `routes`:
    /// that path's handlers only. `stream` marks the paths whose answers may be SSE streams: the
    /// template also gives their binary a function URL in `RESPONSE_STREAM` mode.
    Http {
        path: &'static str,
        stream: bool,
        routes: PathRoutes,
    },
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
    /// A part of the console playground: every method of `paths` (API Gateway routes each
    /// here), through `routes`. The console is four functions, so that each links only the
    /// ports its own routes use: [`CONSOLE`] (pages, sign-in and the account's JSON routes),
    /// [`CONSOLE_VIDEOS`], [`CONSOLE_VIDEO_CANCEL`] and [`CONSOLE_CHAT`].
    Console {
        paths: &'static [&'static str],
        routes: PathRoutes,
    },
    /// The console's chat answer, [`CONSOLE_STREAM_PATH`]: a function URL in `RESPONSE_STREAM`
    /// mode, to which the distribution sends that path (no HTTP API route).
    ConsoleChat { routes: PathRoutes },
    /// The PDF renderer (`reelgate_aws::pdf_lambda`), invoked by the functions whose entry
    /// declares the PDF port; the only binary that links the renderer.
    PdfRasterizer,
}

impl Serves {
    /// The routes of a function that serves HTTP (an API path, or a part of the console); `None`
    /// for the steps, the workers, the reconciler and the PDF renderer.
    pub fn http_routes(&self) -> Option<PathRoutes> {
        match *self {
            Serves::Http { routes, .. }
            | Serves::Console { routes, .. }
            | Serves::ConsoleChat { routes } => Some(routes),
            _ => None,
        }
    }
}

/// The HTTP API paths of the console function (API Gateway's greedy `{proxy+}` covers every page
/// and route under `/console/` that a more specific path below does not).
pub const CONSOLE_PATHS: &[&str] = &[
    reelgate::api::console::CONSOLE_PAGE.path,
    "/console/{proxy+}",
];

/// The HTTP API paths of the console's video routes but cancel (API Gateway prefers them to the
/// console's greedy path, and cancel's exact path to them).
pub const CONSOLE_VIDEOS_PATHS: &[&str] = &[
    reelgate::api::console::videos::CONSOLE_LIST_VIDEOS.path,
    "/console/api/videos/{proxy+}",
];

/// The console route whose answers may be SSE streams (the chat page): [`CONSOLE_CHAT`] serves
/// it through its function URL, and the distribution sends this path there.
pub const CONSOLE_STREAM_PATH: &str = reelgate::api::console::api::CONSOLE_CHAT_COMPLETION.path;

#[derive(Clone, Copy, Debug)]
pub struct LambdaFunction {
    /// The function's name: its binary (`src/bin/<binary>.rs`, the `BuildProperties.Binary` in
    /// the template), or, for a member of a [`SharedBootstrap`], the value of [`FUNCTION_ENV`]
    /// that selects it there ([`bootstrap`] gives the binary either way).
    pub binary: &'static str,
    /// The function's logical id in `infra/template.yaml`.
    pub logical_id: &'static str,
    pub serves: Serves,
    /// The ports this function is assembled with beyond the item store (`crate::ports`): only
    /// their AWS adapters are linked into its binary. `tests/function_ports.rs` proves that
    /// every route of the function's path needs no other.
    pub adapters: Adapters,
}

const fn http(
    binary: &'static str,
    logical_id: &'static str,
    path: &'static str,
    routes: PathRoutes,
    adapters: Adapters,
) -> LambdaFunction {
    LambdaFunction {
        binary,
        logical_id,
        serves: Serves::Http {
            path,
            stream: false,
            routes,
        },
        adapters,
    }
}

const fn streamed(
    binary: &'static str,
    logical_id: &'static str,
    path: &'static str,
    routes: PathRoutes,
    adapters: Adapters,
) -> LambdaFunction {
    LambdaFunction {
        binary,
        logical_id,
        serves: Serves::Http {
            path,
            stream: true,
            routes,
        },
        adapters,
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
        adapters: Adapters::ALL,
    }
}

const fn other(
    binary: &'static str,
    logical_id: &'static str,
    serves: Serves,
    adapters: Adapters,
) -> LambdaFunction {
    LambdaFunction {
        binary,
        logical_id,
        serves,
        adapters,
    }
}

/// One constant per function, named after its name (`api-video-item` → `API_VIDEO_ITEM`),
/// which its binary passes to its runner: a binary reads only its own entry, or its
/// [`SharedBootstrap`]'s members, so it links only their routes. [`FUNCTIONS`] lists them all
/// for the tests and the tools, and [`BY_CONSTANT`] pairs each with its constant's name so
/// `tests/function_routes.rs` can check that every binary names its own.
macro_rules! manifest {
    ($($name:ident = $function:expr;)*) => {
        $(pub const $name: LambdaFunction = $function;)*
        pub const FUNCTIONS: &[LambdaFunction] = &[$($name),*];
        pub const BY_CONSTANT: &[(&str, LambdaFunction)] = &[$((stringify!($name), $name)),*];
    };
}

use reelgate::api::{
    agreement, characters, chat, console, files, messages, models, openapi, responses, uploads,
    usage, videos, webhooks,
};

manifest! {
    API_FILES = http("api-files", "ApiFilesFunction", files::CREATE_FILE.path, files::collection_route, Adapters::STORE.blobs());
    API_FILE_ITEM = http(
        "api-file-item",
        "ApiFileItemFunction",
        files::RETRIEVE_FILE.path,
        files::item_route,
        Adapters::STORE.blobs(),
    );
    API_FILE_CONTENT = http(
        "api-file-content",
        "ApiFileContentFunction",
        files::DOWNLOAD_FILE_CONTENT.path,
        files::content_route,
        Adapters::STORE.blobs(),
    );
    // Creating an upload hands out a presigned PUT URL and touches no blob itself.
    API_UPLOADS = http("api-uploads", "ApiUploadsFunction", uploads::CREATE_UPLOAD.path, uploads::collection_route, Adapters::STORE.blob_urls());
    API_UPLOAD_COMPLETE = http(
        "api-upload-complete",
        "ApiUploadCompleteFunction",
        uploads::COMPLETE_UPLOAD.path,
        uploads::complete_route,
        Adapters::STORE.blobs(),
    );
    API_VIDEOS = http("api-videos", "ApiVideosFunction", videos::CREATE_VIDEO.path, videos::collection_route, Adapters::STORE.blobs().workflow().queues());
    API_VIDEO_MODELS = http(
        "api-video-models",
        "ApiVideoModelsFunction",
        videos::LIST_VIDEO_MODELS.path,
        videos::models_route,
        Adapters::STORE,
    );
    API_VIDEO_ACCEPTANCE = http(
        "api-video-acceptance",
        "ApiVideoAcceptanceFunction",
        agreement::RETRIEVE_VIDEO_TERMS_ACCEPTANCE.path,
        agreement::acceptance_route,
        Adapters::STORE,
    );
    API_VIDEO_ITEM = http(
        "api-video-item",
        "ApiVideoItemFunction",
        videos::RETRIEVE_VIDEO.path,
        videos::item_route,
        Adapters::STORE.blobs(),
    );
    API_VIDEO_CONTENT = http(
        "api-video-content",
        "ApiVideoContentFunction",
        videos::DOWNLOAD_VIDEO_CONTENT.path,
        videos::content_route,
        Adapters::STORE.blobs(),
    );
    API_VIDEO_THUMBNAIL = http(
        "api-video-thumbnail",
        "ApiVideoThumbnailFunction",
        videos::DOWNLOAD_VIDEO_THUMBNAIL.path,
        videos::thumbnail_route,
        Adapters::STORE.blobs(),
    );
    API_VIDEO_CANCEL = http(
        "api-video-cancel",
        "ApiVideoCancelFunction",
        videos::CANCEL_VIDEO.path,
        videos::cancel_route,
        Adapters::STORE.workflow().queues().video_engines(),
    );
    API_VIDEO_CHARACTERS = http(
        "api-video-characters",
        "ApiVideoCharactersFunction",
        characters::CREATE_VIDEO_CHARACTER.path,
        characters::collection_route,
        Adapters::STORE.blobs(),
    );
    API_VIDEO_CHARACTER_ITEM = http(
        "api-video-character-item",
        "ApiVideoCharacterItemFunction",
        characters::RETRIEVE_VIDEO_CHARACTER.path,
        characters::item_route,
        Adapters::STORE.blobs(),
    );
    API_VIDEO_EDITS = http(
        "api-video-edits",
        "ApiVideoEditsFunction",
        videos::EDIT_VIDEO.path,
        videos::edits_route,
        Adapters::STORE.blobs().workflow().queues(),
    );
    API_VIDEO_EXTENSIONS = http(
        "api-video-extensions",
        "ApiVideoExtensionsFunction",
        videos::EXTEND_VIDEO.path,
        videos::extensions_route,
        Adapters::STORE.blobs().workflow().queues(),
    );
    API_VIDEO_REMIX = http(
        "api-video-remix",
        "ApiVideoRemixFunction",
        videos::REMIX_VIDEO.path,
        videos::remix_route,
        Adapters::STORE.blobs().workflow().queues(),
    );
    API_WEBHOOKS = http("api-webhooks", "ApiWebhooksFunction", webhooks::CREATE_WEBHOOK.path, webhooks::collection_route, Adapters::STORE);
    API_WEBHOOK_ITEM = http(
        "api-webhook-item",
        "ApiWebhookItemFunction",
        webhooks::RETRIEVE_WEBHOOK.path,
        webhooks::item_route,
        Adapters::STORE,
    );
    API_WEBHOOK_ROTATE_SECRET = http(
        "api-webhook-rotate-secret",
        "ApiWebhookRotateSecretFunction",
        webhooks::ROTATE_WEBHOOK_SECRET.path,
        webhooks::rotate_secret_route,
        Adapters::STORE,
    );
    API_USAGE = http("api-usage", "ApiUsageFunction", usage::GET_USAGE.path, usage::routes, Adapters::STORE);
    API_MODELS = http("api-models", "ApiModelsFunction", models::LIST_MODELS.path, models::models_route, Adapters::STORE);
    API_OPENAPI = http("api-openapi", "ApiOpenApiFunction", openapi::OPEN_API_DOCUMENT.path, openapi::routes, Adapters::STORE);
    API_MODEL_ITEM = http(
        "api-model-item",
        "ApiModelItemFunction",
        models::RETRIEVE_MODEL.path,
        models::model_item_route,
        Adapters::STORE,
    );
    API_CHAT_COMPLETIONS = streamed(
        "api-chat-completions",
        "ApiChatCompletionsFunction",
        chat::CREATE_CHAT_COMPLETION.path,
        chat::completions_route,
        Adapters::STORE.chat().blobs(),
    );
    API_MESSAGES = streamed(
        "api-messages",
        "ApiMessagesFunction",
        messages::CREATE_MESSAGE.path,
        messages::messages_route,
        Adapters::STORE.chat().blobs(),
    );
    API_MESSAGES_COUNT_TOKENS = http(
        "api-messages-count-tokens",
        "ApiMessagesCountTokensFunction",
        messages::COUNT_MESSAGE_TOKENS.path,
        messages::count_tokens_route,
        // The upstream's own counter (Bedrock's CountTokens) where it has one.
        Adapters::STORE.chat(),
    );
    API_RESPONSES = streamed(
        "api-responses",
        "ApiResponsesFunction",
        responses::CREATE_RESPONSE.path,
        responses::collection_route,
        Adapters::STORE.chat().blobs().pdf(),
    );
    API_RESPONSE_ITEM = http(
        "api-response-item",
        "ApiResponseItemFunction",
        responses::RETRIEVE_RESPONSE.path,
        responses::item_route,
        Adapters::STORE.blobs(),
    );
    API_RESPONSE_INPUT_ITEMS = http(
        "api-response-input-items",
        "ApiResponseInputItemsFunction",
        responses::LIST_RESPONSE_INPUT_ITEMS.path,
        responses::input_items_route,
        Adapters::STORE.blobs(),
    );
    STEP_MODERATE = step("step-moderate", "StepModerateFunction", "moderate", "ModerateFunctionArn");
    STEP_TRANSLATE = step(
        "step-translate",
        "StepTranslateFunction",
        "translate",
        "TranslateFunctionArn",
    );
    STEP_STITCH = step("step-stitch", "StepStitchFunction", "stitch", "StitchFunctionArn");
    STEP_FINALIZE = step("step-finalize", "StepFinalizeFunction", "finalize", "FinalizeFunctionArn");
    STEP_FAIL_JOB = step("step-fail-job", "StepFailJobFunction", "fail_job", "FailJobFunctionArn");
    RENDER_WORKER = other("render-worker", "RenderWorkerFunction", Serves::RenderWorker, Adapters::ALL);
    WEBHOOK_WORKER = other("webhook-worker", "WebhookWorkerFunction", Serves::WebhookWorker, Adapters::ALL);
    // The console's uploads presign the PUT and read the bytes back when completed.
    CONSOLE = other(
        "console",
        "ConsoleFunction",
        Serves::Console {
            paths: CONSOLE_PATHS,
            routes: console::site_routes,
        },
        Adapters::STORE.blobs(),
    );
    // The ports of the API's create, remix, extension and edit functions (`api-videos`,
    // `api-video-remix`, ...).
    CONSOLE_VIDEOS = other(
        "console-videos",
        "ConsoleVideosFunction",
        Serves::Console {
            paths: CONSOLE_VIDEOS_PATHS,
            routes: console::videos::admission_routes,
        },
        Adapters::STORE.blobs().workflow().queues(),
    );
    // As `api-video-cancel`: it stops the provider's render.
    CONSOLE_VIDEO_CANCEL = other(
        "console-video-cancel",
        "ConsoleVideoCancelFunction",
        Serves::Console {
            paths: &[reelgate::api::console::videos::CONSOLE_CANCEL_VIDEO.path],
            routes: console::videos::cancel_routes,
        },
        Adapters::STORE.workflow().queues().video_engines(),
    );
    // As `api-chat-completions`: the upstreams, and the bucket for image parts given as files.
    CONSOLE_CHAT = other(
        "console-chat",
        "ConsoleStreamFunction",
        Serves::ConsoleChat {
            routes: console::api::chat_routes,
        },
        Adapters::STORE.chat().blobs(),
    );
    PDF_RASTERIZER = other("pdf-rasterizer", "PdfRasterizerFunction", Serves::PdfRasterizer, Adapters::STORE.blobs());
    EXECUTION_ENDED = other(
        "execution-ended",
        "ExecutionEndedFunction",
        Serves::ExecutionEnded,
        Adapters::ALL,
    );
}

/// A bootstrap that several functions run: each deployed function is told which it is by
/// [`FUNCTION_ENV`] (its [`LambdaFunction::binary`] name, which the template sets) and becomes
/// that member, serving its own entry only, assembled with its own ports only (a port it does not
/// declare is [`crate::ports::Absent`], as in a binary of its own). The binary links the union of
/// its members' handlers and adapters, so a group is chosen by what that union weighs: members
/// that declare the same ports, or nearly (the store-only routes with the upload presigner), and
/// never the video codecs in a function that decodes no video. In exchange a cold `sam build`
/// makes one fat-LTO link for them instead of one each (docs/lambda-artifacts.md, "Shared
/// bootstraps for the HTTP functions"); `scripts/sam-build-sizes.sh` checks each bootstrap
/// against the size targets.
#[derive(Clone, Copy, Debug)]
pub struct SharedBootstrap {
    /// The binary, `src/bin/<binary>.rs`.
    pub binary: &'static str,
    pub members: &'static [LambdaFunction],
}

impl SharedBootstrap {
    /// The member called `name` ([`LambdaFunction::binary`]).
    pub fn member(&self, name: &str) -> Option<&'static LambdaFunction> {
        self.members.iter().find(|f| f.binary == name)
    }

    /// Its members' names, for an error that says which it takes.
    pub fn member_names(&self) -> Vec<&'static str> {
        self.members.iter().map(|f| f.binary).collect()
    }
}

/// One constant per shared bootstrap, which its binary passes to its runner; [`SHARED_BOOTSTRAPS`]
/// lists them, and [`SHARED_BY_CONSTANT`] pairs each with its constant's name for the tests.
/// A function is a member of at most one.
macro_rules! shared_bootstraps {
    ($($(#[$doc:meta])* $name:ident = $bootstrap:expr;)*) => {
        $($(#[$doc])* pub const $name: SharedBootstrap = $bootstrap;)*
        pub const SHARED_BOOTSTRAPS: &[SharedBootstrap] = &[$($name),*];
        pub const SHARED_BY_CONSTANT: &[(&str, SharedBootstrap)] =
            &[$((stringify!($name), $name)),*];
    };
}

shared_bootstraps! {
    /// The workflow steps, the two queue workers and the reconciler: every port. None serves HTTP,
    /// so no size target applies to it.
    PIPELINE = SharedBootstrap {
        binary: "pipeline",
        members: &[
            STEP_MODERATE,
            STEP_TRANSLATE,
            STEP_STITCH,
            STEP_FINALIZE,
            STEP_FAIL_JOB,
            RENDER_WORKER,
            WEBHOOK_WORKER,
            EXECUTION_ENDED,
        ],
    };

    /// The HTTP functions of the item store alone, and creating an upload, which presigns its
    /// PUT URL without the S3 client (the presigner is the one adapter the others do not use).
    STORE_ROUTES = SharedBootstrap {
        binary: "store-routes",
        members: &[
            API_UPLOADS,
            API_VIDEO_MODELS,
            API_VIDEO_ACCEPTANCE,
            API_WEBHOOKS,
            API_WEBHOOK_ITEM,
            API_WEBHOOK_ROTATE_SECRET,
            API_USAGE,
            API_MODELS,
            API_OPENAPI,
            API_MODEL_ITEM,
        ],
    };

    /// The HTTP functions of the item store and the bucket that decode no video: files, uploads'
    /// completion, a video's record and downloads, a character's record, stored responses, and the
    /// console's pages and account routes. (Creating a character decodes the caller's video, so it
    /// keeps its own bootstrap: its codecs would be in every one of these.)
    BUCKET_ROUTES = SharedBootstrap {
        binary: "bucket-routes",
        members: &[
            API_FILES,
            API_FILE_ITEM,
            API_FILE_CONTENT,
            API_UPLOAD_COMPLETE,
            API_VIDEO_ITEM,
            API_VIDEO_CONTENT,
            API_VIDEO_THUMBNAIL,
            API_VIDEO_CHARACTER_ITEM,
            API_RESPONSE_ITEM,
            API_RESPONSE_INPUT_ITEMS,
            CONSOLE,
        ],
    };

    /// The video admissions that decode no caller's video: create and remix, on the API and in the
    /// console.
    VIDEO_ADMISSION = SharedBootstrap {
        binary: "video-admission",
        members: &[API_VIDEOS, API_VIDEO_REMIX, CONSOLE_VIDEOS],
    };

    /// The video admissions that decode the caller's video before they answer: edit and extend.
    /// (Creating a character decodes one too, but with them its bootstrap measured 5.06 MB
    /// zipped on x86_64, over the target: it keeps its own.)
    VIDEO_EDIT_EXTEND = SharedBootstrap {
        binary: "video-edit-extend",
        members: &[API_VIDEO_EDITS, API_VIDEO_EXTENSIONS],
    };

    /// Cancel, on the API and in the console: it stops the provider's render.
    VIDEO_CANCEL = SharedBootstrap {
        binary: "video-cancel",
        members: &[API_VIDEO_CANCEL, CONSOLE_VIDEO_CANCEL],
    };

    /// The chat answers (chat completions, Messages and the console's chat), and counting a
    /// Messages request's tokens (the upstreams without the bucket).
    CHAT_ROUTES = SharedBootstrap {
        binary: "chat-routes",
        members: &[
            API_CHAT_COMPLETIONS,
            API_MESSAGES,
            API_MESSAGES_COUNT_TOKENS,
            CONSOLE_CHAT,
        ],
    };
}

/// The environment variable that tells a shared bootstrap which function it is (the function's
/// [`LambdaFunction::binary`] name; the template sets it on each).
pub const FUNCTION_ENV: &str = "REELGATE_FUNCTION";

/// The shared bootstrap `f` runs, if it runs one.
pub fn shared_bootstrap(f: &LambdaFunction) -> Option<&'static SharedBootstrap> {
    SHARED_BOOTSTRAPS
        .iter()
        .find(|b| b.members.iter().any(|m| m.binary == f.binary))
}

/// The binary a function runs: its own, or its [`SharedBootstrap`]'s.
pub fn bootstrap(f: &LambdaFunction) -> &'static str {
    match shared_bootstrap(f) {
        Some(shared) => shared.binary,
        None => f.binary,
    }
}

/// Every binary of this crate (`src/bin/*.rs`), each once.
pub fn bootstraps() -> std::collections::BTreeSet<&'static str> {
    FUNCTIONS.iter().map(bootstrap).collect()
}

/// The logical id of the function that streams an entry's answers through its function URL: a
/// streamed API path's twin (same binary, [`crate::RESPONSE_STREAM_ENV`] on), or the console's
/// chat function itself.
pub fn stream_logical_id(f: &LambdaFunction) -> Option<String> {
    match f.serves {
        Serves::Http { stream: true, .. } => {
            Some(f.logical_id.replace("Function", "StreamFunction"))
        }
        Serves::ConsoleChat { .. } => Some(f.logical_id.to_owned()),
        _ => None,
    }
}

/// The function serving `path`.
pub fn for_path(path: &str) -> Option<&'static LambdaFunction> {
    FUNCTIONS
        .iter()
        .find(|f| matches!(f.serves, Serves::Http { path: p, .. } if p == path))
}

/// The console function a console route (method, path template) reaches on AWS: the chat
/// answer goes to [`CONSOLE_CHAT`]'s URL (the distribution's behaviour for
/// [`CONSOLE_STREAM_PATH`]); any other to the HTTP API, which picks the console function with the
/// most specific matching path: an exact path before a greedy `{proxy+}`, a longer prefix
/// before a shorter one.
pub fn for_console_route(method: &str, path: &str) -> Option<&'static LambdaFunction> {
    if method == "POST" && path == CONSOLE_STREAM_PATH {
        return FUNCTIONS
            .iter()
            .find(|f| matches!(f.serves, Serves::ConsoleChat { .. }));
    }
    FUNCTIONS
        .iter()
        .filter_map(|f| match f.serves {
            Serves::Console { paths, .. } => paths
                .iter()
                .filter_map(|p| match p.strip_suffix("{proxy+}") {
                    Some(prefix) => path.starts_with(prefix).then_some(prefix.len()),
                    None => (*p == path).then_some(usize::MAX),
                })
                .max()
                .map(|specificity| (specificity, f)),
            _ => None,
        })
        .max_by_key(|(specificity, _)| *specificity)
        .map(|(_, f)| f)
}

/// The function running `step`.
pub fn for_step(name: &str) -> Option<&'static LambdaFunction> {
    FUNCTIONS
        .iter()
        .find(|f| matches!(f.serves, Serves::Step { step, .. } if step == name))
}
