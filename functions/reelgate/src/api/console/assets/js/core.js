// The core every page uses: the shared state, `$` and `t`, the language, `api` (the console's
// JSON routes, with the session's CSRF token), notices (`flash`), field errors, money and dates,
// the confirmation dialog and copying.

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

// A time (Unix seconds) as a date and time in the console's language.
function when(secs) { return new Date(secs * 1000).toLocaleString(state.lang); }

// Asks inside the page (a modal <dialog>: focus stays in it, Escape keeps things as they are),
// never with the browser's confirm(). Resolves true when the person confirms.
function askToConfirm(messageKey, actionKey) {
  const dialog = $("confirm-dialog");
  $("confirm-message").textContent = t(messageKey);
  $("confirm-yes").textContent = t(actionKey);
  $("confirm-no").textContent = t("keep");
  return new Promise((resolve) => {
    const done = (answer) => {
      dialog.removeEventListener("close", onClose);
      $("confirm-yes").onclick = null; $("confirm-no").onclick = null;
      if (dialog.open) dialog.close();
      resolve(answer);
    };
    const onClose = () => done(false);
    dialog.addEventListener("close", onClose);
    $("confirm-yes").onclick = () => done(true);
    $("confirm-no").onclick = () => done(false);
    dialog.showModal();
    $("confirm-no").focus();
  });
}

async function copyText(text) {
  try { await navigator.clipboard.writeText(text); flash(t("copied")); } catch (_) { /* the text stays selectable */ }
}

// Copies a shown-once secret; where the clipboard API is refused, selects it for Ctrl+C.
async function copyValue(id) {
  const input = $(id);
  try {
    await navigator.clipboard.writeText(input.value);
  } catch (_) {
    input.focus(); input.select();
    try { document.execCommand("copy"); } catch (__) { /* selected for the person to copy */ }
  }
  flash(t("copied"));
}
