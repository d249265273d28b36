"""Rich rendering of kubegpu's results for people. Pure presentation: every value shown comes from the core."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from kubegpu.cli.width import columns_env
from kubegpu.explain.explanation import NODE_HAS, node_part
from kubegpu.model.names import FAILED_SCHEDULING, pitfall_name
from kubegpu.model.quantity import format_milli
from kubegpu.model.resources import is_gpu

if TYPE_CHECKING:  # types only: importing the batch session, admission and inspection costs ~0.5 s at start
    from kubegpu.admission.admit import Admission
    from kubegpu.batch.session import BatchSession
    from kubegpu.explain.diagnose import Diagnosis
    from kubegpu.explain.finding_kinds import FindingKind
    from kubegpu.explain.findings import Finding
    from kubegpu.explain.inspect import Inspection
    from kubegpu.explain.pending import Explanation
    from kubegpu.model.objects import Pod
    from kubegpu.scheduler.loop import Outcome


def _console() -> Console:
    """The terminal's width, or ``COLUMNS`` when set (also when piped); else, piped, wide enough for the node
    table (rich would fall back to 80 columns)."""
    probe = Console()
    return Console(highlight=False, width=None if probe.is_terminal or columns_env() else 150)


console = _console()
# Columns of the GPU node table a narrow screen drops first, by width (the rest wrap inside their cells)
NARROW_DROPS: tuple[tuple[int, str], ...] = (
    (120, "held by"), (110, "state"), (100, "product"), (90, "cap"),  # capacity: allocatable is what schedules
)  # fmt: skip
NARROW_MIN = {"pool": 8, "taints": 10, "resource": 10}  # so that a word fits on a line of the cell


SEVERITY_STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}


# Above this many refused nodes, ``explanation`` collapses nodes with the same filter, reason and evidence into
# one row and names the first few nodes of each reason group (every node: ``every_node``, or ``-o json``)
COLLAPSE_NODES = 30
NAMES_SHOWN = 12
# rows kept once collapsed: evidence that names each node's own holders (DRA: "gpu-0 by default/held-17")
# makes every node a row of its own, 19,523 lines for one pod on 5,000 nodes
MAX_NODE_ROWS = 40
# readings of the nodes of one collapsed row shown per evidence line (each: the reading and its node count)
READINGS_SHOWN = 3


def _names(names: list[str], every: bool) -> str:
    if every or len(names) <= NAMES_SHOWN:
        return ", ".join(names)
    return ", ".join(names[:NAMES_SHOWN]) + f", … +{len(names) - NAMES_SHOWN} more (--all)"


def _who(names: list[str], noun: str) -> str:
    """One name, or ``N <noun>: first, second +rest``."""
    if len(names) == 1:
        return names[0]
    return f"{len(names)} {noun}: {names[0]}, {names[1]}" + (f" +{len(names) - 2}" if len(names) > 2 else "")


def _kept(groups: list[tuple[Any, list[Any]]]) -> tuple[list[tuple[Any, list[Any]]], int, int]:
    """At most ``MAX_NODE_ROWS`` groups: those of the most members, in their first-seen order; and how
    many members and groups were left out."""
    if len(groups) <= MAX_NODE_ROWS:
        return groups, 0, 0
    kept = set(sorted(range(len(groups)), key=lambda i: -len(groups[i][1]))[:MAX_NODE_ROWS])
    hidden = sum(len(groups[i][1]) for i in range(len(groups)) if i not in kept)
    return [groups[i] for i in sorted(kept)], hidden, len(groups) - len(kept)


Item = TypeVar("Item")


def _grouped(
    items: Sequence[Item], outcome: Callable[[Item], tuple[Any, ...]], every: bool
) -> tuple[list[tuple[Any, list[Item]]], int, int]:
    """``items`` one per group (``every``, or at most ``COLLAPSE_NODES`` of them), else grouped by
    ``outcome`` in first-seen order and ``_kept``."""
    if every or len(items) <= COLLAPSE_NODES:
        return [((), [x]) for x in items], 0, 0
    groups: dict[tuple[Any, ...], list[Item]] = {}
    for x in items:
        groups.setdefault(outcome(x), []).append(x)
    return _kept(list(groups.items()))


def _node_rows(exp: Explanation, every: bool) -> list[tuple[str, str, str, str]]:
    """One row per refused node, or (many nodes, not ``every``) one row per distinct (filter, reasons,
    evidence less each node's own reading), first seen first, naming how many nodes read so and the first
    of them, with the readings the nodes have and how many have each (``_merged``)."""
    groups, hidden, left = _grouped(
        exp.nodes, lambda n: (n.plugin, tuple(n.reasons), tuple(node_part(e)[0] for e in n.evidence)), every
    )
    rows = []
    for _, ns in groups:  # (the rows of the most nodes, in node order)
        n = ns[0]
        lines = (
            n.evidence
            if len(ns) == 1
            else [_merged([m.evidence[j] for m in ns]) for j in range(len(n.evidence))]
        )
        rows.append((_who([m.name for m in ns], "nodes"), n.plugin, "\n".join(n.reasons), "\n".join(lines)))
    if left:
        rows.append((f"… {hidden} more node(s)", "", "", f"{left} more row(s) of their own evidence (--all)"))
    return rows


def _merged(lines: list[str]) -> str:
    """One evidence line of many nodes that differ only in their own reading (``node_part``): the line
    itself where they all read alike, else its common part and the readings, the commonest first (ties in
    node order) with how many nodes have each, ``READINGS_SHOWN`` of them."""
    readings: dict[str, int] = {}
    for line in lines:
        tail = node_part(line)[1]
        readings[tail] = readings.get(tail, 0) + 1
    if len(readings) == 1:
        return lines[0]
    head = node_part(lines[0])[0].removesuffix(NODE_HAS)
    ranked = sorted(readings.items(), key=lambda kv: -kv[1])  # (stable: node order among equal counts)
    shown = ", ".join(f"{tail} ({count} nodes)" for tail, count in ranked[:READINGS_SHOWN])
    more = f", … +{len(ranked) - READINGS_SHOWN} more" if len(ranked) > READINGS_SHOWN else ""
    return f"{head}nodes have {shown}{more}"


def explanation(
    exp: Explanation, *, heading: bool = True, every_node: bool = False, each: str = "--all"
) -> None:
    """``every_node``: a row for each refused node and every node of each reason group, however many; ``each``:
    the option that gives them, named where alike nodes share a row."""
    if heading:
        console.rule(f"[bold]{exp.pod}")
    if exp.bound:  # bound and not running: the node's cause first; the verdict below is the unbound copy's
        b = exp.bound
        console.print(
            Text(f"bound to {b['node']} and not running: {b['cause']}", style="bold red"), soft_wrap=True
        )
        console.print(Text("; ".join(b["evidence"])), soft_wrap=True)
        console.print(Text(b["why"]), soft_wrap=True)
        print_commands(b["commands"])
        console.print(Text("were it pending again, the scheduler's checks below apply:"), style="dim")
    if exp.waiting:
        console.print(Text(f"SchedulingGated — {exp.waiting}", style="yellow"), soft_wrap=True)
        if exp.kueue is not None:
            for line in exp.kueue.advice:
                console.print(Text(f"Kueue: {line}"), soft_wrap=True)
            print_commands(exp.kueue.commands)
        console.print(Text("once the gates are removed, the checks below apply:"), style="dim")
    if exp.binding:
        console.print(Text(f"BindingConditionsPending — {exp.binding}", style="yellow"), soft_wrap=True)
    if exp.handled_by:
        console.print(Text(exp.handled_by, style="yellow"), soft_wrap=True)
        verdict = f"pass on {exp.node}" if exp.schedulable else f"fail on every node: {exp.message}"
        console.print(Text(f"checks every scheduler makes: {verdict}"), soft_wrap=True)
        # that scheduler's own rule, read from the snapshot: its note below tells the rest
        if exp.established:
            console.print(Text(f"cause: {exp.established[0]} (see the note)", style="bold"), soft_wrap=True)
    elif exp.schedulable:
        console.print(f"[green]schedulable[/green]: kube-scheduler would bind it to [bold]{exp.node}[/bold]")
        if exp.kubelet:
            console.print(f"[red]but kubelet on {exp.kubelet['node']} would refuse it at admission[/red]:")
            console.print(
                Text(f"{exp.kubelet['reason']}: {exp.kubelet['message']}"), style="bold", soft_wrap=True
            )
        if exp.allocation:
            table = Table(
                title="devices the container would get (logical CUDA index → host GPU)", title_justify="left"
            )
            for col in ("container", "resource", "device IDs", "logical → host", "env"):
                table.add_column(col, overflow="fold")
            for grant in exp.allocation:
                view = ", ".join(f"{d['logical']}→{d['host_index']}" for d in grant.gpus)
                env = "\n".join(f"{k}={v}" for k, v in grant.env.items())
                table.add_row(
                    grant.container,
                    grant.resource + (" (shared)" if grant.shared else ""),
                    "\n".join(grant.device_ids),
                    view,
                    env,
                )
            console.print(table)
    elif exp.not_queued:  # no cycle runs: there is no FailedScheduling message to show
        console.print(Text(f"Not queued — {exp.not_queued}", style="yellow"), soft_wrap=True)
    else:
        console.print("[red]Pending[/red] — kube-scheduler's FailedScheduling message:")
        console.print(Text(exp.message), style="bold", soft_wrap=True)  # one line: copy it, grep for it
    if exp.observed:
        o = exp.observed
        # the event's reason, named when it is a scheduler's own (HAMi FilteringFailed, KAI Unschedulable)
        reason = o.get("reason") or ""
        who = (
            o["source"]
            + (f" {reason}" if reason and reason != FAILED_SCHEDULING else "")
            + (f" from {o['reporter']}" if o.get("reporter") else "")
            + (f" on {o['about']}" if o.get("about") else "")  # its PodGroup's event, not the pod's own
        )
        verdict = {True: "matches the prediction", False: "differs from the prediction", None: ""}[
            o["agrees"]
        ]
        console.print(
            Text(f"the cluster said ({who}): {o['message']}" + (f" — {verdict}" if verdict else "")),
            soft_wrap=True,
        )
        for why in o["likelyReasons"]:
            console.print(Text(f"  likely: {why}"), style="dim", soft_wrap=True)
    if exp.autoscaler:  # a node autoscaler's word: whether a node will be added (not a scheduler's message)
        a = exp.autoscaler
        console.print(Text(f"{a['autoscaler']} said ({a['reason']}): {a['message']}"), soft_wrap=True)
        for meaning in a["meaning"]:
            console.print(Text(f"  meaning: {meaning}"), style="yellow", soft_wrap=True)
    for line in exp.unverified:  # the verdict rests on something kubegpu does not model
        console.print(Text(f"unverified: {line}"), style="yellow")
    claims = exp.claims_line()  # what the evidence's ``pod claim <name>`` refers to
    if claims:
        console.print(Text(claims), soft_wrap=True)
    if exp.nodes:
        rows = _node_rows(exp, every_node)
        alike = len(rows) < len(exp.nodes)
        title = (
            f"evidence per node ({len(exp.nodes)} nodes, alike ones in one row; {each}: each)"
            if alike
            else "evidence per node"
        )
        table = Table(title=title, title_justify="left", show_lines=False)
        for col in ("node", "first failing filter", "reason", "evidence"):
            table.add_column(col, overflow="fold")
        for row in rows:
            table.add_row(*row)
        console.print(table)
    every_name = every_node or len(exp.nodes) <= COLLAPSE_NODES  # (as the table: names cut only when it is)
    for g in exp.groups:
        body = Text()
        body.append(f"{len(g.nodes)} node(s): {_names(g.nodes, every_name)}\n", style="dim")
        if g.fix:
            body.append("fix: ", style="bold green")
            body.append(g.fix + "\n")
        if g.pitfall:
            body.append("pitfall: ", style="bold yellow")
            body.append(g.pitfall + "\n")
        body.rstrip()  # the commands follow under the panel
        console.print(Panel(body, title=g.reason, title_align="left"))
        print_commands(g.commands)
    if exp.queue:
        q = exp.queue
        line = f"queue {q['queue']}" + ("" if q["queueDefined"] else " (no GpuQueue defines it)")
        if q.get("position"):
            line += f": position {q['position']} of {q['pendingInQueue']} pending"
        if q.get("quotaShortfall"):
            line += f"; quota short by {q['quotaShortfall']['shortBy']} {q['quotaShortfall']['resource']} ({q['quotaShortfall']['reason']})"
        elif q.get("quotaFits"):
            line += "; its quota would admit it"
        if q.get("gang"):
            g = q["gang"]
            line += f"; gang {q['workload']}: {g['members']} member pods, minMember {g['minMember']}, {g['bound']} bound"
        console.print(Text(line))
    for note in exp.notes:
        console.print(Text(f"note: {note}"))


def print_commands(commands: list[str]) -> None:
    """Proposed commands, each on one line however narrow the terminal: a wrapped command would put
    ``--dry-run=server`` on a line of its own, and copying the first line would run the real change. So
    they are printed under their panel, not inside it, with soft wrapping (the terminal folds a long
    line for display; a copy of it is still the one command)."""
    for cmd in commands:
        console.print(Text(f"  $ {cmd}", style="cyan"), soft_wrap=True)


def _finding_panel(f: Finding, kind: FindingKind | None = None, note: str = "") -> None:
    """One finding, or (``kind``) the findings alike but for their pod, headed by the first, its names cut
    as ``FindingKind.shown`` says (``-o json`` has every one); ``note`` replaces the kind's own."""
    severity, title = kind.heading() if kind is not None else (f.severity, f.title)
    named, hidden = kind.shown() if kind is not None else (f.objects, 0)
    body = Text()
    body.append(f"{', '.join(named)}{f' +{hidden} more (-o json)' if hidden else ''}\n", style="dim")
    note = note or (kind.alike() if kind is not None else "")
    if note:
        body.append(note + "\n", style="dim")
    body.append(f.detail + "\n")
    body.append(f"(layer: {f.layer})", style="dim")
    console.print(
        Panel(
            body,
            title=Text(
                f"{severity}: {title}" + (f" [pitfall {pitfall_name(f.pitfall)}]" if f.pitfall else ""),
                style=SEVERITY_STYLE[f.severity],
            ),
            title_align="left",
        )
    )
    print_commands(f.commands)


# panels ``inspect`` shows one by one; beyond this, one per title, the first finding's detail standing for
# the rest (a generated 5,000-node fleet's 151 dark nodes, 55 NotReady and 44 short of allocatable were 321
# panels, 2,670 lines)
INSPECT_PANELS = 30


def inspection(report: Inspection, everything: bool = False) -> None:
    """The findings, those alike but for their pod as one panel (400 Pending 8-GPU pods on 5,000 nodes
    were 400 panels naming the ~2,000 nodes with a free GPU each: 273,201 lines); past ``INSPECT_PANELS``,
    one panel per title unless ``everything``."""
    from kubegpu.explain.finding_kinds import finding_kinds

    console.rule(f"[bold]kubegpu inspect: {len(report.findings)} finding(s), exit code {report.exit_code}")
    kinds = finding_kinds(report.findings, same_title=False)
    if everything or len(kinds) <= INSPECT_PANELS:
        for kind in kinds:
            _finding_panel(kind.first, kind)
        return
    for kind in finding_kinds(report.findings, same_title=True):
        many = len(kind.members) > 1 and not kind.pods  # a kind of pods says "N pods" itself
        # one check's findings about several objects, or worded apart about one: alike in kind, not in title
        apart = kind.subjects or any(m.title != kind.first.title for m in kind.members)
        of = "kind" if apart else "title"
        note = f"{len(kind.members)} findings of this {of}; the first one's detail (--all: each one):"
        _finding_panel(kind.first, kind, note if many else "")


def _holders_summary(holders: list[str]) -> str:
    """ "ml-train: a, b" lines → "ml-train ×2": the table stays one line per node; -o json has the names."""
    return ", ".join(f"{h.split(':', 1)[0]} ×{len(h.split(':', 1)[1].split(','))}" for h in holders)


def diagnosis(report: Diagnosis) -> None:
    console.rule(f"[bold]kubegpu diagnose — {report.description}")
    table = Table(title="GPU nodes (requested = pods' requests, not utilisation)", title_justify="left")
    dropped = {col for below, col in NARROW_DROPS if console.width < below}
    columns = (
        "node",
        "pool",
        "product",
        "state",
        "taints",
        "resource",
        "cap",
        "alloc",
        "req",
        "free",
        "held by",
    )
    numbers = ("cap", "alloc", "req", "free")
    for col in columns:
        if col not in dropped:  # names and numbers never fold; the rest share what width is left
            table.add_column(col, overflow="fold", no_wrap=col == "node" or col in numbers,
                             min_width=len(col) if col in numbers else NARROW_MIN.get(col))  # fmt: skip
    for row in report.nodes:
        state = "Ready" if row.ready else "NotReady"
        if row.unschedulable:
            state += ",cordoned"
        resources = list(row.gpu.items()) or [
            ("—", {"capacity": "0", "allocatable": "0", "requested": "0", "free": "0"})
        ]
        for i, (r, v) in enumerate(resources):
            first = i == 0
            cells = dict(zip(columns, (
                row.name if first else "", row.pool if first else "", row.product if first else "",
                state if first else "", "\n".join(row.taints) if first else "", r, v["capacity"], v["allocatable"],
                v["requested"], v["free"], _holders_summary(row.holders) if first else "",
            ), strict=True))  # fmt: skip
            table.add_row(*(cells[c] for c in columns if c not in dropped))
    console.print(table)
    for r, t in sorted(report.totals.items()):
        console.print(f"{r}: capacity {t['capacity']}, allocatable {t['allocatable']}, requested {t['requested']}, "
                      f"free {t['allocatable'] - t['requested']}")  # fmt: skip
    console.print()
    console.rule(f"[bold]Pending GPU pods ({len(report.pending)})")
    if report.other_pending:
        console.print(
            f"({report.other_pending} other pending pod(s) request no GPU and are not explained here)"
        )
    for exp in report.pending:
        # alike nodes share a row above COLLAPSE_NODES, as in explain: a row per node and pod is 5M rows on
        # 5,000 nodes with 1,000 Pending pods (an hour of rendering); --pod gives one pod's every node
        explanation(exp, each=f"--pod {exp.pod}")
    console.rule(f"[bold]Findings ({len(report.findings)})")
    for f in report.findings:
        _finding_panel(f)
    if report.input_errors:
        console.print(
            f"[red]{len(report.input_errors)} input object(s) could not be read (listed on stderr)."
        )


def schedule_data(outcomes: list[Outcome], admissions: list[Admission], others: list[Pod]) -> dict[str, Any]:
    return {
        "rejected": [
            {"pod": a.name, "source": a.source, "message": a.message} for a in admissions if not a.admitted
        ],
        "results": [
            {
                "pod": o.pod.key,
                "priority": o.pod.priority,
                "node": o.node,
                "message": o.message or None,
                "nominatedNode": o.nominated_node or None,
                "evicted": [v.key for v in o.evicted],
            }
            for o in outcomes
        ],
        "otherSchedulers": [{"pod": p.key, "schedulerName": p.scheduler_name} for p in others],
        "warnings": [
            {"pod": a.name, "source": a.source, "message": a.warning} for a in admissions if a.warning
        ],
    }


def _schedule_rows(results: list[dict[str, Any]], every: bool) -> list[tuple[str, str, Text]]:
    """A row per pod, or (a long pass, not ``every``) one per outcome, first seen first: the pods bound
    without preempting, then each refusal message with the pods that got it; a preemption is always a row
    of its own (it names what it evicted)."""

    def outcome(r: dict[str, Any]) -> tuple[Any, ...]:
        if r["node"]:
            return ("pod", r["pod"]) if r["evicted"] else ("bound",)
        return ("refused", r["message"] or "", r["nominatedNode"] or "")

    kept, hidden, left = _grouped(results, outcome, every)
    rows = []
    for _, rs in kept:
        first = rs[0]
        if first["node"] and len(rs) > 1:
            result = Text("bound: " + _names([f"{r['pod']} → {r['node']}" for r in rs], every), style="green")
        elif first["node"]:
            result = Text(f"bound to {first['node']}", style="green")
            if first["evicted"]:
                result.append(f" after preempting {', '.join(first['evicted'])}", style="yellow")
        else:
            result = Text(first["message"] or "", style="red")
        rows.append((_who([r["pod"] for r in rs], "pods"), _span([r["priority"] for r in rs]), result))
    if left:
        rows.append((f"… {hidden} more pod(s)", "", Text(f"{left} more outcome(s) (--all)")))
    return rows


def schedule_table(data: dict[str, Any], every: bool = False) -> None:
    """``every``: a row per pod, however many (else a long pass groups pods with the same outcome)."""
    for r in data["rejected"]:
        console.print(Text(f"rejected by the API server: {r['message']}"), style="red")
    for w in data["warnings"]:
        console.print(Text(f"warning: {w['pod']}: {w['message']}"), style="yellow")
    table = Table(title="scheduling pass (queue order)", title_justify="left")
    for col in ("pod", "prio", "result"):
        table.add_column(col, overflow="fold")
    for row in _schedule_rows(data["results"], every):
        table.add_row(*row)
    console.print(table)
    for o in data["otherSchedulers"]:
        console.print(f"skipped {o['pod']}: spec.schedulerName={o['schedulerName']}")


def _shown(resources: dict[str, int], nominal: dict[str, int]) -> dict[str, str]:
    """GPU resources and whatever the queue's quota names, formatted."""
    return {r: format_milli(r, v) for r, v in sorted(resources.items()) if is_gpu(r) or r in nominal}


def queue_rows(session: BatchSession) -> list[dict[str, Any]]:
    """Each queue's nominal quota, usage, borrowing, decayed consumed usage (where its cohort sets a
    half-life) and the weighted dominant share the admission order uses, before the cycle."""
    book = session.book
    decay = book.consumed.decay if book.consumed is not None else {}
    rows = []
    for name, queue in sorted(book.queues.items()):
        consumed = None
        if name in decay:
            milli = {r: round(v) for r, v in book.share_usage(name).items()}
            consumed = _shown({r: v for r, v in milli.items() if v}, queue.nominal)
        rows.append({
            "queue": name, "cohort": queue.cohort or None, "weight": queue.weight,
            "nominal": _shown(queue.nominal, queue.nominal), "used": _shown(book.usage[name], queue.nominal),
            "borrowed": _shown(book.borrowed(name), queue.nominal),
            "usageHalfLifeSeconds": decay[name].half_life_s if name in decay else None,
            "consumed": consumed,
            "share": round(book.dominant_share(name, session.totals), 4),
        })  # fmt: skip
    return rows


def _res(d: dict[str, str]) -> str:
    return ", ".join(f"{k.removeprefix('nvidia.com/')}={v}" for k, v in d.items()) or "—"


def queues_table(data: dict[str, Any], every: bool = False) -> None:
    """``every``: a row per workload, however many (else a long cycle groups workloads alike)."""
    table = Table(title="queues (before this admission cycle)", title_justify="left")
    for col in (
        "queue",
        "cohort",
        "weight",
        "nominal",
        "used",
        "borrowed",
        "consumed (decayed)",
        "DRF share",
    ):
        table.add_column(col, overflow="fold")
    for q in data["queues"]:
        consumed = (
            ""
            if q["consumed"] is None
            else f"{_res(q['consumed'])} (half-life {q['usageHalfLifeSeconds']:g} s)"
        )
        table.add_row(q["queue"], q["cohort"] or "", str(q["weight"]), _res(q["nominal"]), _res(q["used"]),
                      _res(q["borrowed"]), consumed, f"{q['share']:.3f}")  # fmt: skip
    if data["queues"]:
        console.print(table)
    else:  # (an empty table reads as a failure to read them)
        console.print("queues: none defined (no GpuQueue in the snapshot): no queue quota applies")
    table = Table(title=f"admission cycle (costs measured at {data['now']})", title_justify="left")
    for col in ("#", "workload", "queue", "pods", "result"):
        table.add_column(col, overflow="fold")
    for row in _decision_rows(data["decisions"], every):
        table.add_row(*row)
    console.print(table)


def _decision_rows(decisions: list[dict[str, Any]], every: bool) -> list[tuple[str, str, str, str, Text]]:
    """A row per workload, or (a long cycle, not ``every``) one per queue and outcome, first seen first:
    the workloads a queue admitted without preempting (with one note, if any), and each reason a queue's
    workloads wait for; an admission that preempts is always a row of its own (it names what it evicted
    and what that cost)."""

    def outcome(d: dict[str, Any]) -> tuple[Any, ...]:
        return (
            ("own", d["position"])
            if d["admitted"] and d["evicted"]
            else (d["queue"], d["admitted"], d["reason"])
        )

    kept, hidden, left = _grouped(decisions, outcome, every)
    rows = []
    for _, ds in kept:
        rows.append((_span([d["position"] for d in ds]), _who([d["workload"] for d in ds], "workloads"),
                     ds[0]["queue"], _span([d["pods"] for d in ds]) + _min_member(ds), _decision(ds, every)))  # fmt: skip
    if left:
        rows.append(("", f"… {hidden} more workload(s)", "", "", Text(f"{left} more outcome(s) (--all)")))
    return rows


def _span(values: list[int]) -> str:
    low, high = min(values), max(values)
    return str(low) if low == high else f"{low}–{high}"


def _min_member(ds: list[dict[str, Any]]) -> str:
    gangs = {d["minMember"] for d in ds if d["minMember"] > 1}
    return f" (min {_span(list(gangs))})" if gangs else ""


def _decision(ds: list[dict[str, Any]], every: bool) -> Text:
    """The result cell of one workload, or of workloads alike (admitted, or waiting for one reason); the
    first pods' nodes only, unless ``every``."""
    d = ds[0]
    if not d["admitted"]:
        return Text(d["reason"] or "", style="red")
    placed = [f"{p}→{n}" for x in ds for p, n in x["nodes"].items()]
    result = Text("admitted: " + _names(placed, every), style="green")
    if d["evicted"]:
        result.append(
            f"\npreempted {', '.join(d['evicted'])} ({d['gpuSecondsLost']} GPU-seconds lost"
            + (f", {d['pdbViolations']} PodDisruptionBudget violation(s)" if d["pdbViolations"] else "")
            + ")",
            style="yellow",
        )
    if d["reason"]:
        result.append(f"\n{d['reason']}", style="dim")
    return result


def quota_table(rows: list[dict[str, Any]]) -> None:
    table = Table(title="ResourceQuota usage (requests are counted, not utilisation)", title_justify="left")
    for col in ("namespace", "quota", "resource", "used", "hard", "%", "what if"):
        table.add_column(col, overflow="fold")
    for r in rows:
        what = f"hard={r['whatIf']}: {r['effect']}" if "whatIf" in r else ""
        pct = "" if r["percent"] is None else f"{r['percent']:.0f}"
        quota = f"{r['quota']} [{r['scopes']}]" if r.get("scopes") else r["quota"]
        table.add_row(r["namespace"], quota, r["resource"], r["used"], r["hard"], pct, what)
    if rows:
        console.print(table)
        for r in rows:
            if r.get("note"):
                console.print(f"note: {r['namespace']}/{r['quota']} {r['resource']}: {r['note']}")
    else:  # (an empty table reads as a failure to read them)
        console.print("ResourceQuota: none in the snapshot (add resourcequotas to the `kubectl get`)")
