const state = { lang: "en", session: null, terms: null, models: null, chatModels: null, timer: null, players: {},
  uploads: {}, uploadErrors: {}, frameOrder: [], chatImage: null, media: {}, videos: null,
  chat: [], chatBusy: false, chatAbort: null, usage: null, usageSplit: "model",
  videoPage: null, videoTimer: null, operation: null, codeLang: "curl", chatRestored: false };
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
  document.querySelectorAll("[data-i18n-placeholder]").forEach((el) => { el.placeholder = t(el.dataset.i18nPlaceholder); });
  const sso = $("oidc-signin");
  if (sso) sso.textContent = t("signin_oidc").replace("{name}", sso.dataset.name);
  const other = state.lang === "ja" ? "English" : "日本語";
  $("lang").textContent = other;
  $("lang").setAttribute("aria-label", state.lang === "ja" ? "Switch to English" : "日本語に切り替える");
  $("lang").setAttribute("lang", state.lang === "ja" ? "en" : "ja");
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

// A notice over the page: a confirmation fades after a while, an error stays until clicked or
// replaced.
function flash(message, isError) {
  const f = $("flash");
  f.textContent = message || "";
  f.classList.toggle("error", !!isError);
  clearTimeout(state.flashTimer);
  if (message && !isError) state.flashTimer = setTimeout(() => { if (f.textContent === message) f.textContent = ""; }, 8000);
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
  if (el) el.textContent = errorText(err);
  const input = document.querySelector(`[name="${param}"]`);
  if (target && input) { input.setAttribute("aria-invalid", "true"); }
}

// One money format everywhere: at least two decimals, more only where a sub-cent amount needs
// them (at most six), then the currency code ("2.30 USD", "0.000219 USD").
function money(amount, currency) {
  if (amount === undefined || amount === null || amount === "") return "—";
  const code = String(currency || "").toUpperCase();
  const n = Number(amount);
  if (!Number.isFinite(n)) return `${amount} ${code}`.trim();
  let text = n.toFixed(6).replace(/0+$/, "");
  const [whole, frac = ""] = text.split(".");
  text = `${whole}.${frac.padEnd(2, "0")}`;
  if (text === "-0.00") text = "0.00";
  return `${text} ${code}`.trim();
}

function sessionEnded() {
  state.session = null;
  flash(t("session_ended"), true);
  showSignedOut();
}

function showSignedOut() {
  $("nav").hidden = true; $("signout").hidden = true; $("who").textContent = "";
  fillSigninCommand();
  show("signin");
}

// The way back in on a server whose operator makes links on the command line: the exact command
// for the person who last signed in here (ids only are kept in the browser, never a secret).
function fillSigninCommand() {
  let last = null;
  try { last = JSON.parse(localStorage.getItem("reelgate.last_person") || "null"); } catch (_) { last = null; }
  const known = last && /^[\w-]+$/.test(last.user || "") && /^[\w-]+$/.test(last.org || "");
  $("signin-command").value = known
    ? `reelgate admin console-link --user ${last.user} --org ${last.org}`
    : "reelgate admin console-link --user USER_ID --org ORG_ID";
  $("signin-cli-who").dataset.i18n = known ? "signin_cli_known" : "signin_cli_unknown";
  $("signin-cli-who").textContent = t($("signin-cli-who").dataset.i18n);
}

const PAGES = ["signin", "terms", "new", "videos", "video", "chat", "keys", "webhooks", "usage"];
function show(name) {
  PAGES.forEach((p) => { $("page-" + p).hidden = p !== name; });
  document.querySelectorAll("nav a").forEach((a) => {
    if (a.getAttribute("href") === "#" + name) {
      a.setAttribute("aria-current", "page");
      // On a narrow screen the tabs scroll sideways: keep the current one in view.
      if (a.parentElement && a.parentElement.scrollWidth > a.parentElement.clientWidth) {
        a.scrollIntoView({ block: "nearest", inline: "nearest" });
      }
    } else a.removeAttribute("aria-current");
  });
  if (state.timer && name !== "videos") { clearTimeout(state.timer); state.timer = null; }
  if (state.videoTimer && name !== "video") { clearTimeout(state.videoTimer); state.videoTimer = null; }
}

async function route() {
  if (!state.session) { showSignedOut(); return; }
  const videoId = videoPagePath();
  if (videoId && location.hash) {
    // A nav link followed from a video's page: back to the console's own address.
    history.replaceState(null, "", "/console/" + location.hash);
  } else if (videoId) {
    show("video");
    try { await loadVideoPage(videoId); } catch (err) { if (err.status !== 401) flash(errorText(err), true); }
    return;
  }
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
    if (err.status !== 401) flash(errorText(err), true);
  }
}

