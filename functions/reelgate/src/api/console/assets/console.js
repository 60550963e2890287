"use strict";
// The reelgate console: one page, hash routes, the /console/api routes with the session cookie
// and its CSRF token. No framework, no network besides this server.

const TEXT = {
  en: {
    skip: "Skip to content", console: "console", nav_terms: "Terms", nav_new: "New video",
    nav_videos: "Videos", nav_chat: "Chat", nav_keys: "API keys", nav_usage: "Usage",
    sign_out: "Sign out", signin_title: "Sign in", signin_oidc: "Sign in with {name}",
    signin_body: "Open the one-time sign-in link that `reelgate serve` printed when it started. Links expire and work once.",
    signin_more: "To make a link for someone else, an operator runs:",
    terms_title: "Video Service Terms", terms_version: "Version", agree: "I agree",
    agreed: "You agreed to this version.", not_agreed: "You have not agreed to this version yet.",
    new_title: "New video", needs_terms: "Agree to the Video Service Terms before creating videos.",
    model: "Model", seconds: "Seconds", aspect: "Aspect ratio", prompt: "Prompt",
    prompt_hint: "Describe the scene. Put spoken dialogue between <d> and </d>, e.g. <d>Good morning!</d>",
    quote: "Quote", available: "Available balance", create: "Create video", per_second: "per second",
    created: "Video created. It appears below as it renders.",
    videos_title: "Videos", videos_hint: "Newest first. The list refreshes every 2 seconds while a video is rendering.",
    videos_empty: "No videos yet.", play: "Play", download: "Download", delete: "Delete",
    confirm_delete: "Delete this video and its files?", deleted: "Video deleted.",
    cancel: "Cancel", confirm_cancel: "Cancel this video? It will not be rendered or charged.",
    canceled: "Video canceled. You were not charged.",
    status_moderating: "moderating", status_translating: "translating", status_queued: "queued",
    status_in_progress: "in progress", status_completed: "completed", status_failed: "failed",
    status_canceled: "canceled", progress: "Progress", thumbnail: "Thumbnail of",
    chat_title: "Chat", effort: "Reasoning effort", message: "Message", send: "Send", reply: "Reply",
    default_effort: "default",
    keys_title: "API keys", keys_hint: "Keys call the /v1 API as you. A new key's secret is shown once; copy it now.",
    key_create: "Create key", key_secret: "New key (shown once)", revoke: "Revoke", revoked: "revoked",
    active: "active", created_at: "created", confirm_revoke: "Revoke this key? Programs using it stop working.",
    usage_title: "Usage", balance: "Balance", reserved: "Reserved for renders in flight",
    recent: "Recent charges", when: "When", what: "What", amount: "Amount", none: "No charges yet.",
    by_model_key: "Last 30 days by model and key", key: "Key",
    signed_out: "You are signed out.", session_ended: "Your session has ended. Sign in again with a new link.",
  },
  ja: {
    skip: "本文へ移動", console: "コンソール", nav_terms: "規約", nav_new: "新しい動画",
    nav_videos: "動画", nav_chat: "チャット", nav_keys: "APIキー", nav_usage: "利用状況",
    sign_out: "サインアウト", signin_title: "サインイン", signin_oidc: "{name} でサインイン",
    signin_body: "`reelgate serve` の起動時に表示された一回限りのサインインリンクを開いてください。リンクには有効期限があり、一度しか使えません。",
    signin_more: "他の人のリンクは、運用者が次のコマンドで作成します:",
    terms_title: "動画サービス利用規約", terms_version: "版", agree: "同意する",
    agreed: "この版に同意済みです。", not_agreed: "この版にはまだ同意していません。",
    new_title: "新しい動画", needs_terms: "動画を作成する前に動画サービス利用規約に同意してください。",
    model: "モデル", seconds: "秒数", aspect: "アスペクト比", prompt: "プロンプト",
    prompt_hint: "場面を説明してください。話すせりふは <d> と </d> で囲みます(例: <d>おはよう!</d>)。",
    quote: "見積もり", available: "利用可能残高", create: "動画を作成", per_second: "1秒あたり",
    created: "動画を作成しました。レンダリングの進み具合が下に表示されます。",
    videos_title: "動画", videos_hint: "新しい順。レンダリング中は2秒ごとに更新されます。",
    videos_empty: "動画はまだありません。", play: "再生", download: "ダウンロード", delete: "削除",
    confirm_delete: "この動画とそのファイルを削除しますか?", deleted: "動画を削除しました。",
    cancel: "キャンセル", confirm_cancel: "この動画をキャンセルしますか?レンダリングされず、請求もされません。",
    canceled: "動画をキャンセルしました。請求はありません。",
    status_moderating: "審査中", status_translating: "翻訳中", status_queued: "待機中",
    status_in_progress: "レンダリング中", status_completed: "完了", status_failed: "失敗",
    status_canceled: "キャンセル", progress: "進捗", thumbnail: "サムネイル:",
    chat_title: "チャット", effort: "推論の強さ", message: "メッセージ", send: "送信", reply: "応答",
    default_effort: "既定",
    keys_title: "APIキー", keys_hint: "キーはあなたとして /v1 API を呼び出します。新しいキーのシークレットは一度だけ表示されます。今すぐコピーしてください。",
    key_create: "キーを作成", key_secret: "新しいキー(一度だけ表示)", revoke: "無効にする", revoked: "無効",
    active: "有効", created_at: "作成", confirm_revoke: "このキーを無効にしますか?使用中のプログラムは動かなくなります。",
    usage_title: "利用状況", balance: "残高", reserved: "レンダリング中の予約額",
    recent: "最近の請求", when: "日時", what: "内容", amount: "金額", none: "請求はまだありません。",
    by_model_key: "過去30日間(モデル・キー別)", key: "キー",
    signed_out: "サインアウトしました。", session_ended: "セッションが終了しました。新しいリンクでもう一度サインインしてください。",
  },
};

const state = { lang: "en", session: null, terms: null, models: null, chatModels: null, timer: null, players: {} };
const $ = (id) => document.getElementById(id);
const t = (key) => (TEXT[state.lang] && TEXT[state.lang][key]) || TEXT.en[key] || key;

function chooseLanguage() {
  const saved = localStorage.getItem("reelgate.lang");
  if (saved === "en" || saved === "ja") return saved;
  const langs = navigator.languages || [navigator.language || "en"];
  return langs.some((l) => String(l).toLowerCase().startsWith("ja")) ? "ja" : "en";
}

function applyLanguage() {
  document.documentElement.lang = state.lang;
  document.querySelectorAll("[data-i18n]").forEach((el) => { el.textContent = t(el.dataset.i18n); });
  const sso = $("oidc-signin");
  if (sso) sso.textContent = t("signin_oidc").replace("{name}", sso.dataset.name);
  const other = state.lang === "ja" ? "English" : "日本語";
  $("lang").textContent = other;
  $("lang").setAttribute("aria-label", state.lang === "ja" ? "Switch to English" : "日本語に切り替える");
  document.title = "reelgate " + t("console");
}

class ApiError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || "HTTP " + status);
    this.status = status; this.code = e.code; this.param = e.param;
  }
}

async function api(method, path, body) {
  const headers = {};
  if (method !== "GET") headers["X-CSRF-Token"] = state.session ? state.session.csrf_token : "";
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const r = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: "same-origin" });
  let data = null;
  try { data = await r.json(); } catch (_) { data = null; }
  if (!r.ok) {
    if (r.status === 401 && path !== "/console/api/session") { sessionEnded(); }
    throw new ApiError(r.status, data);
  }
  return data;
}

function flash(message, isError) {
  const f = $("flash");
  f.textContent = message || "";
  f.classList.toggle("error", !!isError);
}

function clearErrors(root) {
  root.querySelectorAll(".field-error").forEach((el) => { el.textContent = ""; });
  root.querySelectorAll("[aria-invalid]").forEach((el) => el.removeAttribute("aria-invalid"));
}

// Shows an API error next to the field it concerns (by its `param`), else in `fallbackId`.
function showError(err, prefix, fallbackId) {
  const param = err.param ? String(err.param).split(/[.[]/)[0] : "";
  const target = param && $(prefix + param);
  const el = target || $(fallbackId);
  if (el) el.textContent = err.message;
  const input = document.querySelector(`[name="${param}"]`);
  if (target && input) { input.setAttribute("aria-invalid", "true"); }
}

function money(amount, currency) {
  return amount === undefined || amount === null ? "—" : `${amount} ${String(currency || "").toUpperCase()}`;
}

function sessionEnded() {
  state.session = null;
  flash(t("session_ended"), true);
  showSignedOut();
}

function showSignedOut() {
  $("nav").hidden = true; $("signout").hidden = true; $("who").textContent = "";
  show("signin");
}

const PAGES = ["signin", "terms", "new", "videos", "chat", "keys", "usage"];
function show(name) {
  PAGES.forEach((p) => { $("page-" + p).hidden = p !== name; });
  document.querySelectorAll("nav a").forEach((a) => {
    if (a.getAttribute("href") === "#" + name) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  });
  if (state.timer && name !== "videos") { clearTimeout(state.timer); state.timer = null; }
}

async function route() {
  if (!state.session) { showSignedOut(); return; }
  const name = (location.hash || "#videos").slice(1);
  const page = PAGES.includes(name) && name !== "signin" ? name : "videos";
  show(page);
  try {
    if (page === "terms") await loadTerms();
    if (page === "new") await loadNew();
    if (page === "videos") await loadVideos();
    if (page === "chat") await loadChat();
    if (page === "keys") await loadKeys();
    if (page === "usage") await loadUsage();
  } catch (err) {
    if (err.status !== 401) flash(err.message, true);
  }
}

// Terms
async function loadTerms() {
  const terms = await api("GET", "/console/api/terms");
  state.terms = terms;
  $("terms-version").textContent = terms.terms_version;
  const text = terms.text || {};
  $("terms-text").textContent = (state.lang === "ja" ? text.ja : text.en) || text.en || "";
  const s = $("terms-state");
  s.textContent = terms.accepted ? t("agreed") : t("not_agreed");
  s.className = "state " + (terms.accepted ? "ok" : "no");
  $("agree").hidden = !!terms.accepted;
}

async function agree() {
  $("err-agree").textContent = "";
  try {
    await api("POST", "/console/api/terms/agree");
    await loadTerms();
    flash(t("agreed"));
  } catch (err) { $("err-agree").textContent = err.message; }
}

// New video
async function loadNew() {
  const [models, terms] = await Promise.all([api("GET", "/console/api/models"), api("GET", "/console/api/terms")]);
  state.models = models; state.terms = terms;
  $("new-needs-terms").hidden = !!terms.accepted;
  const sel = $("f-model"); const current = sel.value;
  sel.textContent = "";
  models.data.forEach((m) => {
    const p = m.pricing[0] || {};
    const o = document.createElement("option");
    o.value = m.id;
    o.textContent = `${m.name} — ${money(p.per_second, p.currency)} ${t("per_second")}`;
    sel.appendChild(o);
  });
  if (current) sel.value = current;
  const lim = models.limits || {};
  const secs = $("f-seconds"); secs.min = lim.min_seconds || 4; secs.max = lim.max_seconds || 15;
  const asp = $("f-aspect"); const a0 = asp.value || "16:9";
  asp.textContent = "";
  (lim.aspect_ratios || ["16:9"]).forEach((r) => { const o = document.createElement("option"); o.value = r; o.textContent = r; asp.appendChild(o); });
  asp.value = a0;
  if (lim.max_prompt_chars) $("f-prompt").maxLength = lim.max_prompt_chars;
  await updateQuote();
}

function formBody() {
  const seconds = parseInt($("f-seconds").value, 10);
  return { model: $("f-model").value, seconds: Number.isNaN(seconds) ? $("f-seconds").value : seconds,
    aspect_ratio: $("f-aspect").value, prompt: $("f-prompt").value };
}

let quoteSeq = 0;
async function updateQuote() {
  const seq = ++quoteSeq;
  const form = $("new-form");
  clearErrors(form);
  const body = formBody();
  if (!body.prompt.trim()) body.prompt = "-"; // the quote does not depend on the prompt's words
  try {
    const q = await api("POST", "/console/api/videos/quote", body);
    if (seq !== quoteSeq) return;
    $("quote-amount").textContent = money(q.amount, q.currency);
    $("quote-available").textContent = money(q.available, q.currency);
  } catch (err) {
    if (seq !== quoteSeq) return;
    $("quote-amount").textContent = "—";
    if (err.status !== 401) showError(err, "err-", "err-form");
  }
}

async function createVideo(ev) {
  ev.preventDefault();
  const form = $("new-form");
  clearErrors(form);
  const button = $("create"); button.disabled = true;
  try {
    await api("POST", "/console/api/videos", formBody());
    flash(t("created"));
    location.hash = "#videos";
  } catch (err) {
    if (err.code === "agreement_required") { $("new-needs-terms").hidden = false; }
    showError(err, "err-", "err-form");
    const firstBad = form.querySelector("[aria-invalid]");
    if (firstBad) firstBad.focus();
  } finally { button.disabled = false; }
}

// Videos
function statusText(s) { return t("status_" + s); }

function videoCard(v) {
  const li = document.createElement("li"); li.className = "card"; li.id = "video-" + v.id;
  const head = document.createElement("div");
  const badge = document.createElement("span"); badge.className = "badge " + v.status; badge.textContent = statusText(v.status);
  head.appendChild(badge);
  const meta = document.createElement("span"); meta.className = "meta";
  meta.textContent = ` ${v.model} · ${v.seconds}s · ${v.aspect_ratio} · ${money(v.cost, v.currency)} · ${new Date(v.created_at * 1000).toLocaleString(state.lang)}`;
  head.appendChild(meta);
  li.appendChild(head);
  const p = document.createElement("p"); p.className = "prompt"; p.textContent = v.prompt; li.appendChild(p);
  if (!["completed", "failed", "canceled"].includes(v.status)) {
    const label = document.createElement("label"); label.textContent = `${t("progress")} ${v.progress}%`;
    const bar = document.createElement("progress"); bar.max = 100; bar.value = v.progress;
    bar.id = "progress-" + v.id; label.htmlFor = bar.id;
    li.appendChild(label); li.appendChild(document.createElement("br")); li.appendChild(bar);
  }
  if (v.error) { const e = document.createElement("p"); e.className = "field-error"; e.textContent = `${v.error.code}: ${v.error.message}`; li.appendChild(e); }
  const actions = document.createElement("div"); actions.className = "actions";
  if (v.status === "completed") {
    const play = document.createElement("button"); play.type = "button"; play.textContent = t("play");
    play.addEventListener("click", () => playVideo(v, li, play));
    actions.appendChild(play);
  }
  if (!["completed", "failed", "canceled"].includes(v.status)) {
    const cancel = document.createElement("button"); cancel.type = "button"; cancel.textContent = t("cancel");
    cancel.setAttribute("aria-label", `${t("cancel")} ${v.id}`);
    cancel.addEventListener("click", () => cancelVideo(v));
    actions.appendChild(cancel);
  }
  if (["completed", "failed", "canceled"].includes(v.status)) {
    const del = document.createElement("button"); del.type = "button"; del.className = "danger"; del.textContent = t("delete");
    del.setAttribute("aria-label", `${t("delete")} ${v.id}`);
    del.addEventListener("click", () => deleteVideo(v));
    actions.appendChild(del);
  }
  li.appendChild(actions);
  if (state.players[v.id]) attachPlayer(li, state.players[v.id], v);
  return li;
}

function attachPlayer(li, media, v) {
  const wrap = document.createElement("div"); wrap.className = "player";
  const video = document.createElement("video");
  video.controls = true; video.preload = "metadata"; video.src = media.content_url;
  video.setAttribute("aria-label", v.prompt);
  if (media.thumbnail_url) video.poster = media.thumbnail_url;
  wrap.appendChild(video);
  if (media.thumbnail_url) {
    const img = document.createElement("img"); img.className = "thumb"; img.src = media.thumbnail_url; img.alt = `${t("thumbnail")} ${v.id}`;
    wrap.appendChild(img);
  }
  const dl = document.createElement("a"); dl.href = media.content_url; dl.download = v.id + ".mp4"; dl.textContent = t("download");
  wrap.appendChild(dl);
  li.appendChild(wrap);
}

async function playVideo(v, li, button) {
  try {
    const media = await api("GET", `/console/api/videos/${v.id}/media`);
    state.players[v.id] = media;
    button.disabled = true;
    attachPlayer(li, media, v);
    const video = li.querySelector("video");
    if (video) video.focus();
  } catch (err) { flash(err.message, true); }
}

async function deleteVideo(v) {
  if (!window.confirm(t("confirm_delete"))) return;
  try {
    await api("DELETE", `/console/api/videos/${v.id}`);
    delete state.players[v.id];
    flash(t("deleted"));
    await loadVideos();
  } catch (err) { flash(err.message, true); }
}

async function cancelVideo(v) {
  if (!window.confirm(t("confirm_cancel"))) return;
  try {
    await api("POST", `/console/api/videos/${v.id}/cancel`);
    flash(t("canceled"));
  } catch (err) { flash(err.message, true); }
  await loadVideos();
}

async function loadVideos() {
  if (state.timer) { clearTimeout(state.timer); state.timer = null; }
  const list = await api("GET", "/console/api/videos?limit=50");
  const ul = $("video-list");
  // Keep players that are open (re-rendering would reset playback).
  const open = new Set(Object.keys(state.players));
  const existing = {};
  ul.querySelectorAll("li.card").forEach((li) => { existing[li.id] = li; });
  const fresh = document.createDocumentFragment();
  list.data.forEach((v) => {
    const old = existing["video-" + v.id];
    if (old && open.has(v.id) && v.status === "completed") fresh.appendChild(old);
    else fresh.appendChild(videoCard(v));
  });
  ul.textContent = ""; ul.appendChild(fresh);
  $("videos-empty").hidden = list.data.length > 0;
  const running = list.data.some((v) => !["completed", "failed", "canceled"].includes(v.status));
  if (running && location.hash.replace("#", "") in { videos: 1, "": 1 }) {
    state.timer = setTimeout(() => { loadVideos().catch(() => {}); }, 2000);
  }
}

// Chat
async function loadChat() {
  if (!state.chatModels) state.chatModels = await api("GET", "/console/api/chat/models");
  const sel = $("c-model"); const current = sel.value;
  sel.textContent = "";
  state.chatModels.data.forEach((m) => { const o = document.createElement("option"); o.value = m.id; o.textContent = m.id; sel.appendChild(o); });
  if (current) sel.value = current;
  updateEffort();
}

function updateEffort() {
  const m = (state.chatModels ? state.chatModels.data : []).find((x) => x.id === $("c-model").value);
  const efforts = (m && m.reasoning_efforts) || [];
  $("c-effort-field").hidden = efforts.length === 0;
  const sel = $("c-effort"); sel.textContent = "";
  const d = document.createElement("option"); d.value = ""; d.textContent = t("default_effort"); sel.appendChild(d);
  efforts.forEach((e) => { const o = document.createElement("option"); o.value = e; o.textContent = e; sel.appendChild(o); });
}

async function sendChat(ev) {
  ev.preventDefault();
  const form = $("chat-form"); clearErrors(form);
  const out = $("c-output"); out.textContent = "";
  const body = { model: $("c-model").value, stream: true, messages: [{ role: "user", content: $("c-message").value }] };
  if ($("c-effort").value) body.reasoning_effort = $("c-effort").value;
  const button = $("c-send"); button.disabled = true;
  try {
    const r = await fetch("/console/api/chat/completions", {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": state.session.csrf_token },
      body: JSON.stringify(body),
    });
    if (!r.ok) {
      let data = null; try { data = await r.json(); } catch (_) { data = null; }
      if (r.status === 401) sessionEnded();
      throw new ApiError(r.status, data);
    }
    const reader = r.body.getReader(); const decoder = new TextDecoder();
    let buffer = "";
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
            if (chunk.error) { $("err-messages").textContent = chunk.error.message; return; }
            (chunk.choices || []).forEach((c) => { if (c.delta && c.delta.content) out.textContent += c.delta.content; });
          } catch (_) { /* a partial line is completed by the next read */ }
        });
      }
    }
  } catch (err) {
    const map = { model: "err-chat-model", messages: "err-messages" };
    const param = err.param ? String(err.param).split(/[.[]/)[0] : "";
    ($(map[param]) || $("err-messages")).textContent = err.message;
  } finally { button.disabled = false; }
}

// Keys
async function loadKeys() {
  const keys = await api("GET", "/console/api/keys");
  const ul = $("key-list"); ul.textContent = "";
  keys.data.forEach((k) => {
    const li = document.createElement("li"); li.className = "card";
    const meta = document.createElement("div"); meta.className = "meta";
    meta.textContent = `${k.id} · ${t("created_at")} ${new Date(k.created_at * 1000).toLocaleString(state.lang)} · ${k.revoked ? t("revoked") : t("active")}`;
    li.appendChild(meta);
    if (!k.revoked) {
      const actions = document.createElement("div"); actions.className = "actions";
      const b = document.createElement("button"); b.type = "button"; b.className = "danger"; b.textContent = t("revoke");
      b.setAttribute("aria-label", `${t("revoke")} ${k.id}`);
      b.addEventListener("click", () => revokeKey(k.id));
      actions.appendChild(b); li.appendChild(actions);
    }
    ul.appendChild(li);
  });
}

async function createKey() {
  $("err-keys").textContent = "";
  try {
    const k = await api("POST", "/console/api/keys");
    $("key-secret").hidden = false;
    const input = $("key-secret-value"); input.value = k.secret; input.focus(); input.select();
    await loadKeys();
  } catch (err) { $("err-keys").textContent = err.message; }
}

async function revokeKey(id) {
  if (!window.confirm(t("confirm_revoke"))) return;
  try { await api("DELETE", `/console/api/keys/${id}`); await loadKeys(); } catch (err) { $("err-keys").textContent = err.message; }
}

// Usage
async function loadUsage() {
  const u = await api("GET", "/console/api/usage");
  $("u-balance").textContent = money(u.balance, u.currency);
  $("u-reserved").textContent = money(u.reserved, u.currency);
  $("u-available").textContent = money(u.available, u.currency);
  const tb = $("u-charges"); tb.textContent = "";
  if (!u.recent_charges.length) {
    const tr = document.createElement("tr"); const td = document.createElement("td"); td.colSpan = 3; td.textContent = t("none"); tr.appendChild(td); tb.appendChild(tr);
  }
  u.recent_charges.forEach((c) => {
    const tr = document.createElement("tr");
    [new Date((c.charged_at || 0) * 1000).toLocaleString(state.lang), `${c.reason || c.type}${c.model ? " · " + c.model : ""} · ${c.id || ""}`, money(c.amount, c.currency)]
      .forEach((text) => { const td = document.createElement("td"); td.textContent = text; tr.appendChild(td); });
    tb.appendChild(tr);
  });
  const bd = $("u-breakdown"); bd.textContent = "";
  (u.last_30_days || []).forEach((r) => {
    const tr = document.createElement("tr");
    [r.model, r.api_key_id, money(r.amount, r.currency)]
      .forEach((text) => { const td = document.createElement("td"); td.textContent = text; tr.appendChild(td); });
    bd.appendChild(tr);
  });
}

async function signOut() {
  try { await api("POST", "/console/api/signout"); } catch (_) { /* already ended */ }
  state.session = null;
  showSignedOut();
  flash(t("signed_out"));
}

async function start() {
  state.lang = chooseLanguage();
  applyLanguage();
  $("lang").addEventListener("click", () => {
    state.lang = state.lang === "ja" ? "en" : "ja";
    localStorage.setItem("reelgate.lang", state.lang);
    applyLanguage(); route();
  });
  $("signout").addEventListener("click", signOut);
  $("agree").addEventListener("click", agree);
  $("new-form").addEventListener("submit", createVideo);
  ["f-model", "f-seconds", "f-aspect"].forEach((id) => $(id).addEventListener("change", updateQuote));
  $("f-seconds").addEventListener("input", updateQuote);
  $("chat-form").addEventListener("submit", sendChat);
  $("c-model").addEventListener("change", updateEffort);
  $("key-create").addEventListener("click", createKey);
  window.addEventListener("hashchange", () => { flash(""); route(); });
  try {
    state.session = await api("GET", "/console/api/session");
    $("nav").hidden = false; $("signout").hidden = false;
    $("who").textContent = `${state.session.user.email} · ${state.session.organization.name}`;
    if (!location.hash) {
      const terms = await api("GET", "/console/api/terms");
      // A page the person chose while this loaded wins over the default landing page.
      if (!location.hash) location.hash = terms.accepted ? "#new" : "#terms";
      return; // hashchange routes
    }
  } catch (_) { state.session = null; }
  route();
}

document.addEventListener("DOMContentLoaded", start);
