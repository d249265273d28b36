"""``kubegpu node doctor``: the GPU chain walked bottom-up, stopping at the first broken layer (R1, R12).

The recorded H200 (``shared/fixtures/nodes/h200-1gpu``, read from where it lies) really has no lspci
output, no toolkit on PATH and no CDI spec: doctor must pass PCI (sysfs), module (/proc/driver/nvidia),
/dev and NVML, and stop at the toolkit/CDI layer with the command that fixes it. Hand-built facts break
each other layer in turn. The layer order and the probes are kubegpu's reading of R1: a layer is only
meaningful if every one below it works.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubegpu.cli.node_cmd import node
from kubegpu.node.doctor import HostFacts, PluginDirFacts, Status, diagnose, parse_cuda, plugin_dir_facts

SHARED = Path(__file__).parents[2] / ".." / "shared" / "fixtures" / "nodes" / "h200-1gpu"
LAYERS = [
    "PCI device",
    "kernel module",
    "device nodes",
    "NVML",
    "container toolkit / CDI",
    "device plugin",
    "CUDA driver vs image",
]


@pytest.fixture(scope="module")
def h200() -> HostFacts:
    return HostFacts.from_recording(SHARED / "host.txt", SHARED / "nvml.json")


@pytest.fixture
def healthy(h200: HostFacts) -> HostFacts:
    """The recorded H200 as it would be with CDI and a registered plugin."""
    plugin = PluginDirFacts(
        "/var/lib/kubelet/device-plugins", True, ("nvidia-gpu.sock",), ("nvidia.com/gpu",)
    )
    return dataclasses.replace(h200, cdi_specs=("/etc/cdi/nvidia.yaml",), plugin=plugin)


def test_recorded_h200_stops_at_the_missing_toolkit_and_cdi_spec(h200: HostFacts) -> None:
    layers = diagnose(h200, parse_cuda("12.4"))
    assert [(step.name, step.status) for step in layers] == [
        ("PCI device", Status.OK),
        ("kernel module", Status.OK),
        ("device nodes", Status.OK),
        ("NVML", Status.OK),
        ("container toolkit / CDI", Status.BROKEN),
    ]
    pci, module, dev, nvml, cdi = layers
    assert (
        "0000:00:06.0" in pci.evidence
        and "class=0x030200" in pci.evidence
        and "lspci shows none" in pci.evidence
    )
    assert "580.159.04" in module.evidence  # from /proc/driver/nvidia/version: lsmod printed nothing
    assert dev.evidence == "/dev/nvidia-uvm /dev/nvidia-uvm-tools /dev/nvidia0 /dev/nvidiactl"
    assert nvml.evidence == "driver 580.159.04, CUDA 13.0, 1 GPU(s)"
    assert "/etc/cdi" in cdi.evidence and "nvidia-ctk cdi generate" in cdi.next_command


def test_a_healthy_node_passes_every_layer(healthy: HostFacts) -> None:
    layers = diagnose(healthy, (12, 4))
    assert [step.name for step in layers] == LAYERS
    assert {step.status for step in layers} == {Status.OK}


@pytest.mark.parametrize(
    ("broken", "layer", "next_command"),
    [
        ({"pci": (), "lspci": ()}, "PCI device", "lspci -nn -d 10de:"),
        ({"module": None}, "kernel module", "modprobe nvidia"),
        ({"dev_nodes": ("/dev/nvidiactl",)}, "device nodes", "nvidia-modprobe"),
        (
            {"nvml_driver": None, "nvml_error": "NVML init failed: Driver/library version mismatch"},
            "NVML",
            "nvidia-smi",
        ),
        ({"plugin": PluginDirFacts("/p", False, (), None)}, "device plugin", "systemctl status kubelet"),
        ({"plugin": PluginDirFacts("/p", True, (), None)}, "device plugin", "kubegpu node device-plugin"),
        ({"plugin": PluginDirFacts("/p", True, ("nvidia-gpu.sock",), ())}, "device plugin", "kubegpu node"),
        ({"nvml_cuda": 12020}, "CUDA driver vs image", "upgrade the driver"),
    ],
)
def test_made_up_broken_nodes_stop_at_their_broken_layer(
    healthy: HostFacts, broken: dict[str, object], layer: str, next_command: str
) -> None:
    layers = diagnose(dataclasses.replace(healthy, **broken), (12, 4))  # type: ignore[arg-type]
    assert [step.name for step in layers] == LAYERS[: LAYERS.index(layer) + 1]
    assert [step.status for step in layers] == [Status.OK] * (len(layers) - 1) + [Status.BROKEN]
    assert next_command in layers[-1].next_command


def test_layers_without_facts_are_not_checked_and_do_not_stop_the_walk(healthy: HostFacts) -> None:
    layers = diagnose(dataclasses.replace(healthy, plugin=None))
    assert [(step.name, step.status) for step in layers[-2:]] == [
        ("device plugin", Status.NOT_CHECKED),
        ("CUDA driver vs image", Status.NOT_CHECKED),
    ]


@pytest.fixture
def plugin_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="kgdoc", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_plugin_dir_facts_read_sockets_and_kubelets_checkpoint(plugin_dir: Path) -> None:
    # kubelet's checkpoint (pkg/kubelet/cm/devicemanager/checkpoint): Data.RegisteredDevices per resource.
    (plugin_dir / "kubelet.sock").touch()
    (plugin_dir / "nvidia-gpu.sock").touch()
    checkpoint = {"Data": {"PodDeviceEntries": None, "RegisteredDevices": {"nvidia.com/gpu": ["GPU-1"]}}}
    (plugin_dir / "kubelet_internal_checkpoint").write_text(json.dumps({**checkpoint, "Checksum": 1}))
    assert plugin_dir_facts(plugin_dir) == PluginDirFacts(
        str(plugin_dir), True, ("nvidia-gpu.sock",), ("nvidia.com/gpu",)
    )


def test_cli_on_the_recorded_h200_prints_the_walk_and_exits_1() -> None:
    runner = CliRunner()
    result = runner.invoke(
        node, ["doctor", "--host-facts", str(SHARED / "host.txt"), "--cuda", "12.4"], env={"COLUMNS": "250"}
    )
    assert result.exit_code == 1, result.output
    assert "container toolkit / CDI" in result.output
    assert "next: install nvidia-container-toolkit" in result.output
    as_json = runner.invoke(node, ["doctor", "--host-facts", str(SHARED / "host.txt"), "-o", "json"])
    assert [step["status"] for step in json.loads(as_json.output)] == ["ok"] * 4 + ["broken"]


def test_cli_refuses_a_cuda_version_that_is_not_major_minor() -> None:
    result = CliRunner().invoke(
        node, ["doctor", "--host-facts", str(SHARED / "host.txt"), "--cuda", "twelve"]
    )
    assert result.exit_code == 2 and "MAJOR.MINOR" in result.output


def test_from_host_reads_sysfs_proc_dev_and_cdi_under_a_root(plugin_dir: Path) -> None:
    # The real-host reader, on a hand-built tree: vendor 0x10de + class 0x0302 is an NVIDIA 3D controller.
    root = plugin_dir
    pci = root / "sys/bus/pci/devices/0000:17:00.0"
    pci.mkdir(parents=True)
    for name, value in {"vendor": "0x10de", "class": "0x030200", "device": "0x2335"}.items():
        (pci / name).write_text(value + "\n")
    other = root / "sys/bus/pci/devices/0000:00:01.0"
    other.mkdir(parents=True)
    for name, value in {"vendor": "0x8086", "class": "0x030000", "device": "0x1234"}.items():
        (other / name).write_text(value + "\n")
    (root / "proc").mkdir()
    (root / "proc/modules").write_text("nvidia_uvm 1 0 - Live 0x0\nnvidia 2 1 nvidia_uvm, Live 0x0\n")
    (root / "dev").mkdir()
    for dev in ("nvidia0", "nvidiactl"):
        (root / "dev" / dev).touch()
    (root / "etc/cdi").mkdir(parents=True)
    (root / "etc/cdi/nvidia.yaml").write_text("cdiVersion: 0.5.0\nkind: nvidia.com/gpu\n")
    (root / "etc/cdi/other.yaml").write_text("kind: example.com/fpga\n")
    facts = HostFacts.from_host(None, root=root)
    assert facts.pci == ("/sys/bus/pci/devices/0000:17:00.0 class=0x030200 device=0x2335",)
    assert facts.module == "/proc/modules: nvidia 2 1 nvidia_uvm, Live 0x0"
    assert facts.dev_nodes == ("/dev/nvidia0", "/dev/nvidiactl")
    assert facts.cdi_specs == ("/etc/cdi/nvidia.yaml",)
    assert facts.plugin is None
