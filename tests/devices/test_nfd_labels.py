"""GFD label values sanitised as upstream, and labels written as an NFD local feature file.

Pins GFD's ``getProductName``/``sanitise`` (k8s-device-plugin ``internal/lm``): characters other than
``A-Za-z0-9-_.`` and space are dropped and runs of spaces become one ``-``; and NFD's local feature file
format (nfd-worker ``source/local``): ``name=value`` lines, ``#`` comments, files under
``/etc/kubernetes/node-feature-discovery/features.d/``, dot files ignored (so the writer renames a
``.``-prefixed temporary file into place).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubegpu.cli.node_cmd import node
from kubegpu.devices import NodeInventory, PluginConfig, gfd_labels
from kubegpu.devices.labels import nfd_feature_text, sanitise
from kubegpu.errors import InputError

H200 = Path(__file__).parents[2] / ".." / "shared" / "fixtures" / "nodes" / "h200-1gpu" / "nvml.json"


@pytest.mark.parametrize(
    ("raw", "label"),
    [
        ("NVIDIA H200", "NVIDIA-H200"),
        ("Tesla V100-SXM2-16GB", "Tesla-V100-SXM2-16GB"),
        ("NVIDIA A100-SXM4-40GB (MIG)", "NVIDIA-A100-SXM4-40GB-MIG"),  # parentheses dropped
        ("  NVIDIA  RTX   6000 Ada ", "NVIDIA-RTX-6000-Ada"),  # runs of spaces: one dash, no edge dashes
        ("GeForce RTX 4090/Ti+", "GeForce-RTX-4090Ti"),
    ],
)
def test_product_parts_are_sanitised_as_gfd_does(raw: str, label: str) -> None:
    assert sanitise(raw) == label


def test_product_label_of_an_odd_model_name_is_a_valid_label_value(h200: NodeInventory) -> None:
    gpu = dataclasses.replace(h200.devices[0], name="NVIDIA H200 (141GB) [PCIe]")
    labels = gfd_labels(dataclasses.replace(h200, devices=(gpu,)), PluginConfig())
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H200-141GB-PCIe"
    nfd_feature_text(labels)  # would raise on an invalid value


def test_feature_text_is_name_value_lines_after_a_comment(h200: NodeInventory) -> None:
    labels = gfd_labels(h200, PluginConfig())
    comment, *lines = nfd_feature_text(labels).splitlines()
    assert comment.startswith("# ")
    assert dict(line.split("=", 1) for line in lines) == labels
    assert "nvidia.com/gpu.product=NVIDIA-H200" in lines
    assert "nvidia.com/gpu.present=true" in lines


@pytest.mark.parametrize(
    "labels",
    [{"nvidia.com/gpu.product": "x" * 64}, {"nvidia.com/gpu.product": "-x"}, {"nvidia.com/bad key": "1"}],
)
def test_invalid_labels_are_refused_not_left_for_nfd_to_drop(labels: dict[str, str]) -> None:
    with pytest.raises(InputError):
        nfd_feature_text(labels)


def test_cli_writes_the_feature_file_in_place_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "features.d" / "kubegpu"
    result = CliRunner().invoke(
        node, ["labels", "--reading", str(H200), "--nfd-feature-file", str(target), "-o", "json"]
    )
    assert result.exit_code == 0, result.output
    lines = [line for line in target.read_text().splitlines() if not line.startswith("#")]
    assert "nvidia.com/cuda.driver.major=580" in lines
    assert [p.name for p in target.parent.iterdir()] == ["kubegpu"]
