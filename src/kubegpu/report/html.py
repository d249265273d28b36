"""``ReportData`` → one self-contained HTML page (R2, R11, R13.4, R14): the GPU map, Pending pods with the
scheduler's exact message and evidence, GPU quota bars, the fragmentation summary, findings and figures.

Everything is rendered here, server-side, as plain HTML and inline SVG: the page is complete without
its script (print, screen readers, ``html.parser`` in tests), and the script (``assets.JS``) only filters,
searches, shows tile details and refreshes. Each GPU is one ``<button class="gpu">`` so it is
keyboard-reachable; a node's tiles share one tab stop (arrow keys move between tiles) so that a
1,000-node map is not 6,000 Tab presses. Nothing on the page refers to another origin.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterable, Mapping, Sequence

from kubegpu.explain.cards import GpuTile, NodeCard, PoolSummary, QuotaBar, ReportData, Slot, SlotKind
from kubegpu.explain.finding_kinds import finding_kinds
from kubegpu.explain.findings import QUOTA_NEAR, Finding
from kubegpu.explain.pending import Explanation
from kubegpu.explain.summary import summarize
from kubegpu.page import assets
from kubegpu.page.figures import Figure
from kubegpu.page.html import Live, figure_section, head, section
from kubegpu.page.html import attr_text as _a
from kubegpu.page.html import body_text as _t

# Evidence rows shown per reason group of a Pending pod; the rest are named, not tabulated, so that a
# pod on a 1,000-node cluster costs tens of rows, not a thousand.
EVIDENCE_ROWS_PER_REASON = 8
NAMED_NODES_PER_REASON = 24


FGD_NOTE = (
    "<p class=\"muted\">Fragment amount (Weng et al., ATC '23, §4): the free GPU capacity that the run's "
    "typical pods, weighted by how common each is, could not use (free milli-GPU on GPUs too small for a "
    "shape, or every free GPU of a node the shape does not fit). A free share slot is the unheld rest "
    "of a GPU that sharing pods hold part of.</p>"
)


# stands for the live view's version while the page it versions is hashed (``live_page``)
VERSION_MARK = "kubegpu-page-version-0000"


def live_page(data: ReportData, figures: Sequence[Figure], refresh_s: int) -> tuple[str, str]:
    """The live view's page and its version: a hash of the page as shown, the generation time left out,
    so it changes exactly when what the page shows changes. (Hashing the whole diagnosis instead encoded
    every node's evidence for every Pending pod: 1.7 GB of JSON and 3.4 GB of memory at 5,000 nodes.)"""
    page = render(data, figures, Live(refresh_s, VERSION_MARK))
    shown = page.replace(_t(data.generated), "") if data.generated else page
    version = hashlib.sha256(shown.encode()).hexdigest()[:16]
    return page.replace(VERSION_MARK, version), version


def render(data: ReportData, figures: Sequence[Figure] = (), live: Live | None = None) -> str:
    """The whole page as one string."""
    body_attrs = f' data-refresh="{live.refresh_s}" data-version="{_a(live.version)}"' if live else ""
    parts = [
        head(f"kubegpu report — {data.description}", live),
        f"<body{body_attrs}>",
        '<a class="skip" href="#pending">Skip to Pending pods</a>',
        '<a class="skip" href="#findings">Skip to findings</a>',
        '<a class="skip" href="#map">Skip to the GPU map</a>',
        _header(data, live),
        _controls(data),
        '<aside id="detail" aria-live="polite" aria-label="Selected GPU">'
        '<h2 id="detail-title">GPU details</h2>'
        '<ul id="detail-lines"></ul><p id="detail-hint" class="muted">hover or focus a GPU; click pins it</p>'
        "</aside>",
        '<main id="app">',
        # what a person needs first comes first: the headline, what is stuck and why, what is wrong, then
        # the map to look things up in, then fragmentation, quotas and queues
        _headline(data),
        _pending(data.diagnosis.pending, data.diagnosis.other_pending, data.pending_requests),
        _findings(data.diagnosis.findings),
        _map(data),
        _summary(data),
        _quotas(data.quotas),
        _queue_bars(data.queues),
        figure_section(figures),
        _input_errors(data.diagnosis.input_errors),
        "</main>",
        f"<script>{assets.JS}</script>",
        "</body></html>\n",
    ]
    return "\n".join(parts)


def _words(values: Iterable[str]) -> str:
    """A space-separated data attribute the script splits; Kubernetes names never contain spaces."""
    return _a(" ".join(values))


def hue(namespace: str) -> int:
    """A stable colour per namespace, so one team's GPUs read as one colour across the map."""
    return zlib.crc32(namespace.encode()) % 360


def _header(data: ReportData, live: Live | None) -> str:
    totals = " · ".join(
        f"{_t(r)}: {t['requested']} requested of {t['allocatable']} allocatable ({t['capacity']} capacity)"
        for r, t in sorted(data.diagnosis.totals.items())
    )
    when = f" · generated {_t(data.generated)}" if data.generated else ""
    mode = f" · live view, checks for changes every {live.refresh_s} s (read-only)" if live else ""
    return (
        f'<header class="top" id="top"><h1>kubegpu report: {_t(data.description)}</h1>'
        f'<p class="muted">{len(data.nodes)} GPU nodes, {data.gpu_count} GPUs{when}{mode}. '
        "Requested means the pods' requests as the scheduler counts them, not utilisation.</p>"
        f"<p>{totals or 'no GPU resources advertised'}</p></header>"
    )


def _options(values: Iterable[str], every: str) -> str:
    return f'<option value="">{every}</option>' + "".join(
        f'<option value="{_a(v)}">{_t(v)}</option>' for v in values
    )


def _controls(data: ReportData) -> str:
    pools = sorted({n.pool for n in data.nodes})
    nodes = "".join(f'<option value="{_a(n.name)}"></option>' for n in data.nodes)
    return (
        '<nav class="controls" aria-label="Filters">'
        f'<label>Namespace<select id="f-ns">{_options(data.namespaces, "all namespaces")}</select></label>'
        f'<label>Pool<select id="f-pool">{_options(pools, "all pools")}</select></label>'
        '<label>Node<input id="f-node" list="node-names" placeholder="name contains…" autocomplete="off">'
        "</label>"
        f'<datalist id="node-names">{nodes}</datalist>'
        '<label>Pod<input id="f-pod" type="search" placeholder="pod name contains…" autocomplete="off">'
        "</label>"
        '<button type="button" id="f-clear">Clear filters</button>'
        '<output id="f-status" aria-live="polite"></output></nav>'
    )


def _headline(data: ReportData) -> str:
    """The diagnose headline (``explain.summary``): GPUs, Pending GPU pods, the causes with most pods, and the
    first thing to do; Pending pods are grouped by what they ask for, as the pending list shows it."""
    s = summarize(data.diagnosis, data.pending_asks)
    shown = s.headline_causes()
    causes = "".join(f"<li><b>{n}</b> pod(s): {_t(c)}</li>" for c, n in shown)
    hidden = len(s.causes) - len(shown)
    more = f'<p class="muted">and {hidden} more cause(s) below</p>' if hidden else ""
    return section(
        "headline",
        "Headline",
        f"<p>{_t(s.devices_line())}; {s.pending} Pending GPU pod(s)</p>"
        + (f'<ul class="causes">{causes}</ul>{more}' if causes else "")
        + f"<p><b>First:</b> {_t(s.first_step)}</p>",
    )


def _summary(data: ReportData) -> str:
    rows = "".join(_pool_row(p) for p in data.pools)
    fgd = any(p.fragment_gpus is not None for p in data.pools)
    return section(
        "summary",
        "Fragmentation and stranded GPUs",
        '<p class="muted">Idle = healthy and no device of it held. Stranded = idle on a node that accepts '
        "no new pod (cordoned, NotReady, or out of pod slots, CPU or memory). The largest idle block is the "
        "most GPUs one single-node job could get; free MIG devices and replicas on partly held GPUs are "
        "counted apart. Free GPUs on different nodes do not add up for one pod.</p>"
        + (FGD_NOTE if fgd else "")
        + "<table><thead><tr><th>pool</th><th class=n>nodes</th><th class=n>GPUs</th><th class=n>held</th>"
        "<th class=n>idle</th><th class=n>unhealthy</th><th class=n>stranded</th>"
        "<th class=n>largest idle block</th><th class=n>free MIG / replica / share slots</th>"
        + ("<th class=n>fragment amount (GPUs)</th>" if fgd else "")
        + f"<th>nodes by idle GPUs</th></tr></thead><tbody>{rows}</tbody></table>",
    )


def _pool_row(p: PoolSummary) -> str:
    return (
        f'<tr data-pool="{_a(p.pool)}"><td>{_t(p.pool)}</td>'
        f"<td class=n>{p.nodes}</td><td class=n>{p.gpus}</td>"
        f"<td class=n>{p.held}</td><td class=n>{p.idle}</td><td class=n>{p.unhealthy}</td>"
        f"<td class=n>{p.stranded}</td><td class=n>{p.largest_idle_block}</td><td class=n>{p.free_slots}</td>"
        f"{'' if p.fragment_gpus is None else f'<td class=n>{p.fragment_gpus:.1f}</td>'}"
        f"<td>{_histogram(p)}</td></tr>"
    )


def _histogram(p: PoolSummary) -> str:
    """Inline SVG: how many open nodes have 0, 1, 2, … idle GPUs (a wide spread at small counts is
    fragmentation: plenty idle in total, little on any one node)."""
    if not p.idle_spread:
        return '<span class="muted">no node accepts pods</span>'
    top = max(count for _, count in p.idle_spread)
    width = 18
    bars = []
    for i, (idle, count) in enumerate(p.idle_spread):
        h = max(round(40 * count / top), 1)
        x = i * width
        bars.append(
            f'<rect class="fill" x="{x + 2}" y="{48 - h}" width="{width - 4}" height="{h}">'
            f"<title>{count} node(s) with {idle} idle GPU(s)</title></rect>"
            f'<text x="{x + width / 2}" y="60" text-anchor="middle">{idle}</text>'
        )
    label = "; ".join(f"{count} node(s) with {idle} idle" for idle, count in p.idle_spread)
    view = f"0 0 {width * len(p.idle_spread)} 62"
    return f'<svg class="hist" role="img" aria-label="{_a(label)}" viewBox="{view}">{"".join(bars)}</svg>'


def _map(data: ReportData) -> str:
    by_pool: dict[str, list[NodeCard]] = {}
    for card in data.nodes:
        by_pool.setdefault(card.pool, []).append(card)
    sections = []
    for pool, cards in by_pool.items():
        gpus = sum(len(c.gpus) for c in cards)
        sections.append(
            f'<section class="pool" data-pool="{_a(pool)}" aria-label="pool {_a(pool)}">'
            f'<h3>pool {_t(pool)} <span class="muted">· {len(cards)} nodes · {gpus} GPUs</span></h3>'
            f'<div class="nodes">{"".join(_node(c) for c in cards)}</div></section>'
        )
    namespaces = sorted({ns for n in data.nodes for ns in n.namespaces})
    ns_legend = "".join(
        f'<span><span class="slot held" style="--h:{hue(ns)}">{_t(ns)}</span></span>' for ns in namespaces
    )
    return section(
        "map",
        "GPU map",
        f'<p class="muted">One tile per physical GPU, grouped by the <code>{_t(data.pool_label)}</code> '
        "label. Inside a tile: its holder (namespace colour), or its MIG devices / time-sliced replicas each "
        "with their holder, or the pods sharing it. Arrow keys move between tiles; Enter pins a tile's "
        "details.</p>"
        '<div class="legend" aria-label="Legend">'
        '<span><span class="swatch"><span class="slot held" style="--h:210">pod</span></span> held</span>'
        '<span><span class="swatch idle">idle</span> idle</span>'
        '<span><span class="swatch unhealthy">unhealthy</span> unhealthy</span>'
        f"{_marks_legend(data)}{ns_legend}</div>{''.join(sections)}",
    )


def _marks_legend(data: ReportData) -> str:
    """Legend entries for the marks this map uses (stand-in devices, inferred holders, GPU shares)."""
    slots = [s for n in data.nodes for g in n.gpus for s in g.slots]
    out = []
    if any(n.synthesized for n in data.nodes):
        out.append(
            '<span><span class="swatch synth">GPU</span> ≈ stand-in device synthesised from capacity and '
            "labels (no inventory published)</span>"
        )
    if any(s.assumed for s in slots):
        out.append(
            '<span><span class="slot assumed">pod</span> device IDs inferred ("inferred" in details): the '
            "snapshot does not record which GPU the pod got, so kubegpu placed it the way the device plugin "
            "would</span>"
        )
    if any(s.kind is SlotKind.SHARE for s in slots):
        out.append(
            '<span><span class="slots share-key"><span class="slot held" style="--h:210;flex:460 1 0">pod'
            '</span><span class="slot" style="flex:540 1 0">540m</span></span> GPU-sharing pods: each as '
            "wide as its milli-GPU share, the rest free</span>"
        )
    return "".join(out)


def _node(card: NodeCard) -> str:
    badges = []
    if not card.ready:
        badges.append('<span class="badge bad">NotReady</span>')
    if card.unschedulable:
        badges.append('<span class="badge bad">cordoned</span>')
    badges += [f'<span class="badge warn" title="taint">{_t(t)}</span>' for t in card.taints]
    if card.sharing and card.sharing != "none":
        badges.append(f'<span class="badge">{_t(card.sharing)}</span>')
    if card.synthesized:
        badges.append(
            '<span class="badge" title="no device inventory published: stand-in devices">synthesised</span>'
        )
    held = sum(1 for g in card.gpus if g.holders)
    use = "; ".join(f"{_t(r)} {req}/{alloc} requested" for r, req, alloc in card.resources)
    tiles = "".join(_tile(g, first=i == 0) for i, g in enumerate(card.gpus))
    body = (
        f'<div class="gpus" role="group" aria-label="GPUs of {_a(card.name)}">{tiles}</div>'
        if card.gpus
        else '<p class="nogpu">no GPU devices advertised</p>'
    )
    problems = "".join(f"<li>{_t(p)}</li>" for p in card.problems)
    down = "" if card.ready and not card.unschedulable else " down"
    return (
        f'<article class="node{down}" data-node="{_a(card.name)}" data-pool="{_a(card.pool)}" '
        f'data-ns="{_words(card.namespaces)}" data-pods="{_words(card.holders)}">'
        f"<h4>{_t(card.name)}</h4>"
        f'<div class="meta">{_t(card.product) or "unknown product"} · {held}/{len(card.gpus)} GPUs held'
        f"{' · ' + use if use else ''}</div>"
        f"<div>{''.join(badges)}</div>{body}"
        f"{f'<ul class=problems>{problems}</ul>' if problems else ''}</article>"
    )


def _tile(g: GpuTile, first: bool) -> str:
    state = "unhealthy" if not g.healthy else "idle" if g.idle else "held"
    synth = (" synth" if g.synthesized else "") + (" part" if g.partitioned else "")
    # the title is the tooltip and the detail panel's source; its wording is short because it repeats on
    # every tile (the legend explains "stand-in" and "inferred")
    lines = [
        f"{g.node} · GPU {g.index}",
        f"UUID {g.uuid}{' (stand-in)' if g.synthesized else ''}" if g.uuid else _no_uuid(g),
        "healthy" if g.healthy else "UNHEALTHY: reported by the device plugin; kubelet hands out none of it",
        *(_slot_line(s) for s in g.slots),
    ]
    if g.partitioned:
        inner = "".join(_slot_chip(s) for s in g.slots)
        content = f'<span class="slots">{inner}</span>'
    else:
        s = g.slots[0]
        if s.holder:
            ns, _, pod = s.holder.partition("/")
            assumed = " assumed" if s.assumed else ""
            content = (
                f'<span class="slot held{assumed}" style="--h:{hue(ns)}">{_t(pod)}</span>'
                f'<span class="slot muted">{_t(ns)}</span>'
            )
        else:
            content = f'<span class="state">{state}</span>'
    holders = ", ".join(g.holders) or ("unhealthy" if not g.healthy else "idle")
    return (
        f'<button type="button" class="gpu {state}{synth}" tabindex="{0 if first else -1}" '
        f'data-gpu="{_a(g.node)}/{g.index}" data-ns="{_words(g.namespaces)}" data-pods="{_words(g.holders)}" '
        f'title="{_a(chr(10).join(lines))}" aria-label="{_a(f"GPU {g.index} of {g.node}: {holders}")}">'
        f'<span class="gi">GPU {g.index}</span>{content}</button>'
    )


def _no_uuid(g: GpuTile) -> str:
    if any(s.kind is SlotKind.MIG for s in g.slots):
        return "UUID (MIG parent)"
    return "no UUID: a simulated GPU (packing run)"


def _slot_line(s: Slot) -> str:
    what = {SlotKind.GPU: s.resource, SlotKind.MIG: f"MIG {s.label} ({s.device_id})",
            SlotKind.REPLICA: f"{s.resource} {s.label}", SlotKind.SHARE: f"{s.label} of 1000m"}[s.kind]  # fmt: skip
    who = f"{s.holder} ({s.workload})" if s.workload else s.holder or "free"
    extra = "" if s.healthy else " [unhealthy]"
    if s.assumed:
        extra += " (inferred)"
    return f"{what}: {who}{extra}"


def _slot_chip(s: Slot) -> str:
    # chips are narrow: a replica shows its number, a MIG device its compute slices ("3g"); the tile's
    # details give the full names
    label = s.label.removeprefix("replica ") if s.kind is SlotKind.REPLICA else s.label.partition(".")[0]
    cls = "bad" if not s.healthy else "held" if s.holder else ""
    styles = [f"--h:{hue(s.namespace)}"] if s.holder else []
    if s.kind is SlotKind.SHARE:  # as wide as its share of the GPU ("460m" → 460 of 1000 parts)
        styles.append(f"flex:{s.label.removesuffix('m')} 1 0")
    style = f' style="{";".join(styles)}"' if styles else ""
    assumed = " assumed" if s.assumed else ""
    text = s.holder.partition("/")[2] if s.holder else label
    return f'<span class="slot {cls}{assumed}"{style}>{_t(text)}</span>'


def _pending(pending: Sequence[Explanation], other: int, requests: Mapping[str, str]) -> str:
    items = "".join(_explanation(e, requests) for e in pending)
    others = (
        f'<p class="muted">{other} other Pending pod(s) ask for no GPU and are not explained here.</p>'
        if other
        else ""
    )
    empty = "" if pending else "<p>No Pending GPU pods.</p>"
    return section("pending", f"Pending GPU pods ({len(pending)})", f"{empty}{items}{others}")


def _explanation(e: Explanation, requests: Mapping[str, str]) -> str:
    ns = e.pod.partition("/")[0]
    state = f"schedulable on {_t(e.node or '')}" if e.schedulable else "Pending"
    out = [
        f'<article class="pending{" ok" if e.schedulable else ""}" data-ns="{_a(ns)}" '
        f'data-pod="{_a(e.pod)}">',
        f'<h3>{_t(e.pod)} <span class="badge">{state}</span></h3>',
    ]
    if e.pod in requests:
        out.append(f"<p>Requests {_t(requests[e.pod])}.</p>")
    if e.waiting:
        out.append(f"<p><b>SchedulingGated</b>: {_t(e.waiting)}</p>")
    if e.binding:
        out.append(f"<p><b>BindingConditionsPending</b>: {_t(e.binding)}</p>")
    if e.handled_by:
        out.append(f"<p>{_t(e.handled_by)}</p>")
    if e.handled_by and e.established:  # that scheduler's own rule, read from the snapshot
        out.append(f"<p><b>Cause</b>: {_t(e.established[0])}: {_t(e.established[1])}</p>")
    if e.not_queued:  # no scheduling cycle runs: no FailedScheduling message exists
        out.append(f"<p><b>Not queued</b>: {_t(e.not_queued)}</p>")
    elif e.message:
        out.append(
            f'<p>kube-scheduler\'s FailedScheduling message:</p><pre class="msg">{_t(e.message)}</pre>'
        )
    if e.observed:
        o = e.observed
        verdict = {True: " (matches)", False: " (differs)", None: ""}[o["agrees"]]
        who = (o["reporter"] or "PodScheduled condition") + (f" on {o['about']}" if o.get("about") else "")
        out.append(f"<p>The cluster said ({_t(who)}){verdict}:</p><pre>{_t(o['message'])}</pre>")
        out += [f'<p class="dim">likely: {_t(w)}</p>' for w in o["likelyReasons"]]
    if e.autoscaler:  # a node autoscaler's word: whether a node will be added (not a scheduler's message)
        a = e.autoscaler
        out.append(f"<p>{_t(a['autoscaler'])} said ({_t(a['reason'])}):</p><pre>{_t(a['message'])}</pre>")
        out += [f"<p>meaning: {_t(m)}</p>" for m in a["meaning"]]
    if e.recorded_message and e.recorded_message != e.message:
        out.append(f"<p>The cluster recorded:</p><pre>{_t(e.recorded_message)}</pre>")
    if e.nominated_node:
        victims = ", ".join(e.victims) or "none"
        out.append(
            f"<p>Preemption would nominate <b>{_t(e.nominated_node)}</b>, evicting: {_t(victims)}.</p>"
        )
    for grant in e.allocation:
        gpus = ", ".join(f"GPU {g.get('host_index')} ({g.get('uuid')})" for g in grant.gpus)
        out.append(f"<p>Container {_t(grant.container)} would get {_t(grant.resource)}: {_t(gpus)}</p>")
    claims = e.claims_line()
    if claims:
        out.append(f"<p>{_t(claims)}</p>")
    evidence = {n.name: n for n in e.nodes}
    for g in e.groups:
        rows = "".join(
            f"<tr><td>{_t(name)}</td><td>{_t(evidence[name].plugin)}</td>"
            f"<td>{'<br>'.join(_t(x) for x in evidence[name].evidence)}</td></tr>"
            for name in g.nodes[:EVIDENCE_ROWS_PER_REASON]
            if name in evidence
        )
        rest = g.nodes[EVIDENCE_ROWS_PER_REASON:]
        named = ", ".join(rest[:NAMED_NODES_PER_REASON]) + (
            ", …" if len(rest) > NAMED_NODES_PER_REASON else ""
        )
        more = f'<p class="muted">and {len(rest)} more: {_t(named)}</p>' if rest else ""
        commands = "".join(f"<pre>$ {_t(c)}</pre>" for c in g.commands)
        out.append(
            f"<details open><summary><b>{len(g.nodes)} × {_t(g.reason)}</b></summary>"
            "<table><thead><tr><th>node</th><th>plugin</th><th>evidence</th></tr></thead>"
            f"<tbody>{rows}</tbody>"
            f"</table>{more}<p><b>fix:</b> {_t(g.fix)}</p>"
            f"{f'<p><b>pitfall:</b> {_t(g.pitfall)}</p>' if g.pitfall else ''}{commands}</details>"
        )
    notes = "".join(f"<li>{_t(n)}</li>" for n in e.notes)
    if notes:
        out.append(f"<ul>{notes}</ul>")
    out.append("</article>")
    return "".join(out)


def _bar_rows(bars: Sequence[QuotaBar], filter_attr: str) -> str:
    rows = []
    for b in bars:
        pct = min(b.fraction, 1.0) * 100
        level = " full" if b.fraction >= 1 else " near" if b.fraction >= QUOTA_NEAR else ""
        label = f"{_t(b.namespace)}/{_t(b.name)}" if b.namespace else _t(b.name)
        rows.append(
            f'<div class="quota" {filter_attr}="{_a(b.namespace)}"><span>{label} '
            f"<code>{_t(b.resource)}</code></span>"
            f'<svg class="bar" viewBox="0 0 100 8" preserveAspectRatio="none" role="img" '
            f'aria-label="{_a(f"{b.used} of {b.hard} used")}"><rect class="track" width="100" height="8"/>'
            f'<rect class="fill{level}" width="{pct:.1f}" height="8"/></svg>'
            f"<span>{_t(b.used)} / {_t(b.hard)} used</span></div>"
        )
    return "".join(rows)


def _quotas(bars: Sequence[QuotaBar]) -> str:
    body = _bar_rows(bars, "data-ns") or "<p>No ResourceQuota limits a GPU resource.</p>"
    intro = '<p class="muted">ResourceQuota status.used as the API server reported it.</p>'
    return section("quotas", "GPU quota usage", intro + body)


def _queue_bars(bars: Sequence[QuotaBar]) -> str:
    if not bars:
        return ""
    intro = (
        '<p class="muted">GpuQueue usage by admitted workloads against each queue\'s nominal quota, labelled '
        "cohort/queue; a full bar may be borrowing from the cohort (<code>kubegpu queues</code> says how much).</p>"
    )
    return section("queues", "Queue usage", intro + _bar_rows(bars, "data-cohort"))


def _findings(findings: Sequence[Finding]) -> str:
    """One article per kind of finding (``explain.finding_kinds``: findings that differ only in the pod they
    name), its names cut as ``FindingKind.shown`` says and counted beyond; the filter attributes carry every
    namespace, node and pod of the kind. (One article per finding with every object named twice made 50 MB
    of a 5,000-node page: 400 scattered-GPU findings each naming the ~2,000 nodes holding a free GPU.)"""
    items = []
    for kind in finding_kinds(findings, same_title=False):
        f = kind.first
        objects = {o: None for g in kind.members for o in g.objects}  # each once, first-seen order
        nss = sorted({o.split("/")[1] for o in objects if o.startswith("pod/") and o.count("/") >= 2})
        nodes = [o.removeprefix("node/") for o in objects if o.startswith("node/")]
        pods = [o.removeprefix("pod/") for o in objects if o.startswith("pod/")]
        severity, title = kind.heading()
        shown, hidden = kind.shown()
        more = f" +{hidden} more" if hidden else ""
        alike = f'<p class="muted">{_t(kind.alike())}</p>' if kind.alike() else ""
        commands = "".join(f"<pre>$ {_t(c)}</pre>" for c in f.commands)
        items.append(
            f'<article class="finding {_a(f.severity)}" data-ns="{_words(nss)}" '
            f'data-nodes="{_words(nodes)}" data-pods="{_words(pods)}">'
            f'<h3><span class="badge">{_t(severity)}</span> {_t(title)}</h3>'
            f'<p class="muted">{_t(f.layer)} · {_t(", ".join(shown))}{_t(more)}</p>'
            f"{alike}<p>{_t(f.detail)}</p>{commands}</article>"
        )
    none = "<p>Nothing wrong on the GPU side that the snapshot alone shows.</p>"
    return section("findings", f"Findings ({len(findings)})", "".join(items) or none)


def _input_errors(errors: Sequence[str]) -> str:
    if not errors:
        return ""
    items = "".join(f"<li><code>{_t(e)}</code></li>" for e in errors)
    return section("input-errors", "Objects that could not be read", f"<ul>{items}</ul>")
