"""The pod's effective request: component-helpers ``resource.PodRequests`` (sidecar KEP-753 rules)."""

from __future__ import annotations

import pytest

from kubegpu.testing.builders import make_pod

Gi = 2**30 * 1000  # milli-bytes


def test_containers_add_up() -> None:
    pod = (
        make_pod("p")
        .requests(cpu="1", memory="1Gi")
        .container("b", {"cpu": "500m", "memory": "1Gi"})
        .parsed()
    )
    assert pod.requests == {"cpu": 1500, "memory": 2 * Gi}


def test_init_container_larger_than_containers_sets_the_request() -> None:
    """Init containers run one at a time before the app containers: the max wins, not the sum."""
    pod = make_pod("p").requests(cpu="1").init_container("init", {"cpu": "3"}).parsed()
    assert pod.requests["cpu"] == 3000


def test_sidecar_started_before_an_init_container_adds_to_it() -> None:
    """KEP-753 worked example: sidecar 500m declared first, then init 3: 3 + 0.5 = 3.5 beats 2 + 0.5."""
    pod = (
        make_pod("p")
        .requests(cpu="1")
        .container("b", {"cpu": "1"})
        .init_container("proxy", {"cpu": "500m"}, sidecar=True)
        .init_container("init", {"cpu": "3"})
        .parsed()
    )
    assert pod.requests["cpu"] == 3500


def test_sidecar_declared_after_an_init_container_does_not_add_to_it() -> None:
    pod = (
        make_pod("p")
        .requests(cpu="1")
        .init_container("init", {"cpu": "3"})
        .init_container("proxy", {"cpu": "500m"}, sidecar=True)
        .parsed()
    )
    # max(1 + 0.5 (sidecar runs with the app), 3 (init ran alone)) = 3
    assert pod.requests["cpu"] == 3000


def test_overhead_is_added_on_top() -> None:
    pod = make_pod("p").requests(cpu="1").overhead(cpu="250m").parsed()
    assert pod.requests["cpu"] == 1250


def test_gpu_requests_in_init_containers_follow_the_same_max_rule() -> None:
    pod = make_pod("p").gpu(1).parsed()
    raw = make_pod("p").gpu(1).init_container("warmup", {"nvidia.com/gpu": "2"}).obj()
    raw["spec"]["initContainers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "2"}
    from kubegpu.model.parse import parse_pod

    assert pod.requests["nvidia.com/gpu"] == 1000
    assert parse_pod(raw).requests["nvidia.com/gpu"] == 2000


@pytest.mark.parametrize(
    ("builder", "cpu", "memory"),
    [
        (lambda: make_pod("p"), 100, 200 * 2**20 * 1000),
        (lambda: make_pod("p").requests(cpu="2"), 2000, 200 * 2**20 * 1000),
        (lambda: make_pod("p").requests(cpu="0"), 0, 200 * 2**20 * 1000),
    ],
    ids=["nothing set gets both defaults", "cpu set keeps it", "explicit zero is not missing"],
)
def test_non_zero_requests_fill_only_missing_cpu_and_memory(builder, cpu: int, memory: int) -> None:  # type: ignore[no-untyped-def]
    """schedutil.DefaultMilliCPURequest=100 and DefaultMemoryRequest=200Mi apply to *missing* keys only."""
    pod = builder().parsed()
    assert pod.non_zero_requests["cpu"] == cpu
    assert pod.non_zero_requests["memory"] == memory


def test_pod_level_requests_replace_the_container_aggregate_for_cpu_and_memory() -> None:
    """PodLevelResources (beta, on by default in 1.34): spec.resources.requests wins for cpu/memory."""
    raw = make_pod("p").requests(cpu="1", memory="1Gi").gpu(1).obj()
    raw["spec"]["resources"] = {"requests": {"cpu": "4"}}
    from kubegpu.model.parse import parse_pod

    req = parse_pod(raw).requests
    assert req["cpu"] == 4000
    assert req["memory"] == Gi
    assert req["nvidia.com/gpu"] == 1000
