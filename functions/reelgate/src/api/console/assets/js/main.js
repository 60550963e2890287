// Copies a shown-once secret; where the clipboard API is refused, selects it for Ctrl+C.
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
  $("agree").addEventListener("click", agree);
  $("new-form").addEventListener("submit", createVideo);
  ["f-seconds", "f-aspect"].forEach((id) => $(id).addEventListener("change", updateQuote));
  $("chat-form").addEventListener("submit", sendChat);
  $("chat-settings").addEventListener("submit", (e) => e.preventDefault());
  // Enter sends, Shift+Enter is a new line (and Enter that ends an IME composition is not a send).
  $("c-message").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing && e.keyCode !== 229) { e.preventDefault(); sendChat(); }
  });
  $("c-new").addEventListener("click", newChat);
  ["c-message", "c-system"].forEach((id) => $(id).addEventListener("input", () => { if (state.session) saveChat(); }));
  $("f-prompt").addEventListener("input", () => {
    checkTranslation();
    if (state.formProblems && state.formProblems.length) {
      state.formProblems = formProblems();
      if (!state.formProblems.some(([name]) => name === "prompt")) { $("err-prompt").textContent = ""; $("f-prompt").removeAttribute("aria-invalid"); }
    }
  });
  $("f-aspect").addEventListener("change", showAspectHint);
  $("flash").addEventListener("click", () => flash(""));
  $("v-filter").addEventListener("change", () => { loadVideos().catch(() => {}); });
  let searchTimer = null;
  $("v-search").addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => { loadVideos().catch(() => {}); }, 300);
  });
  $("videos-more-button").addEventListener("click", () => { loadOlderVideos().catch(() => {}); });
  new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting)) loadOlderVideos().catch(() => {});
  }, { rootMargin: "400px" }).observe($("videos-more"));
  $("u-by-model").addEventListener("click", () => setUsageSplit("model"));
  $("u-by-kind").addEventListener("click", () => setUsageSplit("kind"));
  $("key-copy").addEventListener("click", () => copyValue("key-secret-value"));
  $("signin-command-copy").addEventListener("click", () => copyValue("signin-command"));
  Object.keys(CODE_BOXES).forEach((box) => {
    ["curl", "python", "node"].forEach((l) => $(`${box}-code-${l}`).addEventListener("click", () => showCode(box, l)));
    $(`${box}-code-copy`).addEventListener("click", () => copyText($(`${box}-code-text`).textContent));
    $(`${box}-code`).addEventListener("toggle", () => { if ($(`${box}-code`).open) showCode(box); });
  });
  $("vp-op-form").addEventListener("submit", submitOperation);
  $("vp-op-close").addEventListener("click", () => { $("vp-op-form").hidden = true; });
  $("wh-copy").addEventListener("click", () => copyValue("wh-secret-value"));
  $("c-model").addEventListener("change", updateEffort);
  $("c-image").addEventListener("change", chooseChatImage);
  $("c-image-remove").addEventListener("click", () => { clearChatImage(); $("c-image").focus(); });
  $("f-model").addEventListener("change", () => { showModelInputs(); updateQuote(); });
  Object.keys(SLOTS).forEach((name) => $("u-" + name).addEventListener("change", () => chooseFiles(name)));
  $("wh-form").addEventListener("submit", createWebhook);
  $("wh-refresh").addEventListener("click", () => loadWebhooks().catch((err) => { $("err-webhooks").textContent = err.message; }));
  $("key-form").addEventListener("submit", createKey);
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
