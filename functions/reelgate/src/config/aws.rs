//! The AWS hosts' resources: table, bucket, queues, state machine, secrets, PDF function.

use super::vars::Vars;

/// Where the AWS adapters find their resources (only the AWS hosts require them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AwsResources {
    pub table: Option<String>,
    pub bucket: Option<String>,
    pub render_queue_url: Option<String>,
    /// `REELGATE_WEBHOOK_QUEUE_URL`: the webhook delivery queue (none: no webhooks are sent).
    pub webhook_queue_url: Option<String>,
    pub state_machine_arn: Option<String>,
    pub secrets_arn: Option<String>,
    /// `REELGATE_ORIGIN_SECRET_ARN`: read like `secrets_arn`, for the origin secret.
    pub origin_secret_arn: Option<String>,
    /// `REELGATE_ENGINE_SECRETS_ARN`: read like `secrets_arn`, for the hosted video providers'
    /// keys (set only on the render worker and the cancel route).
    pub engine_secrets_arn: Option<String>,
    /// `REELGATE_PDF_FUNCTION`: the Lambda function that renders PDF inputs to page images
    /// (none: a function that declares the PDF port cannot render).
    pub pdf_function: Option<String>,
}

impl AwsResources {
    pub(super) fn from_vars(vars: &Vars) -> AwsResources {
        AwsResources {
            table: vars.text("REELGATE_TABLE"),
            bucket: vars.text("REELGATE_BUCKET"),
            render_queue_url: vars.text("REELGATE_RENDER_QUEUE_URL"),
            webhook_queue_url: vars.text("REELGATE_WEBHOOK_QUEUE_URL"),
            state_machine_arn: vars.text("REELGATE_STATE_MACHINE_ARN"),
            secrets_arn: vars.text("REELGATE_SECRETS_ARN"),
            origin_secret_arn: vars.text("REELGATE_ORIGIN_SECRET_ARN"),
            engine_secrets_arn: vars.text("REELGATE_ENGINE_SECRETS_ARN"),
            pdf_function: vars.text("REELGATE_PDF_FUNCTION"),
        }
    }
}
