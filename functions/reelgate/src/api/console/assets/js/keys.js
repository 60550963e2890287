// The API keys page: the organization's keys, creating and revoking them, and each key's limits
// and budget.
async function loadKeys() {
  const keys = await api("GET", "/console/api/keys");
  const ul = $("key-list"); ul.textContent = "";
  $("keys-empty").hidden = keys.data.length > 0;
  keys.data.forEach((k) => {
    const li = document.createElement("li"); li.className = "card"; li.id = "key-" + k.id;
    const name = document.createElement("h2"); name.className = "sub key-name"; name.textContent = k.name || t("unnamed");
    li.appendChild(name);
    const meta = document.createElement("div"); meta.className = "meta";
    const used = k.last_used_at ? `${t("last_used")} ${when(k.last_used_at)}` : t("never_used");
    meta.textContent = `${k.id} · ${t("created_at")} ${when(k.created_at)} · ${used} · ${k.revoked ? t("revoked") : t("active")}`;
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

async function createKey(ev) {
  if (ev) ev.preventDefault();
  const form = $("key-form"); clearErrors(form);
  $("err-keys").textContent = "";
  const name = $("key-name").value.trim();
  try {
    const k = await api("POST", "/console/api/keys", name ? { name } : {});
    form.reset();
    $("key-secret").hidden = false;
    const input = $("key-secret-value"); input.value = k.secret; input.focus(); input.select();
    await loadKeys();
  } catch (err) {
    if (err.param === "name") { $("err-name").textContent = errorText(err); $("key-name").setAttribute("aria-invalid", "true"); }
    else $("err-keys").textContent = errorText(err);
  }
}

async function revokeKey(id) {
  if (!(await askToConfirm("confirm_revoke", "revoke_go"))) return;
  try { await api("DELETE", `/console/api/keys/${id}`); await loadKeys(); } catch (err) { $("err-keys").textContent = errorText(err); }
}

// The API keys page's listeners: added once, when the console starts.
function wireKeys() {
  $("key-copy").addEventListener("click", () => copyValue("key-secret-value"));
  $("key-form").addEventListener("submit", createKey);
}
