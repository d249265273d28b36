"""Random clusters the real kube-scheduler decided, kept as a regression net for kubegpu's verdicts.

``golden/fuzz/fuzz-1.37.2-11.jsonl`` was written by ``python -m tests.realkube.fuzz 1.37 16 --seed 11 --mode
score`` on 2026-12-06: 16 generated GPU clusters (2-6 nodes, taints, labels, running pods, one pending pod),
each run through kube-apiserver and kube-scheduler v1.37.2 built from k8s.io/kubernetes (tools/kube/build.py),
with the real verdict (bound node, or the PodScheduled message byte for byte) saved beside the objects. The
check re-reads them with no control plane: kubegpu, rendering 1.37, must still agree on every one (the node
when its best score is unique, else the real node among its best; the message when unschedulable).

``golden/fuzz/fuzz-1.37.2-spread.jsonl``: 16 clusters of the ``spread`` and ``spread-preempt`` modes
(``fuzz_spread.py``), chosen by outcome on 2026-12-06 from 240 that v1.37.2 decided (``fuzz 1.37 80 --seed 21
--mode spread``, ``100 --seed 22 --mode spread``, ``60 --seed 71 --mode spread-preempt``; seeds 21 and 22 ran
on earlier revisions of the generator, so the objects, not the seeds, are the record): preemptions that free a
topology domain or MIG partitions, PodTopologySpread's two refusals (skew, missing label) with and without
``minDomains``, ``Insufficient nvidia.com/mig-3g.40gb``, ScheduleAnyway over zone and hostname, Honor'd taints,
``matchLabelKeys``, the system default constraints and two random ties."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.realkube.cases import Case
from tests.realkube.fuzz import recheck, top_nodes

FUZZ = Path(__file__).resolve().parent / "golden" / "fuzz"


@pytest.mark.parametrize("name", ["fuzz-1.37.2-11.jsonl", "fuzz-1.37.2-spread.jsonl"])
def test_recorded_random_clusters_still_agree_with_the_real_1_37_scheduler(name: str) -> None:
    recorded = FUZZ / name
    records = recorded.read_text().splitlines()
    tally = recheck([str(recorded)])
    assert sum(tally.values()) == len(records) == 16
    assert not [k for k in tally if k.startswith(("MISMATCH", "DIFF", "ERROR"))], dict(tally)
    assert tally["unsched"] and (tally["bound"] + tally["bound-tie"])  # both kinds of verdict are checked


def test_the_spread_record_holds_preemptions_through_topology_spread() -> None:
    text = (FUZZ / "fuzz-1.37.2-spread.jsonl").read_text()
    tally = recheck([str(FUZZ / "fuzz-1.37.2-spread.jsonl")])
    assert tally["preempt"] >= 3 and tally["bound-tie"] >= 2
    assert "(missing required label)" in text and "Insufficient nvidia.com/mig-3g.40gb" in text


def test_recorded_ties_went_where_the_1_37_host_heap_puts_them() -> None:
    """Where kubegpu scores several nodes highest, the real v1.37.2 took the node ``heap_top`` names over the
    feasible nodes in node-tree order (kubernetes PR #135231: the host is popped off a heap whose tie-breaker
    only extender scores set), which ``tie_break="release"`` reproduces; ``random`` would match by chance."""
    import json

    from kubegpu.model import parse
    from tests.conftest import scheduler_for

    ties = 0
    for name in ("fuzz-1.37.2-11.jsonl", "fuzz-1.37.2-spread.jsonl"):
        for line in (FUZZ / name).read_text().splitlines():
            rec = json.loads(line)
            if not rec["real"]["scheduled"]:
                continue
            case = Case(f"fuzz-{rec['index']}", tuple(rec["objects"]), rec["pod"])
            if len(top_nodes(case, "1.37.2")) < 2:
                continue
            s = scheduler_for(*rec["objects"], kube_version="1.37")
            s.tie_break = "release"
            assert s.schedule_one(parse.parse_pod(rec["pod"], "case")).node == rec["real"]["node"], rec[
                "index"
            ]
            ties += 1
    assert ties >= 3
