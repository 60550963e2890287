//! S3 presigned URLs signed with `aws-sigv4` alone, without the S3 client.
//!
//! A presigned URL is a pure computation over the credentials, the region, the URL and the clock,
//! so a function that only hands out links to blobs (a redirect to a video, an upload URL) needs
//! no S3 client: linking `aws-sdk-s3` for its presigner costs about 0.5 MB of bootstrap per
//! function (docs/cost.md, "Artifact sizes"). [`S3Presigner`] signs the URLs the SDK's
//! `.presigned()` signs for GetObject and PutObject, byte for byte (the tests compare the two for
//! fixed credentials and time): the same endpoint (virtual-hosted on AWS, path-style on an
//! emulator), the same `x-id` query, SigV4 in the query with an unsigned payload, and for a PUT the
//! content type as a signed header that the uploader must send. [`crate::S3BlobStore`] presigns
//! through it too, so both kinds of function hand out the same URLs.
//!
//! Not covered (the template uses none of them): FIPS and dual-stack endpoints, S3 Express, and
//! the partitions outside `aws` (China, GovCloud) without an explicit endpoint URL.

use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_credential_types::Credentials;
use aws_sigv4::http_request::{
    sign, PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest,
    SignatureLocation, SigningSettings, UriPathNormalizationMode,
};
use aws_sigv4::sign::v4;
use aws_smithy_http::label::{fmt_string, EncodingStrategy};
use aws_smithy_http::query_writer::QueryWriter;
use aws_smithy_runtime_api::client::identity::Identity;
use reelgate::ports::blobs::BlobError;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// Signs GetObject and PutObject URLs for the objects of one bucket.
#[derive(Clone, Debug)]
pub struct S3Presigner {
    credentials: Option<SharedCredentialsProvider>,
    /// The last credentials provided, reused until a refresh margin before they expire (the
    /// provider chain may fetch them over the network, as the SDK's identity cache avoids too).
    cached: Arc<Mutex<Option<Credentials>>>,
    region: Option<String>,
    endpoint_url: Option<String>,
    bucket: String,
    path_style: bool,
}

/// Credentials this close to their expiry are fetched again (the SDK's identity cache buffer).
const REFRESH_MARGIN: Duration = Duration::from_secs(10);

impl S3Presigner {
    /// `path_style` as for [`crate::S3BlobStore::new`]: the bucket in the path (an emulator)
    /// rather than in the host name. As with the SDK's client, a configuration without
    /// credentials or a region fails when a URL is asked for, not here.
    pub fn new(config: &aws_config::SdkConfig, bucket: &str, path_style: bool) -> Self {
        S3Presigner {
            credentials: config.credentials_provider(),
            cached: Arc::new(Mutex::new(None)),
            region: config.region().map(|r| r.as_ref().to_owned()),
            endpoint_url: config.endpoint_url().map(str::to_owned),
            bucket: bucket.to_owned(),
            path_style,
        }
    }

    /// A URL that GETs `key` until `ttl` from now.
    pub async fn presign_get(&self, key: &str, ttl: Duration) -> Result<String, BlobError> {
        let credentials = self.credentials().await?;
        self.sign(
            &credentials,
            Presign::Get,
            key,
            SystemTime::now(),
            expiry(ttl),
        )
    }

    /// A URL that PUTs `key` until `ttl` from now; the upload must send this `Content-Type`.
    pub async fn presign_put(
        &self,
        key: &str,
        content_type: &str,
        ttl: Duration,
    ) -> Result<String, BlobError> {
        let credentials = self.credentials().await?;
        self.sign(
            &credentials,
            Presign::Put { content_type },
            key,
            SystemTime::now(),
            expiry(ttl),
        )
    }

    async fn credentials(&self) -> Result<Credentials, BlobError> {
        let fresh = |c: &Credentials| {
            c.expiry()
                .is_none_or(|at| at > SystemTime::now() + REFRESH_MARGIN)
        };
        if let Some(c) = self.cached.lock().ok().and_then(|c| c.clone()) {
            if fresh(&c) {
                return Ok(c);
            }
        }
        let provider = self
            .credentials
            .as_ref()
            .ok_or_else(|| BlobError::Unavailable("no AWS credentials to presign with".into()))?;
        let provided = provider.provide_credentials().await.map_err(|e| {
            BlobError::Unavailable(format!("no AWS credentials to presign with: {e}"))
        })?;
        if let Ok(mut cached) = self.cached.lock() {
            *cached = Some(provided.clone());
        }
        Ok(provided)
    }

    /// The URL for `operation` on `key`, signed at `now` for `expires_in`.
    fn sign(
        &self,
        credentials: &Credentials,
        operation: Presign<'_>,
        key: &str,
        now: SystemTime,
        expires_in: Duration,
    ) -> Result<String, BlobError> {
        let failed =
            |e: &dyn std::fmt::Display| BlobError::Unavailable(format!("cannot presign: {e}"));
        let region = self
            .region
            .as_deref()
            .ok_or_else(|| BlobError::Unavailable("no AWS region to presign for".into()))?;
        let bucket_url = bucket_url(
            self.endpoint_url.as_deref(),
            region,
            &self.bucket,
            self.path_style,
        )?;
        let (method, x_id, headers) = match operation {
            Presign::Get => ("GET", "GetObject", vec![]),
            Presign::Put { content_type } => {
                ("PUT", "PutObject", vec![("content-type", content_type)])
            }
        };
        let mut url = QueryWriter::new_from_string(&format!(
            "{bucket_url}/{}",
            fmt_string(key, EncodingStrategy::Greedy)
        ))
        .map_err(|e| failed(&e))?;
        url.insert("x-id", x_id);
        let unsigned = url.build_uri().to_string();

        // S3's signing rules, as the SDK applies them to S3 (aws-runtime's SigV4 settings for a
        // presigned S3 operation): the path signed as sent, not normalised nor encoded again.
        let mut settings = SigningSettings::default();
        settings.percent_encoding_mode = PercentEncodingMode::Single;
        settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
        settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        settings.signature_location = SignatureLocation::QueryParams;
        settings.expires_in = Some(expires_in);
        let identity = Identity::from(credentials.clone());
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(region)
            .name("s3")
            .time(now)
            .settings(settings)
            .build()
            .map_err(|e| failed(&e))?
            .into();
        let request = SignableRequest::new(
            method,
            unsigned.as_str(),
            headers.into_iter(),
            SignableBody::UnsignedPayload,
        )
        .map_err(|e| failed(&e))?;
        let (instructions, _signature) =
            sign(request, &params).map_err(|e| failed(&e))?.into_parts();
        let mut signed = QueryWriter::new_from_string(&unsigned).map_err(|e| failed(&e))?;
        for (name, value) in instructions.params() {
            signed.insert(name, value);
        }
        Ok(signed.build_uri().to_string())
    }
}

#[derive(Clone, Copy, Debug)]
enum Presign<'a> {
    Get,
    Put { content_type: &'a str },
}

/// The SDK refuses an expiry under a second; so does every caller's TTL clamp.
fn expiry(ttl: Duration) -> Duration {
    ttl.max(Duration::from_secs(1))
}

/// Where the bucket's objects are, as the S3 endpoint rules resolve it for this configuration.
fn bucket_url(
    endpoint_url: Option<&str>,
    region: &str,
    bucket: &str,
    path_style: bool,
) -> Result<String, BlobError> {
    let endpoint = match endpoint_url {
        Some(url) => url.trim_end_matches('/').to_owned(),
        None if path_style => format!("https://s3.{region}.amazonaws.com"),
        None => return Ok(format!("https://{bucket}.s3.{region}.amazonaws.com")),
    };
    if path_style {
        return Ok(format!("{endpoint}/{bucket}"));
    }
    let (scheme, host) = endpoint.split_once("://").ok_or_else(|| {
        BlobError::Unavailable(format!("the S3 endpoint {endpoint} has no scheme"))
    })?;
    Ok(format!("{scheme}://{bucket}.{host}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_s3::presigning::PresigningConfig;

    const BUCKET: &str = "reelgate-media";
    const REGION: &str = "eu-west-1";

    fn credentials() -> Credentials {
        Credentials::new(
            "AKIDEXAMPLE",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            Some("session/token+with=odd&characters".into()),
            None,
            "fixed",
        )
    }

    fn sdk_config(endpoint_url: Option<&str>) -> aws_config::SdkConfig {
        let mut builder = aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new(REGION))
            .credentials_provider(SharedCredentialsProvider::new(credentials()));
        if let Some(url) = endpoint_url {
            builder = builder.endpoint_url(url);
        }
        builder.build()
    }

    fn sdk_client(config: &aws_config::SdkConfig, path_style: bool) -> aws_sdk_s3::Client {
        aws_sdk_s3::Client::from_conf(
            aws_sdk_s3::config::Builder::from(config)
                .force_path_style(path_style)
                .build(),
        )
    }

    /// 2026-11-29T12:00:00Z.
    fn fixed_time() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_953_600)
    }

    async fn sdk_get(client: &aws_sdk_s3::Client, key: &str, ttl: Duration) -> String {
        let config = PresigningConfig::builder()
            .start_time(fixed_time())
            .expires_in(ttl)
            .build()
            .expect("presigning config");
        client
            .get_object()
            .bucket(BUCKET)
            .key(key)
            .presigned(config)
            .await
            .expect("SDK presigns")
            .uri()
            .to_owned()
    }

    async fn sdk_put(
        client: &aws_sdk_s3::Client,
        key: &str,
        content_type: &str,
        ttl: Duration,
    ) -> String {
        let config = PresigningConfig::builder()
            .start_time(fixed_time())
            .expires_in(ttl)
            .build()
            .expect("presigning config");
        client
            .put_object()
            .bucket(BUCKET)
            .key(key)
            .content_type(content_type)
            .presigned(config)
            .await
            .expect("SDK presigns")
            .uri()
            .to_owned()
    }

    /// The keys the service writes, and one with every character class a key could carry.
    const KEYS: [&str; 3] = [
        "org_1/videos/video_abc/output.mp4",
        "org_1/files/file-9.thumbnail.jpg",
        "org 2/odd key+=&?é~(1)/ü.bin",
    ];

    #[tokio::test]
    async fn urls_match_the_sdk_presigner_on_aws_and_on_an_emulator() {
        let ttl = Duration::from_secs(3600);
        for (endpoint, path_style) in [
            (None, false),
            (None, true),
            (Some("http://127.0.0.1:4566/"), true),
            (Some("https://s3.example.test"), false),
        ] {
            let config = sdk_config(endpoint);
            let client = sdk_client(&config, path_style);
            let ours = S3Presigner::new(&config, BUCKET, path_style);
            for key in KEYS {
                let expected = sdk_get(&client, key, ttl).await;
                let got = ours
                    .sign(&credentials(), Presign::Get, key, fixed_time(), ttl)
                    .expect("signs");
                assert_eq!(
                    got, expected,
                    "GET {key} via {endpoint:?} path style {path_style}"
                );

                let expected = sdk_put(&client, key, "video/mp4", ttl).await;
                let put = Presign::Put {
                    content_type: "video/mp4",
                };
                let got = ours
                    .sign(&credentials(), put, key, fixed_time(), ttl)
                    .expect("signs");
                assert_eq!(
                    got, expected,
                    "PUT {key} via {endpoint:?} path style {path_style}"
                );
            }
        }
    }

    #[tokio::test]
    async fn the_expiry_and_the_signed_content_type_are_in_the_url() {
        let config = sdk_config(None);
        let ours = S3Presigner::new(&config, BUCKET, false);
        let put = Presign::Put {
            content_type: "image/png",
        };
        let url = ours
            .sign(
                &credentials(),
                put,
                KEYS[0],
                fixed_time(),
                Duration::from_secs(90),
            )
            .expect("signs");
        assert!(url.starts_with(
            "https://reelgate-media.s3.eu-west-1.amazonaws.com/org_1/videos/video_abc/output.mp4?x-id=PutObject&"
        ));
        assert!(url.contains("&X-Amz-Expires=90&"), "{url}");
        assert!(
            url.contains("&X-Amz-SignedHeaders=content-type%3Bhost&"),
            "{url}"
        );
        assert!(url.contains("&X-Amz-Date=20261129T120000Z&"), "{url}");
        // A different content type is a different signature.
        let other = Presign::Put {
            content_type: "video/mp4",
        };
        let url2 = ours
            .sign(
                &credentials(),
                other,
                KEYS[0],
                fixed_time(),
                Duration::from_secs(90),
            )
            .expect("signs");
        assert_ne!(url, url2);
    }

    #[test]
    fn a_ttl_under_a_second_signs_for_one_second() {
        assert_eq!(expiry(Duration::from_millis(10)), Duration::from_secs(1));
        assert_eq!(expiry(Duration::from_secs(600)), Duration::from_secs(600));
    }

    #[tokio::test]
    async fn a_configuration_without_credentials_or_region_fails_to_presign() {
        let no_credentials = aws_config::SdkConfig::builder()
            .region(aws_config::Region::new(REGION))
            .build();
        let no_region = aws_config::SdkConfig::builder()
            .credentials_provider(SharedCredentialsProvider::new(credentials()))
            .build();
        for config in [no_credentials, no_region] {
            let presigner = S3Presigner::new(&config, BUCKET, false);
            let url = presigner
                .presign_get(KEYS[0], Duration::from_secs(60))
                .await;
            assert!(matches!(url, Err(BlobError::Unavailable(_))), "{url:?}");
        }
    }
}
