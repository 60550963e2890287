use super::*;
use crate::domain::messages::body::MessageCreateRequest;
use crate::ports::fetch::{FetchError, Fetched};
use async_trait::async_trait;
use rust_decimal::Decimal;
use std::sync::Mutex;

/// A fake fetcher: serves one PNG for any URL and records what it was asked.
#[derive(Default)]
struct FakeFetcher {
    asked: Mutex<Vec<String>>,
}

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

#[async_trait]
impl Fetcher for FakeFetcher {
    async fn fetch(&self, url: &str, _max: u64) -> Result<Fetched, FetchError> {
        self.asked.lock().unwrap().push(url.to_owned());
        if url.contains("169.254") {
            return Err(FetchError::Refused);
        }
        Ok(Fetched {
            bytes: PNG.to_vec(),
            content_type: None,
        })
    }
    async fn post(&self, _: &str, _: &[(&str, String)], _: Vec<u8>) -> Result<u16, FetchError> {
        Err(FetchError::Refused)
    }
    async fn check(&self, _: &str) -> Result<(), FetchError> {
        Ok(())
    }
}

fn model(capabilities: &[&str]) -> ChatModel {
    ChatModel {
        id: "m".into(),
        upstream: "u".into(),
        upstream_model: None,
        deployments: Vec::new(),
        capabilities: capabilities.iter().map(|c| (*c).to_owned()).collect(),
        reasoning_efforts: vec!["low".into(), "high".into()],
        context_window: 1000,
        input_per_million: Decimal::ZERO,
        output_per_million: Decimal::ZERO,
        cached_input_per_million: None,
        cache_write_per_million: None,
        auto_cache: false,
        cache_min_tokens: None,
        currency: "usd".into(),
        owned_by: None,
    }
}

/// Which route: a message to answer, or a prompt to count.
#[derive(Clone, Copy)]
enum Purpose {
    Create,
    CountTokens,
}

/// `body` read as the edge reads it, then translated for `model` through the chat translation.
async fn to_chat(
    fetcher: &dyn Fetcher,
    pdf: &dyn PdfRasterizer,
    model: &ChatModel,
    body: Value,
    purpose: Purpose,
) -> ApiResult<Translated> {
    let bytes = serde_json::to_vec(&body).expect("JSON");
    let request = match purpose {
        Purpose::Create => MessagesRequest::Create(crate::domain::params::read_body::<
            MessageCreateRequest,
        >(&bytes)?),
        Purpose::CountTokens => MessagesRequest::CountTokens(crate::domain::params::read_body::<
            MessageCountTokensRequest,
        >(&bytes)?),
    };
    super::translate(fetcher, pdf, model, request, Served::Translated).await
}

async fn translate(body: Value) -> ApiResult<Translated> {
    to_chat(
        &FakeFetcher::default(),
        &crate::ports::pdf::NoRasterizer,
        &model(&["text", "tools", "vision"]),
        body.clone(),
        Purpose::Create,
    )
    .await
}

#[tokio::test]
async fn a_tool_round_trip_becomes_chat_messages_in_order() {
    let t = translate(json!({
        "model": "m", "max_tokens": 100, "system": [{"type": "text", "text": "Be brief."}],
        "stop_sequences": ["END"], "metadata": {"user_id": "u-1"}, "top_k": 5,
        "tools": [{"name": "get_weather", "description": "d", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
        "messages": [
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "x", "signature": "s"},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny", "is_error": false},
                {"type": "text", "text": "Thanks"}]},
        ],
    }))
    .await
    .unwrap();
    let c = &t.chat;
    assert_eq!(c["max_completion_tokens"], 100);
    assert_eq!(c["stop"], json!(["END"]));
    assert_eq!(c["user"], "u-1");
    assert_eq!(c["top_k"], 5);
    assert_eq!(c["tool_choice"], "required");
    assert_eq!(c["parallel_tool_calls"], false);
    assert_eq!(
        c["tools"][0]["function"]["parameters"],
        json!({"type": "object"})
    );
    let roles: Vec<&str> = c["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "user"]);
    assert_eq!(c["messages"][2]["content"], Value::Null);
    assert_eq!(
        c["messages"][2]["tool_calls"][0]["function"]["arguments"],
        "{\"city\":\"Paris\"}"
    );
    assert_eq!(
        c["messages"][3],
        json!({"role": "tool", "tool_call_id": "toolu_1", "content": "sunny"})
    );
    assert_eq!(t.stop_sequences, ["END"]);
}

#[tokio::test]
async fn images_arrive_as_data_urls_and_a_url_goes_through_the_fetcher() {
    let fetcher = FakeFetcher::default();
    let body = json!({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
    ]}]});
    let t = to_chat(
        &fetcher,
        &crate::ports::pdf::NoRasterizer,
        &model(&["text", "vision"]),
        body.clone(),
        Purpose::Create,
    )
    .await
    .unwrap();
    let parts = &t.chat["messages"][0]["content"];
    assert_eq!(
        parts[0]["image_url"]["url"],
        "data:image/png;base64,iVBORw0KGgo="
    );
    assert!(parts[1]["image_url"]["url"]
        .as_str()
        .unwrap()
        .starts_with("data:image/png;base64,"));
    assert_eq!(
        *fetcher.asked.lock().unwrap(),
        ["https://example.com/a.png"]
    );

    let refused = json!({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "url", "url": "http://169.254.169.254/latest"}}]}]});
    let e = to_chat(
        &fetcher,
        &crate::ports::pdf::NoRasterizer,
        &model(&["text", "vision"]),
        refused.clone(),
        Purpose::Create,
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, "url_refused");
    assert_eq!(e.param.as_deref(), Some("messages.0.content.0.source.url"));
}

#[tokio::test]
async fn a_model_without_vision_is_refused_before_anything_is_fetched() {
    let fetcher = FakeFetcher::default();
    let body = json!({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}]}]});
    let e = to_chat(
        &fetcher,
        &crate::ports::pdf::NoRasterizer,
        &model(&["text"]),
        body.clone(),
        Purpose::Create,
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, "model_capability_mismatch");
    assert!(fetcher.asked.lock().unwrap().is_empty());
}

#[tokio::test]
async fn the_messages_apis_own_rules_name_the_field() {
    for (body, param) in [
        (
            json!({"model": "m", "messages": [{"role": "user", "content": "x"}]}),
            "max_tokens",
        ),
        (
            json!({"model": "m", "max_tokens": 5, "messages": []}),
            "messages",
        ),
        (
            json!({"model": "m", "max_tokens": 5, "temperature": 1.5, "messages": [{"role": "user", "content": "x"}]}),
            "temperature",
        ),
        (
            json!({"model": "m", "max_tokens": 5, "n": 2, "messages": [{"role": "user", "content": "x"}]}),
            "n",
        ),
        (
            json!({"model": "m", "max_tokens": 5, "messages": [{"role": "system", "content": "x"}]}),
            "messages.0.role",
        ),
        (
            json!({"model": "m", "max_tokens": 5, "tools": [{"type": "web_search_20250305", "name": "w"}], "messages": [{"role": "user", "content": "x"}]}),
            "tools.0.type",
        ),
        (
            json!({"model": "m", "max_tokens": 5, "thinking": {"type": "enabled", "budget_tokens": 10}, "messages": [{"role": "user", "content": "x"}]}),
            "thinking.budget_tokens",
        ),
    ] {
        let e = translate(body).await.unwrap_err();
        assert_eq!(e.param.as_deref(), Some(param), "{}", e.message);
    }
}

#[tokio::test]
async fn a_thinking_budget_picks_the_nearest_effort_the_model_accepts() {
    for (budget, effort) in [(1024, "low"), (4000, "low"), (10_000, "high")] {
        let t = translate(json!({"model": "m", "max_tokens": 20_000, "thinking": {"type": "enabled", "budget_tokens": budget},
            "messages": [{"role": "user", "content": "x"}]}))
        .await
        .unwrap();
        assert_eq!(t.chat["reasoning_effort"], effort, "budget {budget}");
        assert_eq!(
            t.thinking_budget,
            Some(budget),
            "the exact budget rides along"
        );
    }
    let e = translate(json!({"model": "m", "max_tokens": 2000, "thinking": {"type": "enabled", "budget_tokens": 2000},
        "messages": [{"role": "user", "content": "x"}]}))
    .await
    .unwrap_err();
    assert_eq!(e.param.as_deref(), Some("thinking.budget_tokens"));
}

#[tokio::test]
async fn signed_thinking_blocks_and_the_budget_reach_the_validated_body() {
    let t = translate(json!({"model": "m", "max_tokens": 4000, "thinking": {"type": "enabled", "budget_tokens": 2000},
        "messages": [
            {"role": "user", "content": "x"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "redacted_thinking", "data": "b3BhcXVl"},
                {"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
        ]}))
    .await
    .unwrap();
    let mut t = t;
    let extensions = t.take_extensions();
    // The chat rules never see them.
    assert!(t.chat["messages"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m.get(extension::REASONING_BLOCKS).is_none()));
    // As the chat rules leave it: the same messages, one for one.
    use crate::ports::upstream::request::{ChatCompletionRequest, ChatMessage, Role};
    let mut request = ChatCompletionRequest {
        messages: [Role::User, Role::Assistant, Role::Tool]
            .map(ChatMessage::new)
            .to_vec(),
        ..ChatCompletionRequest::default()
    };
    extensions.carry(&mut request);
    let validated = serde_json::to_value(&request).unwrap();
    assert_eq!(validated[extension::THINKING_BUDGET], 2000);
    assert_eq!(
        validated["messages"][1][extension::REASONING_BLOCKS],
        json!([{"type": "thinking", "thinking": "hmm", "signature": "sig"},
               {"type": "redacted_thinking", "data": "b3BhcXVl"}])
    );
    assert!(validated["messages"][0]
        .get(extension::REASONING_BLOCKS)
        .is_none());
}

#[tokio::test]
async fn count_tokens_takes_no_max_tokens_and_estimates_text_and_tools() {
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "abcdefgh"}]});
    let t = to_chat(
        &FakeFetcher::default(),
        &crate::ports::pdf::NoRasterizer,
        &model(&["text"]),
        body.clone(),
        Purpose::CountTokens,
    )
    .await
    .unwrap();
    // 4 for the message's framing and 8 characters at four a token.
    let chat = serde_json::from_value(t.chat.clone()).expect("a chat request");
    assert_eq!(estimate_input_tokens(&chat), 6);
    let with_max =
        json!({"model": "m", "max_tokens": 3, "messages": [{"role": "user", "content": "x"}]});
    let e = to_chat(
        &FakeFetcher::default(),
        &crate::ports::pdf::NoRasterizer,
        &model(&["text"]),
        with_max,
        Purpose::CountTokens,
    )
    .await
    .unwrap_err();
    assert_eq!(e.param.as_deref(), Some("max_tokens"));
}

/// A fake fetcher serving the header of a PNG of the size its URL names (`…/WxH.png`).
struct FakeSizedPngs;

fn png_header(width: u32, height: u32) -> Vec<u8> {
    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = (crc >> 1) ^ (0xEDB8_8320 & (crc & 1).wrapping_neg());
            }
        }
        !crc
    }
    let mut ihdr = b"IHDR".to_vec();
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0d".to_vec();
    png.extend_from_slice(&ihdr);
    png.extend_from_slice(&crc32(&ihdr).to_be_bytes());
    // The decoder reads the header up to the first IDAT chunk; the pixels are never read.
    png.extend_from_slice(b"\0\0\0\0IDAT");
    png.extend_from_slice(&crc32(b"IDAT").to_be_bytes());
    png
}

#[async_trait]
impl Fetcher for FakeSizedPngs {
    async fn fetch(&self, url: &str, _max: u64) -> Result<Fetched, FetchError> {
        let size = url.rsplit('/').next().unwrap().trim_end_matches(".png");
        let (w, h) = size.split_once('x').unwrap();
        Ok(Fetched {
            bytes: png_header(w.parse().unwrap(), h.parse().unwrap()),
            content_type: None,
        })
    }
    async fn post(&self, _: &str, _: &[(&str, String)], _: Vec<u8>) -> Result<u16, FetchError> {
        Err(FetchError::Refused)
    }
    async fn check(&self, _: &str) -> Result<(), FetchError> {
        Ok(())
    }
}

#[tokio::test]
async fn a_count_measures_url_images_and_keeps_none_of_their_bytes() {
    let image = |url: &str| json!({"type": "image", "source": {"type": "url", "url": url}});
    let body = json!({"model": "m", "messages": [{"role": "user", "content": [
        image("https://img.test/1000x750.png"),
        image("https://img.test/3000x1500.png"),
        {"type": "text", "text": "what differs?"},
    ]}]});
    let t = to_chat(
        &FakeSizedPngs,
        &crate::ports::pdf::NoRasterizer,
        &model(&["text", "vision"]),
        body.clone(),
        Purpose::CountTokens,
    )
    .await
    .unwrap();
    // 1000 * 750 / 750, then 3000x1500 scaled to 1568x784 (1,640) held to 1,600.
    assert_eq!(t.measured_tokens, 1_000 + 1_600);
    let content = t.chat["messages"][0]["content"].to_string();
    assert!(!content.contains("base64"), "{content}");
    assert_eq!(t.chat["messages"][0]["content"][0]["text"], MEASURED_IMAGE);
    // A message itself still carries the image's bytes.
    let mut sent = body;
    sent["max_tokens"] = json!(10);
    let t = to_chat(
        &FakeSizedPngs,
        &crate::ports::pdf::NoRasterizer,
        &model(&["text", "vision"]),
        sent,
        Purpose::Create,
    )
    .await
    .unwrap();
    assert_eq!(t.measured_tokens, 0);
    assert!(t.chat["messages"][0]["content"]
        .to_string()
        .contains("base64"));
}

#[test]
fn a_url_source_anywhere_is_a_fetch() {
    let fetches_urls = |body: Value| {
        MessagesRequest::CountTokens(serde_json::from_value(body).expect("a count's body"))
            .fetches_urls()
    };
    let plain = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
    assert!(!fetches_urls(plain));
    let base64 = json!({"messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "x"}}]}]});
    assert!(!fetches_urls(base64));
    let nested = json!({"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
        "content": [{"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}]}]}]});
    assert!(fetches_urls(nested));
}
