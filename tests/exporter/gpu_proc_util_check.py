"""The lent-GPU check of per-process SM utilisation (not a pytest module): real NVML, three CUDA processes.

    PYTHONPATH=src:tests/exporter python tests/exporter/gpu_proc_util_check.py OUT_DIR

Starts three PyTorch processes on GPU 0 at once: ``heavy`` (a bf16 8192² matmul loop, 10 GiB held),
``light`` (fp32 2048² matmuls, then a sleep, on a fixed duty cycle, 3 GiB held) and ``idle`` (1 GiB held,
no kernels). Each process is put in its own pod the way kubelet would: a ``/proc``-shaped tree with
each NVML PID's cgroup (cgroupfs layout), kubelet's Pod Resources API over a real unix socket (one
time-slicing replica each) and kubelet's ``/pods`` over HTTP, from ``exporter_helpers``. The exporter's
collector (NVML backend, cache off) serves on its real HTTP server.

Each round starts ``nvidia-smi pmon -c 1 -s um``, scrapes ``/metrics`` while pmon samples, keeps the
reading the exporter's scrape was computed from, then reads ``nvidia-smi --query-compute-apps``.
Writes ``rounds.json`` (every round: reading, scraped per-pod series, pmon text, compute apps) and
``summary.txt`` to OUT_DIR. Read-only on the GPU: no clocks, MIG, compute mode or reset.
"""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from exporter_helpers import PodListServer, Scraper, fake_kubelet, write_proc

from kubegpu.devices import NodeInventory, parse_reading
from kubegpu.exporter.collector import GpuCollector, PodSources
from kubegpu.exporter.kubelet_pods import KubeletPods
from kubegpu.node.discovery import NvmlBackend

GIB = 2**30
LOADS = {
    "heavy": """
import time, torch
hold = torch.empty(5 * 2**30, dtype=torch.bfloat16, device="cuda")
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
print("ready", flush=True)
t0 = time.time()
while time.time() - t0 < 90:
    for _ in range(10):
        c = a @ b
    torch.cuda.synchronize()
""",
    "light": """
import time, torch
hold = torch.empty(3 * 2**30 // 4, dtype=torch.float32, device="cuda")
a = torch.randn(2048, 2048, device="cuda"); b = torch.randn_like(a)
print("ready", flush=True)
t0 = time.time()
while time.time() - t0 < 90:
    for _ in range(20):
        c = a @ b
    torch.cuda.synchronize()
    time.sleep(0.05)
""",
    "idle": """
import time, torch
hold = torch.empty(2**30 // 4, dtype=torch.float32, device="cuda")
torch.cuda.synchronize()
print("ready", flush=True)
time.sleep(90)
""",
}
# Pod UID and container ID per load (made up: no kubelet runs on the lent machine).
PODS = {
    "heavy": ("3a1e5c7d-2b4f-4e6a-8c9d-0e1f2a3b4c01", "1" * 64),
    "light": ("5b2f6d8e-3c5a-4f7b-9dae-1f2a3b4c5d02", "2" * 64),
    "idle": ("7c3a7e9f-4d6b-4a8c-8ebf-2a3b4c5d6e03", "3" * 64),
}
HELD_GIB = {"heavy": 10, "light": 3, "idle": 1}  # what each load allocates, without its CUDA context
ROUNDS = 8


class RecordingBackend(NvmlBackend):
    """NVML, keeping the last reading so the round can store exactly what the scrape was computed from."""

    def __init__(self) -> None:
        self.last: dict[str, object] = {}

    def inventory(self) -> NodeInventory:
        self.last = self.reading()
        return parse_reading(self.last, source="nvml")


def nvml_pids_by_load(backend: NvmlBackend, own: dict[str, int]) -> dict[str, int]:
    """The NVML PID of each load: its own PID when NVML shows this PID namespace's, else by memory held."""
    devices: Any = backend.reading()["devices"]
    procs = devices[0]["procs"]
    if set(own.values()) <= {p["pid"] for p in procs}:
        return own
    by_memory = sorted(procs, key=lambda p: p["used_memory"])  # idle < light < heavy (HELD_GIB)
    return {
        name: p["pid"] for name, p in zip(sorted(HELD_GIB, key=HELD_GIB.__getitem__), by_memory, strict=True)
    }


def run(cmd: list[str]) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout


def record(backend: RecordingBackend, pids: dict[str, int]) -> list[dict[str, Any]]:
    """ROUNDS rounds of pmon + scrape + compute apps, each process in its own (emulated) pod."""
    cgroups = {pids[n]: f"0::/kubepods/pod{uid}/{cid}\n" for n, (uid, cid) in PODS.items()}
    pod_list = PodListServer()
    for name, (uid, cid) in PODS.items():
        pod_list.add_pod("gpu-share", name, uid, {"cuda": cid})
    rounds = []
    with fake_kubelet() as (kubelet, socket):
        devices: Any = backend.reading()["devices"]
        uuid = devices[0]["uuid"]
        kubelet.pods = [
            ("gpu-share", name, {"cuda": [("nvidia.com/gpu", [f"{uuid}::{i}"])]})
            for i, name in enumerate(PODS)
        ]
        proc_root = write_proc(Path(tempfile.mkdtemp(prefix="kgproc")), cgroups)
        sources = PodSources(socket, KubeletPods(pod_list.url), proc_root)
        scraper = Scraper(GpuCollector(backend, pods=sources, ttl_s=0))
        try:
            for _ in range(ROUNDS):
                pmon = subprocess.Popen(
                    ["nvidia-smi", "pmon", "-c", "1", "-s", "um"], stdout=subprocess.PIPE, text=True
                )
                time.sleep(0.5)  # pmon's sample window is its 1 s delay: scrape inside it
                at = time.time()
                got = scraper.scrape()
                reading = backend.last
                pmon_text = pmon.communicate(timeout=30)[0]
                rounds.append(
                    {
                        "scraped_at": at,
                        "reading": reading,
                        "pod_sm": {
                            dict(k)["pod"]: v
                            for k, v in got.series.get("kubegpu_pod_gpu_sm_utilization_percent", {}).items()
                        },
                        "pod_memory": {
                            dict(k)["pod"]: v
                            for k, v in got.series.get("kubegpu_pod_gpu_memory_used_bytes", {}).items()
                        },
                        "device_util": sorted(set(got.series.get("DCGM_FI_DEV_GPU_UTIL", {}).values())),
                        "pmon": pmon_text,
                        "compute_apps": run(
                            [
                                "nvidia-smi",
                                "--query-compute-apps=pid,used_memory",
                                "--format=csv,noheader,nounits",
                            ]
                        ),
                    }
                )
                time.sleep(1)
        finally:
            scraper.close()
            pod_list.close()
    return rounds


def main() -> None:
    out_dir = Path(sys.argv[1])
    out_dir.mkdir(parents=True, exist_ok=True)
    loads = {
        name: subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        for name, code in LOADS.items()
    }
    for name, proc in loads.items():
        print(name, proc.pid, proc.stdout.readline().strip() if proc.stdout else "", flush=True)
    try:
        time.sleep(3)
        backend = RecordingBackend()
        pids = nvml_pids_by_load(backend, {n: p.pid for n, p in loads.items()})
        print("NVML pids", pids, flush=True)
        rounds = record(backend, pids)
    finally:
        for proc in loads.values():
            proc.kill()
    meta = {
        "recorded": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "nvidia_smi": run(
            ["nvidia-smi", "--query-gpu=name,driver_version,mig.mode.current", "--format=csv,noheader"]
        ),
        "pids": pids,
        "pods": {n: {"uid": uid, "container_id": cid} for n, (uid, cid) in PODS.items()},
    }
    (out_dir / "rounds.json").write_text(json.dumps({"meta": meta, "rounds": rounds}, indent=1))
    lines = [f"{meta['recorded']} {meta['nvidia_smi'].strip()} pids {pids}"]
    for r in rounds:
        lines.append(f"pod_sm {r['pod_sm']} device_util {r['device_util']}")
        lines.append(r["pmon"].rstrip())
    (out_dir / "summary.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
