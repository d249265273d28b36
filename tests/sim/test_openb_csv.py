"""openb CSV readers: both pod layouts, the node list, and bad rows named by file, line and column."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubegpu.errors import InputError
from kubegpu.model.resources import CPU, MEMORY, NVIDIA_GPU
from kubegpu.scheduler.gpu_share import GPU_MILLI_RESOURCE, pod_shape
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
