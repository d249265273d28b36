"""``diagnose`` lists each unreadable input once.

A node's ``kubegpu.io/device-plugin-config`` annotation that does not parse is reported as an input error
when the device models are built; the findings' check for scattered free GPUs (run whenever a GPU pod is
Pending) must reuse diagnose's engine rather than build the models, and the error, a second time.
"""

from __future__ import annotations

from kubegpu.explain.diagnose import diagnose
from kubegpu.explain.engine import Engine
from kubegpu.model.names import DEVICE_PLUGIN_CONFIG_ANNOTATION as CONFIG_ANNOTATION
from kubegpu.model.snapshot import build_snapshot
from kubegpu.testing.builders import make_node, make_pod

# the NVIDIA device plugin's config file: ``sharing`` is a mapping (timeSlicing / mps), never a number
BAD_CONFIG = "version: v1\nsharing: 7\n"


def test_a_bad_plugin_config_is_one_input_error_with_a_pending_gpu_pod() -> None:
    bad = make_node("bad").gpus(4).obj()
    bad["metadata"]["annotations"] = {CONFIG_ANNOTATION: BAD_CONFIG}
    # 4 + 4 free GPUs on two nodes, 8 asked: the pod is Pending and the scattered-GPU check runs
    objs = [bad, make_node("ok").gpus(4).obj(), make_pod("p").gpu(8).obj()]
    report = diagnose(Engine(build_snapshot([("t", o) for o in objs])))
    assert len(report.input_errors) == 1
    assert report.input_errors[0].startswith(
        f"t: Node bad: metadata.annotations[{CONFIG_ANNOTATION}]: sharing:"
    )
    assert report.to_dict()["inputErrors"] == report.input_errors
    # the check still ran on diagnose's engine: 8 free in total, at most 4 on one node
    assert [f.pitfall for f in report.findings if f.pitfall == "R17.5"] == ["R17.5"]
