// The Videos page: the gallery, paged by the API's cursor, with players, cancel and delete, and
// running videos refreshed in place.
function statusText(s) { return t("status_" + s); }
const TERMINAL = ["completed", "failed", "canceled"];
const RUNNING_FILTER = (v) => !TERMINAL.includes(v.status);

// What the job costs, truthfully: the quote while it runs, the charge once completed, nothing
// when it failed or was canceled (a job is billed at completion only).
function chargeText(v) {
  if (v.status === "completed") return t("charged").replace("{amount}", money(v.cost, v.currency));
  if (v.status === "failed" || v.status === "canceled") return t("not_charged");
  return t("quote_running").replace("{amount}", money(v.cost, v.currency));
}

function elapsedText(v) {
  const end = v.completed_at || Math.floor(Date.now() / 1000);
  const secs = Math.max(0, end - v.created_at);
  const m = Math.floor(secs / 60); const s = secs % 60;
  return `${m}:${String(s).padStart(2, "0")}`;
}

// The card's media box keeps the video's shape before anything loads, so nothing jumps.
function ratioOf(v) {
  const m = String(v.aspect_ratio || "").match(/^(\d+):(\d+)$/);
  if (m) return `${m[1]} / ${m[2]}`;
  const size = String(v.size || "").match(/^(\d+)x(\d+)$/);
  return size ? `${size[1]} / ${size[2]}` : "16 / 9";
}

function jobErrorText(e) {
  if (state.lang !== "ja") return e.message;
  const notConfigured = e.code === "translation_unavailable" && /no translator/i.test(e.message || "");
  return ERRORS_JA[notConfigured ? "translation_not_configured" : e.code] || e.message;
}

function videoCard(v) {
  const li = document.createElement("li"); li.className = "card video-card"; li.id = "video-" + v.id;
  li.tabIndex = -1; li.dataset.status = v.status;
  const box = document.createElement("div"); box.className = "media"; box.style.aspectRatio = ratioOf(v);
  const [w, h] = ratioOf(v).split(" / ").map(Number); box.style.setProperty("--ratio", String(w / h));
  const media = state.media[v.id];
  if (v.status === "completed" && media && media.thumbnail_url) {
    const img = document.createElement("img"); img.className = "thumb"; img.src = media.thumbnail_url;
    img.alt = `${t("thumbnail")} ${v.prompt}`;
    box.appendChild(img);
  } else if (v.status !== "completed") {
    const ph = document.createElement("div"); ph.className = "placeholder " + v.status; ph.textContent = statusText(v.status);
    ph.setAttribute("aria-hidden", "true");
    box.appendChild(ph);
  }
  if (v.status === "completed") {
    const play = document.createElement("button"); play.type = "button"; play.className = "play";
    play.textContent = "▶ " + t("play_video");
    play.setAttribute("aria-label", `${t("play_video")} ${v.id}`);
    play.addEventListener("click", () => playVideo(v, li));
    box.appendChild(play);
  }
  li.appendChild(box);
  const body = document.createElement("div"); body.className = "body";
  const head = document.createElement("div"); head.className = "head";
  const badge = document.createElement("span"); badge.className = "badge " + v.status; badge.textContent = statusText(v.status);
  const charge = document.createElement("span"); charge.className = "charge amount"; charge.textContent = chargeText(v);
  head.append(badge, charge); body.appendChild(head);
  const p = document.createElement("p"); p.className = "prompt";
  const open = document.createElement("a"); open.href = videoPageUrl(v.id); open.textContent = v.prompt;
  p.appendChild(open); body.appendChild(p);
  const meta = document.createElement("p"); meta.className = "meta";
  meta.textContent = `${v.model} · ${v.seconds} s · ${v.aspect_ratio} · ${when(v.created_at)}`;
  body.appendChild(meta);
  if (!TERMINAL.includes(v.status)) {
    const live = document.createElement("p"); live.className = "live";
    const el = document.createElement("span"); el.className = "elapsed"; el.textContent = `${t("elapsed")} ${elapsedText(v)}`;
    live.appendChild(el);
    body.appendChild(live);
    const bar = document.createElement("progress"); bar.max = 100; bar.id = "progress-" + v.id;
    const label = document.createElement("label"); label.htmlFor = bar.id; label.className = "meta";
    if (v.progress > 0) {
      bar.value = v.progress; label.textContent = `${t("engine_progress")} ${v.progress}%`;
    } else {
      label.textContent = v.status === "in_progress" ? t("no_progress_yet") : statusText(v.status);
    }
    body.append(label, bar);
  }
  if (v.error) { const e = document.createElement("p"); e.className = "field-error"; e.textContent = jobErrorText(v.error); body.appendChild(e); }
  const actions = document.createElement("div"); actions.className = "actions";
  if (v.status === "completed" && media) {
    const dl = document.createElement("a"); dl.className = "button"; dl.href = media.content_url; dl.download = v.id + ".mp4";
    dl.textContent = t("download"); dl.setAttribute("aria-label", `${t("download")} ${v.id}`);
    actions.appendChild(dl);
  }
  if (!TERMINAL.includes(v.status)) {
    const cancel = document.createElement("button"); cancel.type = "button"; cancel.textContent = t("cancel_video");
    cancel.setAttribute("aria-label", `${t("cancel")} ${v.id}`);
    cancel.addEventListener("click", () => cancelVideo(v));
    actions.appendChild(cancel);
  }
  if (TERMINAL.includes(v.status)) {
    const del = document.createElement("button"); del.type = "button"; del.className = "danger"; del.textContent = t("delete");
    del.setAttribute("aria-label", `${t("delete")} ${v.id}`);
    del.addEventListener("click", () => deleteVideo(v));
    actions.appendChild(del);
  }
  body.appendChild(actions);
  li.appendChild(body);
  if (state.players[v.id]) attachPlayer(li, v, false);
  return li;
}

// Replaces the thumbnail with a player of the same size and starts it.
function attachPlayer(li, v, start) {
  const media = state.media[v.id];
  const box = li.querySelector(".media");
  if (!media || !box) return null;
  box.textContent = "";
  const video = document.createElement("video");
  video.controls = true; video.preload = "metadata"; video.playsInline = true; video.src = media.content_url;
  video.setAttribute("aria-label", v.prompt);
  if (media.thumbnail_url) video.poster = media.thumbnail_url;
  box.appendChild(video);
  if (start) {
    const played = video.play();
    if (played && played.catch) played.catch(() => { /* the controls remain */ });
  }
  return video;
}

async function mediaOf(id) {
  const m = state.media[id];
  if (m && m.fetched + (m.expires_in - 60) * 1000 > Date.now()) return m;
  const fresh = await api("GET", `/console/api/videos/${id}/media`);
  fresh.fetched = Date.now();
  state.media[id] = fresh;
  return fresh;
}

async function playVideo(v, li) {
  try {
    await mediaOf(v.id);
    state.players[v.id] = true;
    const video = attachPlayer(li, v, true);
    if (video) video.focus();
  } catch (err) { flash(errorText(err), true); }
}

async function deleteVideo(v) {
  if (!(await askToConfirm("confirm_delete", "delete"))) return;
  try {
    await api("DELETE", `/console/api/videos/${v.id}`);
    delete state.players[v.id]; delete state.media[v.id];
    flash(t("deleted"));
    state.videos = state.videos.filter((x) => x.id !== v.id);
    renderVideos();
  } catch (err) { flash(errorText(err), true); }
}

async function cancelVideo(v) {
  if (!(await askToConfirm("confirm_cancel", "cancel_video"))) return;
  try {
    const canceled = await api("POST", `/console/api/videos/${v.id}/cancel`);
    flash(t("canceled"));
    state.videos = state.videos.map((x) => (x.id === v.id ? canceled : x));
    renderVideos();
  } catch (err) { flash(errorText(err), true); }
}

// The gallery pages through the API's cursor, newest first, with the filter and search served
// by the API; older pages load as the person scrolls to the end (or presses Load older videos).
const GALLERY_PAGE = 24;

function galleryQuery(after) {
  const q = new URLSearchParams({ limit: String(GALLERY_PAGE) });
  const f = $("v-filter").value;
  if (f !== "all") q.set("status", f);
  const words = $("v-search").value.trim();
  if (words) q.set("q", words);
  if (after) q.set("after", after);
  return q.toString();
}

// Loads the first page afresh (a new filter or search, or coming back to the page).
async function loadVideos() {
  if (state.timer) { clearTimeout(state.timer); state.timer = null; }
  const seq = (state.gallerySeq = (state.gallerySeq || 0) + 1);
  $("err-v-search").textContent = ""; $("v-search").removeAttribute("aria-invalid");
  let list;
  try { list = await api("GET", "/console/api/videos?" + galleryQuery(null)); } catch (err) {
    if (seq !== state.gallerySeq) return;
    if (err.param === "q" || err.param === "status") {
      $("err-v-search").textContent = errorText(err); $("v-search").setAttribute("aria-invalid", "true");
      return;
    }
    throw err;
  }
  if (seq !== state.gallerySeq) return;
  state.videos = list.data;
  state.galleryAfter = list.has_more ? list.last_id : null;
  await showPage(list.data);
  scheduleRefresh();
}

// The next older page, once at a time.
async function loadOlderVideos() {
  if (!state.galleryAfter || state.galleryLoading) return;
  state.galleryLoading = true;
  const seq = state.gallerySeq;
  try {
    const list = await api("GET", "/console/api/videos?" + galleryQuery(state.galleryAfter));
    if (seq !== state.gallerySeq) return;
    const known = new Set(state.videos.map((v) => v.id));
    state.videos = state.videos.concat(list.data.filter((v) => !known.has(v.id)));
    state.galleryAfter = list.has_more ? list.last_id : null;
    await showPage(list.data);
  } finally { state.galleryLoading = false; }
  // A page the filter left short may leave the end still in view: go on.
  if (state.galleryAfter && galleryEndInView()) loadOlderVideos().catch(() => {});
}

async function showPage(data) {
  // Every finished card shows its thumbnail and Download without a click.
  await Promise.all(data.filter((v) => v.status === "completed" && !state.media[v.id])
    .map((v) => mediaOf(v.id).catch(() => null)));
  renderVideos();
}

function galleryEndInView() {
  const r = $("videos-more").getBoundingClientRect();
  return r.top < window.innerHeight + 400;
}

// Running videos on the loaded pages are polled one by one and updated in place.
function scheduleRefresh() {
  if (state.timer) clearTimeout(state.timer);
  const running = (state.videos || []).filter(RUNNING_FILTER);
  if (!running.length || !(location.hash.replace("#", "") in { videos: 1, "": 1 })) return;
  state.timer = setTimeout(async () => {
    const fresh = await Promise.all(running.map((v) => api("GET", `/console/api/videos/${v.id}`).catch(() => null)));
    const byId = new Map(fresh.filter(Boolean).map((v) => [v.id, v]));
    state.videos = state.videos.map((v) => byId.get(v.id) || v);
    await showPage([...byId.values()]).catch(() => {});
    scheduleRefresh();
  }, 2000);
}

function renderVideos() {
  const data = state.videos || [];
  const ul = $("video-list");
  // Keep cards whose player is open (re-rendering would reset playback).
  const existing = {};
  ul.querySelectorAll("li.card").forEach((li) => { existing[li.id] = li; });
  const fresh = document.createDocumentFragment();
  data.forEach((v) => {
    const old = existing["video-" + v.id];
    if (old && state.players[v.id] && v.status === "completed" && old.dataset.status === "completed") fresh.appendChild(old);
    else fresh.appendChild(videoCard(v));
  });
  ul.textContent = ""; ul.appendChild(fresh);
  const filtered = $("v-filter").value !== "all" || $("v-search").value.trim() !== "";
  $("videos-empty").hidden = data.length > 0 || filtered || !!state.galleryAfter;
  $("videos-none-match").hidden = data.length > 0 || !filtered || !!state.galleryAfter;
  $("videos-more").hidden = !state.galleryAfter;
}

// The gallery's listeners (filter, search, older pages): added once, when the console starts.
function wireVideos() {
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
}
