"""The report page's stylesheet and script, inlined into every page so the file works offline and fetches
nothing (the page's Content-Security-Policy forbids any fetch but the live view's own ``version``).

They live here as strings rather than package data files so an installed wheel cannot lose them.
The script is progressive: without it the page is complete and printable; with it, the filters, the
search, the tile detail panel, arrow-key navigation and (in ``kubegpu ui``) live refresh work.
"""

CSS = """
:root { color-scheme: light dark; --bg: #fff; --fg: #1b1f24; --muted: #57606a; --card: #f6f8fa;
  --line: #d0d7de; --idle: #8c959f; --bad: #cf222e; --bad-bg: #ffd8d3; --warn: #9a6700; --ok: #1a7f37;
  --accent: #0969da; --slot-l: 82%; --slot-s: 60%; --focus: #0969da; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #0d1117; --fg: #e6edf3; --muted: #9198a1; --card: #161b22; --line: #30363d;
    --idle: #6e7681; --bad: #ff7b72; --bad-bg: #5a1e1e; --warn: #d29922; --ok: #3fb950; --accent: #4493f8;
    --slot-l: 30%; --slot-s: 45%; --focus: #4493f8; }
}
* { box-sizing: border-box; }
[hidden] { display: none !important; }
body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; background: var(--bg);
  color: var(--fg); }
header.top, main, nav.controls { padding: 0 1rem; }
h1 { font-size: 1.4rem; margin: .8rem 0 .2rem; }
h2 { font-size: 1.15rem; margin: 1.4rem 0 .5rem; border-bottom: 1px solid var(--line);
  padding-bottom: .2rem; }
h3 { font-size: 1rem; margin: 1rem 0 .4rem; }
h4 { font-size: .9rem; margin: 0; overflow-wrap: anywhere; }
.muted { color: var(--muted); }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: var(--card); border: 1px solid var(--line);
  padding: .4rem .6rem; margin: .3rem 0; border-radius: 4px; }
a { color: var(--accent); }
.skip { position: absolute; left: -999px; }
.skip:focus { left: .5rem; top: .5rem; z-index: 10; background: var(--bg); padding: .3rem .6rem; }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
nav.controls { position: sticky; top: 0; z-index: 5; display: flex; flex-wrap: wrap; gap: .4rem 1rem;
  align-items: end; background: var(--bg); border-bottom: 1px solid var(--line); padding-block: .5rem; }
nav.controls label { display: flex; flex-direction: column; font-size: 12px; color: var(--muted); }
nav.controls select, nav.controls input, nav.controls button { font: inherit; color: var(--fg);
  background: var(--card); border: 1px solid var(--line); border-radius: 4px; padding: .2rem .4rem; }
#f-status { font-size: 12px; color: var(--muted); align-self: center; }
table { border-collapse: collapse; margin: .3rem 0; }
th, td { border-bottom: 1px solid var(--line); padding: .2rem .6rem .2rem 0; text-align: left;
  vertical-align: top; }
td.n, th.n { text-align: right; }
.badge { display: inline-block; font-size: 11px; border: 1px solid var(--line); border-radius: 9px;
  padding: 0 .45rem; margin: 0 .15rem .1rem 0; color: var(--muted); white-space: nowrap; }
.badge.bad { color: var(--bad); border-color: var(--bad); }
.badge.warn { color: var(--warn); border-color: var(--warn); }
.legend { display: flex; flex-wrap: wrap; gap: .4rem 1rem; align-items: center; font-size: 12px; }
.legend .swatch { width: 2.2rem; height: 1.4rem; }
.pool > .nodes { display: flex; flex-wrap: wrap; gap: .5rem; }
.node { background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: .4rem;
  width: 23.4rem; max-width: 100%; content-visibility: auto; contain-intrinsic-size: auto 9rem; }
.node.down { border-color: var(--bad); }
.node .meta { font-size: 11.5px; color: var(--muted); margin: .1rem 0 .3rem; }
.gpus { display: flex; flex-wrap: wrap; gap: .25rem; }
.gpu, .swatch { display: inline-flex; flex-direction: column; justify-content: space-between; width: 5.4rem;
  min-height: 3.3rem; padding: .15rem .2rem; border: 1px solid var(--line); border-radius: 4px;
  background: var(--bg); color: var(--fg); font: 11px/1.2 system-ui, sans-serif; text-align: left;
  cursor: pointer; overflow: hidden; }
.swatch { cursor: default; min-height: 0; }
.gpu.part { width: 11.05rem; }  /* two tiles wide: room for each MIG device's / replica's holder */
.gpu .gi { color: var(--muted); font-size: 10px; white-space: nowrap; }
.gpu.synth .gi::after, .swatch.synth::after { content: " \\2248"; }
.slot { display: block; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; border-radius: 2px;
  padding: 0 .15rem; }
.slot.held { background: hsl(var(--h) var(--slot-s) var(--slot-l)); }
.slot.assumed { font-style: italic; }
.slot.assumed::before { content: "~"; }
.slot.bad { background: var(--bad-bg); color: var(--bad); }
.slots { display: flex; flex-wrap: wrap; gap: 1px; }
.slots .slot { flex: 1 1 45%; min-width: 0; font-size: 9.5px; border: 1px solid var(--line); }
.slots.share-key { display: inline-flex; flex-wrap: nowrap; width: 5.4rem; }
.gpu.idle, .swatch.idle { border-style: dashed; border-color: var(--idle); color: var(--idle); }
.gpu.unhealthy, .swatch.unhealthy { border-color: var(--bad);
  background: repeating-linear-gradient(135deg, var(--bad-bg) 0 5px, var(--bg) 5px 10px); }
.gpu.unhealthy .state, .gpu.idle .state { font-weight: 600; }
.gpu.dim { opacity: .3; }
.gpu.match { outline: 2px solid var(--accent); }
.gpu.pinned { outline: 3px solid var(--fg); }
.nogpu { font-size: 12px; color: var(--bad); margin: .2rem 0; }
.problems { font-size: 11.5px; color: var(--warn); margin: .3rem 0 0; padding-left: 1rem; }
#detail { position: fixed; right: 1rem; bottom: 1rem; width: min(24rem, calc(100vw - 2rem));
  max-height: 45vh; overflow: auto;
  z-index: 6; background: var(--card); border: 1px solid var(--line); border-radius: 6px;
  padding: .5rem .7rem;
  box-shadow: 0 4px 16px rgba(0,0,0,.25); font-size: 12.5px; }
#detail h2 { font-size: .95rem; margin: 0 0 .3rem; border: 0; padding: 0; overflow-wrap: anywhere; }
#detail ul { margin: 0; padding-left: 1rem; overflow-wrap: anywhere; }
.pending, .finding { border: 1px solid var(--line); border-left: 4px solid var(--warn); border-radius: 4px;
  padding: .3rem .7rem; margin: .5rem 0; }
.finding.critical { border-left-color: var(--bad); }
.finding.info { border-left-color: var(--accent); }
.pending.ok { border-left-color: var(--ok); }
.quota { display: grid; grid-template-columns: minmax(12rem, 22rem) minmax(8rem, 1fr) 9rem; gap: .6rem;
  align-items: center; margin: .15rem 0; max-width: 60rem; }
svg.bar { width: 100%; height: .8rem; }
svg .track { fill: var(--card); stroke: var(--line); }
svg .fill { fill: var(--accent); }
svg .fill.full { fill: var(--bad); }
svg .fill.near { fill: var(--warn); }
svg.hist { height: 3rem; width: auto; max-width: 100%; }
svg.hist text { font: 11px system-ui, sans-serif; fill: var(--muted); }
.figures img { max-width: 100%; border: 1px solid var(--line); background: #fff; }
@media print {
  nav.controls, #detail, .skip { display: none !important; }
  body { background: #fff; color: #000; font-size: 11px; }
  .node { content-visibility: visible; break-inside: avoid; }
  .pending, .finding, .quota, figure { break-inside: avoid; }
  .gpu.dim { opacity: 1; }
  * { print-color-adjust: exact; -webkit-print-color-adjust: exact; }
}
"""

JS = """
(() => {
  "use strict";
  const $ = (s, r = document) => r.querySelector(s);
  const $$ = (s, r = document) => Array.from(r.querySelectorAll(s));
  const ctl = { ns: $("#f-ns"), pool: $("#f-pool"), node: $("#f-node"), pod: $("#f-pod") };
  const status = $("#f-status");
  const words = (s) => (s ? s.split(" ") : []);
  let pinned = null;

  function apply() {
    const ns = ctl.ns.value, pool = ctl.pool.value;
    const node = ctl.node.value.trim().toLowerCase(), q = ctl.pod.value.trim().toLowerCase();
    const picking = Boolean(ns || q);
    let nodes = 0, gpus = 0, hits = 0;
    // tiles on cards about to be hidden are not visited below: clear the last marks everywhere first
    for (const t of $$("#map .gpu.match, #map .gpu.dim")) t.classList.remove("match", "dim");
    for (const sec of $$("#map .pool")) {
      let shown = 0;
      for (const card of sec.querySelectorAll(".node")) {
        const d = card.dataset;
        const ok = (!pool || d.pool === pool) && (!node || d.node.toLowerCase().includes(node)) &&
          (!ns || words(d.ns).includes(ns)) && (!q || d.pods.toLowerCase().includes(q));
        card.hidden = !ok;
        if (!ok) continue;
        shown++; nodes++;
        for (const t of card.querySelectorAll(".gpu")) {
          gpus++;
          const hit = picking && (!ns || words(t.dataset.ns).includes(ns)) &&
            (!q || t.dataset.pods.toLowerCase().includes(q));
          t.classList.toggle("match", hit);
          t.classList.toggle("dim", picking && !hit);
          if (hit) hits++;
        }
      }
      sec.hidden = shown === 0;
    }
    for (const el of $$(".pending")) {
      el.hidden = Boolean((ns && el.dataset.ns !== ns) || (q && !el.dataset.pod.toLowerCase().includes(q)));
    }
    for (const el of $$(".quota")) el.hidden = Boolean(ns && el.dataset.ns !== ns);
    for (const el of $$("#summary tbody tr")) el.hidden = Boolean(pool && el.dataset.pool !== pool);
    for (const el of $$(".finding")) {
      el.hidden = Boolean((ns && !words(el.dataset.ns).includes(ns)) ||
        (node && !el.dataset.nodes.toLowerCase().includes(node)) ||
        (q && !el.dataset.pods.toLowerCase().includes(q)));
    }
    status.textContent = `${nodes} nodes, ${gpus} GPUs shown` + (picking ? `; ${hits} GPUs match` : "");
  }

  function show(tile) {
    const [head, ...rest] = tile.title.split("\\n");
    $("#detail-title").textContent = head;
    $("#detail-lines").replaceChildren(...rest.map((line) => {
      const li = document.createElement("li");
      li.textContent = line;
      return li;
    }));
  }

  function pin(tile) {
    if (pinned) pinned.classList.remove("pinned");
    pinned = tile;
    if (tile) { tile.classList.add("pinned"); show(tile); }
    $("#detail-hint").textContent = tile ? "pinned: Esc releases" : "hover or focus a GPU; click pins it";
  }

  function focusTile(tile) {
    if (!tile) return;
    for (const t of tile.closest(".gpus").querySelectorAll(".gpu")) t.tabIndex = t === tile ? 0 : -1;
    tile.focus();
  }

  function move(tile, key) {
    const card = tile.closest(".node");
    const own = Array.from(card.querySelectorAll(".gpu"));
    const i = own.indexOf(tile);
    if (key === "Home") return own[0];
    if (key === "End") return own[own.length - 1];
    if (key === "ArrowRight" || key === "ArrowLeft") {
      const all = $$("#map .node:not([hidden]) .gpu");
      return all[all.indexOf(tile) + (key === "ArrowRight" ? 1 : -1)];
    }
    const cards = $$("#map .pool:not([hidden]) .node:not([hidden])").filter((c) => c.querySelector(".gpu"));
    const next = cards[cards.indexOf(card) + (key === "ArrowDown" ? 1 : -1)];
    if (!next) return undefined;
    const theirs = next.querySelectorAll(".gpu");
    return theirs[Math.min(i, theirs.length - 1)];
  }

  document.addEventListener("mouseover", (e) => {
    const t = e.target.closest && e.target.closest(".gpu");
    if (t && !pinned) show(t);
  });
  document.addEventListener("focusin", (e) => {
    if (e.target.classList && e.target.classList.contains("gpu") && !pinned) show(e.target);
  });
  document.addEventListener("click", (e) => {
    const t = e.target.closest && e.target.closest(".gpu");
    if (t) pin(t === pinned ? null : t);
  });
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape") { pin(null); return; }
    const t = e.target.classList && e.target.classList.contains("gpu") ? e.target : null;
    if (t && ["ArrowRight", "ArrowLeft", "ArrowUp", "ArrowDown", "Home", "End"].includes(e.key)) {
      e.preventDefault();
      focusTile(move(t, e.key));
    }
  });
  // typing re-filters once the keys pause: on a 1,000-node map each pass restyles thousands of tiles
  let pending = 0;
  const soon = () => { clearTimeout(pending); pending = setTimeout(apply, 60); };
  for (const c of [ctl.node, ctl.pod]) c.addEventListener("input", soon);
  for (const c of [ctl.ns, ctl.pool]) c.addEventListener("change", apply);
  $("#f-clear").addEventListener("click", () => {
    for (const c of Object.values(ctl)) c.value = "";
    apply();
  });
  window.addEventListener("beforeprint", () => { for (const d of $$("details")) d.open = true; });

  function replaceOptions(select, fresh) {
    const value = select.value;
    select.replaceChildren(...Array.from(fresh.children));
    select.value = value;
  }

  const every = Number(document.body.dataset.refresh || 0);
  if (every > 0) {
    setInterval(async () => {
      try {
        const version = (await (await fetch("version", { cache: "no-store" })).text()).trim();
        if (version === document.body.dataset.version) return;
        const page = await (await fetch("./", { cache: "no-store" })).text();
        const doc = new DOMParser().parseFromString(page, "text/html");
        for (const id of ["top", "app"]) $("#" + id).replaceWith(document.adoptNode(doc.getElementById(id)));
        replaceOptions(ctl.ns, doc.getElementById("f-ns"));
        replaceOptions(ctl.pool, doc.getElementById("f-pool"));
        $("#node-names").replaceWith(document.adoptNode(doc.getElementById("node-names")));
        const again = pinned && document.querySelector(`.gpu[data-gpu="${CSS.escape(pinned.dataset.gpu)}"]`);
        pinned = null;
        pin(again || null);
        document.body.dataset.version = version;
        apply();
      } catch (err) {
        status.textContent = "live refresh failed (" + err.message + "); showing the last page";
      }
    }, every * 1000);
  }
  apply();
  // handlers are bound and the first filter pass has run: tests and benchmarks/bench_report.py wait for this
  performance.mark("kubegpu-ready");
  document.documentElement.dataset.ready = "true";
})();
"""
