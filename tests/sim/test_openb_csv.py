"""openb CSV readers: both pod layouts, the node list, and bad rows named by file, line and column."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubegpu.errors import InputError
from kubegpu.model.resources import CPU, MEMORY, NVIDIA_GPU
from kubegpu.scheduler.gpu_shapes import GPU_MILLI_RESOURCE, pod_shape
from kubegpu.sim.openb import read_nodes, read_pods, to_node, to_pod

LONG = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
SHORT = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "pods.csv"
    p.write_text(text)
    return p


def test_eleven_column_layout(tmp_path: Path) -> None:
    rows = (
        "openb-pod-0017,88000,327680,8,1000,,Burstable,Succeeded,9437497,10769854,9437497\n"
        "openb-pod-0035,16000,32768,1,220,V100M16|V100M32,LS,Pending,9967058,9968575,\n"
    )
    big, share = read_pods(write(tmp_path, LONG + rows))
    assert (big.num_gpu, big.gpu_milli, big.gpu_spec, big.scheduled_time) == (8, 1000, None, 9437497)
    assert share.gpu_spec == frozenset({"V100M16", "V100M32"})
    assert share.scheduled_time is None  # empty for a pod the trace never scheduled
    p = to_pod(share)
    # 16 CPU, 32 GiB, 0.22 of one GPU → kubegpu.io/gpu-milli "220" (milli-units ×1000)
    assert p.requests[CPU] == 16000 and p.requests[MEMORY] == 32768 * 1024 * 1024 * 1000
    assert p.requests[GPU_MILLI_RESOURCE] == 220_000
    assert (pod_shape(p).count, pod_shape(p).milli) == (1, 220)
    assert p.required_affinity is not None
    assert p.required_affinity[0].match_expressions[0].values == ("V100M16", "V100M32")


def test_five_column_layout(tmp_path: Path) -> None:
    (pod,) = read_pods(write(tmp_path, SHORT + "openb-pod-9000,32000,65536,4,1000\n"))
    assert (pod.num_gpu, pod.gpu_milli, pod.creation_time, pod.gpu_spec) == (4, 1000, None, None)
    assert pod_shape(to_pod(pod)).total_milli == 4000


def test_node_list(tmp_path: Path) -> None:
    p = tmp_path / "nodes.csv"
    p.write_text("sn,cpu_milli,memory_mib,gpu,model\nopenb-node-0000,64000,262144,2,P100\n")
    (n,) = read_nodes(p)
    node = to_node(n)
    assert node.allocatable[NVIDIA_GPU] == 2000 and node.allocatable[GPU_MILLI_RESOURCE] == 2_000_000
    assert node.labels["nvidia.com/gpu.product"] == "P100"


@pytest.mark.parametrize(
    ("row", "where", "column"),
    [
        ("p,4x,100,1,1000", ":3", "cpu_milli"),  # not an integer
        ("p,4000,100,1,1200", ":3", "gpu_milli"),  # more than one GPU per GPU
        ("p,4000,100,2,500", ":3", "gpu_milli"),  # a share of a GPU on 2 GPUs
        ("p,4000,100,0,500", ":3", "gpu_milli"),  # milli-GPU without a GPU
        ("p,4000,100,1", ":3", ""),  # a field short
        (",4000,100,1,1000", ":3", "name"),
    ],
)
def test_bad_rows_name_file_line_and_column(tmp_path: Path, row: str, where: str, column: str) -> None:
    path = write(tmp_path, SHORT + "ok,1000,100,0,0\n" + row + "\n")
    with pytest.raises(InputError) as err:
        read_pods(path)
    assert err.value.source == f"{path}{where}"
    assert err.value.field == column


def test_unknown_header(tmp_path: Path) -> None:
    path = write(tmp_path, "name,cpu\np,1\n")
    with pytest.raises(InputError, match="unexpected header") as err:
        read_pods(path)
    assert err.value.source == f"{path}:1"


def test_to_pod_and_renamed_are_the_pods_the_constructor_builds() -> None:
    """``to_pod`` builds the trace row's pod and ``renamed`` copies a built pod under another name: both
    must give the object ``Pod(...)`` gives, ``key`` included (the cached key is the name's, not the
    original's)."""
    from kubegpu.model.names import GPU_COUNT_ANNOTATION, GPU_PRODUCT_LABEL
    from kubegpu.model.objects import Container, NodeSelectorTerm, Pod, Requirement
    from kubegpu.sim.openb import NAMESPACE, TracePod, renamed

    row = TracePod("openb-pod-0017", 8000, 30720, 2, 1000, frozenset({"V100M32", "A100"}))
    pod = to_pod(row)
    requests = {CPU: 8000, MEMORY: 30720 * 1024 * 1024 * 1000, GPU_MILLI_RESOURCE: 2000 * 1000}
    want = Pod(
        namespace=NAMESPACE,
        name="openb-pod-0017",
        annotations={GPU_COUNT_ANNOTATION: "2"},
        containers=(Container(name="main", requests=requests, limits=dict(requests)),),
        required_affinity=(
            NodeSelectorTerm(match_expressions=(Requirement(GPU_PRODUCT_LABEL, "In", ("A100", "V100M32")),)),
        ),
        scheduler_name="kubegpu-packing",
        source="openb",
    )
    assert pod == want
    assert pod.key == "openb/openb-pod-0017" and pod.requests == requests
    copy = renamed(pod, "openb-pod-0017-tuned-3")
    assert copy.key == "openb/openb-pod-0017-tuned-3" and pod.key == "openb/openb-pod-0017"
    assert copy.requests == requests and copy.name == "openb-pod-0017-tuned-3"
    # values cached on one built pod never reach the next pod built
    assert pod.non_zero_requests and pod.host_ports == ()  # (cached on ``pod`` now, as key and requests)
    cpu_only = to_pod(TracePod("cpu-pod", 4000, 1024, 0, 0))
    assert not {"key", "requests", "non_zero_requests", "host_ports", "_derived"} & vars(cpu_only).keys()
    assert cpu_only.key == "openb/cpu-pod" and cpu_only.requests == {
        CPU: 4000,
        MEMORY: 1024 * 1024 * 1024 * 1000,
    }
    assert cpu_only.annotations == {} and cpu_only.required_affinity is None
    assert cpu_only.annotations is not pod.annotations  # each pod its own annotations


def test_rows_with_one_spec_key_give_pods_that_differ_in_name_only() -> None:
    """A packing run builds one pod per ``pod_spec_key`` and renames it for every other row of that key, so
    the key must hold everything ``to_pod`` reads besides the name: rows equal in it build equal pods once
    renamed; rows differing in any one of CPU, memory, GPU count, milli per GPU or GPU models differ."""
    import dataclasses

    from kubegpu.sim.openb import TracePod, pod_spec_key, renamed

    base = TracePod("a", 8000, 30720, 2, 500, frozenset({"A100"}), qos="LS", creation_time=5)
    twin = TracePod("b", 8000, 30720, 2, 500, frozenset({"A100"}), qos="BE", creation_time=9)
    assert pod_spec_key(base) == pod_spec_key(twin)
    assert renamed(to_pod(base), "b") == to_pod(twin)
    for change in (
        {"cpu_milli": 4000}, {"memory_mib": 1024}, {"num_gpu": 1}, {"gpu_milli": 1000}, {"gpu_spec": None},
    ):  # fmt: skip
        other = dataclasses.replace(base, **change)  # type: ignore[arg-type]
        assert pod_spec_key(other) != pod_spec_key(base)
        assert dataclasses.replace(to_pod(other), name="a") != to_pod(base)
