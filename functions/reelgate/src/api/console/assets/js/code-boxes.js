// The "View code" boxes (a video's page, New video, Chat): the request as curl, Python (openai)
// and Node, each string quoted for its language.

const shellQuote = (s) => "'" + String(s).replace(/'/g, "'\\''") + "'";
const pyString = (s) => JSON.stringify(String(s));

// A JSON value as a Python literal (JSON's strings are valid Python strings).
function pyLiteral(value, indent = "") {
  const inner = indent + "    ";
  if (value === null || value === undefined) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (typeof value === "number") return String(value);
  if (typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) {
    if (!value.length) return "[]";
    return "[\n" + value.map((v) => inner + pyLiteral(v, inner)).join(",\n") + ",\n" + indent + "]";
  }
  const keys = Object.keys(value);
  if (!keys.length) return "{}";
  return "{\n" + keys.map((k) => `${inner}${JSON.stringify(k)}: ${pyLiteral(value[k], inner)}`).join(",\n") + ",\n" + indent + "}";
}

// Keyword arguments for a Python SDK call: the SDK's own parameters by name, the rest (what
// only reelgate takes) in extra_body.
function pyArgs(body, known) {
  const args = []; const extra = {};
  Object.entries(body).forEach(([k, v]) => { if (known.includes(k)) args.push(`    ${k}=${pyLiteral(v, "    ")},`); else extra[k] = v; });
  if (Object.keys(extra).length) args.push(`    extra_body=${pyLiteral(extra, "    ")},`);
  return "(\n" + args.join("\n") + "\n)";
}

// The request a code box shows, as { kind, path, body, source }: the one that made the video
// on its page, the one New video would send, the chat's last (or next) request.
function videoCreateBody(body) { return { ...body, seconds: String(body.seconds) }; }

function codeFor(req, lang) {
  const base = location.origin + "/v1";
  if (lang === "curl") {
    return `curl ${shellQuote(base + req.path)} \\\n  -H "Authorization: Bearer $REELGATE_API_KEY" \\\n` +
      `  -H "Content-Type: application/json" \\\n  -d ${shellQuote(JSON.stringify(req.body))}` +
      (req.kind === "chat" && req.body.stream ? " \\\n  --no-buffer" : "");
  }
  const b = req.body;
  if (lang === "python") {
    const head = `import os\nfrom openai import OpenAI\n\nclient = OpenAI(base_url=${pyString(base)}, api_key=os.environ["REELGATE_API_KEY"])\n`;
    if (req.kind === "chat") {
      const call = `client.chat.completions.create${pyArgs(b, ["model", "messages", "stream", "stream_options", "temperature", "max_tokens", "reasoning_effort"])}`;
      return b.stream
        ? `${head}stream = ${call}\nfor chunk in stream:\n    if chunk.choices and chunk.choices[0].delta.content:\n        print(chunk.choices[0].delta.content, end="", flush=True)\nprint()`
        : `${head}completion = ${call}\nprint(completion.choices[0].message.content)`;
    }
    let call;
    if (req.kind === "create") call = `client.videos.create${pyArgs(videoCreateBody(b), ["model", "prompt", "seconds"])}`;
    else if (req.kind === "remix") call = `client.videos.remix(${pyString(req.source)}, prompt=${pyString(b.prompt)})`;
    else if (req.kind === "extension") call = `client.videos.extend(video={"id": ${pyString(b.video.id)}}, prompt=${pyString(b.prompt)}, seconds=${pyString(b.seconds)})`;
    else call = `client.videos.edit(video={"id": ${pyString(b.video.id)}}, prompt=${pyString(b.prompt)})`;
    return `${head}video = ${call}\nprint(video.id, video.status)`;
  }
  const head = `import OpenAI from "openai";\n\nconst client = new OpenAI({ baseURL: ${JSON.stringify(base)}, apiKey: process.env.REELGATE_API_KEY });\n`;
  if (req.kind === "chat") {
    const call = `client.chat.completions.create(${JSON.stringify(b, null, 2)})`;
    return b.stream
      ? `${head}const stream = await ${call};\nfor await (const chunk of stream) process.stdout.write(chunk.choices[0]?.delta?.content ?? "");\nprocess.stdout.write("\\n");`
      : `${head}const completion = await ${call};\nconsole.log(completion.choices[0].message.content);`;
  }
  let call;
  if (req.kind === "create") call = `client.videos.create(${JSON.stringify(videoCreateBody(b), null, 2)})`;
  else if (req.kind === "remix") call = `client.videos.remix(${JSON.stringify(req.source)}, ${JSON.stringify(b)})`;
  else if (req.kind === "extension") call = `client.videos.extend(${JSON.stringify({ ...b, seconds: String(b.seconds) }, null, 2)})`;
  else call = `client.videos.edit(${JSON.stringify(b, null, 2)})`;
  return `${head}const video = await ${call};\nconsole.log(video.id, video.status);`;
}

// Fills each `<details class="code-box">` of the page (its id `<prefix>-code`, its hint's text
// key in `data-hint`) with the tabs, the code and Copy, named after the prefix.
function buildCodeBoxes() {
  document.querySelectorAll("details.code-box").forEach((box) => {
    const prefix = box.id.replace(/-code$/, "");
    const el = (tag, attrs, key) => {
      const e = document.createElement(tag);
      Object.entries(attrs).forEach(([k, v]) => e.setAttribute(k, v));
      if (key) e.dataset.i18n = key;
      return e;
    };
    const tabs = el("div", { class: "tabs", role: "tablist" });
    [["curl", "curl"], ["python", "Python"], ["node", "Node"]].forEach(([lang, name], i) => {
      const b = el("button", { type: "button", role: "tab", id: `${prefix}-code-${lang}`, "aria-selected": String(i === 0), "data-lang": lang });
      b.textContent = name; tabs.appendChild(b);
    });
    box.append(el("summary", {}, "view_code"), el("p", { class: "hint" }, box.dataset.hint), tabs,
      el("pre", { id: `${prefix}-code-text`, tabindex: "0", "aria-label": "Code" }),
      el("button", { type: "button", id: `${prefix}-code-copy` }, "copy"));
  });
}

// Each code box, by its id's prefix, with the request it shows now.
const CODE_BOXES = {
  vp: () => (state.videoPage ? madeBy(state.videoPage) : null),
  nv: () => ({ kind: "create", path: "/videos", body: formBody() }),
  cc: () => ({ kind: "chat", path: "/chat/completions", body: state.lastChatRequest || chatRequest($("c-message").value || "Hello") }),
};

function showCode(box, lang) {
  state.codeLang = lang || state.codeLang || "curl";
  ["curl", "python", "node"].forEach((l) => { $(`${box}-code-${l}`).setAttribute("aria-selected", String(l === state.codeLang)); });
  const req = CODE_BOXES[box]();
  if (req) $(`${box}-code-text`).textContent = codeFor(req, state.codeLang);
}

// Each code box's tabs, Copy and opening: added once, when the console starts.
function wireCodeBoxes() {
  Object.keys(CODE_BOXES).forEach((box) => {
    ["curl", "python", "node"].forEach((l) => $(`${box}-code-${l}`).addEventListener("click", () => showCode(box, l)));
    $(`${box}-code-copy`).addEventListener("click", () => copyText($(`${box}-code-text`).textContent));
    $(`${box}-code`).addEventListener("toggle", () => { if ($(`${box}-code`).open) showCode(box); });
  });
}
