//! W3C trace context (`traceparent`) for one video job's trace: the create request's span
//! context is written into the workflow input, the state machine hands it to every step and to
//! the render message, and each of those spans takes it as its parent, so a job is one trace from
//! `POST /v1/videos` to `completed` (docs/observability.md).
//!
//! Everything here is a no-op without the OpenTelemetry layer (no `OTEL_EXPORTER_OTLP_ENDPOINT`):
//! spans then have no span context, [`of_span`] gives None and [`adopt`] does nothing.
//!
//! A `traceparent` that a caller sends is only a parent for its request's span: the caller picks
//! the trace id its request is filed under in the operator's tracing backend and nothing else
//! (sampling is always on, the flags it sends are not honoured). A malformed one is ignored.

use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use std::sync::atomic::{AtomicBool, Ordering};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The header (and workflow-input / message field) name.
pub const HEADER: &str = "traceparent";

/// Whether spans are exported (set once by the host that installed the exporter). Spans that
/// exist only for the traces (upstream calls, steps, render messages) are not even created
/// while this is off.
static EXPORTING: AtomicBool = AtomicBool::new(false);

pub fn set_exporting(on: bool) {
    EXPORTING.store(on, Ordering::Relaxed);
}

pub fn exporting() -> bool {
    EXPORTING.load(Ordering::Relaxed)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceParent {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
}

impl TraceParent {
    /// Parses a `traceparent` value: `00-<32 hex>-<16 hex>-<2 hex>` in lower case, neither id
    /// all zeros. A later version (`01`..`fe`) may append `-…` fields, which are ignored; `ff`
    /// is invalid. Anything else is None (ignored, never an error).
    pub fn parse(value: &str) -> Option<TraceParent> {
        let value = value.trim();
        let b = value.as_bytes();
        if b.len() < 55 || !value.is_ascii() {
            return None;
        }
        let version = &value[0..2];
        if !is_lower_hex(version) || version == "ff" {
            return None;
        }
        if version == "00" && b.len() != 55 {
            return None;
        }
        if b.len() > 55 && b[55] != b'-' {
            return None;
        }
        if b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
            return None;
        }
        let (trace, span, flags) = (&value[3..35], &value[36..52], &value[53..55]);
        if !is_lower_hex(trace) || !is_lower_hex(span) || !is_lower_hex(flags) {
            return None;
        }
        let mut trace_id = [0u8; 16];
        let mut span_id = [0u8; 8];
        hex::decode_to_slice(trace, &mut trace_id).ok()?;
        hex::decode_to_slice(span, &mut span_id).ok()?;
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        Some(TraceParent { trace_id, span_id })
    }

    /// The header value (version 00, sampled).
    pub fn format(&self) -> String {
        format!(
            "00-{}-{}-01",
            hex::encode(self.trace_id),
            hex::encode(self.span_id)
        )
    }

    pub fn trace_id_hex(&self) -> String {
        hex::encode(self.trace_id)
    }
}

fn is_lower_hex(s: &str) -> bool {
    s.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

/// The span context of `span` as a `traceparent`, when tracing is on.
pub fn of_span(span: &tracing::Span) -> Option<TraceParent> {
    if !exporting() || span.is_disabled() {
        return None;
    }
    let cx = span.context();
    let otel = cx.span();
    let sc = otel.span_context();
    sc.is_valid().then(|| TraceParent {
        trace_id: sc.trace_id().to_bytes(),
        span_id: sc.span_id().to_bytes(),
    })
}

/// The current span's `traceparent` value, when tracing is on (what a workflow input or a
/// queue message carries on).
pub fn current() -> Option<String> {
    of_span(&tracing::Span::current()).map(|p| p.format())
}

/// Renames `span`'s exported span (a request's name is known only once its route matched).
pub fn rename(span: &tracing::Span, name: String) {
    if !exporting() || span.is_disabled() {
        return;
    }
    span.context().span().update_name(name);
}

/// Makes `parent` (a `traceparent` value) the parent of `span`; a missing or malformed value
/// leaves the span a root. Call before anything runs inside the span.
pub fn adopt(span: &tracing::Span, parent: Option<&str>) {
    let Some(parent) = parent.and_then(TraceParent::parse) else {
        return;
    };
    if !exporting() || span.is_disabled() {
        return;
    }
    let remote = SpanContext::new(
        TraceId::from_bytes(parent.trace_id),
        SpanId::from_bytes(parent.span_id),
        TraceFlags::SAMPLED,
        true,
        TraceState::default(),
    );
    let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(remote));
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_traceparent_round_trips() {
        let p = TraceParent::parse(OK).expect("valid");
        assert_eq!(p.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(hex::encode(p.span_id), "00f067aa0ba902b7");
        assert_eq!(p.format(), OK);
        // Unsampled flags parse too; what we write is always sampled.
        let unsampled = OK.replace("-01", "-00");
        assert_eq!(TraceParent::parse(&unsampled).expect("valid").format(), OK);
        // Surrounding whitespace (a header value's OWS) is fine.
        assert!(TraceParent::parse(&format!(" {OK} ")).is_some());
    }

    #[test]
    fn a_later_version_may_carry_more_fields_but_not_version_ff() {
        let later = format!("cc{}-what-comes-next", &OK[2..]);
        assert!(TraceParent::parse(&later).is_some());
        assert!(TraceParent::parse(&format!("cc{}", &OK[2..])).is_some());
        assert!(TraceParent::parse(&format!("ff{}", &OK[2..])).is_none());
        assert!(TraceParent::parse(&format!("cc{}x", &OK[2..])).is_none());
    }

    #[test]
    fn malformed_values_are_ignored() {
        for bad in [
            "",
            "garbage",
            &OK[..54],
            &format!("{OK}-extra"), // version 00 has exactly four fields
            &OK.to_uppercase(),
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x",
            "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\u{e9}",
            "é0-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn with_the_layer_a_span_adopts_a_valid_parent_and_carries_it_on() {
        use opentelemetry::trace::TracerProvider as _;
        use tracing_subscriber::layer::SubscriberExt as _;
        set_exporting(true);
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("child");
            adopt(&span, Some(OK));
            let own = of_span(&span).expect("a span context");
            assert_eq!(own.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
            assert_ne!(
                hex::encode(own.span_id),
                "00f067aa0ba902b7",
                "its own span id"
            );
            let inner = span.in_scope(current).expect("carried on");
            assert_eq!(inner, own.format());
            // A malformed parent leaves a span the root of a trace of its own.
            let root = tracing::info_span!(parent: None, "root");
            adopt(&root, Some("00-not-a-traceparent"));
            let fresh = of_span(&root).expect("a span context");
            assert_ne!(fresh.trace_id, own.trace_id);
        });
    }

    #[test]
    fn without_the_tracing_layer_nothing_is_carried() {
        let span = tracing::info_span!("no layer");
        adopt(&span, Some(OK));
        assert_eq!(of_span(&span), None);
        assert_eq!(current(), None);
    }
}
