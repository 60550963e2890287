// The Terms page: the terms in the console's language, and agreeing to them.
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
  } catch (err) { $("err-agree").textContent = errorText(err); }
}

// The Terms page's listener: added once, when the console starts.
function wireTerms() {
  $("agree").addEventListener("click", agree);
}
