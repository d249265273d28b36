"""``kubegpu plan mig``: a MIG re-partition plan for one node (R6.3, R15).

Given the Node (capacity, labels), the pods and a mig-parted config (the file the GPU Operator's MIG
manager applies when the node's ``nvidia.com/mig.config`` label names one of its ``mig-configs``), the plan:

* finds the node's GPU model from GFD's ``nvidia.com/gpu.product`` (the ``-MIG-<profile>`` and ``-SHARED``
  suffixes GFD adds are dropped) and its GPU count from ``nvidia.com/gpu.count``;
* selects, per GPU index, the config entries that apply (``devices``, ``device-filter``) and validates each
  GPU's layout against the MIG catalog (a real placement search, ``kubegpu.devices.mig``);
* computes the new capacity under the node's MIG strategy (``nvidia.com/mig.strategy``; ``mixed``:
  ``nvidia.com/mig-<profile>`` per MIG device and ``nvidia.com/gpu`` per GPU without MIG; ``single``: every
  MIG device is one ``nvidia.com/gpu``, and the plugin refuses mixed profiles; ``none``: one ``nvidia.com/gpu``
  per GPU, MIG devices unused);
* lists the pods that hold GPUs there (re-partitioning destroys every instance on a GPU) and whether the
  new capacity could take them back;
* prints the procedure: record, cordon, move the GPU pods, set ``nvidia.com/mig.config=<name>``, wait for
  the MIG manager's ``nvidia.com/mig.config.state=success``, verify allocatable and run a test pod per
  resource, uncordon; and the rollback (the previous label value, the previous capacity).

``mig_partitioned_node`` is the Node once the MIG manager reports ``success`` — the one implementation
of it, used by the plan's effect (``plan.device_effect``) and by ``kubegpu simulate --mig-layout``.

Pure: the CLI hands in plain model objects; nothing here reads files or the cluster.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from kubegpu.devices.mig import MigCatalog, MigLayoutError, catalog_for, validate_layout
from kubegpu.devices.mig_parted import MigConfigEntry, MigPartedConfig
from kubegpu.devices.node_devices import INVENTORY_ANNOTATION
from kubegpu.errors import ConfigError, InputError
from kubegpu.explain.findings_mig import single_strategy_breach
from kubegpu.explain.kubectl import mutate
from kubegpu.model.names import GPU_COUNT_LABEL as COUNT_LABEL
from kubegpu.model.names import GPU_PRODUCT_LABEL as PRODUCT_LABEL
from kubegpu.model.names import MIG_CAPABLE_LABEL
from kubegpu.model.names import MIG_CONFIG_LABEL as MIG_CONFIG_LABEL
from kubegpu.model.names import MIG_CONFIG_STATE_LABEL as MIG_STATE_LABEL
from kubegpu.model.names import MIG_RESOURCE_PREFIX as _MIG_PREFIX
from kubegpu.model.names import MIG_STRATEGY_LABEL as MIG_STRATEGY_LABEL
from kubegpu.model.names import NVIDIA_GPU as GPU
from kubegpu.model.objects import Node, Pod
from kubegpu.plan.procedure import (
    NodeChange,
    Step,
    affected_pods,
    canary_pod_step,
    capacity_check,
    cordon_step,
    gpu_capacity,
    label_node,
    move_steps,
    record_steps,
    uncordon_step,
)
from kubegpu.plan.verify_pods import TEST_IMAGE

_MIG_COUNT_LABEL = re.compile(r"nvidia\.com/mig-(?:\d+c\.)?\d+g\.\d+gb[^/]*\.count")


@dataclass(frozen=True, slots=True)
class GpuLayout:
    index: int
    mig_enabled: bool
    layout: Mapping[str, int]
    placements: tuple[str, ...]  # "3g.71gb@0:4"


def plan_mig(
    node: Node,
    pods: Sequence[Pod],
    config: MigPartedConfig,
    config_name: str | None = None,
    *,
    operator_namespace: str = "gpu-operator",
    test_namespace: str = "default",
) -> NodeChange:
    """The re-partition plan; ``InputError``/``ConfigError`` (``MigLayoutError``) when it cannot work."""
    name = config_name or _only_config(config)
    entries = config.config(name)
    catalog = _catalog(node)
    count = _gpu_count(node)
    strategy = node.labels.get(MIG_STRATEGY_LABEL, "mixed" if _has_mig_resources(node) else "none")
    gpus: list[GpuLayout] = []
    warnings: list[str] = []
    for index in range(count):
        picked = _selected(config, name, entries, index, catalog, warnings)
        if picked is None:
            gpus.append(_unchanged(node, config, name, index, catalog, warnings))
        else:
            gpus.append(_layout(config, name, picked, index, catalog))
    after = _capacity(gpus, catalog, strategy)
    before = gpu_capacity(node)
    affected = affected_pods(node, pods, after)
    previous = node.labels.get(MIG_CONFIG_LABEL)
    if previous == name:
        warnings.append(f"{MIG_CONFIG_LABEL} is already {name}: the MIG manager sees no change")
    if strategy == "none" and any(g.mig_enabled for g in gpus):
        warnings.append("mig.strategy is none: the device plugin does not advertise MIG devices")
    if node.labels.get("nvidia.com/gpu.replicas", "1") not in ("0", "1"):
        warnings.append("the node is time-sliced too: two sharing modes on one node")
    for p in affected:
        if not p.controller:
            warnings.append(f"{p.namespace}/{p.name} is a bare pod: deleting it loses it")
    ns = operator_namespace
    label_keys = (MIG_CONFIG_LABEL, MIG_STATE_LABEL, MIG_STRATEGY_LABEL)
    steps = (
        record_steps(node, affected, ns, label_keys),
        cordon_step(node, ns),
        move_steps(affected),
        Step(
            f"Point the MIG manager at {name}",
            mutate(ns, label_node(node.name, MIG_CONFIG_LABEL, name)),
            "the MIG manager stops GPU clients, re-partitions (a GPU reset, maybe a reboot) and restarts them",
        ),
        Step(
            f"Wait for {MIG_STATE_LABEL}=success",
            (
                f"kubectl -n {ns} get node {node.name} -L {MIG_CONFIG_LABEL},{MIG_STATE_LABEL} -w",
                f"kubectl -n {ns} logs -l app=nvidia-mig-manager --tail=100",
            ),
            "failed: read the MIG manager log and roll back",
        ),
        capacity_check(node, ns, after),
        canary_pod_step(node, test_namespace, sorted(after), TEST_IMAGE),
        uncordon_step(node, ns),
    )
    restore = mutate(ns, label_node(node.name, MIG_CONFIG_LABEL, previous or None))
    rollback = (
        cordon_step(node, ns),
        Step(f"Restore the previous MIG config ({previous or 'no label'})", restore),
        Step(
            f"Wait for {MIG_STATE_LABEL}=success",
            (f"kubectl -n {ns} get node {node.name} -L {MIG_CONFIG_LABEL},{MIG_STATE_LABEL} -w",),
        ),
        capacity_check(node, ns, before),
        uncordon_step(node, ns),
    )
    summary = (
        f"{node.name}: {count}× {catalog.product}, mig.strategy {strategy}, "
        f"{previous or 'no'} MIG config → {name}"
    )
    return NodeChange(
        kind="mig",
        node=node.name,
        summary=summary,
        capacity_before=before,
        capacity_after=after,
        affected=affected,
        steps=steps,
        rollback=rollback,
        warnings=tuple(warnings),
        details={
            "config": name,
            "product": catalog.product,
            "mig_strategy": strategy,
            "gpus": [
                {
                    "index": g.index,
                    "mig_enabled": g.mig_enabled,
                    "layout": dict(g.layout),
                    "placements": list(g.placements),
                }
                for g in gpus
            ],
        },
    )


def mig_partitioned_node(node: Node, change: NodeChange) -> Node:
    """``node`` after ``change`` (a ``plan_mig`` result): it advertises the new capacity (allocatable the
    same: the MIG manager creates fresh instances), GFD's ``nvidia.com/mig-<profile>.count`` labels follow,
    the MIG manager's labels read ``<config>`` / ``success``, and the node agent's inventory annotation is
    dropped (it describes the old partition)."""
    gpu = {r: n * 1000 for r, n in change.capacity_after.items()}  # whole units → milli

    def scaled(resources: Mapping[str, int]) -> dict[str, int]:
        return {**{r: v for r, v in resources.items() if not r.startswith("nvidia.com/")}, **gpu}

    labels = {k: v for k, v in node.labels.items() if not _MIG_COUNT_LABEL.fullmatch(k)}
    labels.update(
        {f"{r}.count": str(n) for r, n in change.capacity_after.items() if r.startswith(_MIG_PREFIX)}
    )
    labels.update({MIG_CONFIG_LABEL: str(change.details["config"]), MIG_STATE_LABEL: "success"})
    annotations = {k: v for k, v in node.annotations.items() if k != INVENTORY_ANNOTATION}
    return replace(node, capacity=scaled(node.capacity), allocatable=scaled(node.allocatable), labels=labels,
                   annotations=annotations)  # fmt: skip


def _selected(
    config: MigPartedConfig,
    name: str,
    entries: Sequence[MigConfigEntry],
    index: int,
    catalog: MigCatalog,
    warnings: list[str],
) -> MigConfigEntry | None:
    """The entry mig-parted leaves GPU ``index`` with, or None when no entry selects it.

    mig-parted walks the entries in order and applies every one that selects the GPU (assert.go
    ``WalkSelectedMigConfigForEachGPU``; apply/config.go sets each entry's layout), so the last one wins.
    """
    chosen: list[int] = []
    for i, entry in enumerate(entries):
        selection = entry.select(index, catalog)
        warnings.extend(f"GPU {index}: {name}[{i}]: {note}" for note in selection.notes if note)
        if selection.selected:
            chosen.append(i)
    if len(chosen) > 1:
        warnings.append(
            f"GPU {index} is selected by entries {', '.join(map(str, chosen))} of {name}: mig-parted applies "
            f"each in order, so entry {chosen[-1]} is what it keeps"
        )
    return entries[chosen[-1]] if chosen else None


def _layout(
    config: MigPartedConfig, name: str, entry: MigConfigEntry, index: int, catalog: MigCatalog
) -> GpuLayout:
    if not entry.mig_enabled:
        return GpuLayout(index, False, {}, ())
    try:
        placements = validate_layout(catalog, entry.mig_devices)
    except MigLayoutError as exc:
        raise MigLayoutError(exc.reason, f"{config.source or 'config'}: {name}: GPU {index}: {exc}") from None
    layout = {p: n for p, n in entry.mig_devices.items() if n}
    return GpuLayout(index, True, layout, tuple(str(p) for p in placements))


def _unchanged(
    node: Node, config: MigPartedConfig, name: str, index: int, catalog: MigCatalog, warnings: list[str]
) -> GpuLayout:
    """GPU ``index``, which no entry of ``name`` selects, as mig-parted leaves it: as it is now.

    Its current layout is the one the node's current ``nvidia.com/mig.config`` gave it when that config is in
    the same file, a whole GPU when the node advertises no MIG device; otherwise kubegpu cannot tell and says so.
    """
    left = f"GPU {index}: no entry of {name} selects it; mig-parted leaves it as it is"
    previous = node.labels.get(MIG_CONFIG_LABEL)
    if previous and previous != name and previous in config.configs:
        entry = _selected(config, previous, config.configs[previous], index, catalog, [])
        if entry is not None:
            warnings.append(f"{left} (as {previous} made it)")
            return _layout(config, previous, entry, index, catalog)
    if not _has_mig_resources(node):
        warnings.append(f"{left} (a whole GPU: the node advertises no MIG device)")
        return GpuLayout(index, False, {}, ())
    raise InputError(
        f"{left}, but its current MIG layout is unknown to kubegpu: the node advertises MIG devices and its "
        f"{MIG_CONFIG_LABEL} ({previous or 'none'}) is no config of this file that selects GPU {index}",
        source=config.source,
        field=f"mig-configs.{name}",
    )


def _only_config(config: MigPartedConfig) -> str:
    if len(config.configs) != 1:
        raise InputError(
            f"the file has {len(config.configs)} mig-configs; choose one with --config-name "
            f"({', '.join(config.configs)})",
            source=config.source,
            field="mig-configs",
        )
    return next(iter(config.configs))


def _catalog(node: Node) -> MigCatalog:
    product = node.labels.get(PRODUCT_LABEL)
    if not product:
        raise InputError(f"no {PRODUCT_LABEL} label: the GPU model is unknown", obj=f"Node {node.name}")
    return catalog_for(product, mig_capable=node.labels.get(MIG_CAPABLE_LABEL))


def _gpu_count(node: Node) -> int:
    raw = node.labels.get(COUNT_LABEL, "")
    if not raw.isdigit() or int(raw) == 0:
        raise InputError(
            f"{COUNT_LABEL} is {raw!r}: the GPU count is unknown",
            obj=f"Node {node.name}",
            field="metadata.labels",
        )
    return int(raw)


def _has_mig_resources(node: Node) -> bool:
    return any(r.startswith("nvidia.com/mig-") for r in node.capacity)


def _capacity(gpus: Sequence[GpuLayout], catalog: MigCatalog, strategy: str) -> dict[str, int]:
    out: dict[str, int] = {}

    def add(resource: str, n: int) -> None:
        if n:
            out[resource] = out.get(resource, 0) + n

    if strategy == "single":
        breach = single_strategy_breach((g.mig_enabled, [p for p, n in g.layout.items() if n]) for g in gpus)
        if breach:
            raise ConfigError(breach)
    for g in gpus:
        if not g.mig_enabled or strategy == "none":
            add(GPU, 1)
            continue
        for profile, n in g.layout.items():
            add(GPU if strategy == "single" else catalog.profile(profile).resource_name, n)
    return dict(sorted(out.items()))
