"""End-to-end throughput of ``kubegpu scheduler`` against the emulated API server, and webhook latency.

Scheduler: N nodes x 8 GPUs (default 1,000) and P pending 1-GPU pods (default 2,000) are created in the
emulator (tests/live/apiserver.py: kmock over real HTTP on 127.0.0.1); then a ``kubegpu scheduler``
process (no leader election) is started. Reported: pods bound per second from the first binding to the
last (steady state: list+watch, cycle, ``pods/binding`` POST and ``Scheduled`` event POST per pod), and
from process start (includes start-up, LIST, initial sync). The ceiling is the core alone on the same
cluster (``Scheduler.schedule_one`` in a loop, no API traffic), measured in-process here.

Webhook: a ``kubegpu webhook`` process over HTTPS (self-signed cert via the openssl CLI); R
AdmissionReview requests (default 2,000, alternating allowed and denied pods) are sent one after another
on one keep-alive connection, to ``/validate`` and then to ``/mutate`` (which patches both pods); p50/p99
of the round trip are reported per endpoint (the issue's goal: p99 <= 10 ms). ``*_templates``: the same
for workloads, alternating a Deployment CREATE (GPU trainer and CPU sidecar: the template is patched)
and a CronJob UPDATE that changes the template, with its ``oldObject`` (both objects are linted on
/validate; /mutate compares the templates).

    python benchmarks/bench_live.py [--nodes 1000] [--pods 2000] [--reviews 2000]

Prints one JSON object. The emulator runs in this process and shares its cores with the scheduler: the
end-to-end figure is a lower bound for a real API server on separate machines.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.live.apiserver import ApiServerEmulator, parse_path_with_namespace_list, serve_in_thread  # noqa: E402
from tests.live.conftest import free_port, gpu_node, gpu_pod  # noqa: E402

from kubegpu.model.parse import parse_node, parse_pod  # noqa: E402
from kubegpu.scheduler.cluster import ClusterState  # noqa: E402
from kubegpu.scheduler.framework import Framework  # noqa: E402
from kubegpu.scheduler.registry import default_profile, in_tree_registry  # noqa: E402
from kubegpu.scheduler.schedule_one import Scheduler  # noqa: E402


def core_ceiling(nodes: int, pods: int) -> float:
    """Pods per second of the core alone on the same cluster and pods."""
    parsed_nodes = [
        parse_node({"apiVersion": "v1", "kind": "Node", **gpu_node(f"gpu-{i:04d}")}) for i in range(nodes)
    ]
    pending = []
    for i in range(pods):
        raw = {"apiVersion": "v1", "kind": "Pod", **gpu_pod(f"p-{i:05d}", 1)}
        raw["metadata"]["uid"] = f"uid-{i}"
        pending.append(parse_pod(raw))
    scheduler = Scheduler(
        Framework(default_profile(scheduler_name="kubegpu"), in_tree_registry()), ClusterState(parsed_nodes)
    )
    start = time.perf_counter()
    for pod in pending:
        scheduler.schedule_one(pod)
    return pods / (time.perf_counter() - start)


def bench_scheduler(nodes: int, pods: int, workdir: Path) -> dict[str, Any]:
    def populate(emulator: ApiServerEmulator) -> int:
        for i in range(nodes):
            emulator.create("nodes", gpu_node(f"gpu-{i:04d}"))
        for i in range(pods):
            emulator.create("pods", gpu_pod(f"p-{i:05d}", 1))
        return pods

    return {"nodes": nodes, **time_bindings(populate, workdir)}


def time_bindings(populate: Callable[[ApiServerEmulator], int], workdir: Path) -> dict[str, Any]:
    """Populate a fresh emulator (``populate`` returns how many pods are to be bound), start a
    ``kubegpu scheduler`` process against it and time the bindings, from process start and from the
    first binding to the last."""
    from kmock._internal import parsing

    parsing.parse_path = parse_path_with_namespace_list  # the emulator's Namespace-list fix (tests do it too)
    servers = serve_in_thread()
    api = next(servers)
    try:
        pods = populate(api.emulator)
        kubeconfig = workdir / "kubeconfig"
        kubeconfig.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "bench",
            "clusters": [{"name": "bench", "cluster": {"server": api.url}}],
            "users": [{"name": "bench", "user": {"token": "bench"}}],
            "contexts": [{"name": "bench", "context": {"cluster": "bench", "user": "bench"}}],
        }))  # fmt: skip
        log = (workdir / "scheduler.log").open("w")
        started = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "kubegpu.cli.live_cmd", "scheduler", "--kubeconfig", str(kubeconfig),
             "--no-leader-elect", "--metrics-port", str(free_port()), "--metrics-bind-address", "127.0.0.1"],
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        first = None
        deadline = time.monotonic() + 600
        while len(api.emulator.bindings) < pods:
            if first is None and api.emulator.bindings:
                first = time.perf_counter()
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit(f"scheduler stopped or stalled at {len(api.emulator.bindings)} bindings")
            time.sleep(0.01)
        done = time.perf_counter()
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        log.close()
        assert first is not None
        return {
            "pods": pods,
            "bound_per_s_steady": round(pods / (done - first), 1),
            "bound_per_s_from_start": round(pods / (done - started), 1),
            "start_to_first_bind_s": round(first - started, 2),
        }
    finally:
        servers.close()


def bench_webhook(reviews: int, workdir: Path) -> dict[str, Any]:
    cert, key = workdir / "tls.crt", workdir / "tls.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=bench",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubegpu.cli.live_cmd", "webhook", "--tls-cert-file", str(cert),
         "--tls-private-key-file", str(key), "--bind-address", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        context = ssl.create_default_context(cafile=str(cert))
        for _ in range(200):
            try:
                conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=5)
                conn.request("GET", "/healthz")
                conn.getresponse().read()
                break
            except OSError:
                time.sleep(0.05)
        good = {"apiVersion": "v1", "kind": "Pod", **gpu_pod("ok", 1)}
        bad = {"apiVersion": "v1", "kind": "Pod", **gpu_pod("bad", 1)}
        bad["spec"]["containers"][0]["securityContext"] = {"privileged": True}
        pod_spec = gpu_pod("t", 1)["spec"]
        pod_spec["containers"].append({"name": "sidecar", "image": "fluent/fluent-bit:3.1"})
        deployment = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "ml"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "t"}},
                "template": {"metadata": {"labels": {"app": "t"}}, "spec": pod_spec},
            },
        }
        cron_old = {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": "c", "namespace": "ml"},
            "spec": {
                "schedule": "0 * * * *",
                "jobTemplate": {"spec": {"template": {"spec": {**pod_spec, "restartPolicy": "Never"}}}},
            },
        }
        cron_new = json.loads(json.dumps(cron_old))
        cron_new["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["image"] = "new:tag"

        def review(
            i: int,
            obj: dict[str, Any],
            group: str,
            operation: str = "CREATE",
            old: dict[str, Any] | None = None,
        ) -> bytes:
            kind = {"group": group, "version": "v1", "kind": obj["kind"]}
            return json.dumps(
                {
                    "apiVersion": "admission.k8s.io/v1",
                    "kind": "AdmissionReview",
                    "request": {
                        "uid": f"u{i}",
                        "kind": kind,
                        "namespace": "ml",
                        "operation": operation,
                        "object": obj,
                        "oldObject": old,
                    },
                }
            ).encode()

        cases = {
            "": [review(0, good, ""), review(1, bad, "")],
            "_templates": [review(2, deployment, "apps"), review(3, cron_new, "batch", "UPDATE", cron_old)],
        }  # fmt: skip
        result: dict[str, Any] = {"reviews": reviews}
        for suffix, bodies in cases.items():
            for path in ("/validate", "/mutate"):
                latencies = []
                for i in range(reviews):
                    start = time.perf_counter()
                    conn.request(
                        "POST", path, body=bodies[i % 2], headers={"Content-Type": "application/json"}
                    )
                    conn.getresponse().read()
                    latencies.append(time.perf_counter() - start)
                latencies.sort()
                result[path.strip("/") + suffix] = {
                    "p50_ms": round(latencies[len(latencies) // 2] * 1000, 2),
                    "p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1000, 2),
                }
        return result
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--reviews", type=int, default=2000)
    args = parser.parse_args()
    os.chdir(REPO)
    with tempfile.TemporaryDirectory() as tmp:
        result = {
            "scheduler": bench_scheduler(args.nodes, args.pods, Path(tmp)),
            "core_ceiling_pods_per_s": round(core_ceiling(args.nodes, args.pods), 1),
            "webhook": bench_webhook(args.reviews, Path(tmp)),
        }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
