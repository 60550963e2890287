//! What fal answers: the render id of a submitted request, the queue's status, and why a
//! completed request failed (a content refusal, a model error, a request error).

use super::super::{path_segment, Answer, ProviderApi};
use super::models::Endpoint;
use crate::ports::engine::{EngineError, Render, RenderStatus, CONTENT_REFUSED};
use reelgate_engine::protocol::{codes, RenderError};
use serde_json::Value;

/// The render id for a submitted request: its path under the queue base, from the
/// `status_url` fal returned (on the API origin only), else from the endpoint's owner and
/// app and the `request_id`.
pub(super) fn render_id(
    api: &ProviderApi,
    endpoint: &Endpoint,
    answer: &Value,
) -> Result<String, EngineError> {
    let request_id = answer["request_id"].as_str().ok_or_else(|| {
        EngineError::Rejected("fal's answer to the submit has no request_id".into())
    })?;
    let path = match answer["status_url"].as_str() {
        Some(status_url) => {
            let prefix = api.url("/");
            let path = status_url
                .split(['?', '#'])
                .next()
                .unwrap_or_default()
                .strip_prefix(&prefix)
                .and_then(|p| p.strip_suffix("/status"))
                .filter(|_| api.on_api_origin(status_url))
                .ok_or_else(|| {
                    EngineError::Rejected("fal's status_url is not on the queue's origin".into())
                })?;
            path.to_owned()
        }
        None => {
            let app: Vec<&str> = endpoint.path.split('/').take(2).collect();
            format!("{}/requests/{}", app.join("/"), path_segment(request_id)?)
        }
    };
    checked_render_id(&path).map(str::to_owned)
}

/// A render id is `{owner}/{app}/requests/{request_id}` (or deeper, as fal's `status_url`
/// names it): URL-safe segments only, so it can never reshape a path.
pub(super) fn checked_render_id(id: &str) -> Result<&str, EngineError> {
    let segments: Vec<&str> = id.split('/').collect();
    if segments.len() < 4
        || segments[segments.len() - 2] != "requests"
        || segments.iter().any(|s| path_segment(s).is_err())
    {
        return Err(EngineError::Rejected(format!(
            "unusable fal request path {:?}",
            id.chars().take(120).collect::<String>()
        )));
    }
    Ok(id)
}

pub(super) fn render(
    id: &str,
    status: RenderStatus,
    error: Option<RenderError>,
    result_url: Option<&str>,
) -> Render {
    Render {
        id: id.to_owned(),
        progress: if status == RenderStatus::Succeeded {
            100
        } else {
            0
        },
        status,
        error,
        result_url: result_url.map(str::to_owned),
        created_at: 0,
    }
}

pub(super) fn engine_failure(message: String) -> RenderError {
    RenderError {
        code: codes::ENGINE_FAILURE.into(),
        message,
    }
}

/// The content refusal in a model error body (`{"detail": [{"type":
/// "content_policy_violation", …}]}`), if that is what it is.
pub(super) fn content_refusal(body: &Value) -> Option<String> {
    let details = body["detail"].as_array()?;
    let refused = details
        .iter()
        .find(|d| d["type"].as_str() == Some("content_policy_violation"))?;
    let mut message = "the provider's content checker refused the input".to_owned();
    if let Some(field) = refused["loc"].as_array().and_then(|l| l.last()) {
        let field = field
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| field.to_string());
        message.push_str(&format!(" ({field})"));
    }
    Some(message)
}

/// Why a completed request failed, from its result's error answer: a content refusal, a model
/// error (4xx other than 404, 408 and 429) or a request error fal names with `error_type`; none
/// for an answer of the queue itself (404, 408, 429, a 5xx without `error_type`).
pub(super) fn failure_of(answer: &Answer) -> Option<RenderError> {
    let body: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
    if let Some(message) = content_refusal(&body) {
        return Some(RenderError {
            code: CONTENT_REFUSED.into(),
            message,
        });
    }
    let detail = || match &body["detail"] {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|d| {
                format!(
                    "{}: {}",
                    d["type"].as_str().unwrap_or("error"),
                    d["msg"].as_str().unwrap_or_default()
                )
            })
            .collect::<Vec<_>>()
            .join("; "),
        _ => super::super::error_detail(&answer.body),
    };
    let error_type = body["error_type"].as_str();
    match answer.status {
        404 | 408 | 429 => None,
        400..=499 => Some(engine_failure(format!(
            "HTTP {}: {}",
            answer.status,
            detail()
        ))),
        _ => error_type.map(|t| engine_failure(format!("{t}: {}", detail()))),
    }
}

/// fal's queue status as a render (a completed one still needs its result read).
pub(super) fn status_of(render_id: &str, status: &Value) -> Render {
    let state = match status["status"].as_str().unwrap_or_default() {
        "IN_QUEUE" => RenderStatus::Queued,
        "IN_PROGRESS" => RenderStatus::Rendering,
        "COMPLETED" => RenderStatus::Succeeded,
        _ => RenderStatus::Unknown,
    };
    // A completed request that failed may say so in the status itself.
    let failed = state == RenderStatus::Succeeded
        && (status["error"].as_str().is_some() || status["error_type"].as_str().is_some());
    if failed {
        let kind = status["error_type"].as_str().unwrap_or("error");
        let error = if kind == "content_policy_violation" {
            RenderError {
                code: CONTENT_REFUSED.into(),
                message: "the provider's content checker refused the input".into(),
            }
        } else {
            engine_failure(format!(
                "{kind}: {}",
                status["error"].as_str().unwrap_or_default()
            ))
        };
        return render(render_id, RenderStatus::Failed, Some(error), None);
    }
    render(render_id, state, None, None)
}
