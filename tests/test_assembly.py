"""One assembly: ``kubegpu.scheduler.assembly`` is the only place a scheduler is built.

The scan reads every module under ``src/kubegpu`` (AST, not text: comments and docstrings do not count)
and fails on a call of a scheduler or profile constructor anywhere else, except the places listed in
``ALLOWED`` with the reason each must. The spec tests pin what the assembly builds from a declaration,
against kube-scheduler's default plugin list (``pkg/scheduler/apis/config/v1/default_plugins.go``, 1.34:
DynamicResources sits right before DefaultPreemption) and the FGD artifact's packing scheduler.
"""

from __future__ import annotations

import ast
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kubegpu.errors import ConfigError
from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler.assembly import Engine, SchedulerSpec, assemble, profile
from kubegpu.scheduler.cluster import ClusterState
from kubegpu.scheduler.gpu_ledger import GpuShareLedger
from kubegpu.testing.builders import make_node, make_pod

SRC = Path(__file__).resolve().parents[1] / "src" / "kubegpu"

# Building one of these is building (part of) a scheduler.
CONSTRUCTORS = frozenset(
    {
        "Framework", "Scheduler", "Profile", "in_tree_registry", "default_profile",
        "kubegpu_profile", "profile_named", "packing_profile",
    }
)  # fmt: skip

# module (relative to src/kubegpu) → the constructors it may call, and why
ALLOWED: dict[str, tuple[frozenset[str], str]] = {
    "scheduler/assembly.py": (CONSTRUCTORS, "the assembly itself"),
    "scheduler/registry.py": (
        frozenset({"Profile", "default_profile", "kubegpu_profile"}),
        "defines the profiles: kubegpu's and profile_named build on the default one",
    ),
    "scheduler/kube_config.py": (
        frozenset({"Profile", "default_profile", "in_tree_registry"}),
        "reads a KubeSchedulerConfiguration into a profile on the default one (the registry: its known names)",
    ),
}


def construction_sites(root: Path = SRC) -> list[str]:
    """``module:line name`` for every call of a constructor in ``CONSTRUCTORS`` outside ``ALLOWED``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        module = path.relative_to(root).as_posix()
        allowed = ALLOWED.get(module, (frozenset(), ""))[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = (
                func.id
                if isinstance(func, ast.Name)
                else func.attr
                if isinstance(func, ast.Attribute)
                else ""
            )
            if name in CONSTRUCTORS and name not in allowed:
                found.append(f"{module}:{node.lineno} {name}")
    return found


def test_only_the_assembly_builds_a_scheduler() -> None:
    assert construction_sites() == []


def test_the_scan_finds_a_hand_built_scheduler(tmp_path: Path) -> None:
    """The scan itself can fail: a face that builds its own framework (as ``live/extender.py`` did
    before the assembly) is reported, by attribute call too; a comment or docstring is not."""
    face = tmp_path / "live" / "extender.py"
    face.parent.mkdir()
    face.write_text(
        '"""Framework(profile) in a docstring is not a call."""\n'
        "from kubegpu.scheduler import framework, registry\n"
        "# Scheduler(framework) in a comment is not a call either\n"
        "fw = framework.Framework(registry.default_profile(), registry.in_tree_registry())\n"
    )
    assert construction_sites(tmp_path) == [
        "live/extender.py:4 Framework",
        "live/extender.py:4 default_profile",
        "live/extender.py:4 in_tree_registry",
    ]


def test_default_spec_is_kube_schedulers_default_profile() -> None:
    """1.34's multiPoint list, restricted to what kubegpu models, in upstream's order and weights
    (default_plugins.go): TaintToleration 3, NodeAffinity 2, NodeResourcesFit 1, the four storage filters,
    PodTopologySpread 2, InterPodAffinity 2, DynamicResources (no score in 1.34), BalancedAllocation 1,
    ImageLocality 1."""
    chosen = profile(SchedulerSpec(kube_version="1.34"))
    assert chosen.scheduler_name == "default-scheduler"
    assert [(p.name, p.weight) for p in chosen.plugins] == [
        ("NodeUnschedulable", 0), ("NodeName", 0), ("TaintToleration", 3), ("NodeAffinity", 2),
        ("NodePorts", 0), ("NodeResourcesFit", 1), ("VolumeRestrictions", 0), ("NodeVolumeLimits", 0),
        ("VolumeBinding", 0), ("VolumeZone", 0), ("PodTopologySpread", 2), ("InterPodAffinity", 2),
        ("DynamicResources", 0), ("DefaultPreemption", 0), ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
    ]  # fmt: skip


def test_preemption_replaces_the_post_filter_keeping_its_args() -> None:
    args = {"DefaultPreemption": {"minCandidateNodesAbsolute": 7}}
    chosen = profile(
        SchedulerSpec(
            "default", plugin_args=args, kube_version="1.33", preemption="CheckpointAwarePreemption"
        )
    )
    post = [p for p in chosen.plugins if "Preemption" in p.name]
    assert [(p.name, dict(p.args)) for p in post] == [
        ("CheckpointAwarePreemption", {"minCandidateNodesAbsolute": 7})
    ]
    with pytest.raises(ConfigError, match="unknown preemption plugin 'Evict'"):
        profile(SchedulerSpec(preemption="Evict"))


def test_packing_needs_a_policy_and_a_ledger() -> None:
    """The packing plugins read the GPU-share ledger from the handle: a spec without one is a
    ConfigError naming the plugin, at build time."""
    with pytest.raises(ConfigError, match="needs a placement policy"):
        profile(SchedulerSpec("packing"))
    cluster = ClusterState([])
    with pytest.raises(ConfigError, match="GpuShare: needs a GPU-share ledger"):
        assemble(SchedulerSpec("packing", policy="BestFit"), cluster)
    ledger = GpuShareLedger(cluster, None)
    scheduler = assemble(SchedulerSpec("packing", policy="BestFit"), cluster, sharing=ledger)
    assert scheduler.framework.handle.sharing is ledger
    assert scheduler.framework.profile.scheduler_name == "kubegpu-packing"


def test_engine_takes_the_snapshot_release_pdbs_and_the_spec_clock() -> None:
    """No release in the spec: the snapshot's (its kubelets' newest, 1.32 here: ``versions.choose``),
    so no DynamicResources (default from 1.34); the spec's clock reaches the plugins' handle."""
    node = make_node("a").gpus(1).obj()
    node["status"]["nodeInfo"] = {"kubeletVersion": "v1.32.4"}
    snap = build_snapshot([("t", node), ("t", make_pod("p").gpu(1).obj())])
    at = datetime(2026, 12, 2, 7, 45, tzinfo=UTC)
    engine = Engine(snap, SchedulerSpec("kubegpu", clock=lambda: at))
    assert engine.profile.kube_version == "1.32"
    assert "DynamicResources" not in [p.name for p in engine.profile.plugins]
    assert "GpuDeviceFit" in [p.name for p in engine.profile.plugins]
    assert engine.framework.handle.clock() == at
