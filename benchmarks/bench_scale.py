"""The main job at production scale: load, diagnose and explain-one-pod on generated clusters.

Cluster shape (as a real GKE GPU fleet looks): nodes of 8 x H100 (GFD labels, ``nvidia.com/gpu: 8``) in
three node pools labelled ``cloud.google.com/gke-nodepool`` (train half, serve and batch a quarter each),
three zones, the batch quarter tainted ``nvidia.com/gpu=present:NoSchedule``; about 4 running GPU pods per node
(1/2/4 GPUs, never more than the node's 8) in ten namespaces ``team-a`` … ``team-j``; and P Pending pods
with a mix of causes: 8 GPUs when no node has 8 free (40%), a pool selector naming a pool that does not
exist (15%), the GPU taint not tolerated on tainted-only pool ``batch`` (15%), more CPU than any node has
(10%), and small pods that fit (20%). With ``--varied`` every Pending pod also asks its own memory, so no two
share an evaluation (the equivalence classes' help gone; the causes the same). With ``--dra`` the GPUs are
served by NVIDIA's DRA driver instead (``resource.k8s.io/v1``, shaped as ``tests/dra/objects.py``): each
node publishes 8 A100 (half 80 GB, half 40 GB) in its ResourceSlice, a running pod holds 6 of them through
an allocated claim, and the Pending pods come from two ResourceClaimTemplates, each with its generated
claim: 4 GPUs of at least 80Gi (no node has them: half the nodes are short of free devices, half have
none that the selector admits) and 2 such GPUs (fit); half the pods of each (every third and fourth) name
a ResourceClaim of their own (``resourceClaimName``) of that spec instead, as a controller that makes one
claim per pod does. With ``--mixed``, a heterogeneous fleet instead
(``mixed_fleet.py``: six GPU instance types in Karpenter pools, MIG, time-slicing, broken nodes, and Pending
pods no two alike). With ``--pinned``, the same fleet's Pending pods are each a workload of its own (its own
namespace, a StatefulSet's, ReplicaSet's or Job's pod or a bare debug pod), asking 1-8 GPUs, a fifth held to
one node by ``kubernetes.io/hostname`` (a pod on a local volume), a twentieth to a node that is gone and a
twentieth by a term on the node's name (``matchFields metadata.name``): no two share an evaluation, and a pod
pinned to one node is refused by every other.

For each size it prints, in one table: the file's ``json.load`` time, kubegpu's load (read + parse +
the scheduling state an ``Engine`` builds), ``diagnose`` wall time and lines of output, ``explain NS/POD``
of one Pending pod, the peak RSS of the diagnose process, and ``diagnose -o json`` (wall time, size of the
output, peak RSS); and the ratios issue 25 sets: load <= 10 x json.load, diagnose <= 2 x load, <= 400 lines,
<= 1 GB. The "CPU:" columns are the same ratios on CPU seconds (user + system of the process), which
hold still when other jobs share the machine and wall times stretch; the last one also counts, beside the
load, the CPU seconds of importing what the load needs (Python start-up and imports are in the diagnose
process's figure, about 0.5 s). Every measured command runs in a fresh process
(``resource.getrusage(RUSAGE_CHILDREN)`` read from a wrapper process per command, so one command's peak
never hides another's).

    python benchmarks/bench_scale.py [--sizes 500,5000] [--pending 100,1000] [--running-per-node 4]
        [--varied | --dra | --mixed | --pinned] [--out /tmp/kubegpu-scale] [--timeout 600] [--repeat 1]
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

POOL_LABEL = "cloud.google.com/gke-nodepool"

ZONES = ("us-central1-a", "us-central1-b", "us-central1-c")
NAMESPACES = tuple(f"team-{c}" for c in "abcdefghij")
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def _node(i: int) -> dict[str, Any]:
    pool = ("batch", "train", "train", "serve")[i % 4]  # batch: a quarter of the nodes, all tainted
    name = f"gke-{pool}-{i:05d}"
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "topology.kubernetes.io/zone": ZONES[(i // 3) % 3],
                "node.kubernetes.io/instance-type": "a3-highgpu-8g",
                POOL_LABEL: pool,
                "cloud.google.com/gke-accelerator": "nvidia-h100-80gb",
                "nvidia.com/gpu.present": "true",
                "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                "nvidia.com/gpu.count": "8",
                "nvidia.com/gpu.memory": "81559",
                "nvidia.com/gpu.family": "hopper",
            },
        },
        "spec": {},
        "status": {
            "capacity": {"cpu": "208", "memory": "1871333228Ki", "pods": "110", "nvidia.com/gpu": "8",
                         "ephemeral-storage": "253869360Ki"},
            "allocatable": {"cpu": "207500m", "memory": "1858237804Ki", "pods": "110", "nvidia.com/gpu": "8",
                            "ephemeral-storage": "114396791822"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }  # fmt: skip
    if pool == "batch":
        node["spec"]["taints"] = [GPU_TAINT]
    return node


def _pod(name: str, ns: str, gpus: int, cpu: str, *, node: str | None = None, **spec: Any) -> dict[str, Any]:
    requests = {"cpu": cpu, "memory": f"{16 * max(gpus, 1)}Gi", "nvidia.com/gpu": str(gpus)}
    return pod_object(name, ns, requests, node, **spec)


def pod_object(
    name: str,
    ns: str,
    requests: dict[str, str],
    node: str | None = None,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A pod of one container asking ``requests`` (its ``nvidia.com/*`` ones also as limits, as extended
    resources must be), Pending, or Running on ``node``."""
    limits = {k: v for k, v in requests.items() if k.startswith("nvidia.com/")}
    meta: dict[str, Any] = {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}",
                            "creationTimestamp": "2026-12-01T10:00:00Z"}  # fmt: skip
    if labels:
        meta["labels"] = labels
    container = {"name": "main", "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                 "resources": {"requests": requests, "limits": limits}}  # fmt: skip
    pod: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod", "metadata": meta,
        "spec": {"containers": [container], "schedulerName": "default-scheduler", **spec},
        "status": {"phase": "Pending"},
    }  # fmt: skip
    if node:
        pod["spec"]["nodeName"] = node
        pod["status"] = {"phase": "Running"}
    return pod


def generate(
    nodes: int, pending: int, per_node: int = 4, seed: int = 0, varied: bool = False
) -> dict[str, Any]:
    """``varied``: every Pending pod asks its own memory (16 Gi per GPU plus j MiB), so no two are alike and
    none shares another's evaluation (``diagnose.equivalence_key``); the causes stay the same."""
    rng = random.Random(seed)
    items = [_node(i) for i in range(nodes)]
    serial = 0
    for node in list(items):
        name = node["metadata"]["name"]
        tainted = bool(node["spec"].get("taints"))
        free = 8
        for _ in range(per_node):
            gpus = min(rng.choice((1, 1, 2, 2, 4)), free)
            if gpus == 0:
                break
            free -= gpus
            ns = NAMESPACES[serial % len(NAMESPACES)]
            extra = {"tolerations": [GPU_TOLERATION]} if tainted else {}
            items.append(_pod(f"run-{serial:06d}", ns, gpus, f"{gpus * 12}", node=name, **extra))
            serial += 1
    for j in range(pending):
        ns = NAMESPACES[j % len(NAMESPACES)]
        kind = j % 20
        pod = _pod
        if varied:
            pod = functools.partial(_varied, j)
        if kind < 8:  # a full node: no node has 8 free GPUs
            items.append(pod(f"train-{j:05d}", ns, 8, "96", nodeSelector={POOL_LABEL: "train"}))
        elif kind < 11:  # a pool that does not exist
            items.append(pod(f"infer-{j:05d}", ns, 1, "8", nodeSelector={POOL_LABEL: "inference"}))
        elif kind < 14:  # the batch pool is tainted and this pod does not tolerate it
            items.append(pod(f"batch-{j:05d}", ns, 2, "16", nodeSelector={POOL_LABEL: "batch"}))
        elif kind < 16:  # more CPU than any node has
            items.append(pod(f"cpu-{j:05d}", ns, 1, "300"))
        else:  # fits somewhere
            items.append(pod(f"small-{j:05d}", ns, 1, "4"))
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}


def generate_dra(nodes: int, pending: int) -> dict[str, Any]:
    """The ``--dra`` cluster (module docstring)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.dra import objects as o

    items: list[dict[str, Any]] = list(o.gpu_classes())
    for i in range(nodes):
        name = f"node-{i:05d}"
        items += o.held_node(name, f"run-{i:05d}-gpu", i % 2 == 0, (f"uid-run-{i:05d}",))
        running = o.pod(f"run-{i:05d}", ("gpu", f"run-{i:05d}-gpu", ""), uid=f"uid-run-{i:05d}")
        running["spec"]["nodeName"] = name
        running["status"] = {"phase": "Running"}
        items.append(running)
    for j in range(pending):
        big = j % 2 == 0
        pod, claim = f"train-{j:05d}", f"train-{j:05d}-gpu-x{j:05d}"
        request = o.request("gpu", count=4 if big else 2, selectors=(o.SELECTOR_80GI,))
        if j % 4 >= 2:  # a claim of its own, by name
            items.append(o.claim(f"train-{j:05d}-gpu", request))
            items.append(o.pod(pod, ("gpu", f"train-{j:05d}-gpu", "")))
            continue
        items += o.generated(
            pod, request, template="four-a100-80" if big else "two-a100-80", claim_name=claim
        )
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}


def generate_pinned(nodes: int, pending: int, per_node: int = 4, seed: int = 0) -> dict[str, Any]:
    """The ``--pinned`` cluster (module docstring)."""
    data = generate(nodes, 0, per_node, seed)
    names = [o["metadata"]["name"] for o in data["items"] if o["kind"] == "Node"]
    for j in range(pending):
        ns, gpus = f"proj-{j:04d}", 1 + j % 8
        kind = ("StatefulSet", "ReplicaSet", "Job", "")[j % 4]
        name = {
            "StatefulSet": f"db-{j}-0",
            "ReplicaSet": f"app-{j}-5c9d8f7b6-x{j:04x}",
            "Job": f"job-{j}-x{j:04x}",
        }
        spec: dict[str, Any] = {"tolerations": [GPU_TOLERATION]} if j % 3 == 0 else {}
        if j % 5 == 0:
            spec["nodeSelector"] = {"kubernetes.io/hostname": names[j * 7919 % len(names)]}
        elif j % 20 == 1:
            spec["nodeSelector"] = {"kubernetes.io/hostname": f"gke-train-gone-{j:05d}"}
        elif j % 20 == 2:
            term = {
                "matchFields": [{"key": "metadata.name", "operator": "In", "values": [names[j % len(names)]]}]
            }
            spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [term]}}}  # fmt: skip
        pod = _pod(name.get(kind, f"debug-{j}"), ns, gpus, str(4 + 12 * (j % 8)), **spec)
        if kind:
            owner = name[kind].rsplit("-", 1)[0] if kind != "StatefulSet" else f"db-{j}"
            pod["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1" if kind == "Job" else "apps/v1",
                                                   "kind": kind, "name": owner, "uid": f"uid-{ns}-{owner}",
                                                   "controller": True}]  # fmt: skip
        data["items"].append(pod)
    return data


def _varied(j: int, name: str, ns: str, gpus: int, cpu: str, **spec: Any) -> dict[str, Any]:
    """``_pod`` with memory 16 Gi per GPU plus ``j`` MiB: a request no other Pending pod has."""
    pod = _pod(name, ns, gpus, cpu, **spec)
    pod["spec"]["containers"][0]["resources"]["requests"]["memory"] = f"{16 * 1024 * max(gpus, 1) + j}Mi"
    return pod


# One measured command per process: the wrapper runs it, then prints wall seconds, peak RSS of the child
# (ru_maxrss is KiB on Linux), the number of stdout lines and bytes. stdout is read in chunks and counted,
# never kept: ``diagnose -o json`` at 5,000 nodes writes 1.7 GB.
_WRAPPER = """
import resource, subprocess, sys, time, json
t = time.perf_counter()
p = subprocess.Popen(sys.argv[2:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
lines = size = 0
while chunk := p.stdout.read(1 << 20):
    lines += chunk.count(b"\\n")
    size += len(chunk)
    if time.perf_counter() - t > float(sys.argv[1]):
        p.kill()
        sys.exit(1)
rc = p.wait()
wall = time.perf_counter() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": rc, "wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "lines": lines, "bytes": size,
                  "rss_mb": ru.ru_maxrss / 1024}))
"""

_LOAD = """
import json, sys, time
from pathlib import Path
t, c = time.perf_counter(), time.process_time()
with open(sys.argv[1], "rb") as f:
    json.load(f)
j, jc = time.perf_counter() - t, time.process_time() - c
c = time.process_time()
from kubegpu import sources
from kubegpu.explain.engine import Engine
ic = time.process_time() - c
t, c = time.perf_counter(), time.process_time()
snap = sources.load_files(Path(sys.argv[1]))
Engine(snap)
print(json.dumps({"json": j, "load": time.perf_counter() - t, "json_cpu": jc, "load_cpu": time.process_time() - c,
                  "import_cpu": ic}))
"""


def measure(argv: list[str], timeout: float) -> dict[str, Any]:
    try:
        out = subprocess.run(
            [sys.executable, "-c", _WRAPPER, str(timeout), *argv], capture_output=True, text=True, check=True
        ).stdout
    except subprocess.CalledProcessError as exc:  # the wrapper's own timeout
        return {"rc": "timeout", "wall": timeout, "lines": None, "rss_mb": None, "err": exc.stderr[-200:]}
    result: dict[str, Any] = json.loads(out)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="500,5000", help="node counts, comma separated")
    ap.add_argument(
        "--pending", default="100,1000", help="Pending pods per size (one value, or one per size)"
    )
    ap.add_argument("--running-per-node", type=int, default=4)
    ap.add_argument(
        "--varied", action="store_true",
        help="every Pending pod asks its own memory: no two share an evaluation (the same causes)",
    )  # fmt: skip
    ap.add_argument(
        "--dra", action="store_true", help="GPUs served by NVIDIA's DRA driver (module docstring)"
    )
    ap.add_argument(
        "--mixed", action="store_true",
        help="a heterogeneous fleet: six GPU instance types, MIG, time-slicing, broken nodes (mixed_fleet.py)",
    )  # fmt: skip
    ap.add_argument(
        "--pinned", action="store_true",
        help="Pending pods each a workload of its own, a fifth pinned to one node by hostname (module docstring)",
    )  # fmt: skip
    ap.add_argument("--out", type=Path, default=Path("/tmp/kubegpu-scale"))
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds before a command is given up on")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--repeat", type=int, default=1,
        help="measure the load and the table diagnose this many times, alternating, and report the medians "
        "(on a shared machine one pair of runs can be off by a third)",
    )  # fmt: skip
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    pendings = [int(s) for s in args.pending.split(",")]
    pendings = pendings if len(pendings) == len(sizes) else pendings[:1] * len(sizes)
    args.out.mkdir(parents=True, exist_ok=True)
    kubegpu = [sys.executable, "-m", "kubegpu"]
    rows = []
    for nodes, pending in zip(sizes, pendings, strict=True):
        kind = next((f"-{k}" for k in ("dra", "mixed", "pinned", "varied") if getattr(args, k)), "")
        path = args.out / f"cluster-{nodes}-{pending}{kind}.json"
        if not path.exists():
            if args.dra:
                data = generate_dra(nodes, pending)
            elif args.mixed:
                from mixed_fleet import generate_mixed  # (this folder: run as a script)

                data = generate_mixed(nodes, pending, args.seed)
            elif args.pinned:
                data = generate_pinned(nodes, pending, args.running_per_node, args.seed)
            else:
                data = generate(nodes, pending, args.running_per_node, args.seed, args.varied)
            path.write_text(json.dumps(data))
        data = json.loads(path.read_text())
        running = sum(1 for o in data["items"] if o["kind"] == "Pod" and o["spec"].get("nodeName"))
        probe = next((o for o in data["items"] if o["kind"] == "Pod" and not o["spec"].get("nodeName")), None)
        del data
        loads, diags = [], []
        for _ in range(max(args.repeat, 1)):  # alternating, so both see the same machine
            loads.append(json.loads(
                subprocess.run(
                    [sys.executable, "-c", _LOAD, str(path)], capture_output=True, text=True, check=True
                ).stdout
            ))  # fmt: skip
            diags.append(measure([*kubegpu, "diagnose", "--snapshot", str(path)], args.timeout))
        load, diag = _median(loads), _median(diags)
        as_json = measure([*kubegpu, "diagnose", "--snapshot", str(path), "-o", "json"], args.timeout)
        one = (
            measure(
                [*kubegpu, "explain", f"{probe['metadata']['namespace']}/{probe['metadata']['name']}",
                 "--snapshot", str(path)],
                args.timeout,
            )
            if probe
            else None
        )  # fmt: skip
        rows.append((nodes, running, pending, load, diag, one, as_json))
        _print(rows)


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each numeric field's median over ``runs`` (the first run's value for the others)."""
    out = dict(runs[0])
    for k, v in runs[0].items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            values = [r[k] for r in runs if isinstance(r.get(k), (int, float))]
            out[k] = statistics.median(values)
    return out


def _fmt(v: Any, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def _print(
    rows: list[tuple[int, int, int, dict[str, Any], dict[str, Any], dict[str, Any] | None, dict[str, Any]]],
) -> None:
    head = ("nodes", "running", "pending", "json.load s", "load s", "load/json", "diagnose s", "diag/load",
            "lines", "explain-one s", "peak RSS MB", "-o json s", "-o json MB out", "-o json peak RSS MB",
            "CPU: load/json", "CPU: diag/load", "CPU: diag/(imports + load)")  # fmt: skip
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for nodes, running, pending, load, diag, one, as_json in rows:
        timed_out = diag["rc"] == "timeout"
        json_out = as_json["rc"] == "timeout"
        cells = (
            f"{nodes:,}", f"{running:,}", f"{pending:,}", f"{load['json']:.2f}", f"{load['load']:.2f}",
            f"{load['load'] / load['json']:.1f}x",
            (">" if timed_out else "") + f"{diag['wall']:.1f}",
            (">" if timed_out else "") + f"{diag['wall'] / load['load']:.1f}x",
            _fmt(diag["lines"], ","), "-" if one is None else f"{one['wall']:.1f}", _fmt(diag["rss_mb"], ".0f"),
            (">" if json_out else "") + f"{as_json['wall']:.1f}",
            "-" if as_json.get("bytes") is None else f"{as_json['bytes'] / 1e6:,.0f}",
            _fmt(as_json["rss_mb"], ".0f"),
            f"{load['load_cpu'] / load['json_cpu']:.1f}x",
            "-" if diag.get("cpu") is None else f"{diag['cpu'] / load['load_cpu']:.2f}x",
            # the diagnose process imports what the load needs too: a load in a fresh process pays that
            "-" if diag.get("cpu") is None else f"{diag['cpu'] / (load['load_cpu'] + load['import_cpu']):.2f}x",
        )  # fmt: skip
        print("| " + " | ".join(cells) + " |")
    sys.stdout.flush()


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"(total {time.perf_counter() - t0:.0f} s)", file=sys.stderr)
