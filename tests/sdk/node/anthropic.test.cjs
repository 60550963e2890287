// The official `@anthropic-ai/sdk` npm package against the real binary's Messages API (run by
// tests/sdk/test_node_sdk.py with SDK_SERVER_URL and SDK_API_KEY; installed by
// scripts/test-tools.sh): a plain message, a stream, a streamed tool round trip, an image,
// count_tokens and an error type. SDK_MODEL picks the model (default the OpenAI-compatible
// fake's; tests/sdk/test_anthropic_sdk_bedrock.py runs it over Bedrock Converse) and
// SDK_EXPECTED_COUNT what count_tokens answers for "hello world!" (7 by reelgate's estimate).
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");
const { readFileSync } = require("node:fs");
const Anthropic = require("@anthropic-ai/sdk");

const MODEL = process.env.SDK_MODEL || "fake-model-v1";
const EXPECTED_COUNT = Number(process.env.SDK_EXPECTED_COUNT || 7);
const client = new Anthropic({ baseURL: process.env.SDK_SERVER_URL, apiKey: process.env.SDK_API_KEY, maxRetries: 0 });
const WEATHER = {
  name: "get_weather",
  description: "The weather in a city.",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};
const RESULTS = { Paris: "sunny in Paris", Tokyo: "rainy in Tokyo" };

test("a plain message", async () => {
  const m = await client.messages.create({ model: MODEL, max_tokens: 100, messages: [{ role: "user", content: "hi" }] });
  assert.match(m.id, /^msg_/);
  assert.equal(m.content[0].text, "Hello from the fake upstream.");
  assert.equal(m.stop_reason, "end_turn");
  assert.deepEqual([m.usage.input_tokens, m.usage.output_tokens], [10, 5]);
});

test("a streamed message's text deltas and final usage", async () => {
  const stream = client.messages.stream({ model: MODEL, max_tokens: 100, messages: [{ role: "user", content: "hi" }] });
  const deltas = [];
  stream.on("text", (t) => deltas.push(t));
  const final = await stream.finalMessage();
  assert.equal(deltas.join(""), "Hello from the fake upstream.");
  assert.equal(deltas.length, 5);
  assert.equal(final.usage.output_tokens, 5);
});

test("a streamed tool round trip", async () => {
  const history = [{ role: "user", content: "Weather in Paris and Tokyo?" }];
  const first = await client.messages.stream({ model: MODEL, max_tokens: 100, tools: [WEATHER], messages: history }).finalMessage();
  assert.equal(first.stop_reason, "tool_use");
  const calls = first.content.filter((b) => b.type === "tool_use");
  assert.deepEqual(calls.map((c) => c.input), [{ city: "Paris" }, { city: "Tokyo" }]);
  history.push({ role: "assistant", content: first.content });
  history.push({ role: "user", content: calls.map((c) => ({ type: "tool_result", tool_use_id: c.id, content: RESULTS[c.input.city] })) });
  const second = await client.messages.create({ model: MODEL, max_tokens: 100, tools: [WEATHER], messages: history });
  assert.equal(second.content[0].text, "Weather: sunny in Paris; rainy in Tokyo");
});

test("an image and count_tokens", async () => {
  const png = Buffer.from(process.env.SDK_PNG_B64, "base64");
  const m = await client.messages.create({
    model: MODEL, max_tokens: 100,
    messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: png.toString("base64") } }] }],
  });
  assert.equal(m.content[0].text, `image ${png.length} bytes png=true`);
  const counted = await client.messages.countTokens({ model: MODEL, messages: [{ role: "user", content: "hello world!" }] });
  assert.equal(counted.input_tokens, EXPECTED_COUNT);
});

test("errors are Anthropic's types", async () => {
  await assert.rejects(
    client.messages.create({ model: "no-such-model", max_tokens: 5, messages: [{ role: "user", content: "x" }] }),
    (e) => e instanceof Anthropic.NotFoundError && e.error.error.type === "not_found_error",
  );
});
