"""Queue and gang admission in ``kubegpu scheduler`` end to end, against the emulated API server.

N nodes x 8 GPUs (default 250), Q GpuQueues in one GpuCohort (default 4, each with a nominal quota of an
equal share of the cluster's GPUs), and G coscheduling gangs (default 250) of M one-GPU member pods
(default 4, ``minMember`` M) spread over the queues round-robin, all pending, are created in the emulator
(tests/live/apiserver.py: kmock over real HTTP on 127.0.0.1, the CRDs served); then a ``kubegpu
scheduler`` process (no leader election) is started. Reported: pods bound per second from the first
binding to the last, and from process start; and, for comparison, the same number of plain one-GPU pods
(no queue, no group: the per-pod path) on the same nodes in a fresh emulator.

    python benchmarks/bench_live_batch.py [--nodes 250] [--queues 4] [--gangs 250] [--members 4]

Prints one JSON object. The emulator shares this machine's cores with the scheduler.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_live import time_bindings  # noqa: E402
from tests.live.apiserver import ApiServerEmulator  # noqa: E402
from tests.live.conftest import gpu_node, gpu_pod  # noqa: E402

COSCHEDULING = "podgroups.scheduling.x-k8s.io"
QUEUES = "gpuqueues.kubegpu.io"
COHORTS = "gpucohorts.kubegpu.io"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=250)
    parser.add_argument("--queues", type=int, default=4)
    parser.add_argument("--gangs", type=int, default=250)
    parser.add_argument("--members", type=int, default=4)
    args = parser.parse_args()
    share = args.nodes * 8 // args.queues

    def nodes(emulator: ApiServerEmulator) -> None:
        for i in range(args.nodes):
            emulator.create("nodes", gpu_node(f"gpu-{i:04d}"))

    def gangs(emulator: ApiServerEmulator) -> int:
        nodes(emulator)
        for key in (QUEUES, COHORTS, COSCHEDULING):
            emulator.install_crd(key)
        emulator.create(COHORTS, {"metadata": {"name": "org"}, "spec": {}})
        for q in range(args.queues):
            spec = {"cohort": "org", "nominalQuota": {"nvidia.com/gpu": str(share)}}
            emulator.create(QUEUES, {"metadata": {"name": f"team-{q}"}, "spec": spec})
        for g in range(args.gangs):
            name = f"job-{g:04d}"
            spec = {"minMember": args.members}
            emulator.create(COSCHEDULING, {"metadata": {"name": name, "namespace": "ml"}, "spec": spec})
            labels = {"scheduling.x-k8s.io/pod-group": name, "kubegpu.io/queue": f"team-{g % args.queues}"}
            for m in range(args.members):
                emulator.create("pods", gpu_pod(f"{name}-{m}", 1, labels=labels))
        return args.gangs * args.members

    def singles(emulator: ApiServerEmulator) -> int:
        nodes(emulator)
        for i in range(args.gangs * args.members):
            emulator.create("pods", gpu_pod(f"p-{i:05d}", 1))
        return args.gangs * args.members

    os.chdir(REPO)
    with tempfile.TemporaryDirectory() as tmp:
        result = {
            "nodes": args.nodes, "queues": args.queues, "gangs": args.gangs, "members": args.members,
            "queued_gangs": time_bindings(gangs, Path(tmp)),
            "plain_pods": time_bindings(singles, Path(tmp)),
        }  # fmt: skip
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
