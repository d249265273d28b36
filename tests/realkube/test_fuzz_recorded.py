"""Random clusters the real kube-scheduler decided, kept as a regression net for kubegpu's verdicts.

``golden/fuzz/fuzz-1.37.2-11.jsonl`` was written by ``python -m tests.realkube.fuzz 1.37 16 --seed 11 --mode
score`` on 2026-12-06: 16 generated GPU clusters (2-6 nodes, taints, labels, running pods, one pending pod),
each run through kube-apiserver and kube-scheduler v1.37.2 built from k8s.io/kubernetes (tools/kube/build.py),
with the real verdict (bound node, or the PodScheduled message byte for byte) saved beside the objects. The
check re-reads them with no control plane: kubegpu, rendering 1.37, must still agree on every one (the node
when its best score is unique, else the real node among its best; the message when unschedulable)."""

from __future__ import annotations

from pathlib import Path

from tests.realkube.fuzz import recheck

RECORDED = Path(__file__).resolve().parent / "golden" / "fuzz" / "fuzz-1.37.2-11.jsonl"


def test_recorded_random_clusters_still_agree_with_the_real_1_37_scheduler() -> None:
    records = RECORDED.read_text().splitlines()
    tally = recheck([str(RECORDED)])
    assert sum(tally.values()) == len(records) == 16
    assert not [k for k in tally if k.startswith(("MISMATCH", "DIFF", "ERROR"))], dict(tally)
    assert tally["unsched"] and (tally["bound"] + tally["bound-tie"])  # both kinds of verdict are checked
