"""Findings about one pod each, alike but for the pod they name (the Pending pods whose free GPUs are scattered,
the pods a node's runtime or driver fails, those kubelet rejected or cannot prepare DRA claims for): one kind in
every grouped view, known by what made them (``Finding.check``, ``subject``, ``many``), never by finding the
pod's name inside the title's text.

The cases are tests/realcases' (each fixture cites its public thread); the second pod below is the same Job's
second pod on the same node, as NVIDIA/gpu-operator#416 posted it ("I end up with containers that don't start",
the toolkit hook's "nvml error: driver not loaded", NVIDIA/nvidia-container-toolkit#1269).
"""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubegpu.cli import render
from kubegpu.explain.diagnose import diagnose
from kubegpu.explain.engine import Engine
from kubegpu.explain.finding_kinds import finding_kinds
from kubegpu.explain.findings_base import Finding
from kubegpu.explain.findings_bound import BOUND
from kubegpu.explain.inspect import Inspection
from kubegpu.model.snapshot import build_snapshot
from kubegpu.sources import load_files

CASES = Path(__file__).parent / "realcases"


def _findings(path: Path) -> list[Finding]:
    snap = load_files(path)
    assert not snap.errors, [e.one_line() for e in snap.errors]
    return diagnose(Engine(snap)).findings


@pytest.mark.parametrize("name", sorted(p.stem for p in CASES.glob("*.yaml")))
def test_a_finding_whose_title_names_its_pod_carries_the_pod_as_its_subject(name: str) -> None:
    """Every finding whose title names one of the pods it is about says so in its identity: the pod as its
    subject, the check that made it, and how several such findings read (``many``, which names no pod)."""
    for f in _findings(CASES / f"{name}.yaml"):
        pods = [o.removeprefix("pod/") for o in f.objects if o.startswith("pod/")]
        named = [p for p in pods if p in f.title]
        if named:
            assert (f.subject, bool(f.check), bool(f.many)) == (f"pod/{named[0]}", True, True), f.title
            assert named[0] not in f.many, f.many


def _two_pods(name: str, pod: str) -> list[Finding]:
    """The fixture ``name`` with its pod ``pod`` there twice (a second pod of its controller, its events too)."""
    raw = yaml.safe_load((CASES / f"{name}.yaml").read_text(encoding="utf-8"))
    items: list[dict[str, Any]] = raw["items"]
    twins = []
    for item in items:
        about = (
            item["metadata"]["name"] if item["kind"] == "Pod" else item.get("involvedObject", {}).get("name")
        )
        if about == pod:
            twin = copy.deepcopy(item)
            (twin["metadata"] if item["kind"] == "Pod" else twin["involvedObject"])["name"] = f"{pod}-2"
            twin["metadata"]["name"] += "-2" if item["kind"] != "Pod" else ""
            twins.append(twin)
    snap = build_snapshot([(f"{name}.yaml", o) for o in items + twins])
    return diagnose(Engine(snap)).findings


def test_pods_a_node_fails_alike_are_one_kind_whatever_their_titles_say() -> None:
    """Two pods of one Job on the node whose driver is not loaded: one kind naming both, in the one-line list
    and in the views that show a kind's detail; a title worded apart for one of them (its text is for people)
    does not split the kind, and a title shared with a finding of another check does not join it."""
    found = [f for f in _two_pods("nvml-driver-not-loaded", "train-7-abcde") if f.check == BOUND]
    pods = ["pod/research/train-7-abcde", "pod/research/train-7-abcde-2"]
    assert [f.objects[0] for f in found] == pods
    for same_title in (True, False):
        kinds = finding_kinds(found, same_title=same_title)
        assert [k.named for k in kinds] == [pods]
        reworded = [found[0], replace(found[1], title=found[1].title + " (second replica)")]
        assert [k.named for k in finding_kinds(reworded, same_title=same_title)] == [pods]
        other = replace(found[0], check="another-check")  # same title, another check: its own kind
        assert len(finding_kinds([*found, other], same_title=same_title)) == 2


def test_a_kind_of_pods_a_node_fails_reads_as_a_sentence() -> None:
    """Its heading counts the pods and says what each one does, without a pod's name and without "GPU pod the
    pod" (the title's wording with the pod's name swapped for "the pod")."""
    found = [f for f in _two_pods("nvml-driver-not-loaded", "train-7-abcde") if f.check == BOUND]
    kind = finding_kinds(found)[0]
    assert len(kind.named) == 2
    _, title = kind.heading()
    assert "train-7" not in title and "pod the pod" not in title, title


def test_a_kind_of_one_pod_with_several_findings_says_how_many_it_stands_for() -> None:
    """Two findings of one check about the one pod of nvml-driver-not-loaded (NVIDIA/gpu-operator#416), the second
    worded apart: one kind, which names its one pod like any finding's kind (no "N pods" heading), so past
    ``INSPECT_PANELS`` kinds inspect's panel for it says that it stands for 2 findings, as a title's kind does
    (failed before: the kind kept ``pods`` and printed no count); "of this kind", the two titles being apart."""
    found = [f for f in _findings(CASES / "nvml-driver-not-loaded.yaml") if f.check == BOUND][:1]
    assert found and found[0].subject == "pod/research/train-7-abcde"
    twice = [found[0], replace(found[0], title=found[0].title + " (second container)")]
    (kind,) = finding_kinds(twice, same_title=True)
    assert kind.named == ["pod/research/train-7-abcde"] and len(kind.members) == 2
    assert kind.heading() == (found[0].severity, found[0].title)
    # other findings, one title each, so that inspect groups its panels by kind
    others = [
        replace(found[0], title=f"other finding {i}", objects=[f"node/n{i}"], check="", subject="", many="")
        for i in range(render.INSPECT_PANELS)
    ]
    with render.console.capture() as out:
        render.inspection(Inspection([*twice, *others]))
    assert "2 findings of this kind; the first one's detail" in out.get()
