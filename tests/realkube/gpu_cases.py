"""GPU scheduling cases read from public reports (``tests/fixtures/kube_gpu/*.yaml``), run through kubegpu's core and
the real kube-scheduler like ``cases.py``; the real verdicts are in ``golden/gpu/<release>.json`` (written by
``python -m tests.realkube.record_goldens --gpu <version>``).

Each fixture is the cluster as ``kubectl get -o yaml`` would show it (nodes with their status, running pods with
``spec.nodeName``, storage objects, PodDisruptionBudgets with the status the disruption controller writes) and one
pod without ``spec.nodeName``: the pod under test. Its header cites the report the objects come from and says what
was filled in.
"""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from tests.realkube.cases import Case

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kube_gpu"


def load(path: Path) -> Case:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    pending = [d for d in docs if d["kind"] == "Pod" and not d["spec"].get("nodeName")]
    if len(pending) != 1:
        raise ValueError(f"{path.name}: {len(pending)} pods without spec.nodeName, want the one under test")
    objects = tuple(d for d in docs if d is not pending[0])
    # the API server's spec.resources (pod-level) exists from 1.32 only: the case applies everywhere, the field is
    # dropped where it is not served, as the real API server does
    return Case(path.stem, objects, pending[0], about=_first_line(path))


def _first_line(path: Path) -> str:
    return path.read_text().splitlines()[0].lstrip("# ")


def _cases() -> list[Case]:
    return [load(p) for p in sorted(FIXTURES.glob("*.yaml"))]


GPU_CASES: list[Case] = _cases()
# run_case's namespace and node prefix come from a case's index: these start past cases.py's and
# volume_cases.py's, so a namespace still being deleted by an earlier case of the session is never reused
GPU_INDEX = 200


def with_full_gpu(objects: tuple[dict, ...], node: str) -> tuple[dict, ...]:  # type: ignore[type-arg]
    """``objects`` with ``node`` given one nvidia.com/gpu that a running pod holds: a node with the GPU resource
    that still cannot take the pod (the variant where the advice for GPU-less nodes must not apply)."""
    out = copy.deepcopy(objects)
    found = next(o for o in out if o["kind"] == "Node" and o["metadata"]["name"] == node)
    for part in ("capacity", "allocatable"):
        found["status"][part]["nvidia.com/gpu"] = "1"
    hog = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "hog", "namespace": "other"},
           "spec": {"nodeName": node, "containers": [{"name": "c", "image": "registry.example.com/app:1",
                    "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}  # fmt: skip
    return (*out, hog)
