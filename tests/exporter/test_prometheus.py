"""A real Prometheus scrapes the exporter, and promtool checks and unit-tests the alerting rules (R13, R16).

Uses Debian's ``prometheus`` package (``prometheus`` and ``promtool`` on PATH); each test skips, saying
so, only when that binary is absent. Prometheus runs on loopback with a 1 s scrape interval against the
exporter serving the two-processes timeline at t = 35.13 s; PromQL then has to return per-pod memory
equal to NVML's per-process readings and the device's framebuffer as NVML read it.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from exporter_helpers import (
    H200_UUID,
    REPO,
    PodListServer,
    ReadingBackend,
    Scraper,
    fake_kubelet,
    stranded_cluster,
    timeline,
    timeline_reading,
    write_proc,
)
from tests.conftest import snapshot_of

from kubegpu.cluster_exporter.collector import ClusterCollector
from kubegpu.devices.inventory import MIB
from kubegpu.explain.engine import Engine
from kubegpu.exporter.collector import GpuCollector, PodSources
from kubegpu.exporter.kubelet_pods import KubeletPods
from kubegpu.model.gpu_facts import DEFAULT_POOL_LABEL

RULES = REPO / "deploy" / "prometheus" / "kubegpu-rules.yaml"
DASHBOARD = REPO / "deploy" / "grafana" / "kubegpu-gpus.json"
# Queries with no answer here: series a recorded reading has no value for (NVML-only counters, the XID
# watcher), kube-state-metrics' series, and the idle-candidate list (the GPU is at 100 % at t = 35.13 s).
NO_DATA_EXPECTED = (
    "kube_node_labels",
    "ENERGY",
    "MEMORY_TEMP",
    "XID",
    "ECC",
    "REMAPPED",
    "PCIE",
    "[15m]) < 10",
)
# The dashboard's template variables, set as "all" would set them.
VARIABLES = {
    "$Hostname": ".*",
    "$gpu": ".*",
    "$namespace": ".*",
    "$pool_label": "label_accelerator_example_com_pool",
    "$pool_name": ".*",
}
# Series of `kubegpu cluster-exporter`, which the node exporter's Prometheus test does not scrape.
CLUSTER_EXPORTER = ("kubegpu_pool_", "kubegpu_node_", "kubegpu_pending_gpu_pods")
RULE_TESTS = REPO / "deploy" / "prometheus" / "kubegpu-rules.test.yaml"
NOT_INSTALLED = "Debian's prometheus package is not installed (apt-get install -y prometheus): {} not on PATH"


def _binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(NOT_INSTALLED.format(name))
    return path


def test_promtool_check_rules_accepts_the_rules_file() -> None:
    out = subprocess.run([_binary("promtool"), "check", "rules", str(RULES)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS: 12 rules found" in out.stdout


def test_promtool_unit_tests_fire_and_stay_quiet_for_each_alert() -> None:
    out = subprocess.run(
        [_binary("promtool"), "test", "rules", RULE_TESTS.name],
        cwd=RULE_TESTS.parent,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    names = {line.split(":", 1)[1].strip() for line in RULES.read_text().splitlines() if "- alert:" in line}
    tested = {
        line.split(":", 1)[1].strip() for line in RULE_TESTS.read_text().splitlines() if "alertname:" in line
    }
    assert tested == names  # every alert has unit tests


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


UID_A, CID_A = "1f0d6c2a-8b3e-4e47-9a51-2c7d0e5b9a01", "a" * 64
UID_B, CID_B = "7c2e9b14-3d5a-4f60-8e21-9b4c6a7d3e02", "b" * 64


@pytest.fixture
def exporter(tmp_path: Path) -> Iterator[Scraper]:
    point = next(p for p in timeline() if p["t"] == 35.13)
    pods = PodListServer()
    pods.add_pod("team-a", "trainer-a", UID_A, {"torch": CID_A})
    pods.add_pod("team-b", "trainer-b", UID_B, {"torch": CID_B})
    proc = write_proc(
        tmp_path / "proc",
        {425: f"0::/kubepods/pod{UID_A}/{CID_A}\n", 451: f"0::/kubepods/pod{UID_B}/{CID_B}\n"},
    )
    with fake_kubelet() as (kubelet, sock):
        kubelet.pods = [
            ("team-a", "trainer-a", {"torch": [("nvidia.com/gpu", [f"{H200_UUID}::0"])]}),
            ("team-b", "trainer-b", {"torch": [("nvidia.com/gpu", [f"{H200_UUID}::1"])]}),
        ]
        collector = GpuCollector(
            ReadingBackend(timeline_reading(point)),
            pods=PodSources(sock, KubeletPods(pods.url), proc),
            hostname="gpu-node-1",
        )
        scraper = Scraper(collector)
        try:
            yield scraper
        finally:
            scraper.close()
            pods.close()


@contextmanager
def prometheus(targets: list[str], tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A real Prometheus on loopback scraping ``targets`` every second with the rules file loaded."""
    binary = _binary("prometheus")
    port = _free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        json.dumps(
            {
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "rule_files": [str(RULES)],
                "scrape_configs": [{"job_name": "kubegpu", "static_configs": [{"targets": targets}]}],
            }
        )
    )
    proc = subprocess.Popen(
        [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        yield f"http://127.0.0.1:{port}/api/v1", proc
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_prometheus_scrapes_the_exporter_and_promql_returns_per_pod_memory(
    exporter: Scraper, tmp_path: Path
) -> None:
    target = exporter.base.removeprefix("http://")
    with prometheus([target], tmp_path) as (api, proc):
        per_pod = _query_until(api, "kubegpu_pod_gpu_memory_used_bytes", proc, want=2)
        got = {r["metric"]["pod"]: float(r["value"][1]) for r in per_pod}
        assert got == {"trainer-a": 21482 * MIB, "trainer-b": 119786 * MIB}
        assert {r["metric"]["instance"] for r in per_pod} == {target}
        fb = _query_until(api, 'sum by (pod) (DCGM_FI_DEV_FB_USED{Hostname="gpu-node-1"})', proc, want=2)
        # dcgm-exporter's way: each pod sharing the GPU carries the whole device's 141897 MiB.
        assert {r["metric"]["pod"]: float(r["value"][1]) for r in fb} == {
            "trainer-a": 141897,
            "trainer-b": 141897,
        }
        rules = _get(f"{api}/rules")["data"]["groups"]
        assert sum(len(g["rules"]) for g in rules) == 12  # the rules file loads into a real server
        # Every dashboard query parses and evaluates in real PromQL; those over the exporter's series return data.
        for expr in _dashboard_exprs():
            answer = _get(f"{api}/query?{urllib.parse.urlencode({'query': expr})}")
            assert answer["status"] == "success", expr
            if not any(name in expr for name in NO_DATA_EXPECTED + CLUSTER_EXPORTER):
                assert answer["data"]["result"], f"no data: {expr}"


def test_prometheus_scrapes_the_cluster_exporter_and_promql_returns_a_pools_stranded_gpus(
    tmp_path: Path,
) -> None:
    # stranded_cluster(): pool b's node b1 has no CPU left, so its 7 idle GPUs are stranded; in pool a the
    # cordoned a2 strands 2.
    scraper = Scraper(ClusterCollector(lambda: snapshot_of(*stranded_cluster()), Engine, DEFAULT_POOL_LABEL))
    try:
        with prometheus([scraper.base.removeprefix("http://")], tmp_path) as (api, proc):
            stranded = _query_until(api, 'kubegpu_pool_gpus_stranded{pool="b"}', proc, want=1)
            assert [float(r["value"][1]) for r in stranded] == [7]
            by_node = _query_until(api, "sum by (pool) (kubegpu_node_gpus_stranded > 0)", proc, want=2)
            assert {r["metric"]["pool"]: float(r["value"][1]) for r in by_node} == {"a": 2, "b": 7}
            # The dashboard's pool panels evaluate, with data, over this exporter.
            pool_panels = [e for e in _dashboard_exprs() if any(name in e for name in CLUSTER_EXPORTER)]
            assert len(pool_panels) == 7
            for expr in pool_panels:
                answer = _get(f"{api}/query?{urllib.parse.urlencode({'query': expr})}")
                assert answer["status"] == "success" and answer["data"]["result"], f"no data: {expr}"
    finally:
        scraper.close()


def _dashboard_exprs() -> list[str]:
    exprs = []
    for panel in json.loads(DASHBOARD.read_text())["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            for var, value in VARIABLES.items():
                expr = expr.replace(var, value)
            exprs.append(expr)
    return exprs


def test_the_dashboard_only_names_series_the_exporters_write() -> None:
    from kubegpu.cluster_exporter.collector import HELP
    from kubegpu.devices import dcgm_fields as fields
    from kubegpu.devices import gpu_series

    ours = (
        {f.name for f in fields.DCGM_FIELDS}
        | set(HELP)
        | {
            v[0]
            for v in vars(gpu_series).values()
            if isinstance(v, tuple) and len(v) == 2 and str(v[0]).startswith("kubegpu_")
        }
    )
    named = set(re.findall(r"\b(?:DCGM_FI_\w+|kubegpu_\w+)", DASHBOARD.read_text()))
    assert named and named <= ours, named - ours


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return json.loads(resp.read())


def _query_until(api: str, promql: str, proc: subprocess.Popen[bytes], want: int) -> list[dict]:
    """Poll the query API until ``want`` series come back; fail (not skip) if Prometheus dies or never has them."""
    url = f"{api}/query?{urllib.parse.urlencode({'query': promql})}"
    deadline = time.monotonic() + 30
    result: list[dict] = []
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"prometheus exited: {proc.stderr.read().decode() if proc.stderr else ''}")
        try:
            result = _get(url)["data"]["result"]
        except OSError:
            result = []  # not listening yet
        if len(result) >= want:
            return result
        time.sleep(0.2)
    pytest.fail(f"{promql}: {len(result)} series after 30 s")


def test_the_cluster_framebuffer_panel_counts_a_mig_gpu_once(tmp_path: Path) -> None:
    """QA mig-xid: the panel summed a MIG GPU's own FB_USED and its instances'. Series as dcgm-exporter
    4.5.3-4.8.2 writes them with ``-d g,i`` (parent and instances, device_monitoring.go handleGPUOptions) and
    with the default ``f`` (instances only): a 3g.71gb instance using 4000 MiB and a 2g.35gb one using 2000
    MiB on GPU-m, and a whole GPU-w using 1000 MiB. Either way the panel reads 7000 MiB; the "GPUs
    reporting" stat reads 2."""
    panels = {p["title"]: p for p in _panels(json.loads(DASHBOARD.read_text()))}
    used = panels["Framebuffer used, cluster"]["targets"][0]["expr"]
    total = panels["Framebuffer used, cluster"]["targets"][1]["expr"]
    gpus = panels["GPUs reporting"]["targets"][0]["expr"]
    mig = [('GPU_I_ID="1"', 4000, 30000), ('GPU_I_ID="2"', 2000, 31000)]
    series = [
        (f'DCGM_FI_DEV_FB_{n}{{UUID="GPU-m",{gi}}}', v)
        for gi, u, f in mig
        for n, v in (("USED", u), ("FREE", f))
    ] + [('DCGM_FI_DEV_FB_USED{UUID="GPU-w"}', 1000), ('DCGM_FI_DEV_FB_FREE{UUID="GPU-w"}', 9000)]
    parent = [('DCGM_FI_DEV_FB_USED{UUID="GPU-m"}', 6000), ('DCGM_FI_DEV_FB_FREE{UUID="GPU-m"}', 61000)]
    mib = 1048576
    for name, extra in (("flex", []), ("g_i", parent)):
        tests = {
            "rule_files": [],
            "evaluation_interval": "1m",
            "tests": [
                {
                    "interval": "1m",
                    "input_series": [{"series": s, "values": f"{v}x2"} for s, v in series + extra],
                    "promql_expr_test": [
                        {
                            "expr": used,
                            "eval_time": "1m",
                            "exp_samples": [{"labels": "{}", "value": 7000 * mib}],
                        },
                        {
                            "expr": total,
                            "eval_time": "1m",
                            "exp_samples": [{"labels": "{}", "value": (34000 + 33000 + 10000) * mib}],
                        },
                        {"expr": gpus, "eval_time": "1m", "exp_samples": [{"labels": "{}", "value": 2}]},
                    ],
                }
            ],
        }
        path = tmp_path / f"{name}.test.json"
        path.write_text(json.dumps(tests))
        out = subprocess.run(
            [_binary("promtool"), "test", "rules", path.name], cwd=tmp_path, capture_output=True, text=True
        )
        assert out.returncode == 0, name + out.stdout + out.stderr


def _panels(node: dict[str, object]) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for p in node.get("panels", []):  # type: ignore[attr-defined]
        out += [p, *_panels(p)]
    return out
