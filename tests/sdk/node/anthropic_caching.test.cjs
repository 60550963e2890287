// The official `@anthropic-ai/sdk` npm package with prompt caching through the real binary (run
// by tests/sdk/test_anthropic_upstream.py over both Claude upstreams, the Anthropic Messages API
// and Bedrock Converse, with SDK_MODEL, SDK_SYSTEM, SDK_SERVER_URL and SDK_API_KEY):
// `cache_control` on the system prompt, the tools and the last user block writes the prompt
// cache, a repeat reads it, and each answer's `usage.cost` is what it was charged.
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");
const Anthropic = require("@anthropic-ai/sdk");

const client = new Anthropic({ baseURL: process.env.SDK_SERVER_URL, apiKey: process.env.SDK_API_KEY, maxRetries: 0 });
const EPHEMERAL = { type: "ephemeral" };
const request = (question) => ({
  model: process.env.SDK_MODEL,
  max_tokens: 100,
  system: [{ type: "text", text: process.env.SDK_SYSTEM, cache_control: EPHEMERAL }],
  tools: [{
    name: "get_weather",
    description: "The weather in a city.",
    input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    cache_control: EPHEMERAL,
  }],
  messages: [{ role: "user", content: [{ type: "text", text: question, cache_control: EPHEMERAL }] }],
});

test("cache_control writes the cache, and a repeat reads it", async () => {
  const first = await client.messages.create(request("Say hello from Node."));
  assert.ok(first.usage.cache_creation_input_tokens > 1000, JSON.stringify(first.usage));
  assert.equal(first.usage.cache_read_input_tokens, 0);
  assert.match(first.usage.cost, /^\d+\.\d+$/);
  const again = await client.messages.create(request("Say hello from Node."));
  assert.equal(again.usage.cache_read_input_tokens, first.usage.cache_creation_input_tokens);
  assert.equal(again.usage.cache_creation_input_tokens, 0);
  assert.ok(Number(again.usage.cost) * 5 < Number(first.usage.cost), `${again.usage.cost} vs ${first.usage.cost}`);
});

test("a stream reports the cache and its cost in message_delta", async () => {
  await client.messages.create(request("Weather in Paris?"));
  const stream = client.messages.stream(request("Weather in Paris?"));
  // The SDK's snapshot keeps message_delta's counts, not reelgate's `cost` beside them.
  let cost;
  stream.on("streamEvent", (event) => {
    if (event.type === "message_delta") cost = event.usage.cost;
  });
  const final = await stream.finalMessage();
  assert.equal(final.stop_reason, "tool_use");
  assert.ok(final.usage.cache_read_input_tokens > 1000, JSON.stringify(final.usage));
  assert.match(cost, /^\d+\.\d+$/);
});
