// The Webhooks page: endpoints, their signing secrets, recent deliveries and test events.

// "Send test event": its words in both languages, kept with the page.
Object.assign(TEXT.en, {
  wh_test: "Send test event", wh_testing: "Sending a test event…",
  wh_test_delivered: "Test event delivered: HTTP {status} in {ms} ms.",
  wh_test_answered: "Test event not accepted: the receiver answered HTTP {status} in {ms} ms (a real event would be retried).",
  wh_test_failed: "Test event not delivered ({ms} ms): {error}", wh_test_event_id: "event {id}",
  wh_test_err_url_refused: "Refused: the URL points to a private, loopback, link-local or metadata address, which webhooks may not reach.",
  wh_test_err_timeout: "Timed out: the receiver did not answer within 10 seconds.",
  wh_test_err_unreachable: "Could not connect: the connection was refused, or the host could not be found or reached.",
  wh_test_err_bad_url: "The URL is not an absolute http or https URL.",
  wh_local_hint: "On this local server, to receive webhooks on this machine while developing: stop `reelgate serve` and start it again with REELGATE_FETCH_ALLOW=localhost,127.0.0.1 in its environment (the host names and addresses to allow, comma-separated). Every other private address stays refused.",
});
Object.assign(TEXT.ja, {
  wh_test: "テストイベントを送信", wh_testing: "テストイベントを送信しています…",
  wh_test_delivered: "テストイベントを配信しました: HTTP {status}({ms} ミリ秒)。",
  wh_test_answered: "テストイベントは受け付けられませんでした: 受信側の応答は HTTP {status}({ms} ミリ秒)です(実際のイベントなら再試行されます)。",
  wh_test_failed: "テストイベントを配信できませんでした({ms} ミリ秒): {error}", wh_test_event_id: "イベント {id}",
  wh_test_err_url_refused: "拒否されました: URL がプライベート・ループバック・リンクローカル・メタデータのアドレスを指しているため、Webhook では送れません。",
  wh_test_err_timeout: "タイムアウト: 受信側が10秒以内に応答しませんでした。",
  wh_test_err_unreachable: "接続できませんでした: 接続が拒否されたか、ホストが見つからないか到達できません。",
  wh_test_err_bad_url: "URL が http または https の絶対 URL ではありません。",
  wh_local_hint: "このローカルサーバーで、開発中にこのマシン上の受信側へ Webhook を届けるには、`reelgate serve` を止め、環境変数 REELGATE_FETCH_ALLOW=localhost,127.0.0.1 を付けて起動し直してください(許可するホスト名とアドレスをカンマ区切りで指定)。それ以外のプライベートアドレスは引き続き拒否されます。",
});

// Whether this is the local server: the server shows the sign-in page's command-line help
// (`reelgate admin console-link`) only there (`console_links_by_cli`).
function localServer() { const cli = $("signin-cli"); return !!cli && !cli.hidden; }

// A webhook error in the console's language. On the local server a refused URL also says how to
// allow a receiver on this machine (the server's English message already ends with it).
function webhookErrorText(err) {
  const text = errorText(err);
  return state.lang !== "en" && err.code === "url_refused" && localServer() ? `${text} ${t("wh_local_hint")}` : text;
}

// The last test event of each endpoint this page sent (kept across refreshes of the list).
const webhookTests = {};

function renderWebhookTest(box, id) {
  box.textContent = "";
  const r = webhookTests[id];
  if (!r) return;
  if (r.sending) { box.textContent = t("wh_testing"); return; }
  if (r.err) {
    const p = document.createElement("span"); p.className = "field-error"; p.textContent = errorText(r.err); box.appendChild(p);
    return;
  }
  const res = r.res;
  const badge = document.createElement("span"); badge.className = "badge " + (res.delivered ? "completed" : "failed");
  badge.textContent = res.delivered ? t("wh_ok") : t("wh_failed");
  const fill = (key) => t(key).replace("{status}", res.status_code).replace("{ms}", res.duration_ms);
  let words;
  if (res.status_code) words = fill(res.delivered ? "wh_test_delivered" : "wh_test_answered");
  else {
    const known = TEXT.en["wh_test_err_" + res.error_code] ? t("wh_test_err_" + res.error_code) : res.error;
    words = fill("wh_test_failed").replace("{error}", known || "");
  }
  const text = document.createElement("span");
  text.textContent = ` ${words} · ${t("wh_test_event_id").replace("{id}", res.event_id)}`;
  box.append(badge, text);
  if (res.hint) { const h = document.createElement("p"); h.className = "hint"; h.textContent = t("wh_local_hint"); box.appendChild(h); }
}

async function testWebhook(id, button, box) {
  button.disabled = true;
  webhookTests[id] = { sending: true }; renderWebhookTest(box, id);
  try {
    webhookTests[id] = { res: await api("POST", `/console/api/webhooks/${encodeURIComponent(id)}/test`) };
  } catch (err) {
    webhookTests[id] = { err };
  } finally {
    button.disabled = false;
    // The list may have been drawn again meanwhile: show it in the card on the page now.
    renderWebhookTest($("wh-test-" + id) || box, id);
  }
}

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
    wrap.tabIndex = 0; wrap.setAttribute("role", "region"); wrap.setAttribute("aria-label", `${t("wh_attempts")} ${e.id}`);
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
  // The test's result line is always there (one line reserved): a result appears without moving the page.
  const result = document.createElement("div"); result.className = "wh-test"; result.id = "wh-test-" + e.id;
  result.setAttribute("role", "status"); result.setAttribute("aria-live", "polite");
  renderWebhookTest(result, e.id);
  const test = document.createElement("button"); test.type = "button"; test.textContent = t("wh_test");
  test.setAttribute("aria-label", `${t("wh_test")} ${e.id}`);
  test.addEventListener("click", () => testWebhook(e.id, test, result));
  const rotate = document.createElement("button"); rotate.type = "button"; rotate.textContent = t("wh_rotate");
  rotate.setAttribute("aria-label", `${t("wh_rotate")} ${e.id}`);
  rotate.addEventListener("click", () => rotateWebhook(e.id));
  const del = document.createElement("button"); del.type = "button"; del.className = "danger"; del.textContent = t("wh_delete");
  del.setAttribute("aria-label", `${t("wh_delete")} ${e.id}`);
  del.addEventListener("click", () => deleteWebhook(e.id));
  actions.append(test, rotate, del); li.append(actions, result);
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
    ($(target ? "err-" + target : "err-wh-form")).textContent = webhookErrorText(err);
    const input = target === "url" ? $("wh-url") : target === "description" ? $("wh-description") : null;
    if (input) { input.setAttribute("aria-invalid", "true"); input.focus(); }
  } finally { button.disabled = false; }
}

async function rotateWebhook(id) {
  if (!(await askToConfirm("confirm_wh_rotate", "rotate_go"))) return;
  $("err-webhooks").textContent = "";
  try {
    const e = await api("POST", `/console/api/webhooks/${encodeURIComponent(id)}/rotate_secret`);
    await loadWebhooks();
    flash(t("wh_rotated"));
    showWebhookSecret(e);
  } catch (err) { $("err-webhooks").textContent = err.message; }
}

async function deleteWebhook(id) {
  if (!(await askToConfirm("confirm_wh_delete", "delete"))) return;
  $("err-webhooks").textContent = "";
  try {
    await api("DELETE", `/console/api/webhooks/${encodeURIComponent(id)}`);
    if ($("wh-secret").dataset.endpoint === id) { $("wh-secret").hidden = true; $("wh-secret-value").value = ""; }
    flash(t("wh_deleted"));
    await loadWebhooks();
  } catch (err) { $("err-webhooks").textContent = err.message; }
}

// The Webhooks page's listeners: added once, when the console starts.
function wireWebhooks() {
  $("wh-copy").addEventListener("click", () => copyValue("wh-secret-value"));
  $("wh-form").addEventListener("submit", createWebhook);
  $("wh-refresh").addEventListener("click", () => loadWebhooks().catch((err) => { $("err-webhooks").textContent = err.message; }));
}
