//! Logs and traces: the log format and the OpenTelemetry trace export (the standard `OTEL_*`
//! variables).

use std::collections::BTreeMap;

use super::vars::{ConfigError, Vars};

/// `REELGATE_LOG_FORMAT`: whether log lines are JSON.
pub(super) fn log_json(vars: &Vars) -> Result<bool, ConfigError> {
    Ok(match vars.text("REELGATE_LOG_FORMAT").as_deref() {
        None | Some("text") => false,
        Some("json") => true,
        Some(other) => {
            return Err(ConfigError::new(
                "REELGATE_LOG_FORMAT",
                format!("'{other}' is not a log format: use json or text"),
            ))
        }
    })
}

/// Where and how spans are exported over OTLP/HTTP (protobuf), from the standard variables:
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the full URL) or `OTEL_EXPORTER_OTLP_ENDPOINT` (a base
/// URL, `/v1/traces` appended), `OTEL_EXPORTER_OTLP_HEADERS` / `OTEL_EXPORTER_OTLP_TRACES_HEADERS`
/// (`name=value,…`), `OTEL_SERVICE_NAME`, `OTEL_EXPORTER_OTLP_PROTOCOL` (only `http/protobuf`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceExport {
    /// The full URL spans are POSTed to.
    pub endpoint: String,
    pub headers: Vec<(String, String)>,
    pub service_name: String,
}

/// Reads the standard OpenTelemetry exporter variables (empty values count as unset). No
/// endpoint: no export. `OTEL_SDK_DISABLED=true` turns export off even with one.
pub(super) fn trace_export(
    otel: &BTreeMap<String, String>,
) -> Result<Option<TraceExport>, ConfigError> {
    let get = |name: &str| otel.get(name).map(String::as_str);
    if get("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return Ok(None);
    }
    let endpoint = match (
        get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
        get("OTEL_EXPORTER_OTLP_ENDPOINT"),
    ) {
        (Some(full), _) => full.to_owned(),
        (None, Some(base)) => format!("{}/v1/traces", base.trim_end_matches('/')),
        (None, None) => return Ok(None),
    };
    let name = if get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some() {
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
    } else {
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    };
    match url::Url::parse(&endpoint) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {}
        _ => {
            return Err(ConfigError::new(
                name,
                "must be an http:// or https:// URL, e.g. http://127.0.0.1:4318",
            ))
        }
    }
    for protocol in [
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ] {
        match get(protocol) {
            None | Some("http/protobuf") => {}
            Some(other) => {
                return Err(ConfigError::new(
                    protocol,
                    format!("'{other}' is not supported: reelgate exports http/protobuf only"),
                ))
            }
        }
    }
    let mut headers = Vec::new();
    for list in [
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    ] {
        for pair in get(list)
            .unwrap_or("")
            .split(',')
            .filter(|p| !p.trim().is_empty())
        {
            let (k, v) = pair.split_once('=').ok_or_else(|| {
                ConfigError::new(list, "must be name=value pairs separated by commas")
            })?;
            let (k, v) = (k.trim(), percent_decode(v.trim()));
            if http::HeaderName::from_bytes(k.as_bytes()).is_err()
                || http::HeaderValue::from_str(&v).is_err()
            {
                return Err(ConfigError::new(
                    list,
                    format!("'{k}' is not a valid header"),
                ));
            }
            headers.retain(|(name, _): &(String, String)| !name.eq_ignore_ascii_case(k));
            headers.push((k.to_owned(), v));
        }
    }
    Ok(Some(TraceExport {
        endpoint,
        headers,
        service_name: get("OTEL_SERVICE_NAME").unwrap_or("reelgate").to_owned(),
    }))
}

/// `%XX` escapes in an OTLP header value (the OpenTelemetry spec's format for them).
fn percent_decode(v: &str) -> String {
    let bytes = v.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
            if let Ok(b) = u8::from_str_radix(hex, 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use crate::config::{Config, ConfigError};

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        Config::from_vars(vars.iter().map(|(n, v)| (n.to_string(), v.to_string())))
    }

    #[test]
    fn trace_export_only_with_an_endpoint() {
        assert_eq!(config(&[]).expect("none").traces, None);
        assert_eq!(
            config(&[("OTEL_SERVICE_NAME", "x")])
                .expect("no endpoint")
                .traces,
            None
        );
        let t = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318/"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "authorization=Bearer%20abc, x-team = ops",
            ),
        ])
        .expect("valid")
        .traces
        .expect("on");
        assert_eq!(t.endpoint, "http://127.0.0.1:4318/v1/traces");
        assert_eq!(t.service_name, "reelgate");
        assert_eq!(
            t.headers,
            vec![
                ("authorization".to_owned(), "Bearer abc".to_owned()),
                ("x-team".to_owned(), "ops".to_owned())
            ]
        );
        let t = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://base:4318"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "https://c.example/otlp/traces",
            ),
            ("OTEL_SERVICE_NAME", "gw"),
        ])
        .expect("valid")
        .traces
        .expect("on");
        assert_eq!(t.endpoint, "https://c.example/otlp/traces");
        assert_eq!(t.service_name, "gw");
        let off = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_SDK_DISABLED", "true"),
        ]);
        assert_eq!(off.expect("valid").traces, None);
        for (name, value) in [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "127.0.0.1:4318"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "no-equals-sign"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "bad name=v"),
        ] {
            let mut vars = vec![(name, value)];
            if name != "OTEL_EXPORTER_OTLP_ENDPOINT" {
                vars.push(("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"));
            }
            let err = config(&vars).expect_err(value);
            assert_eq!(err.variable, name, "{value}");
        }
    }
}
