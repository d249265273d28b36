"""The openb cluster (Alibaba GPU trace 2023: 1,213 nodes, 6,212 GPUs) as a snapshot, after a simulated day.

Nodes come from ``openb_node_list_gpu_node.csv`` in ../shared (never copied into the repository); a
fixed mix of 1/2/4/8-GPU pods is then placed by kubegpu's own scheduling core (``run_queue``) and the
result written as ``kubegpu schedule --write`` would, so the report sees a realistically fragmented
cluster with some pods still Pending. Deterministic: the same file every time.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from kubegpu.explain.engine import Engine
from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler.loop import run_queue
from kubegpu.snapshot_writer import updated_objects
from kubegpu.testing.builders import make_node, make_pod
from tests.conftest import SHARED

OPENB_NODES = SHARED / "data" / "alibaba-gpu-2023" / "csv" / "openb_node_list_gpu_node.csv"
POOL_LABEL = "accelerator.example.com/pool"
# (GPUs per pod, pods), queued in this order (big jobs first, so few stay Pending): about 70% of the
# cluster's GPUs; then two pods no node can take
POD_MIX = ((8, 200), (4, 200), (2, 300), (1, 1500))
NAMESPACES = ("team-a", "team-b", "team-c", "team-d", "team-e", "team-f", "team-g")


def openb_objects() -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    with OPENB_NODES.open(newline="") as f:
        for row in csv.DictReader(f):
            n = int(row["gpu"])
            node = make_node(row["sn"]).capacity(cpu=row["cpu_milli"] + "m", memory=f"{row['memory_mib']}Mi")
            objects.append(node.gpus(n, product=row["model"]).label(POOL_LABEL, row["model"].lower()).obj())
    i = 0
    for gpus, count in POD_MIX:
        for _ in range(count):
            pod = make_pod(f"job-{i:05d}").ns(NAMESPACES[i % len(NAMESPACES)]).gpu(gpus)
            objects.append(
                pod.requests(cpu="1", memory="4Gi")
                .created(f"2026-01-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z")
                .obj()
            )
            i += 1
    objects.append(make_pod("giant-16").ns("team-a").gpu(16).obj())  # more than any node has
    objects.append(make_pod("a100-job").ns("team-b").gpu(1).selector(POOL_LABEL, "a100").obj())
    return objects


def write_openb_snapshot(directory: Path) -> Path:
    """Simulate and write the snapshot as one JSON ``List``; returns the file."""
    objects = openb_objects()
    snap = build_snapshot([("openb", o) for o in objects], description="openb cluster after simulation")
    engine = Engine(snap)
    outcomes = run_queue(engine.scheduler, snap.pending_pods())
    items = updated_objects(snap, outcomes, [])
    path = directory / "openb.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}), encoding="utf-8")
    return path
