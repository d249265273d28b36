"""Node changes ``kubegpu simulate`` applies to its 'after' cluster: a pool relabel and a MIG layout.

- ``Relabel``: every node labelled ``K=V`` gets (or, with ``KEY-``, loses) a label, as ``kubectl label``
  would; running pods stay where they are (node affinity is IgnoredDuringExecution).
- ``MigLayout``: every node labelled ``K=V`` re-partitioned to a mig-parted config exactly as
  ``kubegpu plan mig`` plans it (``plan.mig.plan_mig``: layout validated against the MIG catalog, new
  capacity under the node's MIG strategy) and the node left as ``plan.mig.mig_partitioned_node`` says
  (the same node the plan's effect schedules on). The pods holding its GPUs move off first, as the
  plan's procedure moves them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from kubegpu.devices.mig_parted import MigPartedConfig, load_mig_parted_config
from kubegpu.errors import ConfigError
from kubegpu.model.objects import Node, Pod
from kubegpu.plan.mig import mig_partitioned_node, plan_mig


@dataclass(frozen=True)
class Relabel:
    """Nodes labelled ``selector_key=selector_value`` get ``key=value`` (``value`` None: the label removed)."""

    selector_key: str
    selector_value: str
    key: str
    value: str | None

    def __str__(self) -> str:
        label = f"{self.key}-" if self.value is None else f"{self.key}={self.value}"
        return f"{self.selector_key}={self.selector_value} nodes: {label}"


def parse_relabel(text: str) -> Relabel:
    """``SELECTOR_KEY=VALUE:KEY=VALUE`` or ``SELECTOR_KEY=VALUE:KEY-`` (label keys and values hold no ':')."""
    selector, _, label = text.partition(":")
    sel_key, eq, sel_value = selector.partition("=")
    key, assign, given = label.partition("=")
    value: str | None = given
    if not assign and key.endswith("-"):
        key, value = key[:-1], None  # KEY-: remove
    elif not assign:
        key = ""
    if not eq or not sel_key or not key:
        raise ConfigError(f"--relabel takes SELECTOR_KEY=VALUE:KEY=VALUE or ...:KEY-, got {text!r}")
    return Relabel(sel_key, sel_value, key, value)


@dataclass(frozen=True)
class MigLayout:
    """Nodes labelled ``selector_key=selector_value`` re-partitioned to mig-parted config ``name``."""

    selector_key: str
    selector_value: str
    config: MigPartedConfig
    name: str | None

    def __str__(self) -> str:
        return f"{self.selector_key}={self.selector_value} nodes: MIG {self.name}"


def parse_mig_layout(text: str) -> MigLayout:
    """``SELECTOR_KEY=VALUE:FILE[:CONFIG]``: FILE is a mig-parted config (``version: v1``, ``mig-configs``);
    CONFIG names one of its entries (needed when it has several)."""
    selector, _, rest = text.partition(":")
    sel_key, eq, sel_value = selector.partition("=")
    path, _, name = rest.partition(":")
    if not eq or not sel_key or not path:
        raise ConfigError(f"--mig-layout takes SELECTOR_KEY=VALUE:FILE[:CONFIG], got {text!r}")
    config = load_mig_parted_config(Path(path))
    only = next(iter(config.configs)) if len(config.configs) == 1 else None  # else plan_mig asks for one
    return MigLayout(sel_key, sel_value, config, name or only)


def mig_partitioned(
    nodes: Sequence[Node], bound: Sequence[Pod], layouts: Sequence[MigLayout]
) -> tuple[list[Node], list[Pod], list[Pod]]:
    """The nodes after the re-partitions, the pods still bound, and the pods moved off (unbound)."""
    out, kept, moved = list(nodes), list(bound), []
    for layout in layouts:
        hit = [i for i, n in enumerate(out) if n.labels.get(layout.selector_key) == layout.selector_value]
        if not hit:
            raise ConfigError(
                f"--mig-layout: no node has label {layout.selector_key}={layout.selector_value}"
            )
        for i in hit:
            node = out[i]
            on_node = [p for p in kept if p.node_name == node.name]
            change = plan_mig(node, on_node, layout.config, layout.name)
            out[i] = mig_partitioned_node(node, change)
            leaving = {(a.namespace, a.name) for a in change.affected}
            moved += [replace(p, node_name="") for p in on_node if (p.namespace, p.name) in leaving]
            kept = [p for p in kept if p.node_name != node.name or (p.namespace, p.name) not in leaving]
    return out, kept, moved


def relabeled(nodes: Sequence[Node], changes: Sequence[Relabel]) -> list[Node]:
    out = list(nodes)
    for c in changes:
        hit = [i for i, n in enumerate(out) if n.labels.get(c.selector_key) == c.selector_value]
        if not hit:
            raise ConfigError(f"--relabel: no node has label {c.selector_key}={c.selector_value}")
        for i in hit:
            labels = {k: v for k, v in out[i].labels.items() if k != c.key}
            if c.value is not None:
                labels[c.key] = c.value
            out[i] = replace(out[i], labels=labels)
    return out
