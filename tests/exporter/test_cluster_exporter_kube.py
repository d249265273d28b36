"""``kubegpu cluster-exporter --kube`` against the kmock-based API server emulator (``tests/live/apiserver``).

The exporter lists and watches Nodes and Pods through the same reflector the live scheduler uses, and
never writes: every request the emulator served is a GET. A change in the cluster (a pod deleted)
reaches the next computation through the watch, without a relist.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from exporter_helpers import Scraper, parse, stranded_cluster
from kmock._internal import parsing
from tests.live.apiserver import RunningApiServer, parse_path_with_namespace_list, serve_in_thread, wait_until
from tests.live.conftest import write_kubeconfig

from kubegpu.cluster_exporter.collector import ClusterCollector
from kubegpu.cluster_exporter.watch import WatchedCluster
from kubegpu.explain.engine import Engine
from kubegpu.kube.client import KubeApi
from kubegpu.model.gpu_facts import DEFAULT_POOL_LABEL

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[RunningApiServer]:
    monkeypatch.setattr(parsing, "parse_path", parse_path_with_namespace_list)
    yield from serve_in_thread()


@pytest.fixture
def cluster(api: RunningApiServer) -> RunningApiServer:
    for obj in stranded_cluster():
        api.emulator.create("nodes" if obj["kind"] == "Node" else "pods", obj)
    return api


def test_once_lists_the_live_cluster_read_only(cluster: RunningApiServer, tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(cluster, tmp_path)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "kubegpu",
            "cluster-exporter",
            "--kube",
            "--kubeconfig",
            str(kubeconfig),
            "--once",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr
    got = parse(out.stdout)
    assert got.one("kubegpu_pool_gpus_stranded", pool="b") == 7  # b1 has no CPU left for a new pod
    assert got.one("kubegpu_pool_gpus_stranded", pool="a") == 2  # a2 is cordoned
    assert got.one("kubegpu_pending_gpu_pods", resource="nvidia.com/gpu") == 1
    served = {(s.method, s.path) for s in cluster.emulator.served}
    assert {m for m, _ in served} == {"GET"}
    assert {p for _, p in served} == {"/api/v1/nodes", "/api/v1/pods"}


def test_a_watched_change_reaches_the_next_computation(cluster: RunningApiServer, tmp_path: Path) -> None:
    api = KubeApi.from_kubeconfig(None, str(write_kubeconfig(cluster, tmp_path)), False)
    watched = WatchedCluster(api, "live cluster emulator")
    stop = threading.Event()
    watched.start(stop)
    scraper = Scraper(ClusterCollector(watched.snapshot, Engine, DEFAULT_POOL_LABEL, ttl_s=0))
    try:
        first = wait_until(
            lambda: scraper.scrape().series.get("kubegpu_pool_gpus_stranded"), what="first list"
        )
        assert first[frozenset({("pool", "b")})] == 7
        # p3 held b1's 4 CPUs: once it is gone, b1 takes pods again and its 8 GPUs are idle, not stranded.
        cluster.emulator.delete("pods", "ml", "p3")
        wait_until(
            lambda: scraper.scrape().series["kubegpu_pool_gpus_idle"][frozenset({("pool", "b")})] == 8,
            what="the DELETED event",
        )
        got = scraper.scrape()
        assert got.one("kubegpu_pool_gpus_stranded", pool="b") == 0
        assert got.one("kubegpu_pool_largest_idle_block_gpus", pool="b") == 8
        lists = [s for s in cluster.emulator.served if s.method == "GET" and "watch" not in s.query]
        assert len(lists) == 2  # one list per kind; the change came by watch
    finally:
        stop.set()
        scraper.close()
        api.close()


def test_healthz_is_unhealthy_until_both_kinds_are_listed(tmp_path: Path) -> None:
    # No API server answers at this address: the reflectors keep retrying, the exporter keeps serving.
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    api = KubeApi.from_kubeconfig(None, str(kubeconfig), False, max_retries=0, timeout_s=1)
    watched = WatchedCluster(api, "live cluster c")
    stop = threading.Event()
    watched.start(stop)
    scraper = Scraper(ClusterCollector(watched.snapshot, Engine, DEFAULT_POOL_LABEL, ttl_s=0))
    try:
        status, _, body = scraper.get("/healthz")
        assert (status, body) == (503, "cluster snapshot failed: waiting for the first list of Node, Pod\n")
        assert scraper.scrape().one("kubegpu_cluster_exporter_source_up") == 0
    finally:
        stop.set()
        scraper.close()
        api.close()
