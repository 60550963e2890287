// The Usage page: spend per UTC day as a chart, and the charges, split by model or by kind.
const PALETTE = ["#1f5fbf", "#c2410c", "#15803d", "#7e22ce", "#b91c1c", "#0f766e", "#a16207", "#475569"];
const DAY = 86400;

function kindGroup(kind) { return kind === "video_seconds" ? "video_seconds" : "tokens"; }

function quantityText(r) {
  if (r.kind === "video_seconds") return t("n_seconds").replace("{n}", Number(r.video_seconds || 0).toLocaleString(state.lang));
  const n = Number(r.input_tokens || 0) + Number(r.cached_input_tokens || 0) + Number(r.cache_write_input_tokens || 0) + Number(r.output_tokens || 0);
  return t("n_tokens").replace("{n}", n.toLocaleString(state.lang));
}

function dayLabel(start) {
  return new Date(start * 1000).toLocaleDateString(state.lang, { month: "numeric", day: "numeric", timeZone: "UTC" });
}

// Spend per UTC day over the last 30 days as stacked bars (one bar per day with charges), drawn
// as inline SVG: no external assets.
function drawChart(u) {
  const split = state.usageSplit;
  const currency = u.currency;
  const today = Math.floor(Date.now() / 1000 / DAY) * DAY;
  const first = today - 29 * DAY;
  const perDay = {}; const series = [];
  (u.days || []).forEach((bucket) => {
    (bucket.results || []).forEach((r) => {
      const amount = Number(r.amount || 0);
      if (!(amount > 0)) return;
      const name = split === "kind" ? kindGroup(r.kind) : (r.model || "—");
      if (!series.includes(name)) series.push(name);
      const day = perDay[bucket.start_time] || (perDay[bucket.start_time] = {});
      day[name] = (day[name] || 0) + amount;
    });
  });
  series.sort();
  const totals = Object.values(perDay).map((d) => Object.values(d).reduce((a, b) => a + b, 0));
  const max = Math.max(0, ...totals);
  const box = $("u-chart"); box.textContent = "";
  const legend = $("u-legend"); legend.textContent = "";
  $("u-chart-empty").hidden = max > 0;
  box.closest("figure").hidden = !(max > 0);
  if (!(max > 0)) return;
  const NS = "http://www.w3.org/2000/svg";
  // Drawn at the box's own width, so its text stays at 11 px on a phone and on a wide screen.
  const W = Math.max(300, Math.round(box.clientWidth || 640)), H = W < 500 ? 170 : 220, L = 48, B = 24, T = 10;
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`); svg.setAttribute("role", "img"); svg.id = "u-svg";
  svg.setAttribute("aria-labelledby", "u-svg-title");
  const title = document.createElementNS(NS, "title"); title.id = "u-svg-title";
  title.textContent = t("chart_label").replace("{split}", split === "kind" ? t("by_kind") : t("by_model"));
  svg.appendChild(title);
  const el = (name, attrs, text) => {
    const e = document.createElementNS(NS, name);
    Object.entries(attrs).forEach(([k, v]) => e.setAttribute(k, v));
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const plotW = W - L - 8, plotH = H - B - T;
  const slot = plotW / 30;
  // Axis: zero and the highest day.
  svg.appendChild(el("line", { x1: L, y1: T + plotH, x2: W - 8, y2: T + plotH, stroke: "#8792a2" }));
  svg.appendChild(el("line", { x1: L, y1: T, x2: W - 8, y2: T, stroke: "#d8dde3", "stroke-dasharray": "3 3" }));
  svg.appendChild(el("text", { x: L - 6, y: T + 4, "text-anchor": "end", class: "axis" }, money(max.toFixed(6), currency).replace(/ [A-Z]+$/, "")));
  svg.appendChild(el("text", { x: L - 6, y: T + plotH + 4, "text-anchor": "end", class: "axis" }, "0"));
  for (let i = 0; i < 30; i += 1) {
    const start = first + i * DAY;
    const x = L + i * slot;
    if ((W < 500 ? i % 10 === 2 : i % 7 === 1) || i === 29) {
      svg.appendChild(el("text", { x: x + slot / 2, y: H - 6, "text-anchor": "middle", class: "axis" }, dayLabel(start)));
    }
    const day = perDay[start];
    if (!day) continue;
    const g = el("g", { class: "bar", "data-day": new Date(start * 1000).toISOString().slice(0, 10) });
    const total = Object.values(day).reduce((a, b) => a + b, 0);
    g.appendChild(el("title", {}, t("day_total").replace("{day}", dayLabel(start)).replace("{amount}", money(total.toFixed(6), currency))));
    let y = T + plotH;
    series.forEach((name, n) => {
      if (!day[name]) return;
      const h = Math.max(1, (day[name] / max) * plotH);
      y -= h;
      g.appendChild(el("rect", { x: x + slot * 0.15, y, width: slot * 0.7, height: h, fill: PALETTE[n % PALETTE.length] }));
    });
    svg.appendChild(g);
  }
  box.appendChild(svg);
  series.forEach((name, n) => {
    const item = document.createElement("span"); item.className = "legend-item";
    const sw = document.createElement("span"); sw.className = "swatch"; sw.style.background = PALETTE[n % PALETTE.length];
    sw.setAttribute("aria-hidden", "true");
    item.append(sw, document.createTextNode(split === "kind" ? t("kind_" + name) : name));
    legend.appendChild(item);
  });
}

function cell(tr, text, cls) {
  const td = document.createElement("td"); td.textContent = text; if (cls) td.className = cls; tr.appendChild(td);
}

async function loadUsage() {
  const u = await api("GET", "/console/api/usage");
  state.usage = u;
  renderUsage();
}

function renderUsage() {
  const u = state.usage; if (!u) return;
  $("u-balance").textContent = money(u.balance, u.currency);
  $("u-reserved").textContent = money(u.reserved, u.currency);
  $("u-available").textContent = money(u.available, u.currency);
  const rows = u.last_30_days || [];
  let spent = 0, tokens = 0, seconds = 0;
  const byModelKind = {};
  rows.forEach((r) => {
    spent += Number(r.amount || 0);
    tokens += Number(r.input_tokens || 0) + Number(r.cached_input_tokens || 0) + Number(r.cache_write_input_tokens || 0) + Number(r.output_tokens || 0);
    seconds += Number(r.video_seconds || 0);
    const k = `${r.model}\u0000${r.kind}`;
    const agg = byModelKind[k] || (byModelKind[k] = { model: r.model, kind: r.kind, currency: r.currency, amount: 0,
      input_tokens: 0, cached_input_tokens: 0, cache_write_input_tokens: 0, output_tokens: 0, video_seconds: 0 });
    ["amount", "input_tokens", "cached_input_tokens", "cache_write_input_tokens", "output_tokens", "video_seconds"].forEach((f) => { agg[f] += Number(r[f] || 0); });
  });
  $("u-spent").textContent = money(spent.toFixed(6), u.currency);
  $("u-tokens").textContent = tokens.toLocaleString(state.lang);
  $("u-seconds").textContent = t("n_seconds").replace("{n}", seconds.toLocaleString(state.lang));
  drawChart(u);
  const bd = $("u-breakdown"); bd.textContent = "";
  Object.values(byModelKind).sort((a, b) => b.amount - a.amount).forEach((r) => {
    const tr = document.createElement("tr");
    cell(tr, r.model, "name"); cell(tr, t("kind_" + r.kind)); cell(tr, quantityText(r), "num"); cell(tr, money(r.amount.toFixed(6), r.currency), "num amount");
    bd.appendChild(tr);
  });
  if (!bd.children.length) {
    const tr = document.createElement("tr"); const td = document.createElement("td"); td.colSpan = 4; td.textContent = t("none"); tr.appendChild(td); bd.appendChild(tr);
  }
  const tb = $("u-charges"); tb.textContent = "";
  if (!u.recent_charges.length) {
    const tr = document.createElement("tr"); const td = document.createElement("td"); td.colSpan = 3; td.textContent = t("none"); tr.appendChild(td); tb.appendChild(tr);
  }
  u.recent_charges.forEach((c) => {
    const tr = document.createElement("tr");
    const what = `${c.type === "video" ? t("charge_video") : t("charge_chat")}${c.model ? " · " + c.model : ""}`;
    cell(tr, when(c.charged_at || 0)); cell(tr, what); cell(tr, money(c.amount, c.currency), "num amount");
    tb.appendChild(tr);
  });
}

function setUsageSplit(split) {
  state.usageSplit = split;
  $("u-by-model").setAttribute("aria-pressed", String(split === "model"));
  $("u-by-kind").setAttribute("aria-pressed", String(split === "kind"));
  renderUsage();
}

// The Usage page's listeners: added once, when the console starts.
function wireUsage() {
  $("u-by-model").addEventListener("click", () => setUsageSplit("model"));
  $("u-by-kind").addEventListener("click", () => setUsageSplit("kind"));
}
