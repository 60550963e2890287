// A video's own page (/console/videos/{id}): the output large, what made it, what it cost and
// took, and what can be done with it next.
const VIDEO_PATH = /^\/console\/videos\/(video_[A-Za-z0-9_-]+)$/;
function videoPagePath() { const m = location.pathname.match(VIDEO_PATH); return m ? m[1] : null; }
function videoPageUrl(id) { return "/console/videos/" + encodeURIComponent(id); }

function takeReusedSettings() {
  const raw = sessionStorage.getItem("reelgate.reuse");
  sessionStorage.removeItem("reelgate.reuse");
  try { return raw ? JSON.parse(raw) : null; } catch (_) { return null; }
}

async function loadVideoPage(id) {
  if (state.videoTimer) { clearTimeout(state.videoTimer); state.videoTimer = null; }
  if (!state.models) state.models = await api("GET", "/console/api/models");
  let v;
  try { v = await api("GET", `/console/api/videos/${encodeURIComponent(id)}`); } catch (err) {
    if (err.status === 404) { renderMissingVideo(id); return; }
    throw err;
  }
  await renderVideoPage(v);
  if (!TERMINAL.includes(v.status) && videoPagePath() === id) {
    state.videoTimer = setTimeout(() => { loadVideoPage(id).catch(() => {}); }, 2000);
  }
}

function renderMissingVideo(id) {
  $("vp-id").textContent = id; $("vp-title").textContent = t("vp_not_found");
  ["vp-facts", "vp-actions", "vp-media"].forEach((x) => { $(x).textContent = ""; });
  $("vp-status").textContent = ""; $("vp-charge").textContent = ""; $("vp-code").hidden = true;
}

function sourceOf(v) {
  if (v.remixed_from_video_id) return { id: v.remixed_from_video_id, label: "vp_remix_of", op: "remix" };
  if (v.extended_from_video_id) return { id: v.extended_from_video_id, label: "vp_extension_of", op: "extension" };
  if (v.edited_from_video_id) return { id: v.edited_from_video_id, label: "vp_edit_of", op: "edit" };
  return null;
}

function durationText(secs) {
  const m = Math.floor(secs / 60); const s = secs % 60;
  return m ? `${m} min ${s} s` : `${s} s`;
}

async function renderVideoPage(v) {
  state.videoPage = v;
  $("vp-id").textContent = v.id;
  document.title = `${v.id} · reelgate ${t("console")}`;
  $("vp-status").className = "badge " + v.status; $("vp-status").textContent = statusText(v.status);
  $("vp-charge").textContent = chargeText(v);
  $("vp-title").textContent = v.prompt;
  $("vp-error").hidden = !v.error; $("vp-error").textContent = v.error ? jobErrorText(v.error) : "";
  const running = !TERMINAL.includes(v.status);
  $("vp-progress").hidden = !running; $("vp-progress-label").hidden = !running;
  if (running) {
    if (v.progress > 0) $("vp-progress").value = v.progress; else $("vp-progress").removeAttribute("value");
    $("vp-progress-label").textContent = v.progress > 0 ? t("vp_progress").replace("{n}", v.progress) : statusText(v.status);
  }
  // The media box keeps the video's shape in every state.
  const box = $("vp-media"); box.style.aspectRatio = ratioOf(v);
  const [rw, rh] = ratioOf(v).split(" / ").map(Number); box.style.setProperty("--ratio", String(rw / rh));
  const media = v.status === "completed" ? await mediaOf(v.id).catch(() => null) : null;
  const playing = box.querySelector("video");
  if (media && !(playing && playing.dataset.id === v.id)) {
    box.textContent = "";
    const video = document.createElement("video");
    video.controls = true; video.preload = "metadata"; video.playsInline = true; video.src = media.content_url;
    video.dataset.id = v.id; video.setAttribute("aria-label", v.prompt);
    if (media.thumbnail_url) video.poster = media.thumbnail_url;
    box.appendChild(video);
  } else if (!media) {
    box.textContent = "";
    const ph = document.createElement("div"); ph.className = "placeholder"; ph.textContent = statusText(v.status);
    box.appendChild(ph);
  }
  renderFacts(v);
  renderVideoActions(v, media);
  $("vp-code").hidden = false;
  showCode("vp");
}

function renderFacts(v) {
  const dl = $("vp-facts"); dl.textContent = "";
  const add = (label, value) => {
    const dt = document.createElement("dt"); dt.textContent = t(label);
    const dd = document.createElement("dd");
    if (value instanceof Node) dd.appendChild(value); else dd.textContent = value;
    dl.append(dt, dd);
  };
  add("vp_model", v.model);
  add("vp_seconds", `${v.seconds} s`);
  add("vp_ratio", v.aspect_ratio);
  if (v.size) add("vp_size", v.size);
  add(v.status === "completed" ? "vp_charge" : "vp_quote", money(v.cost, v.currency));
  const source = sourceOf(v);
  if (source) {
    const a = document.createElement("a"); a.href = videoPageUrl(source.id);
    a.textContent = t(source.label).replace("{id}", source.id);
    add("vp_source", a);
  }
  if (v.engine_prompt && v.engine_prompt !== v.prompt) add("vp_engine_prompt", v.engine_prompt);
  const inputs = v.inputs || {};
  if (inputs.first_frame) add("vp_first_frame", inputs.first_frame);
  if (inputs.last_frame) add("vp_last_frame", inputs.last_frame);
  [["reference_images", "vp_reference_images"], ["reference_videos", "vp_reference_videos"],
    ["reference_audio", "vp_reference_audio"], ["characters", "vp_characters"]].forEach(([k, label]) => {
    if (inputs[k] && inputs[k].length) add(label, inputs[k].join(", "));
  });
  add("vp_created", when(v.created_at));
  if (v.render_started_at) add("vp_render_started", when(v.render_started_at));
  if (v.completed_at) {
    add("vp_completed", when(v.completed_at));
    add("vp_took", durationText(Math.max(0, v.completed_at - v.created_at)));
  } else {
    add("vp_took", elapsedText(v));
  }
  if (v.expires_at) add("vp_expires", when(v.expires_at));
}

function actionButton(label, onClick, cls) {
  const b = document.createElement("button"); b.type = "button"; b.textContent = t(label);
  if (cls) b.className = cls;
  b.addEventListener("click", onClick);
  return b;
}

function renderVideoActions(v, media) {
  const box = $("vp-actions"); box.textContent = "";
  if (media) {
    const dl = document.createElement("a"); dl.className = "button primary"; dl.href = media.content_url;
    dl.download = v.id + ".mp4"; dl.textContent = t("download");
    box.appendChild(dl);
  }
  const model = (state.models ? state.models.data : []).find((m) => m.id === v.model);
  const offers = (op) => v.status === "completed" && model && model.operations && model.operations[op] !== "unavailable";
  if (offers("remix")) box.appendChild(actionButton("vp_remix", () => openOperation("remix")));
  if (offers("extension") && v.seconds < 60) box.appendChild(actionButton("vp_extend", () => openOperation("extension")));
  if (offers("edit")) box.appendChild(actionButton("vp_edit", () => openOperation("edit")));
  box.appendChild(actionButton("vp_reuse", () => {
    sessionStorage.setItem("reelgate.reuse", JSON.stringify(createBodyOf(v)));
    location.assign("/console/#new");
  }));
  if (v.status === "failed" || v.status === "canceled") box.appendChild(actionButton("vp_retry", () => retryVideo(v)));
  if (!TERMINAL.includes(v.status)) {
    box.appendChild(actionButton("cancel_video", async () => {
      if (!(await askToConfirm("confirm_cancel", "cancel_video"))) return;
      try { await api("POST", `/console/api/videos/${v.id}/cancel`); flash(t("canceled")); } catch (err) { flash(errorText(err), true); }
      await loadVideoPage(v.id);
    }));
  } else {
    box.appendChild(actionButton("delete", async () => {
      if (!(await askToConfirm("confirm_delete", "delete"))) return;
      try { await api("DELETE", `/console/api/videos/${v.id}`); location.assign("/console/#videos"); } catch (err) { flash(errorText(err), true); }
    }, "danger"));
  }
}

// The create request that made `v`, its inputs included (by file and character id).
function createBodyOf(v) {
  const body = { model: v.model, prompt: v.prompt, seconds: v.seconds, aspect_ratio: v.aspect_ratio };
  const i = v.inputs || {};
  const frames = ["first_frame", "last_frame"].filter((role) => i[role]).map((role) => ({ file_id: i[role], role }));
  if (frames.length) body.image_reference = frames;
  const refs = {};
  [["reference_images", "images"], ["reference_videos", "videos"], ["reference_audio", "audio"]].forEach(([k, key]) => {
    if (i[k] && i[k].length) refs[key] = i[k].map((file_id) => ({ file_id }));
  });
  if (Object.keys(refs).length) body.references = refs;
  if (i.characters && i.characters.length) body.characters = i.characters;
  return body;
}

async function retryVideo(v) {
  try {
    const created = await api("POST", "/console/api/videos", createBodyOf(v));
    location.assign(videoPageUrl(created.id));
  } catch (err) { flash(errorText(err), true); }
}

// What the page offers on a completed video, each as the model does it (natively or by
// chaining, per GET /v1/videos/models). The console names the source by id; files are API-only.
const OPERATIONS = {
  remix: { title: "vp_remix", hint: "vp_remix_hint", go: "vp_remix_go" },
  extension: { title: "vp_extend", hint: "vp_extend_hint", go: "vp_extend_go" },
  edit: { title: "vp_edit", hint: "vp_edit_hint", go: "vp_edit_go" },
};

function openOperation(op) {
  const o = OPERATIONS[op]; const v = state.videoPage;
  state.operation = op;
  $("vp-op-title").textContent = t(o.title); $("vp-op-hint").textContent = t(o.hint);
  $("vp-op-submit").textContent = t(o.go);
  $("vp-op-prompt").value = v.prompt;
  const extending = op === "extension";
  $("vp-op-seconds-field").hidden = !extending;
  if (extending) fillSeconds($("vp-op-seconds"), modelOf(v.model), 60 - v.seconds);
  clearErrors($("vp-op-form"));
  $("vp-op-form").hidden = false;
  $("vp-op-prompt").focus();
}

function modelOf(id) { return (state.models ? state.models.data : []).find((m) => m.id === id); }

// The seconds a model renders, as choices: nothing to round, nothing outside the range.
function fillSeconds(select, model, atMost) {
  const current = Number(select.value);
  select.textContent = "";
  const range = model && model.seconds;
  if (!range) return;
  for (let n = range.min; n <= Math.min(range.max, atMost === undefined ? range.max : atMost); n++) {
    const o = document.createElement("option"); o.value = String(n); o.textContent = `${n} s`; select.appendChild(o);
  }
  if (current && select.querySelector(`option[value="${current}"]`)) select.value = String(current);
}

function operationRequest(op, v, prompt, seconds) {
  if (op === "remix") return { path: `/videos/${v.id}/remix`, body: { prompt } };
  if (op === "extension") return { path: "/videos/extensions", body: { video: { id: v.id }, prompt, seconds } };
  return { path: "/videos/edits", body: { video: { id: v.id }, prompt } };
}

// The console's own routes for the same operations: the source is the video in the path.
function consoleOperationRequest(op, v, prompt, seconds) {
  if (op === "remix") return { path: `/videos/${v.id}/remix`, body: { prompt } };
  if (op === "extension") return { path: `/videos/${v.id}/extend`, body: { prompt, seconds } };
  return { path: `/videos/${v.id}/edit`, body: { prompt } };
}

async function submitOperation(ev) {
  ev.preventDefault();
  const v = state.videoPage; const op = state.operation;
  const form = $("vp-op-form"); clearErrors(form);
  const seconds = op === "extension" ? Number($("vp-op-seconds").value) : undefined;
  const req = consoleOperationRequest(op, v, $("vp-op-prompt").value, seconds);
  $("vp-op-submit").disabled = true;
  try {
    const created = await api("POST", "/console/api" + req.path, req.body);
    location.assign(videoPageUrl(created.id));
  } catch (err) {
    const field = { prompt: "err-vp-op-prompt", seconds: "err-vp-op-seconds" }[err.param] || "err-vp-op";
    $(field).textContent = errorText(err);
  } finally { $("vp-op-submit").disabled = false; }
}

// "View code": the request that made the video, as curl, Python (openai) and Node, the key a
// placeholder. Each string is quoted for its language, never spliced in raw.
function madeBy(v) {
  const source = sourceOf(v);
  if (!source) return { kind: "create", path: "/videos", body: createBodyOf(v) };
  if (source.op === "remix") return { kind: "remix", source: source.id, ...operationRequest("remix", { id: source.id }, v.prompt) };
  if (source.op === "extension") {
    const added = v.seconds - (v.source_seconds || 0);
    return { kind: "extension", ...operationRequest("extension", { id: source.id }, v.prompt, added) };
  }
  return { kind: "edit", ...operationRequest("edit", { id: source.id }, v.prompt) };
}

// The video page's operation form: added once, when the console starts.
function wireVideoPage() {
  $("vp-op-form").addEventListener("submit", submitOperation);
  $("vp-op-close").addEventListener("click", () => { $("vp-op-form").hidden = true; });
}
