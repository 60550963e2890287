// Signing in and out, moving between pages (hash routes, and a video's own path), and the start:
// the language, each page's listeners, and the session.

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

async function signOut() {
  // The conversation kept in this browser goes with the session (another person may sign in).
  if (state.session) { localStorage.removeItem(chatStoreKey()); state.chatRestored = false; state.chatId = null; }
  state.chat = []; state.chatRestored = false;
  try { await api("POST", "/console/api/signout"); } catch (_) { /* already ended */ }
  state.session = null;
  showSignedOut();
  flash(t("signed_out"));
}

async function start() {
  state.lang = chooseLanguage();
  buildCodeBoxes();
  applyLanguage();
  $("lang").addEventListener("click", () => {
    state.lang = state.lang === "ja" ? "en" : "ja";
    localStorage.setItem("reelgate.lang", state.lang);
    applyLanguage(); route();
  });
  $("signout").addEventListener("click", signOut);
  $("flash").addEventListener("click", () => flash(""));
  $("signin-command-copy").addEventListener("click", () => copyValue("signin-command"));
  // Each page's own controls.
  wireTerms(); wireNewVideo(); wireVideos(); wireVideoPage(); wireCodeBoxes(); wireChat(); wireKeys();
  wireWebhooks(); wireUsage();
  window.addEventListener("hashchange", () => { flash(""); route(); });
  try {
    state.session = await api("GET", "/console/api/session");
    localStorage.setItem("reelgate.last_person",
      JSON.stringify({ user: state.session.user.id, org: state.session.organization.id }));
    $("nav").hidden = false; $("signout").hidden = false;
    $("who").textContent = `${state.session.user.email} · ${state.session.organization.name}`;
    if (!location.hash && !videoPagePath()) {
      const terms = await api("GET", "/console/api/terms");
      // A page the person chose while this loaded wins over the default landing page.
      if (!location.hash) location.hash = terms.accepted ? "#new" : "#terms";
      return; // hashchange routes
    }
  } catch (_) { state.session = null; }
  route();
}

document.addEventListener("DOMContentLoaded", start);
