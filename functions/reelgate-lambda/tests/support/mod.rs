//! What more than one of this crate's test files needs.

/// Whether a request to `url` (a path, with or without a query) matches the path template
/// `template`: each `{param}` takes one non-empty segment. `/v1/videos/models` also matches
/// `/v1/videos/{video_id}`; API Gateway sends it to the more specific path's function.
pub fn matches_template(template: &str, url: &str) -> bool {
    let path = url.split('?').next().unwrap_or_default();
    let (t, u): (Vec<_>, Vec<_>) = (template.split('/').collect(), path.split('/').collect());
    t.len() == u.len()
        && t.iter()
            .zip(&u)
            .all(|(t, u)| (t.starts_with('{') && !u.is_empty()) || t == u)
}
