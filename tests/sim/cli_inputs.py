"""Inputs and output readers for the tests that run ``kubegpu simulate`` and ``kubegpu bench`` through the CLI:
Kubernetes objects as dicts (nodes with ``nvidia.com/gpu``, pods of one GPU, GpuQueues, PodGroups), their YAML
file, the printed before/after table, and a tiny openb-shaped data folder (shared by ``test_simulate_batch.py``,
``test_claim_release.py``, ``test_cli_sim.py``, ``test_gpu_count_annotation.py`` and the report's page test)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from kubegpu.cli.sim_cmd import simulate


def node(name: str, gpus: int = 1) -> dict[str, Any]:
    res = {"cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"allocatable": res, "capacity": res}}  # fmt: skip


def pod(
    name: str, arrive: float, run: float, queue: str = "", group: str = "", checkpoint: int | None = None
) -> dict[str, Any]:
    labels = {**({"kubegpu.io/queue": queue} if queue else {}), **({"scheduling.x-k8s.io/pod-group": group} if group else {})}  # fmt: skip
    annotations = {"kubegpu.io/sim-arrival-seconds": str(arrive), "kubegpu.io/sim-duration-seconds": str(run)}
    if checkpoint is not None:
        annotations["kubegpu.io/checkpoint-interval-seconds"] = str(checkpoint)
    gpu = {"nvidia.com/gpu": "1"}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml", "labels": labels, "annotations": annotations},
        "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": gpu, "limits": gpu}}]},
    }  # fmt: skip


def queue(name: str, gpus: int, cohort: str = "org") -> dict[str, Any]:
    spec = {"cohort": cohort, "nominalQuota": {"nvidia.com/gpu": str(gpus)}}
    return {"apiVersion": "kubegpu.io/v1alpha1", "kind": "GpuQueue", "metadata": {"name": name}, "spec": spec}


def pod_group(name: str, min_member: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ml"}, "spec": {"minMember": min_member},
    }  # fmt: skip


def write(path: Path, *objects: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump_all(objects), encoding="utf-8")
    return str(path)


def table(output: str) -> dict[str, list[str]]:
    """The printed before/after table: metric → values (rich's box characters split the cells)."""
    rows = {}
    for line in output.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃]", line)[1:-1]]
        if len(cells) >= 2 and cells[0]:
            rows[cells[0]] = cells[1:]
    return rows


def simulate_table(*args: str) -> tuple[str, dict[str, list[str]]]:
    result = CliRunner().invoke(simulate, list(args), env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    return result.output, table(result.output)


NODES = "sn,cpu_milli,memory_mib,gpu,model\n" + "".join(
    f"openb-node-{i:02d},32000,131072,{g},{m}\n"
    for i, (g, m) in enumerate([(8, "G2"), (4, "T4"), (2, "P100")] * 4)
)
HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"


def data_folder(tmp_path: Path) -> Path:
    """A ``--data`` folder: the openb node list (12 nodes of 8 G2, 4 T4 or 2 P100 GPUs) and trace ``tiny``."""
    csv_dir = tmp_path / "data" / "csv"
    csv_dir.mkdir(parents=True)
    (csv_dir / "openb_node_list_gpu_node.csv").write_text(NODES)
    shapes = [(1, 500), (1, 1000), (0, 0), (2, 1000), (1, 300)]
    rows = "".join(
        f"openb-pod-{i:03d},{2000 + 500 * (i % 3)},4096,{g},{m},,LS,Running,{10 * i},{10 * i + 35},{10 * i}\n"
        for i, (g, m) in enumerate(shapes[i % 5] for i in range(24))
    )
    (csv_dir / "openb_pod_list_tiny.csv").write_text(HEADER + rows)
    return tmp_path / "data"
