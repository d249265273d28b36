"""GFD's ``nvidia.com/gpu.machine`` and ``nvidia.com/gpu.mode`` labels, pinned to GFD's source and a real node.

Upstream, NVIDIA/k8s-device-plugin at 1b826acc6af3079d8923bac395c3124b8861a9a6:

* ``internal/lm/machine-type.go``: ``newMachineTypeLabeler`` labels ``sanitise(getMachineType(path))``;
  ``getMachineType`` returns the file's text through ``strings.TrimSpace``; a read error is logged and the
  machine type becomes ``machineTypeUnknown`` ("unknown"). ``sanitise`` (``internal/lm/resource.go``) drops
  every character but ``[A-Za-z0-9-_. ]`` and joins the remaining words with ``-``.
* ``cmd/gpu-feature-discovery/main.go``: ``--machine-type-file`` defaults to ``/sys/class/dmi/id/product_name``.
* ``internal/lm/nvml.go``: ``newGPUModeLabeler`` gives "unknown" when a class cannot be read (a warning since
  bd00e7de1, "Raise a warning instead of an error if GPU mode labeler fails", first in v0.18.0; the label
  itself came with b37dd9c61, PR #768, first in v0.16.0); ``getModeForClasses``: no classes or classes that
  differ → "unknown", go-nvlib ``PCIVgaControllerClass`` 0x030000 → "graphics", ``PCI3dControllerClass``
  0x030200 → "compute", any other → "unknown". ``internal/lm/nvml_test.go`` ``TestGPUModeLabeler`` is the
  table below (its first two descriptions have "compute" and "graphics" swapped; the classes and expected
  labels are what it checks).
* ``NewDeviceLabeler`` returns no labels at all for a node without GPUs and otherwise merges both labelers in
  whatever the MIG strategy (``tests/expected-output.txt`` lists ``gpu.machine`` and ``gpu.mode``).

Real output: an 8× H100 80GB HBM3 Lambda on-demand instance (a QEMU Q35 VM) with the GPU Operator, the
labels ``kubectl describe nodes`` printed, in the KubeAI tutorial of Lambda's docs:
cbrownstein-lambda/lambda-docs-mkdocs@29870d6f53f940b8bee6c7a74756289d2d233677
``docs/education/large-language-models/kubeai-hermes-3.md``. QEMU writes the Q35 machine's SMBIOS product
name as "Standard PC (Q35 + ICH9, 2009)" (qemu/qemu ``hw/i386/pc_q35.c`` ``smbios_set_defaults``), which
the kernel shows in ``/sys/class/dmi/id/product_name``.
"""

from __future__ import annotations

import dataclasses

import pytest
from device_readings import GENERATED, SHARED_H200

from kubegpu.devices import MigStrategy, NodeInventory, PluginConfig, gfd_labels, load_reading
from kubegpu.devices.inventory import MIB
from kubegpu.devices.labels import gpu_mode, machine_label

Q35_PRODUCT_NAME = "Standard PC (Q35 + ICH9, 2009)"  # qemu hw/i386/pc_q35.c

# `kubectl describe nodes | grep nvidia.com` on the Lambda node (kubeai-hermes-3.md, commit above).
LAMBDA_H100_NODE = """
nvidia.com/cuda.driver-version.full=535.129.03
nvidia.com/cuda.driver-version.major=535
nvidia.com/cuda.driver-version.minor=129
nvidia.com/cuda.driver-version.revision=03
nvidia.com/cuda.driver.major=535
nvidia.com/cuda.driver.minor=129
nvidia.com/cuda.driver.rev=03
nvidia.com/cuda.runtime-version.full=12.2
nvidia.com/cuda.runtime-version.major=12
nvidia.com/cuda.runtime-version.minor=2
nvidia.com/cuda.runtime.major=12
nvidia.com/cuda.runtime.minor=2
nvidia.com/gfd.timestamp=1729173628
nvidia.com/gpu-driver-upgrade-state=upgrade-done
nvidia.com/gpu.compute.major=9
nvidia.com/gpu.compute.minor=0
nvidia.com/gpu.count=8
nvidia.com/gpu.deploy.container-toolkit=true
nvidia.com/gpu.deploy.dcgm=true
nvidia.com/gpu.deploy.dcgm-exporter=true
nvidia.com/gpu.deploy.device-plugin=true
nvidia.com/gpu.deploy.driver=pre-installed
nvidia.com/gpu.deploy.gpu-feature-discovery=true
nvidia.com/gpu.deploy.mig-manager=true
nvidia.com/gpu.deploy.node-status-exporter=true
nvidia.com/gpu.deploy.operator-validator=true
nvidia.com/gpu.family=hopper
nvidia.com/gpu.machine=Standard-PC-Q35-ICH9-2009
nvidia.com/gpu.memory=81559
nvidia.com/gpu.mode=compute
nvidia.com/gpu.present=true
nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3
nvidia.com/gpu.replicas=1
nvidia.com/gpu.sharing-strategy=none
nvidia.com/mig.capable=true
nvidia.com/mig.config=all-disabled
nvidia.com/mig.config.state=success
nvidia.com/mig.strategy=single
nvidia.com/mps.capable=false
nvidia.com/vgpu.present=false
"""
# Labels on that node that kubegpu does not make: GFD's timestamp and vGPU labeler, the GPU Operator's own.
NOT_OURS = ("nvidia.com/gfd.", "nvidia.com/vgpu.", "nvidia.com/gpu.deploy.", "nvidia.com/gpu-driver-upgrade")
NOT_OURS_KEYS = ("nvidia.com/mig.config", "nvidia.com/mig.config.state")


def _with_classes(inv: NodeInventory, *classes: str | None) -> NodeInventory:
    gpu = inv.devices[0]
    devices = tuple(
        dataclasses.replace(gpu, index=i, uuid=f"{gpu.uuid[:-2]}{i:02x}", pci_class=c)
        for i, c in enumerate(classes)
    )
    return dataclasses.replace(inv, devices=devices)


# internal/lm/nvml_test.go TestGPUModeLabeler, case by case; the classes as sysfs writes them (Linux
# drivers/pci/pci-sysfs.c: pci_config_attr(class, "0x%06x\n")).
@pytest.mark.parametrize(
    ("classes", "mode"),
    [
        (["0x030000"], "graphics"),
        (["0x030200"], "compute"),
        (["0x068000"], "unknown"),  # the NVSwitch class
        (["0x030200"] * 3, "compute"),
        (["0x030000"] * 3, "graphics"),
        (["0x030000", "0x030200", "0x030000"], "unknown"),
    ],
)
def test_gpu_mode_follows_gfds_own_test_table(h200: NodeInventory, classes: list[str], mode: str) -> None:
    inv = _with_classes(h200, *classes)
    assert gpu_mode(inv.devices) == mode
    assert gfd_labels(inv, PluginConfig())["nvidia.com/gpu.mode"] == mode


@pytest.mark.parametrize(
    "classes",
    [
        ["ERR:FileNotFoundError:[Errno 2] No such file or directory"],  # getDeviceClasses' error → "unknown"
        ["0x030200", "ERR:PermissionError:[Errno 13] Permission denied"],  # one unreadable GPU is enough
        ["0x030200", None],  # a GPU whose class was not recorded: nothing to say the classes agree
        ["compute"],  # strconv.ParseUint fails: an error, as unreadable
    ],
)
def test_gpu_mode_is_unknown_when_a_class_is_not_known(
    h200: NodeInventory, classes: list[str | None]
) -> None:
    assert gfd_labels(_with_classes(h200, *classes), PluginConfig())["nvidia.com/gpu.mode"] == "unknown"


def test_class_text_is_read_as_go_parseuint_base_0_reads_it(h200: NodeInventory) -> None:
    # go-nvlib readPCIField: TrimSpace, then strconv.ParseUint(s, 0, 32); a bare leading 0 means octal
    # ("030200" is 12416, not the 3D class), a sign is refused.
    assert gpu_mode(_with_classes(h200, " 0x030200\n").devices) == "compute"
    assert gpu_mode(_with_classes(h200, "196608").devices) == "graphics"  # 0x030000 in decimal
    assert gpu_mode(_with_classes(h200, "030200").devices) == "unknown"
    assert gpu_mode(_with_classes(h200, "+0x030200").devices) == "unknown"


@pytest.mark.parametrize(
    ("text", "label"),
    [
        (Q35_PRODUCT_NAME, "Standard-PC-Q35-ICH9-2009"),  # the Lambda node's label
        # the machine type file cmd/gpu-feature-discovery/main_test.go writes
        ("product-name\n", "product-name"),
        # A Dell node: the kernel's "Hardware name: Dell Inc. PowerEdge R7525/0590KW" is sys_vendor, product_name
        # and board_name (drivers/firmware/dmi_scan.c dmi_format_ids); tests/realcases/kai-mig-mixed-max-node.yaml
        # is a real node GFD labelled nvidia.com/gpu.machine: PowerEdge-R7525.
        ("PowerEdge R7525\n", "PowerEdge-R7525"),
        # QEMU's i440FX machine (hw/i386/pc_piix.c smbios_set_defaults), padded: trimmed, runs of spaces one "-"
        ("  Standard  PC \t(i440FX + PIIX, 1996) ", "Standard-PC-i440FX-PIIX-1996"),
        ("", ""),  # an empty file: TrimSpace gives "", sanitise keeps it
        ("ERR:FileNotFoundError:[Errno 2] No such file or directory", "unknown"),  # read error → unknown
        (None, "unknown"),  # not recorded: as GFD where it cannot read the file
    ],
)
def test_machine_label_is_the_sanitised_dmi_product_name(text: str | None, label: str) -> None:
    assert machine_label(text) == label


def test_lambda_h100_node_gets_the_labels_gfd_gave_it(h200: NodeInventory) -> None:
    # The node as the doc describes it: 8 H100 80GB HBM3 (9.0, 81559 MiB), driver 535.129.03 with CUDA 12.2,
    # MIG capable and disabled, GFD run with migStrategy single; a QEMU Q35 VM whose GPUs are 3D controllers.
    gpu = dataclasses.replace(
        h200.devices[0], name="NVIDIA H100 80GB HBM3", memory_total=81559 * MIB, memory_used=0
    )
    inv = dataclasses.replace(
        _with_classes(dataclasses.replace(h200, devices=(gpu,)), *["0x030200"] * 8),
        driver="535.129.03",
        cuda_driver=12020,
        machine_type=Q35_PRODUCT_NAME,
    )
    real = dict(line.split("=", 1) for line in LAMBDA_H100_NODE.split())
    expected = {k: v for k, v in real.items() if not k.startswith(NOT_OURS) and k not in NOT_OURS_KEYS}
    assert gfd_labels(inv, PluginConfig(mig_strategy=MigStrategy.SINGLE)) == expected


def test_both_labels_come_with_every_mig_strategy_and_none_without_gpus(h200: NodeInventory) -> None:
    inv = dataclasses.replace(_with_classes(h200, "0x030200"), machine_type=Q35_PRODUCT_NAME)
    for strategy in MigStrategy:
        labels = gfd_labels(inv, PluginConfig(mig_strategy=strategy))
        assert (labels["nvidia.com/gpu.machine"], labels["nvidia.com/gpu.mode"]) == (
            "Standard-PC-Q35-ICH9-2009",
            "compute",
        )
    assert gfd_labels(dataclasses.replace(inv, devices=()), PluginConfig()) == {}


@pytest.mark.parametrize(
    "reading",
    [
        SHARED_H200 / "nvml.json",
        GENERATED / "h200-1gpu-discover.json",
        GENERATED / "dgx1-8xv100.json",
        GENERATED / "hgx-8xh100-nvswitch.json",
        GENERATED / "pcie-4gpu-2socket.json",
    ],
    ids=lambda p: p.name,
)
def test_readings_recorded_before_the_keys_existed_say_unknown(reading: object) -> None:
    # None of these readings has pci_class or machine_type (the H200 ones were recorded before
    # discovery read them, the generated ones model no host): both labels are "unknown", as GFD writes where it cannot read
    # the class or the machine type file. The real H100 reading (below) has both.
    inv = load_reading(reading)  # type: ignore[arg-type]
    assert inv.machine_type is None and all(g.pci_class is None for g in inv.devices)
    labels = gfd_labels(inv, PluginConfig())
    assert (labels["nvidia.com/gpu.machine"], labels["nvidia.com/gpu.mode"]) == ("unknown", "unknown")


def test_the_real_h100_reading_is_compute_on_an_unknown_machine() -> None:
    """The lent H100 (tests/fixtures/nodes/h100-1gpu, a Firecracker VM): sysfs gives the GPU's PCI class
    0x030200 (a 3D controller, host.txt: ``0000:00:06.0 class=0x030200 vendor=0x10de device=0x2330``) and the VM
    has no /sys/class/dmi, so GFD's machine-type file cannot be read: gpu.mode=compute, gpu.machine=unknown
    (machine-type.go: an unreadable file gives machineTypeUnknown)."""
    reading = GENERATED / "h100-1gpu" / "discover.json"
    host = (GENERATED / "h100-1gpu" / "host.txt").read_text()
    assert "0000:00:06.0 class=0x030200 vendor=0x10de device=0x2330" in host
    assert "cannot access '/sys/class/dmi/id': No such file or directory" in host
    inv = load_reading(reading)
    assert [g.pci_class for g in inv.devices] == ["0x030200"]
    labels = gfd_labels(inv, PluginConfig())
    assert (labels["nvidia.com/gpu.machine"], labels["nvidia.com/gpu.mode"]) == ("unknown", "compute")
    # the PCI device id sysfs read is the catalog's for this product (mig-parted's device-filter form)
    from kubegpu.devices.mig import CATALOGS

    assert "0x233010DE" in CATALOGS["H100-SXM5-80GB"].pci_device_ids
