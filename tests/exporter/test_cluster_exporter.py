"""``kubegpu cluster-exporter``: stranded GPUs, fragmentation and Pending GPU pods per pool (R13, R14.1, R16).

Small clusters built with ``kubegpu.testing.builders``, every expected value worked out by hand below
(idle / stranded as the report defines them; FGD's fragment amount as Weng et al. define it, with the
simulator's typical-pod rule), the embedded demo (values counted from its YAML), and ``--once`` through
the CLI. Served through the exporters' real HTTP server and parsed with client_python's parser.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner
from exporter_helpers import Scrape, Scraper, parse, stranded_cluster
from tests.clock import ManualClock
from tests.conftest import snapshot_of

from kubegpu.cli.cluster_exporter_cmd import cluster_exporter
from kubegpu.cluster_exporter.collector import ClusterCollector
from kubegpu.explain.cards import UNPOOLED
from kubegpu.explain.engine import Engine
from kubegpu.model.gpu_facts import DEFAULT_POOL_LABEL
from kubegpu.scheduler.gpu_shapes import GPU_MILLI_RESOURCE
from kubegpu.testing.builders import make_node, make_pod

POOL = DEFAULT_POOL_LABEL
MILLI_GPU = GPU_MILLI_RESOURCE  # open-gpu-share's kubegpu.io/gpu-milli


def serve(objects: list[dict[str, Any]], **kw: Any) -> Scraper:
    return Scraper(ClusterCollector(lambda: snapshot_of(*objects), Engine, POOL, ttl_s=0, **kw))


@pytest.fixture
def stranded() -> Iterator[Scrape]:
    scraper = serve(stranded_cluster())
    try:
        yield scraper.scrape()
    finally:
        scraper.close()


def by_pool(got: Scrape, family: str) -> dict[str, float]:
    return {dict(k)["pool"]: v for k, v in got.series.get(family, {}).items()}


def test_gpus_total_allocated_idle_stranded_per_pool(stranded: Scrape) -> None:
    assert by_pool(stranded, "kubegpu_pool_nodes") == {"a": 2, "b": 1, UNPOOLED: 1}
    assert by_pool(stranded, "kubegpu_pool_gpus") == {"a": 8, "b": 8, UNPOOLED: 2}
    assert by_pool(stranded, "kubegpu_pool_gpus_allocated") == {"a": 3, "b": 1, UNPOOLED: 0}
    assert by_pool(stranded, "kubegpu_pool_gpus_idle") == {"a": 5, "b": 7, UNPOOLED: 2}
    # a2 is cordoned: its 2 idle GPUs are stranded; b1 has no CPU left for any pod: all 7 idle are stranded.
    assert by_pool(stranded, "kubegpu_pool_gpus_stranded") == {"a": 2, "b": 7, UNPOOLED: 0}
    # Only nodes that take pods count: a1's 3, none on b, c1's 2.
    assert by_pool(stranded, "kubegpu_pool_largest_idle_block_gpus") == {"a": 3, "b": 0, UNPOOLED: 2}
    assert by_pool(stranded, "kubegpu_pool_gpus_unhealthy") == {"a": 0, "b": 0, UNPOOLED: 0}


def test_per_node_series_and_device_counts_per_resource(stranded: Scrape) -> None:
    nodes = {
        dict(k)["node"]: (dict(k)["pool"], v)
        for k, v in stranded.series["kubegpu_node_gpus_stranded"].items()
    }
    assert nodes == {"a1": ("a", 0), "a2": ("a", 2), "b1": ("b", 7), "c1": (UNPOOLED, 0)}
    accepts = {dict(k)["node"]: v for k, v in stranded.series["kubegpu_node_accepts_pods"].items()}
    assert accepts == {"a1": 1, "a2": 0, "b1": 0, "c1": 1}
    assert stranded.one("kubegpu_pool_devices", pool="a", resource="nvidia.com/gpu") == 8
    assert stranded.one("kubegpu_pool_devices_requested", pool="a", resource="nvidia.com/gpu") == 3
    assert stranded.one("kubegpu_pool_devices_requested", pool="b", resource="nvidia.com/gpu") == 1
    assert stranded.series["kubegpu_pending_gpu_pods"] == {
        frozenset({("resource", "nvidia.com/gpu")}): 1,
        frozenset({("resource", "")}): 1,
    }
    assert stranded.one("kubegpu_cluster_exporter_source_up") == 1


def test_fgd_fragmentation_of_whole_gpu_pods_is_the_gpu_no_shape_can_use(stranded: Scrape) -> None:
    # Typical shapes (GPU pods p1 p2 p3 q1): (2 CPU, 2 GPUs) x2, (4 CPU, 1 GPU), (2 CPU, 1 GPU) -> 1/2, 1/4,
    # 1/4. Whole-GPU shapes leave no partly free GPU, so a node's fragment is 0 where every shape fits and
    # all its free GPU where none does: b1 has 0 CPU left, so all 7 free GPUs are fragment there.
    assert by_pool(stranded, "kubegpu_pool_fragmentation_gpus") == {"a": 0, "b": 7, UNPOOLED: 0}
    assert by_pool(stranded, "kubegpu_pool_fragmentation_ratio") == {"a": 0, "b": 1, UNPOOLED: 0}
    node = {dict(k)["node"]: v for k, v in stranded.series["kubegpu_node_fragmentation_gpus"].items()}
    assert node == {"a1": 0, "a2": 0, "b1": 7, "c1": 0}


def test_fgd_fragmentation_of_shared_gpus_worked_by_hand() -> None:
    # s1: 2 GPUs, pods of 500 and 300 milli-GPU (open-gpu-share's kubegpu.io/gpu-milli) share GPU 0 by best
    # fit: free milli [200, 1000]. w1: 4 GPUs, a 2-GPU pod holds 2: free [0, 0, 1000, 1000]. Pending q
    # asks for 2 GPUs. Typical shapes: T1 (2 CPU, 2x1000) p=1/2; T2 (1 CPU, 500) 1/4; T3 (1 CPU, 300) 1/4.
    # s1: T1 cannot fit (one full GPU) -> all 1200 free; T2 and T3 fit GPU 1 and cannot use GPU 0's 200
    # -> 200 each. 0.5*1200 + 0.25*200 + 0.25*200 = 700 milli = 0.7 GPU, ratio 700/1200. w1: every shape
    # fits and no GPU is partly free -> 0.
    objects = [
        make_node("s1").gpus(2).capacity(cpu=16, **{MILLI_GPU: 2000}).label(POOL, "share").obj(),
        make_node("w1").gpus(4).label(POOL, "whole").obj(),
        make_pod("half").requests(cpu="1").limits(**{MILLI_GPU: "500"}).on("s1").obj(),
        make_pod("third").requests(cpu="1").limits(**{MILLI_GPU: "300"}).on("s1").obj(),
        make_pod("pair").requests(cpu="2").gpu(2).on("w1").obj(),
        make_pod("q").requests(cpu="2").gpu(2).obj(),
    ]
    scraper = serve(objects)
    try:
        got = scraper.scrape()
    finally:
        scraper.close()
    assert by_pool(got, "kubegpu_pool_fragmentation_gpus") == pytest.approx({"share": 0.7, "whole": 0.0})
    assert by_pool(got, "kubegpu_pool_fragmentation_ratio") == pytest.approx(
        {"share": 700 / 1200, "whole": 0}
    )


def test_a_running_pod_whose_gpu_count_annotation_is_no_shape_is_left_out_and_said(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The API server takes any annotation text (apimachinery ``ValidateAnnotations``: keys and total size
    only), so a running pod may carry ``kubegpu.io/gpu-count: "two"``; the exporter measures the rest and
    says it (series and one log line per change), instead of failing the whole snapshot.
    s1: 2 GPUs; ``small`` holds 300 milli of one (best fit): free [700, 1000]. ``bad`` (1500 milli,
    "two") is left out. Pending q asks 2 whole GPUs. Typical shapes: T1 (1 CPU, 300) p=1/2, T2 (2 CPU,
    2x1000) p=1/2. T1 fits both GPUs -> 0; T2 finds one full GPU only -> all 1700 free. 0.5*1700 = 850
    milli = 0.85 GPU."""
    bad = make_pod("bad").requests(cpu="1").limits(**{MILLI_GPU: "1500"}).on("s1").obj()
    bad["metadata"]["annotations"] = {"kubegpu.io/gpu-count": "two"}
    objects = [
        make_node("s1").gpus(2).capacity(cpu=16, **{MILLI_GPU: 2000}).label(POOL, "share").obj(),
        make_pod("small").requests(cpu="1").limits(**{MILLI_GPU: "300"}).on("s1").obj(),
        bad,
        make_pod("q").requests(cpu="2").gpu(2).obj(),
    ]
    scraper = serve(objects)
    try:
        with caplog.at_level("WARNING", logger="kubegpu.cluster_exporter.collector"):
            got = scraper.scrape()
            again = scraper.scrape()  # (ttl 0: measured again, the same pod left out: not said again)
    finally:
        scraper.close()
    assert got.one("kubegpu_cluster_exporter_source_up") == 1
    assert by_pool(got, "kubegpu_pool_fragmentation_gpus") == pytest.approx({"share": 0.85})
    assert got.one("kubegpu_fragmentation_skipped_pods") == 1
    assert again.one("kubegpu_fragmentation_skipped_pods") == 1
    assert [r.getMessage() for r in caplog.records] == [
        "fragmentation leaves out pod default/bad: kubegpu.io/gpu-milli 1500 with annotation "
        'kubegpu.io/gpu-count: "two": not a GPU count (a whole number from 1)'
    ]


def test_no_gpu_pod_shapes_means_no_fragmentation_series_and_zero_pending() -> None:
    scraper = serve(
        [make_node("n1").gpus(4).label(POOL, "a").obj(), make_pod("web").requests(cpu="1").on("n1").obj()]
    )
    try:
        got = scraper.scrape()
    finally:
        scraper.close()
    assert "kubegpu_pool_fragmentation_gpus" not in got.series  # no popular shape to measure against: absent
    assert "kubegpu_node_fragmentation_gpus" not in got.series
    assert by_pool(got, "kubegpu_pool_gpus_idle") == {"a": 4}
    # No Pending GPU pod is a value: 0 for every GPU resource the cluster has.
    assert got.series["kubegpu_pending_gpu_pods"] == {frozenset({("resource", "nvidia.com/gpu")}): 0}


def test_the_cache_serves_scrapes_within_the_ttl_and_a_failed_snapshot_is_unhealthy() -> None:
    calls: list[int] = []
    clock = ManualClock()

    def snapshot() -> Any:
        calls.append(1)
        if len(calls) == 3:
            raise OSError("cannot read snapshot")
        return snapshot_of(*stranded_cluster())

    scraper = Scraper(ClusterCollector(snapshot, Engine, POOL, ttl_s=10, clock=clock))
    try:
        scraper.scrape()
        clock.now = 9.9
        assert scraper.scrape().one("kubegpu_cluster_exporter_source_up") == 1 and len(calls) == 1
        clock.now = 10.0
        scraper.scrape()
        assert len(calls) == 2
        clock.now = 20.0
        got = scraper.scrape()
        assert got.one("kubegpu_cluster_exporter_source_up") == 0 and "kubegpu_pool_gpus" not in got.series
        assert scraper.get("/healthz")[:3:2] == (503, "cluster snapshot failed: cannot read snapshot\n")
    finally:
        scraper.close()


def test_once_on_the_demo_cluster() -> None:
    result = CliRunner().invoke(cluster_exporter, ["--demo", "--once"])
    assert result.exit_code == 0, result.output
    got = parse(result.output)
    # Counted from src/kubegpu/demo/cluster.yaml: training = gpu-train-01/02 (5 and 6 of 8 GPUs requested)
    # and gpu-reserved-01/02 (8 idle each); gpu-dgx-01 (training-nvlink) has 2 pods of 2 GPUs.
    assert got.one("kubegpu_pool_gpus", pool="training") == 32
    assert got.one("kubegpu_pool_gpus_allocated", pool="training") == 11
    assert got.one("kubegpu_pool_gpus_idle", pool="training") == 21
    assert got.one("kubegpu_pool_largest_idle_block_gpus", pool="training") == 8
    assert got.one("kubegpu_pool_gpus_idle", pool="training-nvlink") == 4
    assert got.one("kubegpu_pool_gpus_stranded", pool="training") == 0  # every demo node takes pods
    # Pending: six ask for nvidia.com/gpu, embed-server for the misspelt nvidia.com/gpus and llm-70b-int4 for
    # a MIG profile no node has (both "unadvertised"), data-prep only tolerates the GPU taint.
    pending = {dict(k)["resource"]: v for k, v in got.series["kubegpu_pending_gpu_pods"].items()}
    assert pending == {
        "nvidia.com/gpu": 6,
        "unadvertised": 2,
        "": 1,
        "nvidia.com/mig-1g.18gb": 0,
        "nvidia.com/mig-3g.71gb": 0,
    }
    assert got.one("kubegpu_pool_devices", pool="inference-shared", resource="nvidia.com/gpu") == 16


def test_once_with_a_pool_label_of_your_choice_and_bad_input(tmp_path: Any) -> None:
    path = tmp_path / "cluster.yaml"
    import yaml

    path.write_text(yaml.safe_dump_all([make_node("r1").gpus(2).label("example.com/rack", "r7").obj()]))
    result = CliRunner().invoke(
        cluster_exporter, ["--snapshot", str(path), "--pool-label", "example.com/rack", "--once"]
    )
    assert result.exit_code == 0, result.output
    assert parse(result.output).one("kubegpu_pool_gpus_idle", pool="r7") == 2
    missing = CliRunner().invoke(cluster_exporter, ["--snapshot", str(tmp_path / "nope"), "--once"])
    assert missing.exit_code == 1
    assert (
        missing.output.strip()
        == f"Error: cluster snapshot failed: {tmp_path / 'nope'}: no such file or directory"
    )
    both = CliRunner().invoke(cluster_exporter, ["--demo", "--kube", "--once"])
    assert both.exit_code == 2 and "give exactly one source" in both.output


def test_pending_counts_only_gpu_resources_and_bounds_the_resource_label() -> None:
    """QA /work/qa/exporter/cluster/nic-pending: ``nvidia.com/hostdev`` is the NVIDIA Network Operator's
    host-device NIC resource (Mellanox/network-operator, sriov/hostdev network docs), not a GPU; request
    names are user input, so GPU names no node advertises share one label value."""
    nic_node = make_node("n1").allocatable(cpu=32, **{"nvidia.com/hostdev": 4}).label(POOL, "net").obj()
    objects = [
        make_node("g1").gpus(8).label(POOL, "a").obj(),
        nic_node,
        make_pod("rdma").limits(**{"nvidia.com/hostdev": 1}).obj(),
        *(make_pod(f"t{i}").limits(**{f"nvidia.com/typo{i}": 1}).obj() for i in range(30)),
        make_pod("plural").gpu(1, "nvidia.com/gpus").obj(),
        make_pod("mig").gpu(1, "nvidia.com/mig-4g.71gb").obj(),
        make_pod("whole").gpu(1).obj(),
        make_pod("gpu-and-nic").gpu(1).limits(**{"nvidia.com/hostdev": 1}).obj(),
    ]
    scraper = serve(objects)
    try:
        got = scraper.scrape()
    finally:
        scraper.close()
    pending = {dict(k)["resource"]: v for k, v in got.series["kubegpu_pending_gpu_pods"].items()}
    assert pending == {"nvidia.com/gpu": 2, "unadvertised": 2}
