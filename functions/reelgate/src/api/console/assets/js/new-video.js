// The New video page: the model's inputs, direct uploads with progress, the quote, and the create.
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
  const reuse = takeReusedSettings();
  if (reuse && models.data.some((m) => m.id === reuse.model)) {
    sel.value = reuse.model; $("f-prompt").value = reuse.prompt || "";
  }
  const lim = models.limits || {};
  showModelInputs();
  if (reuse) $("f-seconds").value = String(reuse.seconds);
  checkTranslation();
  if (lim.max_prompt_chars) $("f-prompt").maxLength = lim.max_prompt_chars;
  if (reuse) $("f-aspect").value = reuse.aspect_ratio;
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
  ratios.forEach((r) => { const o = document.createElement("option"); o.value = r; o.textContent = aspectText(r); asp.appendChild(o); });
  asp.value = ratios.includes(a0) ? a0 : (ratios.includes("16:9") ? "16:9" : ratios[0]);
  showAspectHint();
  // Seconds are chosen from what the model renders: nothing to round, nothing out of range.
  const secs = $("f-seconds"); const wanted = secs.value || "4";
  fillSeconds(secs, m);
  if (secs.querySelector(`option[value="${wanted}"]`)) secs.value = wanted;
  const range = m && m.seconds;
  $("seconds-hint").textContent = range ? t("seconds_range").replace("{min}", range.min).replace("{max}", range.max) : "";
}

// Each aspect ratio explained, `Auto` included.
function aspectText(r) {
  const key = "aspect_" + String(r).replace(":", "_");
  return TEXT.en[key] ? t(key) : r;
}
function showAspectHint() {
  $("aspect-hint").textContent = $("f-aspect").value === "Auto" ? t("aspect_Auto") : "";
}

// Japanese outside <d>…</d> and quoted scene text needs the server's translator
// (domain::translation::needs_translation): without one, the form says so before submitting.
const JAPANESE = /[\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f\u4e00-\u9fff\u3400-\u4dbf]/;
function needsTranslation(prompt) {
  const outside = String(prompt).replace(/<d>[\s\S]*?<\/d>|「[\s\S]*?」|『[\s\S]*?』|"[\s\S]*?"|“[\s\S]*?”/g, "");
  return JAPANESE.test(outside);
}
function untranslatable() {
  return !!state.models && state.models.translator === false && needsTranslation($("f-prompt").value);
}
function checkTranslation() { $("translate-warning").hidden = !untranslatable(); }

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
    if (item.preview) {
      const img = document.createElement("img"); img.className = "preview"; img.src = item.preview;
      img.alt = `${t("preview_of")} ${item.name}`; li.appendChild(img);
    }
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
  if (item.preview) URL.revokeObjectURL(item.preview);
  if (!state.uploads[name].length) $("u-" + name).value = "";
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
  const item = { key: "u" + (++uploadSeq), name: file.name, status: "uploading", percent: 0, file_id: null, xhr: null,
    preview: /^image\//.test(file.type) ? URL.createObjectURL(file) : null };
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
    if (!state.uploads[name].length) $("u-" + name).value = "";
    if (err.status !== 401) setUploadError(name, `${file.name}: ${errorText(err)}`);
  }
}

// What a file's first bytes say it is, for the kinds the inputs take (the server sniffs again
// when the upload completes; this only spares a person an upload that would be refused).
function sniffKind(head) {
  const at = (offset, text) => [...text].every((c, i) => head[offset + i] === c.charCodeAt(0));
  if (at(0, "\x89PNG") || (head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) ||
    (at(0, "RIFF") && at(8, "WEBP"))) return "image";
  if (at(4, "ftyp")) return at(8, "M4A ") ? "audio" : "video";
  if (head[0] === 0x1a && head[1] === 0x45 && head[2] === 0xdf && head[3] === 0xa3) return "video";
  if (at(0, "ID3") || at(0, "OggS") || at(0, "fLaC") || (at(0, "RIFF") && at(8, "WAVE")) ||
    (head[0] === 0xff && (head[1] & 0xe0) === 0xe0)) return "audio";
  return "other";
}

const SLOT_KIND = { vision: "image", video: "video", audio: "audio" };

// How long a picked video or audio file plays, read by the browser; null when it cannot tell.
function mediaSeconds(file, kind) {
  return new Promise((resolve) => {
    const el = document.createElement(kind === "audio" ? "audio" : "video");
    const url = URL.createObjectURL(file);
    const done = (secs) => { URL.revokeObjectURL(url); resolve(secs); };
    el.preload = "metadata";
    el.onloadedmetadata = () => done(Number.isFinite(el.duration) ? el.duration : null);
    el.onerror = () => done(null);
    setTimeout(() => done(null), 5000);
    el.src = url;
  });
}

const mib = (n) => `${Number.isInteger(n / (1024 * 1024)) ? n / (1024 * 1024) : (n / (1024 * 1024)).toFixed(2)} MiB`;

// Refuses, in words, a picked file the create would refuse: too large for the field, not the
// kind the field takes, or (video, audio) outside the lengths references may last.
async function pickProblem(name, file) {
  const lim = (state.models && state.models.limits) || {};
  const kind = SLOT_KIND[SLOTS[name].purpose];
  const say = (key, values) => Object.entries(values).reduce((text, [k, v]) => text.replace(`{${k}}`, v), t(key));
  const sniffed = sniffKind(new Uint8Array(await file.slice(0, 16).arrayBuffer()));
  if (sniffed !== kind) return say("pick_not_" + kind, { name: file.name });
  const limit = kind === "image" ? lim.image_bytes_under : kind === "video" ? lim.reference_video_max_bytes : lim.reference_audio_max_bytes;
  if (limit && (kind === "image" ? file.size >= limit : file.size > limit)) {
    return say(kind === "image" ? "pick_image_too_big" : "pick_too_big",
      { name: file.name, size: mib(file.size), bytes: file.size.toLocaleString(state.lang), limit: mib(limit) });
  }
  if (kind !== "image" && lim.reference_media_seconds) {
    const secs = await mediaSeconds(file, kind);
    const [min, max] = lim.reference_media_seconds;
    if (secs !== null && (secs < min || secs > max)) {
      return say("pick_length", { name: file.name, secs: secs.toFixed(1), min, max });
    }
  }
  return null;
}

async function chooseFiles(name) {
  const input = $("u-" + name);
  // The input keeps showing what was chosen; the list below shows every upload with a preview.
  let files = Array.from(input.files || []);
  if (!files.length) return;
  setUploadError(name, "");
  const problems = [];
  const fine = [];
  for (const f of files) {
    const problem = await pickProblem(name, f);
    if (problem) problems.push(problem); else fine.push(f);
  }
  files = fine;
  const max = SLOTS[name].max;
  if (max === 1 && files.length) state.uploads[name].slice().forEach((item) => removeUpload(name, item));
  const room = max - state.uploads[name].length;
  if (files.length > room) { problems.push(t("too_many").replace("{n}", max)); files = files.slice(0, room); }
  if (problems.length) setUploadError(name, problems.join(" "));
  if (!files.length && !state.uploads[name].length) input.value = "";
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

// Shows a problem next to its field (by name), else under the form; a field that already shows
// one keeps it, so problems found by the page and by the server show together.
function showFieldProblem(name, text) {
  let el = name ? $("err-" + name) : null;
  if (el && el.closest("[hidden]")) el = null;
  const target = el || $("err-form");
  if (target.textContent) return;
  target.textContent = text;
  const input = !el ? null : SLOTS[name] ? $("u-" + name) : $("new-form").querySelector(`[name="${name}"]`);
  if (input) input.setAttribute("aria-invalid", "true");
}

function showNewVideoError(err) { showFieldProblem(newVideoField(err.param), errorText(err)); }

// What the page itself knows is wrong with the form, every field at once.
function formProblems() {
  const problems = [];
  const prompt = $("f-prompt").value;
  if (!prompt.trim()) problems.push(["prompt", t("prompt_required")]);
  else if (untranslatable()) problems.push(["prompt", t("no_translator_block")]);
  if (Object.keys(SLOTS).some((name) => slotOffered(name) && state.uploads[name].some((i) => i.status !== "done"))) {
    problems.push(["form", t("wait_uploads")]);
  }
  return problems;
}

// The page's problems (once the person has tried to create) and the upload refusals, shown
// again after the quote cleared the form's errors.
function showKnownProblems() {
  restoreUploadErrors();
  (state.formProblems || []).forEach(([name, text]) => showFieldProblem(name, text));
  if ((state.formProblems || []).some(([name]) => name === "prompt") && untranslatable()) $("translate-warning").hidden = false;
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
  clearErrors(form); showKnownProblems();
  if ($("nv-code").open) showCode("nv");
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
  state.formProblems = formProblems();
  if (state.formProblems.length) {
    // Every problem at once: the page's own, then the server's for the fields it checks.
    await updateQuote();
    const firstBad = form.querySelector("[aria-invalid]");
    if (firstBad) firstBad.focus();
    return;
  }
  clearErrors(form); restoreUploadErrors();
  const button = $("create"); button.disabled = true;
  try {
    const created = await api("POST", "/console/api/videos", formBody());
    Object.keys(SLOTS).forEach((name) => { state.uploads[name] = []; renderSlot(name); setUploadError(name, ""); });
    location.assign(videoPageUrl(created.id));
  } catch (err) {
    if (err.code === "agreement_required") { $("new-needs-terms").hidden = false; }
    showNewVideoError(err);
    const firstBad = form.querySelector("[aria-invalid]");
    if (firstBad) firstBad.focus();
  } finally { button.disabled = false; }
}

// The New video form's listeners: added once, when the console starts.
function wireNewVideo() {
  $("new-form").addEventListener("submit", createVideo);
  ["f-seconds", "f-aspect"].forEach((id) => $(id).addEventListener("change", updateQuote));
  $("f-prompt").addEventListener("input", () => {
    checkTranslation();
    if (state.formProblems && state.formProblems.length) {
      state.formProblems = formProblems();
      if (!state.formProblems.some(([name]) => name === "prompt")) { $("err-prompt").textContent = ""; $("f-prompt").removeAttribute("aria-invalid"); }
    }
  });
  $("f-aspect").addEventListener("change", showAspectHint);
  $("f-model").addEventListener("change", () => { showModelInputs(); updateQuote(); });
  Object.keys(SLOTS).forEach((name) => $("u-" + name).addEventListener("change", () => chooseFiles(name)));
}
