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
    nav_webhooks: "Webhooks",
    inputs_title: "Images and references (optional)",
    inputs_hint: "This model uses the inputs below. Each file is uploaded as soon as you choose it.",
    in_first_frame: "First frame", in_last_frame: "Last frame", in_reference_images: "Reference images",
    in_reference_videos: "Reference videos", in_reference_audio: "Reference audio",
    hint_first_frame: "An image the video starts from (PNG, JPEG or WebP, under 30 MiB).",
    hint_last_frame: "An image the video ends on (PNG, JPEG or WebP, under 30 MiB).",
    hint_reference_images: "Up to 8 images that should appear in the video (not together with frames).",
    hint_reference_videos: "Up to 2 clips to take motion or style from (MP4, up to 50 MiB each).",
    hint_reference_audio: "Up to 3 audio files mixed under the soundtrack (needs a reference image or video).",
    uploading: "Uploading", uploaded: "Uploaded", remove: "Remove", upload_failed: "The upload failed",
    upload_network: "The upload did not reach the server. Check the connection and choose the file again.",
    too_many: "Too many files for this input; the limit is {n}.",
    wait_uploads: "Wait until every upload has finished.",
    attach_image: "Attach an image", attach_hint: "This model can see images. The image is sent with your message.",
    remove_image: "Remove image",
    webhooks_title: "Webhooks",
    webhooks_hint: "Your organization's endpoints receive video.completed, video.failed and video.canceled events, signed per Standard Webhooks. A new or rotated secret is shown once; copy it now.",
    wh_url: "Endpoint URL", wh_events: "Events", wh_description: "Description (optional)", wh_create: "Add endpoint",
    wh_secret: "Signing secret (shown once)", wh_endpoints: "Endpoints", wh_empty: "No endpoints yet.", refresh: "Refresh",
    wh_rotate: "Rotate secret", wh_delete: "Delete", wh_enabled: "enabled", wh_disabled: "disabled",
    wh_disabled_reason: "Reason", wh_failures: "failures in a row", wh_last_success: "last success",
    wh_never: "never", wh_attempts: "Last attempts", wh_no_attempts: "No deliveries yet.",
    wh_attempt: "Attempt", wh_event: "Event", wh_result: "Result", wh_ok: "delivered", wh_failed: "failed",
    wh_created: "Endpoint added. Copy its signing secret now: it is not shown again.",
    wh_rotated: "New signing secret below; the previous one keeps signing for 24 hours.",
    wh_deleted: "Endpoint deleted.", confirm_wh_delete: "Delete this endpoint? It receives no more events.",
    confirm_wh_rotate: "Make a new signing secret for this endpoint?",
    lim_title: "Limits and budget", lim_requests_per_minute: "Requests per minute",
    lim_tokens_per_minute: "Tokens per minute", lim_video_creates_per_minute: "Video creates per minute",
    lim_monthly_budget: "Monthly budget", lim_from_key: "set on this key", lim_from_plan: "plan's limit",
    lim_unlimited: "unlimited", lim_committed: "committed this month", lim_no_budget: "no budget",
    lim_edit: "Change limits", lim_save: "Save limits", lim_saved: "Limits saved.",
    lim_hint: "Leave a field empty to use the plan's limit (or to have no budget). A limit cannot be above the plan's.",
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
    nav_webhooks: "Webhook",
    inputs_title: "画像と参照(任意)",
    inputs_hint: "このモデルは次の入力を使います。ファイルは選んだ時点でアップロードされます。",
    in_first_frame: "最初のフレーム", in_last_frame: "最後のフレーム", in_reference_images: "参照画像",
    in_reference_videos: "参照動画", in_reference_audio: "参照音声",
    hint_first_frame: "動画の始まりの画像(PNG・JPEG・WebP、30 MiB 未満)。",
    hint_last_frame: "動画の終わりの画像(PNG・JPEG・WebP、30 MiB 未満)。",
    hint_reference_images: "動画に登場させたい画像を最大8枚(フレームとは併用できません)。",
    hint_reference_videos: "動きや作風の参考にする動画を最大2本(MP4、各 50 MiB まで)。",
    hint_reference_audio: "サウンドトラックに重ねる音声を最大3つ(参照画像か参照動画が必要です)。",
    uploading: "アップロード中", uploaded: "アップロード済み", remove: "削除", upload_failed: "アップロードに失敗しました",
    upload_network: "アップロードがサーバーに届きませんでした。接続を確認して、もう一度ファイルを選んでください。",
    too_many: "この入力にはファイルが多すぎます。上限は {n} です。",
    wait_uploads: "すべてのアップロードが終わるまでお待ちください。",
    attach_image: "画像を添付", attach_hint: "このモデルは画像を理解できます。画像はメッセージと一緒に送られます。",
    remove_image: "画像を外す",
    webhooks_title: "Webhook",
    webhooks_hint: "組織のエンドポイントは video.completed・video.failed・video.canceled イベントを Standard Webhooks の署名付きで受け取ります。新しい(またはローテーションした)シークレットは一度だけ表示されます。今すぐコピーしてください。",
    wh_url: "エンドポイントURL", wh_events: "イベント", wh_description: "説明(任意)", wh_create: "エンドポイントを追加",
    wh_secret: "署名シークレット(一度だけ表示)", wh_endpoints: "エンドポイント", wh_empty: "エンドポイントはまだありません。", refresh: "更新",
    wh_rotate: "シークレットを更新", wh_delete: "削除", wh_enabled: "有効", wh_disabled: "無効",
    wh_disabled_reason: "理由", wh_failures: "回連続で失敗", wh_last_success: "最後の成功",
    wh_never: "なし", wh_attempts: "最近の配信", wh_no_attempts: "配信はまだありません。",
    wh_attempt: "試行", wh_event: "イベント", wh_result: "結果", wh_ok: "配信済み", wh_failed: "失敗",
    wh_created: "エンドポイントを追加しました。署名シークレットを今すぐコピーしてください。再表示されません。",
    wh_rotated: "新しい署名シークレットを下に表示しました。以前のものも24時間は署名に使われます。",
    wh_deleted: "エンドポイントを削除しました。", confirm_wh_delete: "このエンドポイントを削除しますか?以後イベントは届きません。",
    confirm_wh_rotate: "このエンドポイントの署名シークレットを新しくしますか?",
    lim_title: "上限と予算", lim_requests_per_minute: "1分あたりのリクエスト数",
    lim_tokens_per_minute: "1分あたりのトークン数", lim_video_creates_per_minute: "1分あたりの動画作成数",
    lim_monthly_budget: "月間予算", lim_from_key: "このキーに設定", lim_from_plan: "プランの上限",
    lim_unlimited: "無制限", lim_committed: "今月の使用額", lim_no_budget: "予算なし",
    lim_edit: "上限を変更", lim_save: "上限を保存", lim_saved: "上限を保存しました。",
    lim_hint: "空欄にするとプランの上限を使います(予算は設定なし)。プランの上限を超える値は設定できません。",
  },
};

const state = { lang: "en", session: null, terms: null, models: null, chatModels: null, timer: null, players: {},
  uploads: {}, uploadErrors: {}, frameOrder: [], chatImage: null };
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

const PAGES = ["signin", "terms", "new", "videos", "chat", "keys", "webhooks", "usage"];
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
    if (page === "webhooks") await loadWebhooks();
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
  if (current && models.data.some((m) => m.id === current)) sel.value = current;
  const lim = models.limits || {};
  const secs = $("f-seconds"); secs.min = lim.min_seconds || 4; secs.max = lim.max_seconds || 15;
  if (lim.max_prompt_chars) $("f-prompt").maxLength = lim.max_prompt_chars;
  showModelInputs();
  await updateQuote();
}

// The inputs a model's engine honours (catalog capabilities): only those are offered, with the
// request field each fills, the file purpose its upload needs, and how many files it takes.
const SLOTS = {
  first_frame: { purpose: "vision", max: 1 },
  last_frame: { purpose: "vision", max: 1 },
  reference_images: { purpose: "vision", max: 8 },
  reference_videos: { purpose: "video", max: 2 },
  reference_audio: { purpose: "audio", max: 3 },
};
Object.keys(SLOTS).forEach((name) => { state.uploads[name] = []; });
let uploadSeq = 0;

function currentModel() {
  return (state.models ? state.models.data : []).find((m) => m.id === $("f-model").value);
}

function showModelInputs() {
  const m = currentModel();
  const honoured = (m && m.inputs) || [];
  Object.keys(SLOTS).forEach((name) => { $("slot-" + name).hidden = !honoured.includes(name); });
  $("inputs").hidden = honoured.length === 0;
  const lim = (state.models && state.models.limits) || {};
  const ratios = (m && m.aspect_ratios && m.aspect_ratios.length ? m.aspect_ratios : lim.aspect_ratios) || ["16:9"];
  const asp = $("f-aspect"); const a0 = asp.value || "16:9";
  asp.textContent = "";
  ratios.forEach((r) => { const o = document.createElement("option"); o.value = r; o.textContent = r; asp.appendChild(o); });
  asp.value = ratios.includes(a0) ? a0 : (ratios.includes("16:9") ? "16:9" : ratios[0]);
}

function slotOffered(name) { return !$("slot-" + name).hidden; }

function setUploadError(name, message) {
  state.uploadErrors[name] = message || "";
  $("err-" + name).textContent = message || "";
  if (message) $("u-" + name).setAttribute("aria-invalid", "true"); else $("u-" + name).removeAttribute("aria-invalid");
}

// Upload failures stay next to their input until the person chooses files for it again.
function restoreUploadErrors() {
  Object.keys(SLOTS).forEach((name) => { if (state.uploadErrors[name]) setUploadError(name, state.uploadErrors[name]); });
}

function uploadStatusText(item) {
  return item.status === "done" ? `${t("uploaded")} · 100 %` : `${t("uploading")} · ${item.percent} %`;
}

function renderSlot(name) {
  const ul = $("list-" + name); ul.textContent = "";
  state.uploads[name].forEach((item) => {
    const li = document.createElement("li"); li.className = "upload-item"; li.id = "upload-" + item.key;
    li.dataset.status = item.status;
    const label = document.createElement("label"); label.textContent = item.name;
    const bar = document.createElement("progress"); bar.max = 100; bar.value = item.percent; bar.id = "bar-" + item.key;
    label.htmlFor = bar.id;
    const status = document.createElement("span"); status.className = "upload-status"; status.id = "status-" + item.key;
    status.textContent = uploadStatusText(item);
    const rm = document.createElement("button"); rm.type = "button"; rm.className = "link"; rm.textContent = t("remove");
    rm.setAttribute("aria-label", `${t("remove")} ${item.name}`);
    rm.addEventListener("click", () => removeUpload(name, item));
    li.append(label, bar, status, rm);
    ul.appendChild(li);
  });
}

function setProgress(item, percent) {
  item.percent = Math.max(item.percent, Math.min(100, percent));
  const bar = $("bar-" + item.key); if (bar) bar.value = item.percent;
  const status = $("status-" + item.key); if (status) status.textContent = uploadStatusText(item);
}

function removeUpload(name, item) {
  item.removed = true;
  if (item.xhr) item.xhr.abort();
  state.uploads[name] = state.uploads[name].filter((i) => i !== item);
  renderSlot(name);
  setUploadError(name, "");
  updateQuote();
}

// PUTs the bytes to the upload's URL (this server's signed URL locally, the bucket's presigned
// URL on AWS) with the headers the upload names, reporting progress as the bytes go out.
function putWithProgress(item, up, file) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest(); item.xhr = xhr;
    xhr.open(up.upload_method || "PUT", up.upload_url);
    Object.entries(up.upload_headers || {}).forEach(([k, v]) => xhr.setRequestHeader(k, v));
    xhr.upload.addEventListener("progress", (e) => {
      if (e.lengthComputable && e.total > 0) setProgress(item, Math.floor((e.loaded * 100) / e.total));
    });
    xhr.addEventListener("load", () => {
      item.xhr = null;
      if (xhr.status >= 200 && xhr.status < 300) { setProgress(item, 100); resolve(); return; }
      let message = `${t("upload_failed")} (HTTP ${xhr.status})`;
      try { const b = JSON.parse(xhr.responseText); if (b && b.error && b.error.message) message = b.error.message; } catch (_) { /* not JSON */ }
      reject(new Error(message));
    });
    xhr.addEventListener("error", () => { item.xhr = null; reject(new Error(t("upload_network"))); });
    xhr.addEventListener("abort", () => { item.xhr = null; reject(new Error(t("upload_failed"))); });
    xhr.send(file);
  });
}

// One file through the direct upload flow: create the upload, PUT the bytes, complete it into a
// file (sniffed and checked against the purpose by the server).
async function uploadOne(name, file) {
  const item = { key: "u" + (++uploadSeq), name: file.name, status: "uploading", percent: 0, file_id: null, xhr: null };
  state.uploads[name].push(item); renderSlot(name);
  try {
    const up = await api("POST", "/console/api/uploads", {
      purpose: SLOTS[name].purpose, filename: file.name, bytes: file.size, mime_type: file.type || "application/octet-stream",
    });
    if (item.removed) return;
    await putWithProgress(item, up, file);
    if (item.removed) return;
    const f = await api("POST", `/console/api/uploads/${encodeURIComponent(up.id)}/complete`);
    item.file_id = f.id; item.status = "done"; setProgress(item, 100);
    const li = $("upload-" + item.key); if (li) li.dataset.status = "done";
  } catch (err) {
    if (item.removed) return;
    state.uploads[name] = state.uploads[name].filter((i) => i !== item);
    renderSlot(name);
    if (err.status !== 401) setUploadError(name, `${file.name}: ${err.message}`);
  }
}

async function chooseFiles(name) {
  const input = $("u-" + name);
  let files = Array.from(input.files || []);
  input.value = "";
  if (!files.length) return;
  setUploadError(name, "");
  const max = SLOTS[name].max;
  if (max === 1) state.uploads[name].slice().forEach((item) => removeUpload(name, item));
  const room = max - state.uploads[name].length;
  if (files.length > room) { setUploadError(name, t("too_many").replace("{n}", max)); files = files.slice(0, room); }
  await Promise.all(files.map((f) => uploadOne(name, f)));
  await updateQuote();
}

// The uploaded files of the offered inputs, as the create request names them.
function addInputs(body) {
  const done = (name) => (slotOffered(name) ? state.uploads[name].filter((i) => i.status === "done") : []);
  const frames = []; state.frameOrder = [];
  ["first_frame", "last_frame"].forEach((name) => done(name).forEach((i) => {
    frames.push({ file_id: i.file_id, role: name }); state.frameOrder.push(name);
  }));
  if (frames.length) body.image_reference = frames;
  const refs = {};
  [["reference_images", "images"], ["reference_videos", "videos"], ["reference_audio", "audio"]].forEach(([name, key]) => {
    const list = done(name);
    if (list.length) refs[key] = list.map((i) => ({ file_id: i.file_id }));
  });
  if (Object.keys(refs).length) body.references = refs;
  return body;
}

// Which field of the New video page an API error's `param` concerns.
function newVideoField(param) {
  const p = String(param || "");
  const m = p.match(/^image_reference\[(\d+)\]/);
  if (m) return state.frameOrder[Number(m[1])] || "first_frame";
  if (p.startsWith("image_reference")) return state.frameOrder[0] || (slotOffered("first_frame") ? "first_frame" : "last_frame");
  if (p.startsWith("references.videos")) return "reference_videos";
  if (p.startsWith("references.audio")) return "reference_audio";
  if (p.startsWith("references")) return "reference_images";
  return p.split(/[.[]/)[0];
}

function showNewVideoError(err) {
  const name = newVideoField(err.param);
  let el = name ? $("err-" + name) : null;
  if (el && el.closest("[hidden]")) el = null;
  (el || $("err-form")).textContent = err.message;
  const input = !el ? null : SLOTS[name] ? $("u-" + name) : $("new-form").querySelector(`[name="${name}"]`);
  if (input) input.setAttribute("aria-invalid", "true");
}

function formBody() {
  const seconds = parseInt($("f-seconds").value, 10);
  return addInputs({ model: $("f-model").value, seconds: Number.isNaN(seconds) ? $("f-seconds").value : seconds,
    aspect_ratio: $("f-aspect").value, prompt: $("f-prompt").value });
}

let quoteSeq = 0;
async function updateQuote() {
  const seq = ++quoteSeq;
  const form = $("new-form");
  clearErrors(form); restoreUploadErrors();
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
    if (err.status !== 401) showNewVideoError(err);
  }
}

async function createVideo(ev) {
  ev.preventDefault();
  const form = $("new-form");
  clearErrors(form); restoreUploadErrors();
  if (Object.keys(SLOTS).some((name) => slotOffered(name) && state.uploads[name].some((i) => i.status !== "done"))) {
    $("err-form").textContent = t("wait_uploads");
    return;
  }
  const button = $("create"); button.disabled = true;
  try {
    await api("POST", "/console/api/videos", formBody());
    flash(t("created"));
    Object.keys(SLOTS).forEach((name) => { state.uploads[name] = []; renderSlot(name); setUploadError(name, ""); });
    location.hash = "#videos";
  } catch (err) {
    if (err.code === "agreement_required") { $("new-needs-terms").hidden = false; }
    showNewVideoError(err);
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
  // Image attachments only where the model has vision.
  const vision = !!m && (m.capabilities || []).includes("vision");
  $("c-image-field").hidden = !vision;
  if (!vision) clearChatImage();
  const sel = $("c-effort"); sel.textContent = "";
  const d = document.createElement("option"); d.value = ""; d.textContent = t("default_effort"); sel.appendChild(d);
  efforts.forEach((e) => { const o = document.createElement("option"); o.value = e; o.textContent = e; sel.appendChild(o); });
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

async function sendChat(ev) {
  ev.preventDefault();
  const form = $("chat-form"); clearErrors(form);
  const out = $("c-output"); out.textContent = "";
  const image = !$("c-image-field").hidden && state.chatImage;
  const content = image
    ? [{ type: "text", text: $("c-message").value }, { type: "image_url", image_url: { url: image.url } }]
    : $("c-message").value;
  const body = { model: $("c-model").value, stream: true, messages: [{ role: "user", content }] };
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
    const full = String(err.param || "");
    const param = full.split(/[.[]/)[0];
    const aboutImage = image && (full.includes("image_url") || /^messages\[0\]\.content\[1\]/.test(full) || err.status === 413);
    ($(aboutImage ? "err-c-image" : map[param]) || $("err-messages")).textContent = err.message;
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
      const limits = document.createElement("div"); limits.className = "limits"; limits.id = "lim-" + k.id;
      li.appendChild(limits);
    }
    ul.appendChild(li);
  });
  await Promise.all(keys.data.filter((k) => !k.revoked).map((k) => loadKeyLimits(k.id)));
}

const LIMIT_FIELDS = ["requests_per_minute", "tokens_per_minute", "video_creates_per_minute"];

// A key's limits and budget, and a form to change them (the server checks every value).
async function loadKeyLimits(id) {
  const box = $("lim-" + id);
  if (!box) return;
  let c;
  try { c = await api("GET", `/console/api/keys/${id}/limits`); } catch (err) { box.textContent = err.message; return; }
  renderKeyLimits(box, c);
}

function renderKeyLimits(box, c) {
  const id = c.id;
  const open = box.querySelector("details") && box.querySelector("details").open;
  box.textContent = "";
  const h = document.createElement("h2"); h.className = "sub"; h.textContent = t("lim_title"); box.appendChild(h);
  const dl = document.createElement("dl"); dl.className = "limit-list";
  const row = (label, value, note, name) => {
    const dt = document.createElement("dt"); dt.textContent = label;
    const dd = document.createElement("dd"); dd.dataset.limit = name;
    const v = document.createElement("strong"); v.textContent = value; dd.appendChild(v);
    if (note) { const n = document.createElement("span"); n.className = "meta"; n.textContent = " · " + note; dd.appendChild(n); }
    dl.append(dt, dd);
  };
  LIMIT_FIELDS.forEach((f) => {
    const l = c[f];
    const value = l.effective === null ? t("lim_unlimited") : String(l.effective);
    const note = l.source === "key"
      ? `${t("lim_from_key")} (${t("lim_from_plan")}: ${l.plan === null ? t("lim_unlimited") : l.plan})`
      : t("lim_from_plan");
    row(t("lim_" + f), value, note, f);
  });
  row(t("lim_monthly_budget"), c.monthly_budget === null ? t("lim_no_budget") : money(c.monthly_budget, c.currency),
      c.monthly_budget === null ? "" : `${t("lim_committed")}: ${money(c.committed, c.currency)}`, "monthly_budget");
  box.appendChild(dl);

  const details = document.createElement("details"); details.open = !!open;
  const summary = document.createElement("summary"); summary.textContent = t("lim_edit");
  summary.setAttribute("aria-label", `${t("lim_edit")} ${id}`);
  details.appendChild(summary);
  const form = document.createElement("form"); form.noValidate = true;
  const hint = document.createElement("p"); hint.className = "hint"; hint.textContent = t("lim_hint"); form.appendChild(hint);
  const fields = document.createElement("div"); fields.className = "row";
  [...LIMIT_FIELDS, "monthly_budget"].forEach((f) => {
    const wrap = document.createElement("div"); wrap.className = "field";
    const inputId = `lim-${id}-${f}`;
    const label = document.createElement("label"); label.htmlFor = inputId; label.textContent = t("lim_" + f);
    const input = document.createElement("input"); input.id = inputId; input.name = f; input.type = "text";
    input.inputMode = f === "monthly_budget" ? "decimal" : "numeric"; input.autocomplete = "off";
    if (f === "monthly_budget") {
      input.value = c.monthly_budget === null ? "" : c.monthly_budget;
      input.placeholder = t("lim_no_budget");
    } else {
      input.value = c[f].key === null ? "" : String(c[f].key);
      input.placeholder = c[f].plan === null ? t("lim_unlimited") : `${t("lim_from_plan")}: ${c[f].plan}`;
    }
    const err = document.createElement("p"); err.className = "field-error"; err.id = `err-lim-${id}-${f}`; err.setAttribute("role", "alert");
    input.setAttribute("aria-describedby", err.id);
    wrap.append(label, input, err); fields.appendChild(wrap);
  });
  form.appendChild(fields);
  const other = document.createElement("p"); other.className = "field-error"; other.id = `err-lim-${id}`; other.setAttribute("role", "alert");
  const save = document.createElement("button"); save.type = "submit"; save.className = "primary"; save.textContent = t("lim_save");
  save.setAttribute("aria-label", `${t("lim_save")} ${id}`);
  form.append(other, save);
  form.addEventListener("submit", (e) => { e.preventDefault(); saveKeyLimits(box, id, form, save); });
  details.appendChild(form);
  box.appendChild(details);
}

async function saveKeyLimits(box, id, form, button) {
  clearErrors(form);
  const body = {};
  LIMIT_FIELDS.forEach((f) => {
    const raw = form.elements[f].value.trim();
    // Whole numbers go as numbers; anything else is sent as typed and the server names the field.
    body[f] = raw === "" ? null : (/^\d+$/.test(raw) ? Number(raw) : raw);
  });
  const budget = form.elements.monthly_budget.value.trim();
  body.monthly_budget = budget === "" ? null : budget;
  button.disabled = true;
  try {
    const c = await api("POST", `/console/api/keys/${id}/limits`, body);
    renderKeyLimits(box, c);
    flash(t("lim_saved"));
  } catch (err) {
    const param = String(err.param || "");
    const target = $(`err-lim-${id}-${param}`) || $(`err-lim-${id}`);
    target.textContent = err.message;
    if (form.elements[param]) form.elements[param].setAttribute("aria-invalid", "true");
  } finally { button.disabled = false; }
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

// Webhooks
function when(secs) { return new Date(secs * 1000).toLocaleString(state.lang); }

function webhookCard(e) {
  const li = document.createElement("li"); li.className = "card"; li.id = "wh-" + e.id;
  const head = document.createElement("div");
  const badge = document.createElement("span"); badge.className = "badge " + (e.status === "enabled" ? "completed" : "failed");
  badge.textContent = e.status === "enabled" ? t("wh_enabled") : t("wh_disabled");
  const url = document.createElement("span"); url.className = "url"; url.textContent = " " + e.url;
  head.append(badge, url); li.appendChild(head);
  const meta = document.createElement("p"); meta.className = "meta";
  meta.textContent = [e.id, e.events.join(", "), e.description || ""].filter(Boolean).join(" · ");
  li.appendChild(meta);
  if (e.disabled_reason) {
    const why = document.createElement("p"); why.className = "field-error reason";
    why.textContent = `${t("wh_disabled_reason")}: ${e.disabled_reason}`; li.appendChild(why);
  }
  const d = e.delivery || { consecutive_failures: 0, last_attempts: [] };
  const rec = document.createElement("p"); rec.className = "meta";
  rec.textContent = `${d.consecutive_failures} ${t("wh_failures")} · ${t("wh_last_success")}: ${d.last_success_at ? when(d.last_success_at) : t("wh_never")}`;
  li.appendChild(rec);
  if (!d.last_attempts.length) {
    const none = document.createElement("p"); none.className = "hint"; none.textContent = t("wh_no_attempts"); li.appendChild(none);
  } else {
    const wrap = document.createElement("div"); wrap.className = "table-wrap";
    const table = document.createElement("table"); table.className = "attempts";
    const cap = document.createElement("caption"); cap.textContent = t("wh_attempts"); table.appendChild(cap);
    const thead = document.createElement("thead"); const hr = document.createElement("tr");
    [t("when"), t("wh_event"), t("wh_attempt"), t("wh_result")].forEach((h) => {
      const th = document.createElement("th"); th.textContent = h; hr.appendChild(th);
    });
    thead.appendChild(hr); table.appendChild(thead);
    const tb = document.createElement("tbody");
    d.last_attempts.forEach((a) => {
      const tr = document.createElement("tr");
      const result = a.succeeded ? `${t("wh_ok")} (HTTP ${a.status_code})`
        : `${t("wh_failed")}${a.status_code ? " (HTTP " + a.status_code + ")" : ""}${a.error ? ": " + a.error : ""}`;
      [when(a.attempted_at), a.type, String(a.attempt), result].forEach((text) => {
        const td = document.createElement("td"); td.textContent = text; tr.appendChild(td);
      });
      tb.appendChild(tr);
    });
    table.appendChild(tb); wrap.appendChild(table); li.appendChild(wrap);
  }
  const actions = document.createElement("div"); actions.className = "actions";
  const rotate = document.createElement("button"); rotate.type = "button"; rotate.textContent = t("wh_rotate");
  rotate.setAttribute("aria-label", `${t("wh_rotate")} ${e.id}`);
  rotate.addEventListener("click", () => rotateWebhook(e.id));
  const del = document.createElement("button"); del.type = "button"; del.className = "danger"; del.textContent = t("wh_delete");
  del.setAttribute("aria-label", `${t("wh_delete")} ${e.id}`);
  del.addEventListener("click", () => deleteWebhook(e.id));
  actions.append(rotate, del); li.appendChild(actions);
  return li;
}

async function loadWebhooks() {
  const list = await api("GET", "/console/api/webhooks");
  const ul = $("wh-list"); ul.textContent = "";
  list.data.forEach((e) => ul.appendChild(webhookCard(e)));
  $("wh-empty").hidden = list.data.length > 0;
}

function showWebhookSecret(endpoint) {
  $("wh-secret").hidden = false; $("wh-secret").dataset.endpoint = endpoint.id;
  const input = $("wh-secret-value"); input.value = endpoint.secret || ""; input.focus(); input.select();
}

async function createWebhook(ev) {
  ev.preventDefault();
  const form = $("wh-form"); clearErrors(form);
  const body = {
    url: $("wh-url").value.trim(),
    events: Array.from(form.querySelectorAll("input[name=events]:checked")).map((c) => c.value),
  };
  if ($("wh-description").value.trim()) body.description = $("wh-description").value.trim();
  const button = $("wh-create"); button.disabled = true;
  try {
    const e = await api("POST", "/console/api/webhooks", body);
    form.reset();
    await loadWebhooks();
    flash(t("wh_created"));
    showWebhookSecret(e);
  } catch (err) {
    const param = err.param ? String(err.param).split(/[.[]/)[0] : "";
    const target = ["url", "events", "description"].includes(param) ? param : "";
    ($(target ? "err-" + target : "err-wh-form")).textContent = err.message;
    const input = target === "url" ? $("wh-url") : target === "description" ? $("wh-description") : null;
    if (input) { input.setAttribute("aria-invalid", "true"); input.focus(); }
  } finally { button.disabled = false; }
}

async function rotateWebhook(id) {
  if (!window.confirm(t("confirm_wh_rotate"))) return;
  $("err-webhooks").textContent = "";
  try {
    const e = await api("POST", `/console/api/webhooks/${encodeURIComponent(id)}/rotate_secret`);
    await loadWebhooks();
    flash(t("wh_rotated"));
    showWebhookSecret(e);
  } catch (err) { $("err-webhooks").textContent = err.message; }
}

async function deleteWebhook(id) {
  if (!window.confirm(t("confirm_wh_delete"))) return;
  $("err-webhooks").textContent = "";
  try {
    await api("DELETE", `/console/api/webhooks/${encodeURIComponent(id)}`);
    if ($("wh-secret").dataset.endpoint === id) { $("wh-secret").hidden = true; $("wh-secret-value").value = ""; }
    flash(t("wh_deleted"));
    await loadWebhooks();
  } catch (err) { $("err-webhooks").textContent = err.message; }
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
  ["f-seconds", "f-aspect"].forEach((id) => $(id).addEventListener("change", updateQuote));
  $("f-seconds").addEventListener("input", updateQuote);
  $("chat-form").addEventListener("submit", sendChat);
  $("c-model").addEventListener("change", updateEffort);
  $("c-image").addEventListener("change", chooseChatImage);
  $("c-image-remove").addEventListener("click", () => { clearChatImage(); $("c-image").focus(); });
  $("f-model").addEventListener("change", () => { showModelInputs(); updateQuote(); });
  Object.keys(SLOTS).forEach((name) => $("u-" + name).addEventListener("change", () => chooseFiles(name)));
  $("wh-form").addEventListener("submit", createWebhook);
  $("wh-refresh").addEventListener("click", () => loadWebhooks().catch((err) => { $("err-webhooks").textContent = err.message; }));
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
