//! A chat model served by Bedrock (Converse) through the whole gateway, on the local emulator:
//! the catalog's `bedrock` upstream kind is registered by `reelgate_aws::upstream_connector`, so
//! this test lives beside the connector rather than in the embedded host's suite. Run as
//! `tests/contract.rs` says; without `AWS_ENDPOINT_URL` it says so and passes (and fails under CI).

use reelgate::domain::catalog::{Catalog, ChatModel, UpstreamConfig, DEFAULT_CATALOG};
use reelgate::domain::chat::upstreams::Upstreams;
use reelgate_embedded::testing::TestServer;
use rust_decimal::Decimal;
use serde_json::{json, Value};
use std::str::FromStr;
use std::sync::Arc;

const INPUT_PRICE: &str = "2.50";
const OUTPUT_PRICE: &str = "10.00";

fn chat_model(id: &str, upstream: &str) -> ChatModel {
    ChatModel {
        id: id.into(),
        upstream: upstream.into(),
        upstream_model: Some("anthropic.claude-3-haiku-20240307-v1:0".into()),
        deployments: Vec::new(),
        capabilities: vec!["text".into(), "tools".into()],
        reasoning_efforts: vec!["low".into()],
        context_window: 8192,
        input_per_million: Decimal::from_str(INPUT_PRICE).expect("price"),
        output_per_million: Decimal::from_str(OUTPUT_PRICE).expect("price"),
        cached_input_per_million: None,
        cache_write_per_million: None,
        auto_cache: false,
        cache_min_tokens: None,
        currency: "usd".into(),
        owned_by: None,
    }
}

fn cost(prompt: u64, completion: u64) -> Decimal {
    (Decimal::from(prompt) * Decimal::from_str(INPUT_PRICE).expect("p")
        + Decimal::from(completion) * Decimal::from_str(OUTPUT_PRICE).expect("p"))
        / Decimal::from(1_000_000)
}

fn weather_tool() -> Value {
    json!([{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])
}

#[tokio::test]
async fn bedrock_upstream_through_the_gateway() {
    let Ok(endpoint) = std::env::var("AWS_ENDPOINT_URL") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "AWS_ENDPOINT_URL is not set under CI; scripts/test.sh starts the emulator"
        );
        eprintln!("bedrock_upstream_through_the_gateway skipped: AWS_ENDPOINT_URL is not set");
        return;
    };
    let mut catalog = Catalog::parse(DEFAULT_CATALOG).expect("catalog");
    catalog.upstreams.push(UpstreamConfig {
        id: "bedrock".into(),
        kind: "bedrock".into(),
        base_url: Some(endpoint),
        api_key_env: None,
        region: Some("us-east-1".into()),
        extra_headers: Default::default(),
    });
    catalog
        .chat_models
        .push(chat_model("claude-on-bedrock", "bedrock"));
    let server = TestServer::start_with(catalog, |app| {
        app.upstreams = Arc::new(Upstreams::with_connector(Arc::new(
            reelgate_aws::upstream_connector(),
        )));
    })
    .await;
    let tenant = server.tenant("10").await;
    let http = reqwest::Client::new();
    let body = json!({"model": "claude-on-bedrock", "messages": [
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        "tools": weather_tool(), "stop": ["END"], "max_tokens": 64});

    let r = http
        .post(server.url("/v1/chat/completions"))
        .bearer_auth(&tenant.key)
        .json(&body)
        .send()
        .await
        .expect("send");
    assert_eq!(r.status().as_u16(), 200);
    let reply: Value = r.json().await.expect("json");
    assert_eq!(reply["model"], "claude-on-bedrock");
    assert!(
        reply["choices"][0]["message"]["content"]
            .as_str()
            .is_some_and(|c| !c.is_empty()),
        "{reply}"
    );
    assert_eq!(reply["choices"][0]["finish_reason"], "stop");
    let prompt = reply["usage"]["prompt_tokens"].as_u64().expect("usage");
    let completion_tokens = reply["usage"]["completion_tokens"].as_u64().expect("usage");
    let id = reply["id"].as_str().expect("id");
    let entry = reelgate::domain::billing::token_charges::ledger_entry(
        server.app.context(),
        &tenant.org,
        id,
    )
    .await
    .expect("store")
    .expect("ledger");
    use reelgate::ports::store::ItemExt;
    assert_eq!(
        entry.decimal_attr("amount"),
        Some(cost(prompt, completion_tokens))
    );

    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    streamed["stream_options"] = json!({"include_usage": true});
    let r = http
        .post(server.url("/v1/chat/completions"))
        .bearer_auth(&tenant.key)
        .json(&streamed)
        .send()
        .await
        .expect("send");
    assert_eq!(r.status().as_u16(), 200);
    let text = r.text().await.expect("body");
    let datas: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    assert_eq!(datas.last(), Some(&"[DONE]"), "{text}");
    let chunks: Vec<Value> = datas[..datas.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).expect("json"))
        .collect();
    let content: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert!(!content.is_empty(), "{text}");
    let last = chunks.last().expect("chunks");
    assert_eq!(last["choices"], json!([]));
    assert!(last["usage"]["total_tokens"].as_u64().is_some(), "{text}");
}
