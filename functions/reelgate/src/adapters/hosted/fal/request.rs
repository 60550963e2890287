//! What is sent to fal: the endpoint for a render request and the model's input for it, in the
//! model's own field names and values (the nearest duration, aspect ratio and resolution it
//! takes).

use super::models::{DurationStyle, Endpoint, Mode, Model};
use crate::ports::engine::{EngineError, RenderRequest};
use serde_json::{json, Map, Value};

impl Model {
    /// The endpoint and model input for `request`.
    /// Whether to ask for a soundtrack is `audio` (models with an `audio` field).
    pub(super) fn plan(
        &self,
        request: &RenderRequest,
        audio: bool,
    ) -> Result<(&Endpoint, Value), EngineError> {
        let inputs = &request.inputs;
        let carried: Vec<&str> = [
            ("first_frame", inputs.first_frame_url.is_some()),
            ("last_frame", inputs.last_frame_url.is_some()),
            ("reference_images", !inputs.reference_image_urls.is_empty()),
            ("video", inputs.source.is_some()),
        ]
        .into_iter()
        .filter_map(|(thing, present)| present.then_some(thing))
        .collect();
        // A source goes to the model's endpoint for its operation; anything else to the first
        // endpoint that takes what the request carries.
        let wanted = inputs.source.as_ref().map(|s| {
            if s.operation == reelgate_engine::protocol::operations::EXTENSION {
                Mode::Extension
            } else {
                Mode::VideoToVideo
            }
        });
        let (_, endpoint) = self
            .endpoints
            .iter()
            .find(|(mode, endpoint)| {
                wanted.map_or(!mode.takes_source(), |w| **mode == w)
                    && mode.needs().iter().all(|n| carried.contains(n))
                    && carried.iter().all(|c| endpoint.fields.contains_key(c))
            })
            .ok_or_else(|| {
                if let Some(source) = &inputs.source {
                    return EngineError::Rejected(format!(
                        "the fal model has no {} endpoint for {}",
                        source.operation,
                        carried.join(" and ")
                    ));
                }
                EngineError::Rejected(format!(
                    "the fal model takes no request with {}",
                    if carried.is_empty() {
                        "a prompt alone".to_owned()
                    } else {
                        carried.join(" and ")
                    }
                ))
            })?;
        let mut body = Map::new();
        let mut put = |thing: &str, value: Value| {
            if let Some(field) = endpoint.fields.get(thing) {
                body.insert(field.clone(), value);
            }
        };
        put("prompt", json!(request.prompt));
        put("duration", json!(self.duration(endpoint, request.seconds)));
        if let Some(ratio) = self.aspect_ratio(request.width, request.height) {
            put("aspect_ratio", json!(ratio));
        }
        put(
            "resolution",
            json!(self.resolution(request.width.min(request.height))),
        );
        put("audio", json!(audio));
        if let Some(url) = &inputs.first_frame_url {
            put("first_frame", json!(url));
        }
        if let Some(url) = &inputs.last_frame_url {
            put("last_frame", json!(url));
        }
        if !inputs.reference_image_urls.is_empty() {
            put("reference_images", json!(inputs.reference_image_urls));
        }
        if let Some(source) = &inputs.source {
            put("video", json!(source.video_url));
        }
        Ok((endpoint, Value::Object(body)))
    }

    /// The endpoint's duration for a native render of `seconds`.
    fn duration(&self, endpoint: &Endpoint, seconds: u32) -> String {
        let durations = endpoint.durations.unwrap_or(self.durations);
        let seconds = durations
            .iter()
            .copied()
            .filter(|d| *d >= seconds)
            .min()
            .or_else(|| durations.iter().copied().max())
            .unwrap_or(seconds);
        match self.duration_style {
            DurationStyle::Digits => seconds.to_string(),
            DurationStyle::Seconds => format!("{seconds}s"),
        }
    }

    /// The model's aspect ratio nearest a frame of `width`x`height`.
    fn aspect_ratio(&self, width: u32, height: u32) -> Option<&'static str> {
        let shape = |w: f64, h: f64| (w.max(1.0) / h.max(1.0)).ln();
        let wanted = shape(f64::from(width), f64::from(height));
        self.aspect_ratios
            .iter()
            .copied()
            .filter_map(|r| {
                let (w, h) = r.split_once(':')?;
                Some((r, shape(w.parse().ok()?, h.parse().ok()?)))
            })
            .min_by(|a, b| {
                (a.1 - wanted)
                    .abs()
                    .partial_cmp(&(b.1 - wanted).abs())
                    .unwrap_or(std::cmp::Ordering::Equal)
            })
            .map(|(r, _)| r)
    }

    /// The model's resolution tier for a frame whose short side is `short`: the smallest at or
    /// above it, else the largest.
    fn resolution(&self, short: u32) -> String {
        let tiers = self.resolutions;
        tiers
            .iter()
            .find(|(side, _)| *side >= short)
            .or(tiers.last())
            .map(|(_, name)| (*name).to_owned())
            .unwrap_or_else(|| format!("{short}p"))
    }
}
