"""The table view of ``kubegpu diagnose``: headline first, then groups (large clusters) or every pod and
node (small ones, ``--all``), and ``--pod`` / ``--node`` for one object's full detail.

The grouped view is bounded whatever the cluster's size: at most ``MAX_GROUPS`` Pending groups with
evidence and ``MAX_LISTED_GROUPS`` more in one line each, ``MAX_NODE_GROUPS`` pool rows, ``MAX_ANOMALIES``
anomalous nodes and ``MAX_FINDINGS`` findings, each overflow said in one line with the flag that shows the
rest. A fix several groups share (one taint refusing pods of many shapes) is printed with its first group.
"""

from __future__ import annotations

from collections.abc import Mapping

import click

from kubegpu.cli.width import echo_wrapped
from kubegpu.explain.diagnose import Diagnosis
from kubegpu.explain.finding_kinds import finding_kinds
from kubegpu.explain.summary import PodAsk, Summary, summarize

MAX_GROUPS = 12
MAX_LISTED_GROUPS = 40  # groups after MAX_GROUPS, one line each
MAX_NODE_GROUPS = 40  # pool × product × resource rows
MAX_ANOMALIES = 20
MAX_FINDINGS = 30
# Below these the per-pod / per-node view is short enough to read whole, and is shown after the headline.
DETAIL_PENDING = 10
DETAIL_NODES = 30


def show(
    report: Diagnosis, asks: Mapping[str, PodAsk], *, everything: bool, pod: str | None, node: str | None
) -> None:
    if pod is not None or node is not None:
        _one(report, pod, node)
        return
    summary = summarize(report, asks)
    if everything or (len(report.pending) <= DETAIL_PENDING and len(report.nodes) <= DETAIL_NODES):
        from kubegpu.cli import render  # rich: only the per-pod view needs it, not the grouped one

        headline(summary)
        render.diagnosis(report)
    else:
        click.echo(f"kubegpu diagnose — {report.description}")
        headline(summary)
        grouped(summary, report)


def headline(s: Summary) -> None:
    echo = echo_wrapped
    echo(
        f"{s.devices_line()}; {s.pending} Pending GPU pod(s)"
        + (f" (+{s.other_pending} Pending without GPUs)" if s.other_pending else "")
    )
    shown = s.headline_causes()
    for cause, pods in shown:
        echo(f"  {pods:>6} pod(s): {cause}")
    if len(s.causes) > len(shown):
        echo(f"  … {len(s.causes) - len(shown)} more cause(s) (--all)")
    echo(f"First: {s.first_step}")
    echo("")


def grouped(s: Summary, report: Diagnosis) -> None:
    echo = echo_wrapped
    unverified = [e for e in report.pending if e.unverified]
    if unverified:  # never silently optimistic: the verdicts that rest on something not modelled
        first = unverified[0]
        echo(f"Unverified: {len(unverified)} Pending pod(s) use what kubegpu does not model, e.g. {first.pod}: "
             f"{first.unverified[0]} (--pod for all)")  # fmt: skip
        echo("")
    echo(f"Pending GPU pods by shape and cause ({len(s.groups)} group(s)):")
    told: set[str] = set()  # fixes already printed: a reason shared by many groups has its fix said once
    for g in s.groups[:MAX_GROUPS]:
        spaces = g.namespaces()
        where = ", ".join(f"{ns} {n}" for ns, n in spaces.most_common(4))
        more = f", +{len(spaces) - 4} namespace(s)" if len(spaces) > 4 else ""
        echo(f"- {len(g.pods)} pod(s) ({where}{more}) want {g.shape}: {g.cause}")
        echo(f"    e.g. {g.pods[0]}: {g.message or g.fix}")  # (a pod that fits has no message: its verdict)
        for r in g.reasons[:4]:
            fix = "" if not r.fix else " — fix as above" if r.fix in told else f" — {r.fix}"
            told.add(r.fix)
            echo(f"    {r.nodes:>6} node(s): {r.reason}{fix}")
        for n in g.nearest:
            echo(f"    nearest miss {n.name}: {'; '.join(n.evidence[:2]) or ', '.join(n.reasons)}")
    listed = s.groups[MAX_GROUPS : MAX_GROUPS + MAX_LISTED_GROUPS]
    for g in listed:
        echo(f"- {len(g.pods)} pod(s) want {g.shape}: {g.cause}")
    rest = s.groups[MAX_GROUPS + len(listed) :]
    if rest:
        echo(f"  … {len(rest)} more group(s) of {sum(len(g.pods) for g in rest)} pod(s) (--all)")
    echo("")
    echo("GPU nodes by pool and product:")
    # the rows with the most nodes, in the table's (pool, product) order; columns as wide as their values
    # (a MIG product name, "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb", is wider than a GPU's)
    kept = {id(ng) for ng in sorted(s.node_groups, key=lambda ng: -ng.nodes)[:MAX_NODE_GROUPS]}
    rows = [(ng.pool or "(none)", ng.product or "(unlabelled)", ng) for ng in s.node_groups if id(ng) in kept]
    pw = max([20, *(len(pool) for pool, _, _ in rows)])
    dw = max([28, *(len(product) for _, product, _ in rows)])
    rw = max([16, *(len(ng.resource) for _, _, ng in rows)])
    echo(
        f"  {'pool':<{pw}} {'product':<{dw}} {'resource':<{rw}} {'nodes':>6} {'alloc':>7} {'req':>7} {'free':>7}  "
        "largest free block"
    )
    for pool, product, ng in rows:
        echo(
            f"  {pool:<{pw}} {product:<{dw}} {ng.resource:<{rw}} {ng.nodes:>6} {ng.allocatable:>7} {ng.requested:>7} "
            f"{ng.free:>7}  {ng.largest_free} on {ng.nodes_with_largest} node(s)"
        )
    if len(s.node_groups) > len(kept):
        hidden = len(s.node_groups) - len(kept)
        nodes = sum(ng.nodes for ng in s.node_groups if id(ng) not in kept)
        echo(f"  … {hidden} more row(s) of {nodes} node(s) (--all)")
    if s.anomalies:
        echo(f"Anomalies ({len(s.anomalies)}):")
        for name, problem in s.anomalies[:MAX_ANOMALIES]:
            echo(f"  {name}: {problem}")
        if len(s.anomalies) > MAX_ANOMALIES:
            echo(f"  … {len(s.anomalies) - MAX_ANOMALIES} more (--all)")
    echo("")
    echo(f"Findings ({len(report.findings)}):")
    kinds = finding_kinds(report.findings)
    for kind in kinds[:MAX_FINDINGS]:  # a check's findings about many objects: one line, a few of them named
        objects = kind.named
        shown = ", ".join(objects[:3]) + (f", +{len(objects) - 3} more; --all" if len(objects) > 3 else "")
        severity, title = kind.heading()
        echo(f"  {severity}: {title} ({shown})")
    if len(kinds) > MAX_FINDINGS:
        echo(f"  … {len(kinds) - MAX_FINDINGS} more kind(s) (--all)")
    if report.input_errors:
        echo(f"{len(report.input_errors)} input object(s) could not be read (listed on stderr).")
    echo("Detail: --pod NAMESPACE/NAME, --node NAME, --all, -o json (every pod and node).")


def _one(report: Diagnosis, pod: str | None, node: str | None) -> None:
    from kubegpu.cli import render

    if pod is not None:
        exp = next((e for e in report.pending if e.pod == pod), None)
        if exp is None:
            # a GPU pod kubelet rejected (Failed) or one another finding names: say where its story is
            about = [f"{f.severity}: {f.title}" for f in report.findings if f"pod/{pod}" in f.objects]
            said = f"; the findings name it: {'; '.join(about)} (`kubegpu diagnose --all`)" if about else ""
            raise click.UsageError(f"{pod} is not a Pending GPU pod of this snapshot{said}")
        render.explanation(exp, every_node=True)  # "in full"
    if node is not None:
        rows = [r for r in report.nodes if r.name == node]
        if not rows:
            raise click.UsageError(f"{node} is not a GPU node of this snapshot")
        row = rows[0]
        click.echo(f"{row.name}: pool {row.pool or '(none)'}, product {row.product or '(unlabelled)'}, "
                   f"{'Ready' if row.ready else 'NotReady'}{', cordoned' if row.unschedulable else ''}")  # fmt: skip
        for t in row.taints:
            click.echo(f"  taint {t}")
        for r, v in row.gpu.items():
            click.echo(f"  {r}: capacity {v['capacity']}, allocatable {v['allocatable']}, "
                       f"requested {v['requested']}, free {v['free']}")  # fmt: skip
        if not row.gpu:
            click.echo("  no GPU resource in status.capacity")
        for h in row.holders:
            click.echo(f"  held by {h}")
        # what is wrong with it; findings alike but for their pod once (400 Pending 8-GPU pods each name
        # every node holding a free GPU: 400 paragraphs of one text), their pods listed
        for kind in finding_kinds(
            (f for f in report.findings if f"node/{node}" in f.objects), same_title=False
        ):
            severity, title = kind.heading()
            f = kind.first
            if len(kind.members) == 1:
                click.echo(f"  {severity}: {title} — {f.detail}")
            else:
                names, more = kind.shown()
                listed = ", ".join(n.removeprefix("pod/") for n in names) + (
                    f", +{more} more (-o json)" if more else ""
                )
                click.echo(f"  {severity}: {title} ({listed}) — {kind.alike()} {f.detail}")
            for command in f.commands:
                click.echo(f"    $ {command}")
        # per reason, the Pending pods it rejects (each pod's evidence for this node)
        rejected: dict[str, list[str]] = {}
        for e in report.pending:
            seen = next((n for n in e.nodes if n.name == node), None)
            if seen is not None:
                rejected.setdefault("; ".join(seen.reasons), []).append(e.pod)
        click.echo(f"  rejects {sum(map(len, rejected.values()))} Pending GPU pod(s)")
        for reason, pods in sorted(rejected.items(), key=lambda kv: -len(kv[1])):
            click.echo(f"    {len(pods)}: {reason}, e.g. {', '.join(pods[:3])}")
