"""``kubegpu node`` end to end: readings in, inventory/labels/CDI out, bad input in one line, serve."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from kubegpu.cli.node_cmd import node
from kubegpu.devices import load_reading, parse_reading
from kubegpu.node.discovery import NvmlBackend, NvmlUnavailable

REPO = Path(__file__).parents[2]
H200 = REPO / ".." / "shared" / "fixtures" / "nodes" / "h200-1gpu" / "nvml.json"
DGX1 = REPO / "tests" / "fixtures" / "nodes" / "dgx1-8xv100.json"


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(node, list(args), env={"COLUMNS": "200"})
    return result.exit_code, result.output


def test_discover_json_writes_a_reading_that_reads_back_to_the_same_inventory() -> None:
    code, out = _run("discover", "--reading", str(H200), "-o", "json")
    assert code == 0
    assert parse_reading(json.loads(out), source=str(H200)) == load_reading(H200)


def test_discover_table_shows_each_gpu_and_marks_generated_readings() -> None:
    code, out = _run("discover", "--reading", str(DGX1))
    assert code == 0
    assert "generated reading" in out
    assert out.count("Tesla V100-SXM2-16GB") == 8
    assert "GPU-0000d6e1-0000-4000-8000-000000000007" in out


def test_labels_follow_the_time_slicing_config(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 3}]}}")
    code, out = _run("labels", "--reading", str(H200), "--config", str(config), "-o", "json")
    assert code == 0
    labels = json.loads(out)
    assert (labels["nvidia.com/gpu.replicas"], labels["nvidia.com/gpu.product"]) == (
        "3",
        "NVIDIA-H200-SHARED",
    )


def test_cdi_yaml_names_the_gpu_by_index_and_uuid() -> None:
    code, out = _run("cdi", "--reading", str(H200))
    assert code == 0
    spec = yaml.safe_load(out)
    assert spec["kind"] == "nvidia.com/gpu"
    assert [d["name"] for d in spec["devices"]] == ["0", "GPU-5f3c0a7e-1d2b-4c8e-9a6f-0b1c2d3e4f50", "all"]


def test_broken_reading_is_one_line_without_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "nvml.json"
    bad.write_text('{"driver": "1.2", "nvml": "x", "cuda_driver": 12000, "devices": [{"index": "zero"}]}')
    code, out = _run("discover", "--reading", str(bad))
    assert code == 2  # bad input: exit 2, as on every command
    assert out == f"Error: {bad}: device 0: index: expected an integer, got 'zero'\n"


def test_bad_config_is_one_line_naming_the_field(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("flags: {migStrategy: sometimes}")
    code, out = _run("labels", "--reading", str(H200), "--config", str(config))
    assert code == 2
    assert out.startswith(f"Error: {config}: flags.migStrategy: unknown MIG strategy: sometimes")
    assert "Traceback" not in out


def test_recorded_backend_needs_a_reading() -> None:
    code, out = _run("discover", "--backend", "recorded")
    assert code == 2 and "--reading" in out


def _nvml_present() -> bool:
    try:
        NvmlBackend().reading()
    except NvmlUnavailable:
        return False
    return True


@pytest.mark.skipif(_nvml_present(), reason="this host has NVML; the message is for hosts without it")
def test_nvml_backend_without_a_driver_says_so_in_one_line() -> None:
    code, out = _run("discover")
    assert code == 1
    assert out.startswith("Error: NVML") or out.startswith("Error: nvidia-ml-py")


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="kgcli", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


# The subprocess contract (register, ListAndWatch, Allocate, re-register, retry before kubelet is up,
# SIGTERM) is in test_device_plugin_command.py.


def test_per_node_config_is_picked_by_the_label_value_like_nvidias_config_manager(tmp_path: Path) -> None:
    """NVIDIA's config manager: the device plugin ConfigMap's keys are files; the node's
    nvidia.com/device-plugin.config label names one, DEFAULT_CONFIG applies when it is unset."""
    from kubegpu.cli.node_cmd import select_config_file
    from kubegpu.errors import InputError

    (tmp_path / "default").write_text("version: v1\n")
    (tmp_path / "ts-4.yaml").write_text("version: v1\n")
    assert select_config_file(tmp_path, "ts-4", "default") == tmp_path / "ts-4.yaml"
    assert select_config_file(tmp_path, "", "default") == tmp_path / "default"
    with pytest.raises(InputError, match=r"no config named 'mig' \(available: default, ts-4.yaml\)"):
        select_config_file(tmp_path, "mig", "default")


def test_ignored_config_field_is_a_warning_not_a_refusal(tmp_path: Path) -> None:
    # k8s-device-plugin v0.20.0 decodes with sigs.k8s.io/yaml (non-strict): unknown keys are dropped
    config = tmp_path / "config.yaml"
    config.write_text("flags: {migStrategy: none, mofedEnable: true}")
    code, out = _run("labels", "--reading", str(H200), "--config", str(config))
    assert code == 0
    assert (
        f"warning: {config}: flags.mofedEnable: unknown field, ignored as the NVIDIA plugin ignores it "
        "(did you mean 'mofedEnabled'?)" in out
    )
