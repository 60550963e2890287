// Chat: a conversation. Every turn sends the system prompt and all earlier turns.
async function loadChat() {
  if (!state.chatModels) state.chatModels = await api("GET", "/console/api/chat/models");
  const sel = $("c-model"); const current = sel.value;
  sel.textContent = "";
  state.chatModels.data.forEach((m) => { const o = document.createElement("option"); o.value = m.id; o.textContent = m.id; sel.appendChild(o); });
  if (current) sel.value = current;
  if (!state.chatRestored) restoreChat();
  updateEffort();
  renderChat();
  followChat();
}

// The conversation and the unsent draft are kept in this browser (per organization), so a
// refresh loses neither. Images are kept with their turn when they fit the browser's storage.
// Conversations and their unsent drafts are kept in this browser (per organization; sign-out
// forgets them), so a refresh loses nothing and earlier chats can be reopened. Images are kept
// with their turn when they fit the browser's storage.
function chatStoreKey() { return `reelgate.chats.${state.session.organization.id}`; }
const MAX_KEPT_CHATS = 30;

function readChats() {
  let kept = null;
  try { kept = JSON.parse(localStorage.getItem(chatStoreKey()) || "null"); } catch (_) { kept = null; }
  if (!kept || !Array.isArray(kept.chats)) kept = { current: null, chats: [] };
  // The one conversation an earlier version kept becomes the first past chat.
  const earlier = `reelgate.chat.${state.session.organization.id}`;
  try {
    const one = JSON.parse(localStorage.getItem(earlier) || "null");
    if (one && Array.isArray(one.turns)) {
      kept.chats.unshift({ id: "c-earlier", title: chatTitle(one.turns), updated: Date.now(), ...one });
      kept.current = kept.current || "c-earlier";
    }
    localStorage.removeItem(earlier);
  } catch (_) { /* nothing to carry over */ }
  return kept;
}

function writeChats(kept) {
  kept.chats = kept.chats.slice(0, MAX_KEPT_CHATS);
  try { localStorage.setItem(chatStoreKey(), JSON.stringify(kept)); return; } catch (_) { /* over the quota */ }
  // Over the browser's quota (large images): keep the words, drop the pictures.
  kept.chats = kept.chats.map((c) => ({ ...c, turns: c.turns.map((turn) => ({ ...turn, image: null, content: turn.text })) }));
  try { localStorage.setItem(chatStoreKey(), JSON.stringify(kept)); } catch (__) { /* nothing kept */ }
}

function chatTitle(turns) {
  const first = turns.find((turn) => turn.role === "user");
  const text = first ? String(first.text || "").trim().replace(/\s+/g, " ") : "";
  return text ? (text.length > 60 ? text.slice(0, 57) + "…" : text) : "";
}

function saveChat() {
  const turns = state.chat.filter((turn) => !turn.pending).map((turn) => ({
    role: turn.role, content: turn.content, text: turn.text, image: turn.image, model: turn.model, usageText: turn.usageText,
  }));
  const kept = readChats();
  if (!state.chatId) state.chatId = "c" + Date.now().toString(36) + Math.random().toString(36).slice(2, 6);
  const chat = { id: state.chatId, title: chatTitle(turns), updated: Date.now(), model: $("c-model").value,
    system: $("c-system").value, draft: $("c-message").value, turns };
  // A chat with no turns is not listed, but its draft is kept; an empty one is not kept.
  const empty = !turns.length && !chat.draft && !chat.system;
  kept.chats = [...(empty ? [] : [chat]), ...kept.chats.filter((c) => c.id !== chat.id)];
  kept.current = chat.id;
  writeChats(kept);
  renderChatList(kept);
}

function openChat(chat) {
  state.chatId = chat ? chat.id : null;
  state.chat = chat ? chat.turns.filter((turn) => turn && (turn.role === "user" || turn.role === "assistant")) : [];
  state.lastChatRequest = null;
  if (chat && chat.model && [...$("c-model").options].some((o) => o.value === chat.model)) $("c-model").value = chat.model;
  // A new chat keeps the system prompt and settings: often the next conversation uses them too.
  if (chat) $("c-system").value = chat.system || "";
  $("c-message").value = chat ? chat.draft || "" : "";
}

function restoreChat() {
  state.chatRestored = true;
  const kept = readChats();
  openChat(kept.chats.find((c) => c.id === kept.current) || null);
  renderChatList(kept);
}

function renderChatList(kept) {
  const list = $("c-history"); list.textContent = "";
  const listed = kept.chats.filter((c) => c.turns.length);
  $("c-history-box").hidden = listed.length === 0;
  listed.forEach((c) => {
    const li = document.createElement("li");
    const open = document.createElement("button"); open.type = "button"; open.className = "link chat-open";
    open.textContent = c.title || t("untitled_chat");
    if (c.id === state.chatId) open.setAttribute("aria-current", "true");
    const meta = document.createElement("span"); meta.className = "meta"; meta.textContent = when(Math.floor(c.updated / 1000));
    open.addEventListener("click", () => switchChat(c.id));
    const rm = document.createElement("button"); rm.type = "button"; rm.className = "link danger"; rm.textContent = "×";
    rm.setAttribute("aria-label", `${t("delete_chat")}: ${c.title || t("untitled_chat")}`);
    rm.addEventListener("click", () => deleteChat(c.id));
    li.append(open, meta, rm);
    list.appendChild(li);
  });
}

function switchChat(id) {
  if (state.chatBusy && state.chatAbort) state.chatAbort.abort();
  saveChat();
  const kept = readChats();
  openChat(kept.chats.find((c) => c.id === id) || null);
  kept.current = state.chatId; writeChats(kept);
  clearErrors($("chat-form")); clearErrors($("chat-settings")); clearChatImage();
  updateEffort(); renderChat(); renderChatList(kept); followChat();
}

async function deleteChat(id) {
  if (!(await askToConfirm("confirm_delete_chat", "delete"))) return;
  const kept = readChats();
  kept.chats = kept.chats.filter((c) => c.id !== id);
  if (id === state.chatId) { openChat(null); kept.current = null; renderChat(); }
  writeChats(kept);
  renderChatList(kept);
}

// Keeps the newest words in view while a reply streams, unless the person scrolled up to read.
function chatAtBottom() {
  return window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 48;
}
function followChat() { window.scrollTo({ top: document.documentElement.scrollHeight }); }

function chatModel() {
  return (state.chatModels ? state.chatModels.data : []).find((x) => x.id === $("c-model").value);
}

function updateEffort() {
  const m = chatModel();
  const efforts = (m && m.reasoning_efforts) || [];
  $("c-effort-field").hidden = efforts.length === 0;
  // Image attachments only where the model has vision.
  const vision = !!m && (m.capabilities || []).includes("vision");
  $("c-image-field").hidden = !vision;
  if (!vision) clearChatImage();
  const sel = $("c-effort"); const was = sel.value; sel.textContent = "";
  const d = document.createElement("option"); d.value = ""; d.textContent = t("default_effort"); sel.appendChild(d);
  efforts.forEach((e) => { const o = document.createElement("option"); o.value = e; o.textContent = e; sel.appendChild(o); });
  if (efforts.includes(was)) sel.value = was;
}

function clearChatImage() {
  state.chatImage = null;
  $("c-image").value = "";
  $("c-image-preview").removeAttribute("src");
  $("c-image-chosen").hidden = true;
}

function readAsDataUrl(file) {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.addEventListener("load", () => resolve(String(r.result)));
    r.addEventListener("error", () => reject(r.error));
    r.readAsDataURL(file);
  });
}

// The chosen image goes with the next message as an `image_url` part (a base64 data URL).
async function chooseChatImage() {
  $("err-c-image").textContent = "";
  const file = ($("c-image").files || [])[0];
  if (!file) { clearChatImage(); return; }
  try {
    const url = await readAsDataUrl(file);
    state.chatImage = { url, name: file.name };
    const img = $("c-image-preview"); img.src = url; img.alt = file.name;
    $("c-image-chosen").hidden = false;
  } catch (err) { clearChatImage(); $("err-c-image").textContent = String(err && err.message ? err.message : err); }
}

// A reply's markdown as DOM nodes built one by one: fenced code blocks (with Copy), headings,
// lists, quotes, paragraphs, and inline code, bold, italics and http(s) links. Text always goes
// in as text (textContent), never as HTML, so markup from a model shows as the characters it is.
function renderMarkdown(text) {
  const root = document.createDocumentFragment();
  const lines = String(text).split("\n");
  let i = 0; let para = [];
  const flush = () => {
    if (para.length) { const p = document.createElement("p"); inline(p, para.join("\n")); root.appendChild(p); para = []; }
  };
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^\s*```\s*([\w+-]*)\s*$/);
    if (fence) {
      flush();
      const code = []; i += 1;
      while (i < lines.length && !/^\s*```\s*$/.test(lines[i])) { code.push(lines[i]); i += 1; }
      i += 1;
      const box = document.createElement("div"); box.className = "md-code";
      const pre = document.createElement("pre"); const c = document.createElement("code");
      c.textContent = code.join("\n"); if (fence[1]) c.dataset.lang = fence[1];
      pre.appendChild(c);
      const copy = document.createElement("button"); copy.type = "button"; copy.className = "md-copy";
      copy.textContent = t("copy"); copy.addEventListener("click", () => copyText(c.textContent));
      box.append(pre, copy); root.appendChild(box);
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    const item = line.match(/^\s*(?:[-*+]|(\d+)[.)])\s+(.*)$/);
    if (heading) {
      flush();
      const h = document.createElement("h" + Math.min(6, heading[1].length + 2)); inline(h, heading[2]); root.appendChild(h);
    } else if (item) {
      flush();
      const list = document.createElement(item[1] ? "ol" : "ul");
      while (i < lines.length) {
        const m = lines[i].match(/^\s*(?:[-*+]|(\d+)[.)])\s+(.*)$/);
        if (!m || Boolean(m[1]) !== Boolean(item[1])) break;
        const li = document.createElement("li"); inline(li, m[2]); list.appendChild(li); i += 1;
      }
      root.appendChild(list); continue;
    } else if (/^>\s?/.test(line)) {
      flush();
      const q = document.createElement("blockquote"); inline(q, line.replace(/^>\s?/, "")); root.appendChild(q);
    } else if (!line.trim()) {
      flush();
    } else {
      para.push(line);
    }
    i += 1;
  }
  flush();
  return root;
}

function inline(parent, text) {
  const pattern = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*)|(\[[^\]]+\]\((https?:\/\/[^\s)]+)\))/g;
  let last = 0; let m;
  while ((m = pattern.exec(text))) {
    if (m.index > last) parent.appendChild(document.createTextNode(text.slice(last, m.index)));
    let node;
    if (m[1]) { node = document.createElement("code"); node.textContent = m[1].slice(1, -1); }
    else if (m[2]) { node = document.createElement("strong"); node.textContent = m[2].slice(2, -2); }
    else if (m[3]) { node = document.createElement("em"); node.textContent = m[3].slice(1, -1); }
    else {
      node = document.createElement("a"); node.href = m[5]; node.rel = "noopener noreferrer"; node.target = "_blank";
      node.textContent = m[4].slice(1, m[4].indexOf("]"));
    }
    parent.appendChild(node); last = pattern.lastIndex;
  }
  if (last < text.length) parent.appendChild(document.createTextNode(text.slice(last)));
}

function showReply(el, turn) {
  el.textContent = "";
  if (turn.role === "assistant") el.appendChild(renderMarkdown(turn.text || "")); else el.textContent = turn.text || "";
}

function messageItem(turn) {
  const li = document.createElement("li"); li.className = "msg " + turn.role;
  const who = document.createElement("div"); who.className = "who";
  who.textContent = turn.role === "user" ? t("you") : `${t("assistant")} · ${turn.model || ""}`;
  const content = document.createElement("div"); content.className = "content";
  showReply(content, turn);
  li.append(who, content);
  if (turn.image) {
    const img = document.createElement("img"); img.src = turn.image.url; img.alt = `${t("attached_image")}: ${turn.image.name}`;
    img.className = "msg-image"; li.appendChild(img);
  }
  if (turn.role === "assistant") {
    const usage = document.createElement("div"); usage.className = "usage meta"; usage.textContent = turn.usageText || "";
    li.appendChild(usage);
  }
  turn.el = li;
  return li;
}

function renderChat() {
  const log = $("c-log"); log.textContent = "";
  state.chat.forEach((turn) => log.appendChild(messageItem(turn)));
  $("c-empty").hidden = state.chat.length > 0;
  log.hidden = state.chat.length === 0;
}

// A new conversation; the one open stays in the list of past chats.
function newChat() {
  if (state.chatAbort) state.chatAbort.abort();
  if (state.chat.length) saveChat();
  openChat(null);
  clearErrors($("chat-form")); clearErrors($("chat-settings")); clearChatImage();
  const kept = readChats(); kept.current = null; writeChats(kept);
  renderChat(); renderChatList(kept);
  $("c-message").focus();
}

// A turn's token usage and what it cost: the charge the answer reports (`usage.cost`), else the
// model's catalog prices applied to the counts.
function usageText(usage, model) {
  const p = (model && model.pricing) || {};
  const prompt = usage.prompt_tokens || 0; const out = usage.completion_tokens || 0;
  const details = usage.prompt_tokens_details || {};
  const cached = details.cached_tokens || 0; const written = details.cache_write_tokens || 0;
  const price = (x) => Number(x || 0) / 1e6;
  const cachedPrice = p.cached_input_per_million !== undefined ? p.cached_input_per_million : p.input_per_million;
  const writePrice = p.cache_write_per_million !== undefined ? p.cache_write_per_million : p.input_per_million;
  const cost = usage.cost !== undefined ? usage.cost
    : ((prompt - cached - written) * price(p.input_per_million) + cached * price(cachedPrice)
      + written * price(writePrice) + out * price(p.output_per_million)).toFixed(8);
  // A model without prices (found by listing an upstream, or priced at zero) is not "0.00 USD"
  // but a price nobody has set.
  const priced = Number(p.input_per_million || 0) > 0 || Number(p.output_per_million || 0) > 0;
  return t("turn_usage").replace("{input}", prompt.toLocaleString(state.lang)).replace("{output}", out.toLocaleString(state.lang))
    .replace("{cost}", priced ? money(cost, p.currency) : t("price_unknown"));
}

// The request the chat sends for a new user message: the system prompt, every earlier turn,
// the message, and the settings.
function chatRequest(content) {
  const messages = [];
  if ($("c-system").value.trim()) messages.push({ role: "system", content: $("c-system").value });
  state.chat.filter((turn) => !turn.pending).forEach((turn) => messages.push({ role: turn.role, content: turn.content }));
  messages.push({ role: "user", content });
  const body = { model: $("c-model").value, stream: true, stream_options: { include_usage: true }, messages };
  const temperature = $("c-temperature").value.trim();
  if (temperature !== "") body.temperature = Number.isNaN(Number(temperature)) ? temperature : Number(temperature);
  const maxTokens = $("c-max-tokens").value.trim();
  if (maxTokens !== "") body.max_tokens = /^\d+$/.test(maxTokens) ? Number(maxTokens) : maxTokens;
  if (!$("c-effort-field").hidden && $("c-effort").value) body.reasoning_effort = $("c-effort").value;
  return body;
}

async function sendChat(ev) {
  if (ev) ev.preventDefault();
  if (state.chatBusy) return;
  const form = $("chat-form"); clearErrors(form); clearErrors($("chat-settings"));
  const text = $("c-message").value;
  const image = !$("c-image-field").hidden && state.chatImage;
  if (!text.trim() && !image) { $("err-messages").textContent = t("message_required"); $("c-message").focus(); return; }
  const model = chatModel();
  const content = image
    ? [{ type: "text", text }, { type: "image_url", image_url: { url: image.url } }]
    : text;
  const userTurn = { role: "user", content, text, image: image ? { url: image.url, name: image.name } : null };
  const body = chatRequest(content);
  state.chat.push(userTurn);
  state.lastChatRequest = body;
  if ($("cc-code").open) showCode("cc");
  const reply = { role: "assistant", content: "", text: "", model: body.model, pending: true };
  state.chat.push(reply);
  $("c-message").value = ""; clearChatImage();
  renderChat();
  followChat();
  const out = reply.el.querySelector(".content");
  const button = $("c-send"); button.disabled = true; state.chatBusy = true;
  const abort = new AbortController(); state.chatAbort = abort;
  $("c-stop").hidden = false;
  $("c-stop").onclick = () => { reply.stopped = true; abort.abort(); };
  try {
    const r = await fetch("/console/api/chat/completions", {
      method: "POST", credentials: "same-origin", signal: abort.signal,
      headers: { "Content-Type": "application/json", "X-CSRF-Token": state.session.csrf_token },
      body: JSON.stringify(body),
    });
    if (!r.ok) {
      let data = null; try { data = await r.json(); } catch (_) { data = null; }
      if (r.status === 401) sessionEnded();
      throw new ApiError(r.status, data);
    }
    const reader = r.body.getReader(); const decoder = new TextDecoder();
    let buffer = ""; let streamError = null;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const event = buffer.slice(0, cut); buffer = buffer.slice(cut + 2);
        event.split("\n").forEach((line) => {
          if (!line.startsWith("data:")) return;
          const data = line.slice(5).trim();
          if (!data || data === "[DONE]") return;
          try {
            const chunk = JSON.parse(data);
            if (chunk.error) { streamError = chunk.error; return; }
            (chunk.choices || []).forEach((c) => {
              if (c.delta && c.delta.content) {
                const follow = chatAtBottom();
                reply.text += c.delta.content; showReply(out, reply);
                if (follow) followChat();
              }
            });
            if (chunk.usage) {
              reply.usageText = usageText(chunk.usage, model);
              reply.el.querySelector(".usage").textContent = reply.usageText;
            }
          } catch (_) { /* a partial line is completed by the next read */ }
        });
      }
    }
    reply.content = reply.text;
    if (streamError) throw new ApiError(200, { error: streamError });
    reply.pending = false;
    saveChat();
  } catch (err) {
    if (err.name === "AbortError") {
      // Stopped: what arrived stays in the conversation (and is sent as the turn's answer).
      if (reply.stopped) {
        reply.content = reply.text; reply.pending = false;
        reply.usageText = t("stopped");
        if (reply.el) reply.el.querySelector(".usage").textContent = reply.usageText;
        saveChat();
        $("c-message").focus();
      }
      return;
    }
    // The failed turn leaves the conversation; its words go back into the box to retry.
    state.chat = state.chat.filter((turn) => turn !== reply && turn !== userTurn);
    renderChat();
    $("c-message").value = text;
    if (userTurn.image) {
      state.chatImage = userTurn.image; $("c-image-preview").src = userTurn.image.url;
      $("c-image-preview").alt = userTurn.image.name; $("c-image-chosen").hidden = false;
    }
    const map = { model: "err-chat-model", messages: "err-messages", temperature: "err-temperature", max_tokens: "err-max_tokens" };
    const full = String(err.param || "");
    const param = full.split(/[.[]/)[0];
    const aboutImage = image && (full.includes("image_url") || /\.content\[1\]/.test(full) || err.status === 413);
    ($(aboutImage ? "err-c-image" : map[param]) || $("err-messages")).textContent = errorText(err);
  } finally {
    button.disabled = false; state.chatBusy = false;
    $("c-stop").hidden = true; $("c-stop").onclick = null;
    if (state.chatAbort === abort) state.chatAbort = null;
  }
}

// The chat's listeners: added once, when the console starts.
function wireChat() {
  $("chat-form").addEventListener("submit", sendChat);
  $("chat-settings").addEventListener("submit", (e) => e.preventDefault());
  // Enter sends, Shift+Enter is a new line (and Enter that ends an IME composition is not a send).
  $("c-message").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing && e.keyCode !== 229) { e.preventDefault(); sendChat(); }
  });
  $("c-new").addEventListener("click", newChat);
  ["c-message", "c-system"].forEach((id) => $(id).addEventListener("input", () => { if (state.session) saveChat(); }));
  $("c-model").addEventListener("change", updateEffort);
  $("c-image").addEventListener("change", chooseChatImage);
  $("c-image-remove").addEventListener("click", () => { clearChatImage(); $("c-image").focus(); });
}
