"""The lent-GPU check (not a pytest module): the exporter on real NVML under a PyTorch load vs nvidia-smi.

    PYTHONPATH=src python tests/exporter/gpu_check.py OUT_DIR

Starts ``kubegpu exporter`` (NVML backend, cache off) on 127.0.0.1, then samples idle, under a bf16
matmul load holding 6 GiB, and after it: each sample is one scrape of ``/metrics`` followed at once by
``nvidia-smi --query-gpu=…`` and ``--query-compute-apps=…``. Writes ``samples.json`` (raw pairs) and
``summary.txt`` to OUT_DIR. Read-only on the GPU: no clocks, MIG, compute mode or reset.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

URL = "http://127.0.0.1:9400"
# exporter series -> nvidia-smi --query-gpu field (same unit)
PAIRS = {
    "DCGM_FI_DEV_GPU_UTIL": "utilization.gpu",
    "DCGM_FI_DEV_MEM_COPY_UTIL": "utilization.memory",
    "DCGM_FI_DEV_ENC_UTIL": "utilization.encoder",
    "DCGM_FI_DEV_DEC_UTIL": "utilization.decoder",
    "DCGM_FI_DEV_FB_USED": "memory.used",
    "DCGM_FI_DEV_FB_FREE": "memory.free",
    "DCGM_FI_DEV_GPU_TEMP": "temperature.gpu",
    "DCGM_FI_DEV_MEMORY_TEMP": "temperature.memory",
    "DCGM_FI_DEV_POWER_USAGE": "power.draw",
    "DCGM_FI_DEV_SM_CLOCK": "clocks.sm",
    "DCGM_FI_DEV_MEM_CLOCK": "clocks.mem",
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": "ecc.errors.corrected.volatile.total",
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": "ecc.errors.uncorrected.volatile.total",
    "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL": "ecc.errors.corrected.aggregate.total",
    "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL": "ecc.errors.uncorrected.aggregate.total",
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": "remapped_rows.correctable",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": "remapped_rows.uncorrectable",
}
EXTRA_SMI = ["index", "uuid", "name", "pci.bus_id", "power.draw.instant", "memory.total", "memory.reserved"]
LOAD = """
import sys, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
hold = torch.empty(3 * 2**30, dtype=torch.bfloat16, device="cuda")  # 6 GiB held
print("ready", flush=True)
t0 = time.time()
while time.time() - t0 < float(sys.argv[1]):
    for _ in range(20):
        c = a @ b
    torch.cuda.synchronize()
"""


def smi(fields: list[str]) -> dict[str, str]:
    out = subprocess.run(
        ["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
    )
    return dict(zip(fields, (v.strip() for v in out.stdout.strip().split(",")), strict=False))


def apps() -> list[dict[str, str]]:
    out = subprocess.run(
        ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
    ).stdout
    return [
        dict(zip(("pid", "used_memory_mib"), (v.strip() for v in line.split(",")), strict=True))
        for line in out.splitlines()
        if line.strip()
    ]


def scrape() -> dict[str, float]:
    with urllib.request.urlopen(URL + "/metrics", timeout=10) as resp:
        text = resp.read().decode()
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.labels.get("source"):
                out[f"{fam.name}{{source={s.labels['source']}}}"] = s.value
            else:
                out[fam.name] = s.value
    return out


def sample(phase: str) -> dict[str, object]:
    t0 = time.time()
    metrics = scrape()
    t1 = time.time()
    query = smi(list(PAIRS.values()) + EXTRA_SMI)
    t2 = time.time()
    return {
        "phase": phase,
        "t": t0,
        "scrape_s": t1 - t0,
        "smi_after_s": t2 - t1,
        "exporter": metrics,
        "smi": query,
        "apps": apps(),
    }


def main() -> None:
    out_dir = Path(sys.argv[1])
    out_dir.mkdir(parents=True, exist_ok=True)
    exporter = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from kubegpu.cli.exporter_cmd import exporter; exporter()",
            "--listen",
            "127.0.0.1:9400",
            "--cache-ttl",
            "0",
            "--hostname",
            "lent-h200",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    print("exporter:", exporter.stdout.readline().strip() if exporter.stdout else "", flush=True)
    samples = []
    try:
        with urllib.request.urlopen(URL + "/healthz", timeout=10) as resp:
            print("healthz:", resp.status, resp.read().decode().strip())
        samples += [sample("idle") for _ in range(3)]
        load = subprocess.Popen(
            [sys.executable, "-c", LOAD, "40"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        ready = load.stdout.readline().strip() if load.stdout else ""
        print("load:", ready, flush=True)
        time.sleep(4)
        for _ in range(10):
            samples.append(sample("load"))
            time.sleep(2)
        load.wait(timeout=120)
        time.sleep(3)
        samples += [sample("after") for _ in range(3)]
        latencies = []
        for _ in range(50):
            t0 = time.perf_counter()
            scrape()
            latencies.append((time.perf_counter() - t0) * 1000)
    finally:
        exporter.terminate()
        exporter.wait(timeout=20)
    (out_dir / "samples.json").write_text(json.dumps(samples, indent=1))
    lines = summarise(samples, latencies)
    (out_dir / "summary.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def summarise(samples: list[dict], latencies: list[float]) -> list[str]:
    lines = [
        f"GPU: {samples[0]['smi'].get('name')} {samples[0]['smi'].get('uuid')} bus {samples[0]['smi'].get('pci.bus_id')}"
    ]
    for name, field in PAIRS.items():
        rows = []
        for s in samples:
            mine, theirs = s["exporter"].get(name), s["smi"].get(field)
            rows.append(f"{s['phase'][0]}:{'absent' if mine is None else f'{mine:g}'}/{theirs}")
        lines.append(f"{name} vs {field}: " + " ".join(rows))
    for s in samples:
        procs = sum(int(a["used_memory_mib"]) for a in s["apps"] if a["used_memory_mib"].isdigit())
        mine = s["exporter"].get("kubegpu_gpu_unattributed_memory_used_bytes")
        lines.append(
            f"{s['phase']}: processes exporter {s['exporter'].get('kubegpu_gpu_processes')} / smi {len(s['apps'])}; "
            f"process memory exporter {None if mine is None else mine / 2**20:g} MiB / smi {procs} MiB; "
            f"power.draw.instant {s['smi'].get('power.draw.instant')}; memory.reserved {s['smi'].get('memory.reserved')}; "
            f"XID {s['exporter'].get('DCGM_FI_DEV_XID_ERRORS')}; energy {s['exporter'].get('DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION')}"
        )
    energy = [
        (s["t"], s["exporter"].get("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"))
        for s in samples
        if s["phase"] == "load"
    ]
    if len(energy) > 1 and energy[0][1] is not None and energy[-1][1] is not None:
        watts = (energy[-1][1] - energy[0][1]) / 1000 / (energy[-1][0] - energy[0][0])
        powers = [s["exporter"].get("DCGM_FI_DEV_POWER_USAGE") or 0 for s in samples if s["phase"] == "load"]
        lines.append(
            f"under load: energy counter slope {watts:.1f} W vs mean DCGM_FI_DEV_POWER_USAGE {statistics.mean(powers):.1f} W"
        )
    q = statistics.quantiles(latencies, n=100, method="inclusive")
    lines.append(
        f"scrape latency on real NVML (cache off, 50 scrapes): p50 {q[49]:.1f} ms p99 {q[98]:.1f} ms max {max(latencies):.1f} ms"
    )
    lines.append(f"sources: { {k: v for k, v in samples[-1]['exporter'].items() if 'source' in k} }")
    return lines


if __name__ == "__main__":
    main()
