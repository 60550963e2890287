//! The PDF renderer function.

use lambda_runtime::{Error, LambdaEvent};
use reelgate::config::Config;

use crate::app::init_tracing;
use crate::functions;

/// The PDF renderer function (`reelgate_aws::pdf_lambda`): renders one document per
/// invocation, within this function's memory size and timeout. It needs only the bucket: no
/// item store, no secrets, no App.
pub async fn run_pdf_rasterizer(function: &functions::LambdaFunction) -> Result<(), Error> {
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(e) => {
            let _ = init_tracing(None);
            tracing::error!(
                function = function.binary,
                error = format!("{e:#}"),
                "cannot start"
            );
            std::process::exit(1);
        }
    };
    let _ = init_tracing(None);
    let aws = reelgate_aws::AwsSettings::from_config(&config).map_err(Error::from)?;
    let sdk_config = reelgate_aws::sdk_config(&aws.region, aws.endpoint_url.as_deref()).await;
    let blobs =
        reelgate_aws::S3BlobStore::new(&sdk_config, &aws.bucket, aws.endpoint_url.is_some());
    let blobs = &blobs;
    lambda_runtime::run(lambda_runtime::service_fn(
        move |event: LambdaEvent<reelgate_aws::pdf_lambda::PdfJob>| async move {
            reelgate_aws::pdf_lambda::serve_job(blobs, &event.payload)
                .await
                .map_err(|e| Error::from(format!("{e:#}")))
        },
    ))
    .await
}
