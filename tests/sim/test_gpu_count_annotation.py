"""A ``kubegpu.io/gpu-count`` annotation that makes a pod's ``kubegpu.io/gpu-milli`` request no GPU shape.

The API server takes any annotation text (apimachinery ``pkg/api/validation/objectmeta.go``
``ValidateAnnotations`` checks the keys and the 256 KiB total only), so the pod is kept; the packing
scheduler's GpuShare refuses it at PreFilter (UnschedulableAndUnresolvable: no node can help) with the
values and why, and nothing raises. The rule is the FGD simulator's (hkust-adsl/kubernetes-scheduler-simulator
``pkg/type/open-gpu-share/utils/pod.go`` ``GetGpuAffinityFromPodAnnotation``: a share is count 1 with milli
< 1000, whole GPUs are milli = 1000 each, any other shape panics there) and the openb data's (README:
``gpu_milli`` is for ``num_gpu == 1``); the count is read as Go's ``strconv.Atoi`` reads it (sign, ASCII
digits). One deviation: a count the simulator reads as 0 (0, negative, not a number) means "no GPU" there,
while this pod requests ``kubegpu.io/gpu-milli``, so it is refused, not taken for a CPU pod. Every expected
text below is written from that rule by hand: ``<request> with <annotation>: <why>``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubegpu.cli.sim_cmd import simulate
from kubegpu.errors import InputError
from kubegpu.model.names import GPU_COUNT_ANNOTATION
from kubegpu.model.objects import Pod
from kubegpu.scheduler.gpu_shapes import gpu_request_problem, pod_shape
from kubegpu.scheduler.registry import PACKING_POLICIES
from kubegpu.scheduler.status import Code
from kubegpu.sim.openb import read_pods
from tests.sim.builders import Bench, node, pod, typical
from tests.sim.cli_inputs import data_folder

NOT_A_COUNT = "not a GPU count (a whole number from 1)"


def annotated(p: Pod, value: str | None) -> Pod:
    return dataclasses.replace(p, annotations={} if value is None else {GPU_COUNT_ANNOTATION: value})


@pytest.mark.parametrize(
    ("count", "total", "shape"),
    [
        (1, 1, True), (1, 460, True), (1, 1000, True),  # a share of one GPU, up to all of it
        (2, 2000, True), (8, 8000, True),  # whole GPUs, 1000 each
        (1, 1001, False), (1, 1500, False),  # more than one GPU holds
        (2, 1500, False), (2, 1000, False),  # 750 / 500 on each of 2 GPUs: a share of several GPUs
        (3, 1000, False),  # does not even divide (333.3 each)
        (2, 2400, False),  # 1200 per GPU
    ],
)  # fmt: skip
def test_the_rule_is_a_share_of_one_gpu_or_whole_gpus(count: int, total: int, shape: bool) -> None:
    assert (gpu_request_problem(count, total) == "") is shape


@pytest.mark.parametrize(
    ("value", "total", "said"),
    [
        ("two", 1500, 'annotation kubegpu.io/gpu-count: "two": ' + NOT_A_COUNT),
        ("0", 1500, 'annotation kubegpu.io/gpu-count: "0": ' + NOT_A_COUNT),
        ("-1", 500, 'annotation kubegpu.io/gpu-count: "-1": ' + NOT_A_COUNT),
        ("+-1", 500, 'annotation kubegpu.io/gpu-count: "+-1": ' + NOT_A_COUNT),  # one sign only
        ("-0", 500, 'annotation kubegpu.io/gpu-count: "-0": ' + NOT_A_COUNT),
        (" 2", 2000, 'annotation kubegpu.io/gpu-count: " 2": ' + NOT_A_COUNT),  # int() would take it
        ("2.0", 2000, 'annotation kubegpu.io/gpu-count: "2.0": ' + NOT_A_COUNT),
        ("", 500, 'annotation kubegpu.io/gpu-count: "": ' + NOT_A_COUNT),
        ("\u0662", 2000, 'annotation kubegpu.io/gpu-count: "\\u0662": ' + NOT_A_COUNT),  # Arabic-Indic 2
        ("1" * 5000, 500, 'annotation kubegpu.io/gpu-count: "' + "1" * 40 + '"…: ' + NOT_A_COUNT),
        ("2", 1500, 'annotation kubegpu.io/gpu-count: "2": 2 GPUs are taken whole (2 × 1000 = 2000 '
         "milli-GPU), not 1500"),
        ("3", 1000, 'annotation kubegpu.io/gpu-count: "3": 3 GPUs are taken whole (3 × 1000 = 3000 '
         "milli-GPU), not 1000"),
        (None, 1500, "no annotation kubegpu.io/gpu-count (1 GPU): one GPU has 1000 milli-GPU, not 1500"),
        ("1", 1500, 'annotation kubegpu.io/gpu-count: "1": one GPU has 1000 milli-GPU, not 1500'),
    ],
)  # fmt: skip
def test_a_request_that_is_no_shape_is_kept_with_the_values_and_why(
    value: str | None, total: int, said: str
) -> None:
    shape = pod_shape(annotated(pod("p", 1, total), value))
    assert shape.problem == f"kubegpu.io/gpu-milli {total} with {said}"
    assert (shape.count, shape.milli) == (0, 0)  # a reader that does not look sees no GPU asked


@pytest.mark.parametrize(
    ("value", "total", "count", "milli"),
    [(None, 460, 1, 460), ("1", 1000, 1, 1000), ("2", 2000, 2, 1000), ("02", 2000, 2, 1000),
     ("+2", 2000, 2, 1000)],
)  # fmt: skip
def test_valid_requests_keep_their_shape(value: str | None, total: int, count: int, milli: int) -> None:
    shape = pod_shape(annotated(pod("p", 1, total), value))  # ("02", "+2": Go's strconv.Atoi reads 2)
    assert (shape.count, shape.milli, shape.problem) == (count, milli, "")


def test_a_cpu_pod_ignores_the_annotation() -> None:
    assert pod_shape(annotated(pod("p", 0), "two")) == pod_shape(pod("p", 0))


@pytest.mark.parametrize("policy", list(PACKING_POLICIES))
def test_every_packing_policy_refuses_the_pod_at_prefilter_and_goes_on(policy: str) -> None:
    """GpuShare's PreFilter stops the cycle before any Filter or Score plugin reads the shape; the message
    is kube-scheduler's ``0/N nodes are available: <PreFilter message>.``; a good pod after it still goes."""
    b = Bench([node("n0", 4), node("n1", 8)], policy, typical((4000, 1, 500, 0.5), (4000, 1, 1000, 0.5)))
    bad = annotated(pod("bad", 2, 1000), "two")
    result = b.scheduler.schedule_one(bad, preempt=False)
    assert result.node is None and bad.key not in b.ledger.held
    assert result.message == (
        "0/2 nodes are available: pod's GPU request is invalid: kubegpu.io/gpu-milli 2000 with annotation "
        'kubegpu.io/gpu-count: "two": not a GPU count (a whole number from 1).'
    )
    assert result.diagnosis is not None
    absent = result.diagnosis.absent
    assert absent is not None and (absent.code, absent.plugin) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "GpuShare",
    )
    assert b.schedule(pod("good", 2, 1000))[0] is not None


def test_a_share_of_several_gpus_is_refused_not_placed_on_no_gpu() -> None:
    """n0's GPUs have 600 free each. A 2 × 500 pod passes GpuShare's Filter there (its second most free GPU
    has ≥ 500), but Reserve takes fully free GPUs for a pod of several (``exclusive_gpus``), finds none
    and recorded none: the pod was placed holding no GPU in the ledger. Now it is refused, with why."""
    b = Bench([node("n0", 2)], "BestFit", typical((4000, 1, 500, 1.0)))
    b.place(pod("a", 1, 400), "n0", (0,))
    b.place(pod("b", 1, 400), "n0", (1,))
    result = b.scheduler.schedule_one(pod("h", 2, 500), preempt=False)
    assert result.node is None
    assert result.message == (
        "0/1 nodes are available: pod's GPU request is invalid: kubegpu.io/gpu-milli 1000 with annotation "
        'kubegpu.io/gpu-count: "2": 2 GPUs are taken whole (2 × 1000 = 2000 milli-GPU), not 1000.'
    )
    assert b.ledger.gpu_left[0].tolist() == [600, 600]


def test_a_refused_pod_is_not_in_a_cpu_pods_equivalence_class() -> None:
    """A refused pod's shape has count 0 like a CPU-only pod's; were their filter signs equal, the cached
    verdict of the CPU-only twin scheduled first would place the refused one."""
    b = Bench([node("n0", 4)], "BestFit", typical((4000, 1, 500, 1.0)))
    cpu_twin = annotated(pod("twin", 0), None)
    assert b.schedule(cpu_twin)[0] == "n0"
    bad = annotated(pod("bad", 1, 1500), None)  # same CPU and memory, 1500 milli on one GPU
    assert b.scheduler.framework.signature(bad) != b.scheduler.framework.signature(cpu_twin)
    assert b.schedule(bad)[0] is None


def test_simulate_names_the_pod_the_annotation_and_its_value(tmp_path: Path) -> None:
    workload = tmp_path / "pod.yaml"
    workload.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: train-bad\n  namespace: default\n"
        "  annotations: {kubegpu.io/gpu-count: two}\nspec:\n  containers:\n  - name: main\n"
        "    image: busybox\n    resources:\n      requests: {cpu: '4', kubegpu.io/gpu-milli: '1500'}\n"
        "      limits: {kubegpu.io/gpu-milli: '1500'}\n"
    )
    args = ["--data", str(data_folder(tmp_path)), "--trace", "tiny", "--workload", str(workload)]
    result = CliRunner().invoke(simulate, [*args, "--policy", "FGD"])
    assert result.exit_code == 0, result.output
    assert result.exception is None
    assert (
        "note: pod default/train-bad is never placed: kubegpu.io/gpu-milli 1500 with annotation "
        'kubegpu.io/gpu-count: "two": not a GPU count (a whole number from 1)'
    ) in result.output


def test_the_openb_reader_refuses_rows_by_the_same_rule(tmp_path: Path) -> None:
    path = tmp_path / "pods.csv"
    path.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,4000,100,2,500\n")
    with pytest.raises(InputError) as err:
        read_pods(path)
    assert str(err.value) == (
        f"{path}:2: gpu_milli: num_gpu 2 × gpu_milli 500: 2 GPUs are taken whole (2 × 1000 = 2000 "
        "milli-GPU), not 1000"
    )
