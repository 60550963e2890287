// The official `openai` npm package against the real binary (run by tests/sdk/test_node_sdk.py,
// which starts the server and passes SDK_BASE_URL and SDK_API_KEY; the package is
// installed by scripts/test-tools.sh and found through NODE_PATH). Same routes as the Python
// suite: models; files; videos create/retrieve/list (auto-paging)/download/delete, remix, extend,
// edit, characters and spritesheets; chat plain,
// streamed with usage, tool calls; responses plain, streamed (typed events), chained.
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");
const OpenAI = require("openai");

const MODEL = "fake-model-v1";
const TERMINAL = ["completed", "failed", "canceled"];
const client = new OpenAI({
  baseURL: process.env.SDK_BASE_URL,
  apiKey: process.env.SDK_API_KEY,
  maxRetries: 0,
});

// The README's polling loop (`createAndPoll` stops on statuses it does not know, such as
// `moderating`): poll until a terminal status, waiting as the server's hint says (shortened
// here, since the reference engine renders in seconds).
async function waitFor(id, limitMs = 240000) {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const { data: video, response } = await client.videos.retrieve(id).withResponse();
    if (TERMINAL.includes(video.status)) return video;
    const hint = Number(response.headers.get("openai-poll-after-ms") ?? "10000");
    assert.ok(hint >= 10000 && hint <= 30000, `poll hint ${hint}`);
    assert.ok(Date.now() < deadline, `${id} still ${video.status}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

function pngBytes() {
  // A 1x1 PNG.
  return Buffer.from(
    "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de0000000c4944415408d763f8cfc000000301010018dd8db00000000049454e44ae426082",
    "hex",
  );
}

test("models list and retrieve", async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  assert.ok(ids.includes(MODEL), ids.join(","));
  assert.equal((await client.models.retrieve(MODEL)).id, MODEL);
  await assert.rejects(client.models.retrieve("no-such-model"), (e) => e.status === 404 && e.code === "model_not_found");
});

test("files create, list, retrieve, content, delete", async () => {
  const png = pngBytes();
  const file = await client.files.create({
    file: await OpenAI.toFile(png, "dot.png", { type: "image/png" }),
    purpose: "vision",
  });
  assert.equal(file.bytes, png.length);
  const ids = [];
  for await (const f of client.files.list()) ids.push(f.id);
  assert.ok(ids.includes(file.id));
  assert.equal((await client.files.retrieve(file.id)).filename, "dot.png");
  const content = Buffer.from(await (await client.files.content(file.id)).arrayBuffer());
  assert.deepEqual(content, png);
  const deleted = await client.files.delete(file.id);
  assert.equal(deleted.deleted, true);
  await assert.rejects(client.files.retrieve(file.id), (e) => e.status === 404);
});

test("videos create, retrieve, auto-paging list, download, delete", async () => {
  const created = [];
  for (let i = 0; i < 3; i++) {
    // `aspect_ratio` is the spec's required field the SDK's types lack.
    created.push(
      await client.videos.create({ model: "reel-1", prompt: `a kite ${i}`, seconds: "4", aspect_ratio: "9:16", size: "768x1366" }),
    );
  }
  const ids = [];
  for await (const v of client.videos.list({ limit: 2 })) ids.push(v.id);
  assert.deepEqual(ids.slice(0, 3), created.map((v) => v.id).reverse());
  const video = await waitFor(created[0].id);
  assert.equal(video.status, "completed");
  const mp4 = Buffer.from(await (await client.videos.downloadContent(video.id)).arrayBuffer());
  assert.equal(mp4.subarray(4, 8).toString(), "ftyp");
  const jpeg = Buffer.from(await (await client.videos.downloadContent(video.id, { variant: "thumbnail" })).arrayBuffer());
  assert.deepEqual([...jpeg.subarray(0, 3)], [0xff, 0xd8, 0xff]);
  for (const v of created.slice(1)) await waitFor(v.id);
  for (const v of created) assert.equal((await client.videos.delete(v.id)).deleted, true);
  await assert.rejects(client.videos.retrieve(created[0].id), (e) => e.status === 404);
  await assert.rejects(
    client.videos.create({ model: "reel-1", prompt: "x", seconds: "4", aspect_ratio: "16:9", size: "1280x720" }),
    (e) => e.status === 400 && e.param === "size",
  );
});

test("video surface: remix, extend, edit, characters, a source file and a spritesheet", async () => {
  const made = await client.videos.create({ model: "reel-1", prompt: "a paper lantern", seconds: "4", aspect_ratio: "16:9", size: "1366x768" });
  const source = await waitFor(made.id);
  assert.equal(source.status, "completed");
  const remix = await client.videos.remix(source.id, { prompt: "the lantern at dawn" });
  assert.equal(remix.remixed_from_video_id, source.id);
  // The Node SDK sends `video: {id}` as the form field video[id].
  const extension = await client.videos.extend({ prompt: "the lantern swings", seconds: "4", video: { id: source.id } });
  assert.equal(extension.extended_from_video_id, source.id);
  assert.equal(String(extension.seconds), "8");
  const edit = await client.videos.edit({ prompt: "the lantern in snow", video: { id: source.id } });
  assert.equal(edit.edited_from_video_id, source.id);
  const clip = Buffer.from(await (await client.videos.downloadContent(source.id)).arrayBuffer());
  const character = await client.videos.createCharacter({
    name: "Lantern",
    video: await OpenAI.toFile(clip, "lantern.mp4", { type: "video/mp4" }),
  });
  assert.equal((await client.videos.getCharacter(character.id)).name, "Lantern");
  // A source file of the caller's own, with the model to render it (beyond OpenAI's shape).
  const fromFile = await client.videos.extend({
    prompt: "the lantern drifts away",
    seconds: "4",
    video: await OpenAI.toFile(clip, "lantern.mp4", { type: "video/mp4" }),
    model: "reel-1",
  });
  assert.equal(fromFile.source_operation, "extension");
  for (const job of [remix, extension, edit, fromFile]) {
    const done = await waitFor(job.id);
    assert.equal(done.status, "completed", `${job.id}: ${JSON.stringify(done.error)}`);
  }
  const sheet = Buffer.from(await (await client.videos.downloadContent(source.id, { variant: "spritesheet" })).arrayBuffer());
  assert.deepEqual([...sheet.subarray(0, 3)], [0xff, 0xd8, 0xff]);
});

test("chat completions plain, streamed with usage, tool calls", async () => {
  const reply = await client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi" }] });
  assert.equal(reply.choices[0].message.content, "Hello from the fake upstream.");
  const stream = await client.chat.completions.create({
    model: MODEL,
    messages: [{ role: "user", content: "hi" }],
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = "";
  let last;
  for await (const chunk of stream) {
    if (chunk.choices.length) text += chunk.choices[0].delta.content ?? "";
    last = chunk;
  }
  assert.equal(text, "Hello from the fake upstream.");
  assert.deepEqual(last.choices, []);
  assert.equal(last.usage.prompt_tokens, 10);
  const tool = {
    type: "function",
    function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } },
  };
  const calls = await client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "Weather?" }], tools: [tool] });
  assert.equal(calls.choices[0].finish_reason, "tool_calls");
  assert.deepEqual(calls.choices[0].message.tool_calls.map((c) => c.function.name), ["get_weather", "get_weather"]);
});

test("responses plain, streamed typed events, previous_response_id", async () => {
  const first = await client.responses.create({ model: MODEL, input: "hi" });
  assert.equal(first.output_text, "Hello from the fake upstream.");
  const kinds = [];
  for await (const event of await client.responses.create({ model: MODEL, input: "hi", stream: true })) kinds.push(event.type);
  assert.equal(kinds[0], "response.created");
  assert.equal(kinds[kinds.length - 1], "response.completed");
  assert.ok(kinds.includes("response.output_text.delta"));
  const second = await client.responses.create({ model: MODEL, input: "again", previous_response_id: first.id });
  assert.notEqual(second.id, first.id);
  assert.equal((await client.responses.retrieve(second.id)).id, second.id);
  await client.responses.delete(first.id);
  await assert.rejects(client.responses.retrieve(first.id), (e) => e.status === 404);
});
