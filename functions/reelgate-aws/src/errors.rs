//! Shared classification of SDK errors.

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};

/// A service error's code (for example `ValidationException`), when the service answered.
pub(crate) fn service_code<E: ProvideErrorMetadata, R>(err: &SdkError<E, R>) -> Option<&str> {
    match err {
        SdkError::ServiceError(e) => e.err().code(),
        _ => None,
    }
}

/// One line that says what went wrong, with the service's code and message when there are some.
pub(crate) fn describe<E, R>(err: &SdkError<E, R>) -> String
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    match err {
        SdkError::ServiceError(e) => {
            let e = e.err();
            format!(
                "{}: {}",
                e.code().unwrap_or("service error"),
                e.message().unwrap_or("no message")
            )
        }
        other => {
            // The display of a dispatch or timeout failure is terse; its sources say why.
            let mut text = other.to_string();
            let mut source = std::error::Error::source(other);
            while let Some(s) = source {
                text.push_str(": ");
                text.push_str(&s.to_string());
                source = s.source();
            }
            text
        }
    }
}
