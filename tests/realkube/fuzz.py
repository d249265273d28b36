"""Random small GPU clusters through the real kube-scheduler and kubegpu's core: what ``cases.py`` misses.

    python -m tests.realkube.fuzz 1.37 300                      # 300 clusters, seed 1, mode plain
    python -m tests.realkube.fuzz 1.34 150 --seed 5 --mode preempt --out /tmp/fuzz
    python -m tests.realkube.fuzz --recheck /tmp/fuzz/fuzz-1.37.2-1.jsonl  # saved real verdicts, current kubegpu

Each cluster is what GPU users run: 2-6 nodes with 0/1/2/4/8 ``nvidia.com/gpu``, CPU and memory, GPU feature
discovery and GKE labels, GPU / spot / PreferNoSchedule taints, cordons (with the taint, or ``spec.unschedulable``
alone), running pods with GPU and CPU requests and priorities; and one pending pod with GPUs in limits (or requests
and limits), node selectors, required and preferred node affinity (In, NotIn, Exists, DoesNotExist, Gt, Lt),
tolerations, a priority, a host port, sometimes pod (anti-)affinity. Modes: ``plain``; ``heavy`` adds full GPU
nodes, PDBs, init and sidecar GPUs, unschedulable tolerations; ``preempt`` is heavy with few taints, so
preemption decides; ``score`` has several feasible nodes (CPU and memory, preferred affinity, a Service for the
default spread), so scores decide; ``spread`` (``fuzz_spread.py``) has topology spread constraints of every kind
over zones and hostnames, with MIG partitions (``nvidia.com/mig-1g.10gb``, ``-3g.40gb``) beside whole GPUs;
``spread-preempt`` fills GPUs with lower-priority pods the constraints count, so preemption's dry runs decide;
``spread-affinity`` adds pod (anti-)affinity, required or preferred, and preferred anti-affinity among replicas.

Only what is deterministic is compared (as in ``cases.py``): bound or not; the PodScheduled message byte for byte;
the node, which counts as equal when it is among the nodes kubegpu scores highest (kube-scheduler up to 1.34
breaks ties at random, ``selectHost``; from 1.35 the host heap's order, which filter goroutines may reorder,
decides: ``Behaviour.heap_tie_break``); the nominated node. A preemption whose message differs only in the node it names is
reported as ``DIFF-preempt-node``: candidates with equal victims go to whichever ``pickOneNodeForPreemption``
meets first (its last rule; DryRunPreemption starts at a random offset), so read the case before calling it a bug.
Every case goes to ``<out>/fuzz-<release>-<seed>.jsonl`` (``--out``, default ``$TMPDIR/kubegpu-fuzz``) with both
verdicts; mismatches are printed.
"""

from __future__ import annotations

import json
import random
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from kubegpu.model import parse
from kubegpu.model.names import GPU_MEMORY_LABEL, GPU_PRODUCT_LABEL, ZONE_LABEL
from kubegpu.scheduler.framework import CycleState
from kubegpu.scheduler.schedule_one import heap_top
from kubegpu.scheduler.versions import behaviour
from kubegpu.testing.builders import PodBuilder, make_node, make_pod
from tests.conftest import scheduler_for
from tests.realkube.cases import Case
from tests.realkube.conftest import build, controlplane
from tests.realkube.harness import Verdict, run_case
from tests.realkube.verdicts import kubegpu_verdict, minor_of, reproduced

Raw = dict[str, Any]
MODES = ("plain", "heavy", "preempt", "score", "spread", "spread-preempt", "spread-affinity")
ZONE = ZONE_LABEL
POOL = "cloud.google.com/gke-nodepool"
PRODUCT = GPU_PRODUCT_LABEL
GPU_MEMORY = GPU_MEMORY_LABEL  # GPU feature discovery's label, in MiB: what Gt/Lt terms compare
PRODUCTS = {"NVIDIA-A100-SXM4-80GB": "81920", "NVIDIA-H100-80GB-HBM3": "81920", "Tesla-T4": "15360",
            "NVIDIA-L4": "23034"}  # fmt: skip
TAINTS = [
    ("nvidia.com/gpu", "present", "NoSchedule"),
    ("nvidia.com/gpu", "", "NoSchedule"),
    ("nvidia.com/gpu", "present", "NoExecute"),
    ("cloud.google.com/gke-spot", "true", "NoSchedule"),
    ("kubernetes.azure.com/scalesetpriority", "spot", "NoSchedule"),
    ("dedicated", "gpu", "PreferNoSchedule"),
    ("dedicated", "infer", "NoSchedule"),
]
# run_case's namespaces and node prefixes come from the index: past cases.py's, volume_cases.py's, gpu_cases.py's
FIRST_INDEX = 1000


class Generator:
    """Draws clusters for one mode from one seeded RNG (the same seed and mode give the same clusters)."""

    def __init__(self, seed: int, mode: str) -> None:
        self.rng = random.Random(seed)
        self.heavy = mode in ("heavy", "preempt")
        self.preempt = mode == "preempt"
        self.score = mode == "score"

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def node(self, name: str) -> Raw:
        rng = self.rng
        gpus = rng.choice([0, 1, 2, 4, 4, 8, 8])
        b = make_node(name).capacity(cpu=rng.choice(["4", "8", "16", "32", "96"]),
                                     memory=rng.choice(["16Gi", "32Gi", "64Gi", "256Gi"]))  # fmt: skip
        if gpus:
            product = rng.choice(list(PRODUCTS))
            b.gpus(gpus, product=product)
            if self.chance(0.5):
                b.label(GPU_MEMORY, PRODUCTS[product])
        if self.chance(0.8):
            b.label(POOL, rng.choice(["gpu-pool", "cpu-pool", "spot-pool"]))
        if self.chance(0.7):
            b.label(ZONE, rng.choice(["us-central1-a", "us-central1-b", "us-central1-c"]))
        cordon = rng.random() + (0.1 if self.preempt else 0) + (1 if self.score else 0)
        if cordon < 0.12:
            b.cordon()
        few = self.preempt or self.score
        for _ in range(rng.choice([0, 0, 0, 0, 1] if few else [0, 0, 1, 1, 2])):
            key, value, effect = rng.choice(TAINTS)
            taints = b.obj()["spec"].get("taints", [])
            if (self.score and effect != "PreferNoSchedule") or any(
                t["key"] == key and t["effect"] == effect for t in taints
            ):
                continue
            b.taint(key, value, effect)
        raw = b.obj()
        if 0.12 <= cordon < 0.16:  # spec.unschedulable alone: no node lifecycle controller added the taint
            raw["spec"]["unschedulable"] = True
        return raw

    def running(self, name: str, node: Raw, free: dict[str, int]) -> Raw:
        """A pod bound to ``node`` within what ``free`` leaves of its GPUs and CPU (as a kubelet admits)."""
        rng = self.rng
        b = make_pod(name)
        gpus = min(rng.choice([0, 1, 1, 2, 4, 8]), free["gpu"])
        cpu = min(rng.choice([0, 500, 1000, 2000, 4000, 8000]), free["cpu"])
        if self.score and self.chance(0.6):
            b.requests(memory=rng.choice(["512Mi", "2Gi", "8Gi", "20Gi"]))
        if self.heavy and self.chance(0.5):  # the node's GPUs full: what preemption has to free
            gpus = free["gpu"]
        if gpus:
            b.gpu(gpus)
            free["gpu"] -= gpus
        if cpu:
            b.requests(cpu=f"{cpu}m")
            free["cpu"] -= cpu
        if self.chance(0.6):
            b.priority(rng.choice([0, 100, 100, 1000, 10000]))
        if self.chance(0.3):
            b.labels(app=rng.choice(["x", "y"]))
        # one pod per node holds the port: the kubelet refuses a second (pkg/kubelet/lifecycle/predicate.go
        # generalFilter runs the scheduler's AdmissionCheck, nodeports.Fits), and kube-scheduler's HostPortInfo is
        # a set (k8s.io/kube-scheduler framework/types.go Remove, v0.37.2): a preemption dry run that removes one
        # of two holders frees the port, which kubegpu does not reproduce for that unreal state
        if free["port"] and self.chance(0.1):
            b.host_port(8080)
            free["port"] = 0
        return b.on(node["metadata"]["name"]).obj()

    def expression(self, nodes: list[Raw]) -> tuple[str, str, list[str]]:
        rng = self.rng
        op = rng.choice(["In", "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"])
        if op in ("Gt", "Lt"):  # the product name too in heavy modes: a value Gt/Lt cannot parse
            keys = ["nvidia.com/gpu.count", GPU_MEMORY] + ([GPU_MEMORY, PRODUCT] if self.heavy else [])
            return rng.choice(keys), op, [str(rng.choice([0, 1, 2, 4, 8, 16000, 40000, 80000]))]
        key = rng.choice([PRODUCT, POOL, ZONE, "nvidia.com/gpu.present", "missing.example.com/x"])
        if op in ("Exists", "DoesNotExist"):
            return key, op, []
        seen = sorted(
            {n["metadata"]["labels"][key] for n in nodes if key in n["metadata"]["labels"]} | {"other"}
        )
        return key, op, rng.sample(seen, k=min(len(seen), rng.choice([1, 1, 2])))

    def pending(self, nodes: list[Raw]) -> Raw:
        rng = self.rng
        b = make_pod("p")
        gpus = rng.choice([0, 0, 1, 1, 2] if self.score else [1, 1, 2, 2, 4, 8, 0])
        if gpus and self.chance(0.5):
            b.gpu(gpus)
        elif gpus:
            b.requests(gpu=str(gpus)).limits(gpu=str(gpus))
        if self.chance(0.5) or not gpus:
            b.requests(cpu=f"{rng.choice([500, 1000, 4000, 16000, 64000])}m")
        if self.chance(0.3):
            b.requests(memory=rng.choice(["1Gi", "30Gi", "100Gi"]))
        if self.score and self.chance(0.3):
            b.labels(app=rng.choice(["x", "y"]))
        if self.chance(0.05 if self.score else 0.25):
            key = rng.choice([PRODUCT, POOL, ZONE])
            labels = [n["metadata"]["labels"] for n in nodes]
            b.selector(key, rng.choice(sorted({v[key] for v in labels if key in v} | {"nope"})))
        if self.chance(0.05 if self.score else 0.3):
            terms = [[self.expression(nodes) for _ in range(rng.choice([1, 1, 2]))]
                     for _ in range(rng.choice([1, 1, 2]))]  # fmt: skip
            b.require(*terms)
        if self.chance(0.5 if self.score else 0.25):
            b.prefer(rng.choice([1, 50, 100]), [self.expression(nodes)])
        self.tolerations(b, [t for n in nodes for t in n["spec"].get("taints", [])])
        if self.heavy and self.chance(0.1):
            b.init_container("init", {"nvidia.com/gpu": str(rng.choice([1, 2, 8]))})
        if self.heavy and self.chance(0.1):
            b.container("side", requests={"cpu": "1"}, limits={"nvidia.com/gpu": "1"})
        if self.chance(0.7 if self.heavy else 0.4):
            value = rng.choice([100, 1000, 10000])
            if self.chance(0.15):
                b.priority(value, f"p{value}-never").preemption_policy("Never")
            else:
                b.priority(value)
        if self.chance(0.12):
            b.host_port(8080)
        self.pod_affinity(b)
        raw = b.obj()
        if self.heavy and self.chance(
            0.1
        ):  # a NoExecute toleration for a while (DefaultTolerationSeconds' kind)
            raw["spec"].setdefault("tolerations", []).append(
                {
                    "key": "nvidia.com/gpu",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 60,
                }
            )
        return raw

    def tolerations(self, b: PodBuilder, taints: list[Raw]) -> None:
        rng = self.rng
        if self.chance(0.5):
            for _ in range(rng.choice([1, 1, 2])):
                t = rng.choice(taints) if taints else {"key": "nvidia.com/gpu", "effect": "NoSchedule"}
                effect = rng.choice([t["effect"], "", "", "NoSchedule", "NoExecute"])
                kind = rng.random()
                if kind < 0.1:
                    b.tolerate(operator="Exists", effect=rng.choice(["", "NoSchedule"]))
                elif kind < 0.5:
                    b.tolerate(t["key"], operator="Exists", effect=effect)
                else:
                    value = t.get("value", "") if self.chance(0.8) else "wrong"
                    b.tolerate(t["key"], value, effect=effect, operator="Equal")
        if self.heavy and self.chance(0.15):
            b.tolerate(
                "node.kubernetes.io/unschedulable", operator="Exists", effect=rng.choice(["", "NoSchedule"])
            )

    def pod_affinity(self, b: PodBuilder) -> None:
        rng = self.rng
        r = rng.random()
        if r < 0.08:
            b.labels(app="x").pod_affinity(
                rng.choice(["kubernetes.io/hostname", ZONE]), {"app": "x"}, anti=True
            )
        elif r < 0.12:
            b.pod_affinity(rng.choice(["kubernetes.io/hostname", ZONE]), {"app": rng.choice(["x", "y"])})
        elif r < (0.4 if self.score else 0.16):
            b.pod_affinity(rng.choice([ZONE, "kubernetes.io/hostname"]), {"app": rng.choice(["x", "y"])},
                           anti=self.chance(0.5), weight=rng.choice([10, 50, 100]))  # fmt: skip

    def case(self, index: int) -> Case:
        nodes = [self.node(f"n{k}") for k in range(self.rng.randint(2, 6))]
        objects: list[Raw] = list(nodes)
        for node in nodes:
            alloc = node["status"]["allocatable"]
            free = {"gpu": int(alloc.get("nvidia.com/gpu", 0)), "cpu": int(alloc["cpu"]) * 1000, "port": 1}
            for _ in range(self.rng.choice([1, 1, 2, 3] if self.preempt else [0, 0, 1, 1, 2, 3])):
                objects.append(self.running(f"r{len(objects) - len(nodes)}", node, free))
        if self.score and self.chance(0.3):
            # a Service selecting app=x: PodTopologySpread's default constraints spread the app=x pods
            objects.append({"apiVersion": "v1", "kind": "Service",
                            "metadata": {"name": "web", "namespace": "default"},
                            "spec": {"selector": {"app": "x"}, "ports": [{"port": 80}]}})  # fmt: skip
        if self.heavy and self.chance(0.3):
            # app=y pods may not be disrupted (the status the absent disruption controller would write)
            objects.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                            "metadata": {"name": "pdb-y", "namespace": "default"},
                            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "y"}}},
                            "status": {"currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1,
                                       "disruptionsAllowed": 0, "observedGeneration": 1}})  # fmt: skip
        return Case(f"fuzz-{index}", tuple(objects), self.pending(nodes))


def top_nodes(case: Case, version: str) -> set[str]:
    """The feasible nodes kubegpu scores highest, ties included (empty when none is feasible)."""
    return set(_best(case, version)[0])


def _best(case: Case, version: str) -> tuple[list[str], str]:
    """(the feasible nodes kubegpu scores highest in the order found, the one 1.35+'s host heap pops of all the
    feasible nodes: ``schedule_one.heap_top``)."""
    s = scheduler_for(*case.objects, kube_version=minor_of(version))
    pod = parse.parse_pod(case.pod, "case")
    state = CycleState()
    feasible, diagnosis, _ = s.find_nodes_that_fit(state, pod)
    if diagnosis is not None or not len(feasible):
        return [], ""
    names = [s.cluster.nodes[int(i)].name for i in feasible]
    if len(feasible) == 1:
        return names, names[0]
    total, _ = s.framework.run_scores(state, pod, s.cluster, feasible)
    return [names[int(i)] for i in (total == total.max()).nonzero()[0]], names[heap_top(total)]


_PLACEMENT = re.compile(r"on node \S+, preempting")


def compare(case: Case, real: Verdict, version: str) -> tuple[str, Verdict]:
    """(outcome, kubegpu's verdict): ``bound``, ``bound-tie``, ``unsched``, ``preempt`` agree; ``MISMATCH-*``
    do not; ``DIFF-*`` differ where the real scheduler may have broken a tie (``DIFF-tie-order``: 1.35+ took
    another of the best nodes than its host heap's top). A pre-release (1.38.0-beta.0) is
    compared with the newest supported minor's rules, the ones kubegpu renders for it (``verdicts.reproduced``)."""
    version = reproduced(version)
    ours = kubegpu_verdict(case, version)
    if real.scheduled != ours.scheduled:
        return "MISMATCH-scheduled", ours
    if not real.scheduled:
        if real.message != ours.message:
            same = _PLACEMENT.sub("on node N, preempting", real.message) == _PLACEMENT.sub(
                "on node N, preempting", ours.message
            )
            return ("DIFF-preempt-node" if same else "MISMATCH-message"), ours
        if real.nominated != ours.nominated:
            return "DIFF-nominated", ours
        return ("preempt" if real.nominated else "unsched"), ours
    if real.node == ours.node:
        return "bound", ours
    best, heap = _best(case, version)
    if real.node not in best:
        return "MISMATCH-node", ours
    # from 1.35 a tie goes to the host heap's top (Behaviour.heap_tie_break) unless the filter goroutines found
    # the nodes in another order: another of the best is a race, or a score kubegpu ties and upstream does not
    off_heap = behaviour(minor_of(version)).heap_tie_break and real.node != heap
    return ("DIFF-tie-order" if off_heap else "bound-tie"), ours


def run(version: str, count: int, seed: int, mode: str, out: Path) -> Counter[str]:
    gen = _generator(seed, mode)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"fuzz-{version}-{seed}.jsonl"
    cp = controlplane.start(version)
    tally: Counter[str] = Counter()
    started = time.monotonic()
    try:
        with path.open("a") as fh:
            for i in range(count):
                case = gen.case(FIRST_INDEX + i)
                record: Raw = {
                    "seed": seed,
                    "mode": mode,
                    "index": i,
                    "objects": case.objects,
                    "pod": case.pod,
                }
                try:
                    real = _run_with_retry(cp, case, FIRST_INDEX + i)
                    outcome, ours = compare(case, real, version)
                    record.update(real=real.as_dict(), ours=ours.as_dict())
                except (RuntimeError, TimeoutError) as err:
                    outcome = "ERROR"
                    record["error"] = str(err)
                record["outcome"] = outcome
                tally[outcome] += 1
                fh.write(json.dumps(record) + "\n")
                fh.flush()
                if outcome.startswith(("MISMATCH", "DIFF", "ERROR")):
                    print(f"{i} {outcome}: real {record.get('real')} kubegpu {record.get('ours')} "
                          f"{record.get('error', '')}", flush=True)  # fmt: skip
                if i % 20 == 19:
                    print(f"{i + 1} cases, {time.monotonic() - started:.0f} s: {dict(tally)}", flush=True)
    finally:
        cp.stop()
    print(f"Kubernetes {version}, seed {seed}, mode {mode}: {dict(tally)}; cases in {path}")
    return tally


def _generator(seed: int, mode: str) -> Generator:
    if mode.startswith("spread"):  # its own module: fuzz_spread imports this one
        from tests.realkube.fuzz_spread import SpreadGenerator

        return SpreadGenerator(seed, preempt=mode == "spread-preempt", affinity=mode == "spread-affinity")
    return Generator(seed, mode)


def _run_with_retry(cp: Any, case: Case, index: int) -> Verdict:
    """One retry under another namespace: the Priority admission plugin reads PriorityClasses from an informer,
    so a pod created right after its class is now and then refused ("no PriorityClass with name ...")."""
    try:
        return run_case(cp, case, index, timeout=30)
    except RuntimeError:
        time.sleep(2)
        return run_case(cp, case, index + 100_000, timeout=30)


def recheck(paths: list[str]) -> Counter[str]:
    """Compare saved real verdicts with the current kubegpu: after a fix, no control plane needed."""
    tally: Counter[str] = Counter()
    for name in paths:
        version = Path(name).stem.split("-")[1]
        for line in Path(name).read_text().splitlines():
            rec = json.loads(line)
            if "real" not in rec:
                tally["ERROR"] += 1
                continue
            case = Case(f"fuzz-{rec['index']}", tuple(rec["objects"]), rec["pod"])
            outcome, ours = compare(case, Verdict(**rec["real"]), version)
            tally[outcome] += 1
            if outcome.startswith(("MISMATCH", "DIFF")):
                print(f"{name} {rec['index']} {outcome}: real {rec['real']} kubegpu {ours.as_dict()}")
    print(dict(tally))
    return tally


def _option(argv: list[str], name: str, default: str) -> tuple[str, list[str]]:
    if name not in argv:
        return default, argv
    at = argv.index(name)
    if at + 1 >= len(argv):
        raise ValueError(f"{name} needs a value")
    return argv[at + 1], argv[:at] + argv[at + 2 :]


def main(argv: list[str]) -> int:
    """Exit 1 when a case mismatched (DIFF-* cases are left to be read), 2 on bad arguments."""
    try:
        if argv[:1] == ["--recheck"]:
            if len(argv) < 2:
                raise ValueError("--recheck needs the .jsonl files to read")
            tally = recheck(argv[1:])
        else:
            seed, argv = _option(argv, "--seed", "1")
            mode, argv = _option(argv, "--mode", "plain")
            out, argv = _option(argv, "--out", str(Path(tempfile.gettempdir()) / "kubegpu-fuzz"))
            if mode not in MODES or len(argv) != 2 or not argv[1].isdigit() or not seed.isdigit():
                raise ValueError(
                    f"usage: fuzz <minor> <count> [--seed N] [--mode {'|'.join(MODES)}] [--out DIR]"
                )
            tally = run(build.release(argv[0]), int(argv[1]), int(seed), mode, Path(out))
    except (ValueError, OSError) as err:
        print(f"fuzz: {err}", file=sys.stderr)
        return 2
    return 1 if any(k.startswith("MISMATCH") for k in tally) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
