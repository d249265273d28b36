"""``plan mig`` against upstream behaviour the QA hardware check (/work/qa/hardware/FINDINGS.md) found kubegpu
getting wrong. Expected values come from the upstream files each test names (NVIDIA/mig-parted @bd7160f,
NVIDIA/go-nvlib, NVIDIA/k8s-device-plugin @1b826ac, pci.ids as go-nvlib vendors it), never from kubegpu."""

from __future__ import annotations

import pytest
from tests.plan.mig_parted import BLACKWELL_AND_A30

from kubegpu.devices.mig import MigLayoutError, catalog_for
from kubegpu.devices.mig_parted import parse_mig_parted_config
from kubegpu.errors import InputError
from kubegpu.model.objects import Node
from kubegpu.plan.mig import plan_mig
from kubegpu.testing.builders import make_node

GPU = "nvidia.com/gpu"


def _node(product: str, gpus: int, *, capable: str = "true", config: str | None = None) -> Node:
    b = make_node("n1").gpus(gpus, product=product).label("nvidia.com/mig.strategy", "mixed")
    b.label("nvidia.com/mig.capable", capable)
    if config:
        b.label("nvidia.com/mig.config", config)
    return b.parsed()


# gpu-operator a22dbf6 assets/state-mig-manager/0400_configmap.yaml all-1g.35gb (the B200-class profile):
# its device-filter names no H100, so mig-parted (assert.go WalkSelectedMigConfigForEachGPU) never calls it on one
ALL_1G_35GB = """
version: v1
mig-configs:
  all-1g.35gb:
    - device-filter: ["0x318210DE", "0x31C210DE"]
      devices: all
      mig-enabled: true
      mig-devices: {"1g.35gb": 7}
"""


def test_gpus_no_entry_selects_keep_their_capacity() -> None:
    """D1, QA input nodes/h100.yaml + configs/gpu-operator-default.yaml all-1g.35gb: mig-parted bd7160f
    cmd/nvidia-mig-parted/assert/assert.go WalkSelectedMigConfigForEachGPU skips a GPU whose id the filter
    (api/spec/v1/helpers.go MatchesDeviceFilter) does not match, so the 8 H100s stay 8 × nvidia.com/gpu."""
    change = plan_mig(
        _node("NVIDIA-H100-80GB-HBM3", 8), [], parse_mig_parted_config(ALL_1G_35GB), "all-1g.35gb"
    )
    assert change.capacity_after == {GPU: 8}
    assert sum("leaves it as it is" in w for w in change.warnings) == 8


# NVIDIA/mig-parted#157 (2× A30), the config the issue reports (QA configs/issue157-a30.yaml)
ISSUE_157 = """
version: v1
mig-configs:
  all-disabled:
  - devices: all
    mig-enabled: false
  node1:
  - devices: [1]
    mig-enabled: true
    mig-devices: {1g.6gb: 4}
"""


def test_mig_parted_157_gpu_0_stays_whole() -> None:
    """D1, QA nodes/a30x2.yaml: mig-parted helpers.go MatchesDevices selects index 1 only; GPU 0 is left as
    the previous config (all-disabled, same file) made it: 1 nvidia.com/gpu + 4 mig-1g.6gb."""
    node = _node("NVIDIA-A30", 2, config="all-disabled")
    change = plan_mig(node, [], parse_mig_parted_config(ISSUE_157), "node1")
    assert change.capacity_after == {GPU: 1, "nvidia.com/mig-1g.6gb": 4}


def test_an_unselected_gpu_keeps_the_mig_layout_its_current_config_gave_it() -> None:
    """D1: mig-parted leaves an unselected MIG-enabled GPU's instances alone (assert.go), so GPU 1 keeps the
    2 × 3g.40gb the node's current config (same file) made."""
    text = ISSUE_157.replace(
        "node1:", "both:\n  - devices: all\n    mig-enabled: true\n    mig-devices: {3g.40gb: 2}\n  node1:"
    )
    node = make_node("n1").gpus(0, product="NVIDIA-H100-80GB-HBM3").label("nvidia.com/gpu.count", "2")
    node = node.capacity(**{"nvidia.com/mig-3g.40gb": 4}).label("nvidia.com/mig.config", "both").parsed()
    config = parse_mig_parted_config(text.replace("1g.6gb: 4", "1g.10gb: 7"))
    change = plan_mig(node, [], config, "node1")
    assert change.capacity_after == {"nvidia.com/mig-1g.10gb": 7, "nvidia.com/mig-3g.40gb": 2}


def test_subsystem_device_filter_matches_on_the_primary_id_and_says_the_rest() -> None:
    """D1/D10, QA configs/filter-subsystem.yaml: mig-parted pkg/types/device.go NewDeviceIDFromString reads
    "0x233010DE:0x16C110DE" as device 0x2330 vendor 0x10DE plus a subsystem; Matches needs all four equal.
    GFD labels carry no subsystem id, so kubegpu plans the H100 as selected and says it could not check."""
    text = """
version: v1
mig-configs:
  c:
    - device-filter: "0x233010DE:0x16C110DE"
      devices: all
      mig-enabled: true
      mig-devices: {"1g.10gb": 7}
"""
    change = plan_mig(_node("NVIDIA-H100-80GB-HBM3", 1), [], parse_mig_parted_config(text), "c")
    assert change.capacity_after == {"nvidia.com/mig-1g.10gb": 7}
    assert any("subsystem" in w for w in change.warnings)


@pytest.mark.parametrize(
    ("product", "pci", "after"),
    [
        # mig-parted bd7160f deployments/systemd/config-default.yaml all-balanced: the A100-40GB entry filters
        # 0x20B110DE/0x20F110DE (pci.ids: A100 PCIe 40GB) with 1g.5gb 2, 2g.10gb 1, 3g.20gb 1
        ("NVIDIA-A100-PCIE-40GB", "0x20F110DE", {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}),
        # A100-80GB entry: 0x20B510DE (A100 PCIe 80GB) and 0x232410DE (H800): 1g.10gb 2, 2g.20gb 1, 3g.40gb 1
        ("NVIDIA-A100-80GB-PCIe", "0x20B510DE", {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}),
        ("NVIDIA-H800", "0x232410DE", {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}),
        # "H200 141GB, H200 NVL": 0x233B10DE, 1g.18gb 2, 2g.35gb 1, 3g.71gb 1
        ("NVIDIA-H200-NVL", "0x233B10DE", {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1}),
        # "H100-96GB, PG506-96GB, GH200, H20": 0x232910DE, 1g.12gb 2, 2g.24gb 1, 3g.48gb 1
        ("NVIDIA-H20", "0x232910DE", {"1g.12gb": 2, "2g.24gb": 1, "3g.48gb": 1}),
    ],
)
def test_mig_capable_siblings_take_their_all_balanced_entry(
    product: str, pci: str, after: dict[str, int]
) -> None:
    """D2, QA nodes/{a100-40-pcie,a100-80-pcie,h800,h200nvl,h20}.yaml: each product's id and profiles as
    mig-parted bd7160f config-default.yaml all-balanced lists them (the MIG user guide "Supported GPUs"
    table lists A100-PCIE 40/80GB, H200 NVL and H20 with 7 instances)."""
    text = f"""
version: v1
mig-configs:
  all-balanced:
    - device-filter: ["{pci}"]
      devices: all
      mig-enabled: true
      mig-devices: {dict(after)}
"""
    change = plan_mig(_node(product, 8), [], parse_mig_parted_config(text), "all-balanced")
    assert change.capacity_after == {f"nvidia.com/mig-{p}": 8 * n for p, n in after.items()}


@pytest.mark.parametrize(
    "label",
    [
        "NVIDIA-H100-80GB-HBM3-MIG-INVALID",  # k8s-device-plugin internal/lm/mig-strategy.go productLabel(.., "MIG", "INVALID")
        "NVIDIA-H100-80GB-HBM3-MIG-INVALID-SHARED",  # resource.go getProductName appends SHARED last
        "NVIDIA-H100-80GB-HBM3-MIG-1c.3g.40gb",  # single strategy, a compute-instance profile
    ],
)
def test_gfd_mig_suffixes_map_back_to_the_base_product(label: str) -> None:
    """D2/D5, QA nodes/h100invalid.yaml: GFD's -MIG-INVALID and -MIG-<profile> product forms are the base GPU."""
    assert catalog_for(label).product == "H100-SXM5-80GB"


@pytest.mark.parametrize("product", ["NVIDIA-L4", "NVIDIA-L40S", "NVIDIA-RTX-6000-Ada-Generation", "NVIDIA-A10",
                                     "NVIDIA-GeForce-RTX-5090"])  # fmt: skip
def test_gpus_without_mig_are_told_so(product: str) -> None:
    """D9, QA nodes/{l4,l40s,rtx6000ada,a10,geforce5090}.yaml with GFD's nvidia.com/mig.capable=false: none is in
    the MIG user guide's "Supported GPUs" table (MIG needs compute capability >= 8.0 and a listed product)."""
    with pytest.raises(MigLayoutError) as err:
        plan_mig(_node(product, 2, capable="false"), [], parse_mig_parted_config(ALL_1G_35GB))
    assert err.value.reason == "not-mig-capable" and "does not support MIG" in str(err.value)


def test_a_mig_capable_product_without_catalog_is_named_as_such() -> None:
    """D2/D9, QA nodes/rtxpro5000.yaml: RTX PRO 5000 Blackwell is in the MIG user guide "Supported GPUs"
    table (2 instances); kubegpu lacks its profiles and says so instead of the generic no-catalog line."""
    with pytest.raises(InputError, match="supports MIG, but kubegpu has no MIG profile catalog"):
        plan_mig(_node("NVIDIA-RTX-PRO-5000-Blackwell", 2), [], parse_mig_parted_config(ALL_1G_35GB))


@pytest.mark.parametrize(
    "product",
    [
        "NVIDIA-RTX-PRO-6000-Blackwell-Workstation-Edition",
        "NVIDIA-RTX-PRO-6000-Blackwell-Max-Q-Workstation-Edition",
    ],
)
def test_rtx_pro_6000_workstation_editions_are_not_the_server_pci_id(product: str) -> None:
    """D3, QA nodes/rtxpro6000ws.yaml, rtxpro6000maxq.yaml: pci.ids (go-nvlib pkg/pciids/default_pci.ids) gives
    0x2BB1 Workstation, 0x2BB4 Max-Q, 0x2BB5 Server; config-default.yaml all-balanced filters 0x2BB510DE only,
    so mig-parted leaves these GPUs whole."""
    change = plan_mig(_node(product, 4), [], parse_mig_parted_config(BLACKWELL_AND_A30), "all-balanced")
    assert change.capacity_after == {GPU: 4}


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        # mig-parted api/spec/v1/spec.go UnmarshalJSON (QA configs/enabled-no-mig-devices.yaml)
        (
            "devices: all\n      mig-enabled: true",
            "missing required field 'mig-devices' when 'mig-enabled' is true",
        ),
        # pkg/types/mig_config.go AssertValidFormat (QA configs/zero-counts.yaml)
        (
            "devices: all\n      mig-enabled: true\n      mig-devices: {1g.10gb: 0}",
            "all counts for all MigProfiles are 0",
        ),
    ],
)
def test_configs_mig_parted_refuses_are_refused(entry: str, message: str) -> None:
    """D6: one line naming the file, the config entry and the field."""
    text = f"version: v1\nmig-configs:\n  c:\n    - {entry}\n"
    with pytest.raises(InputError) as err:
        parse_mig_parted_config(text, source="m.yaml")
    line = str(err.value)
    assert message in line and "m.yaml" in line and "mig-configs.c[0]" in line and "\n" not in line


@pytest.mark.parametrize(
    ("profile", "count", "after"),
    [
        # go-nvlib pkg/nvlib/device/mig_profile.go parseMigProfileFields reads <c>c.<g>g.<gb>gb; the device plugin
        # names the device by its String() (k8s-device-plugin internal/resource/nvml-mig-device.go GetName);
        # mig-parted pkg/mig/config/config.go SetMigConfig reuses the last GPU instance while the compute
        # instance fits: 3 × 1c in one 3g.40gb (QA configs/ci-profile-1c.3g.40gb.yaml)
        ("1c.3g.40gb", 3, {"nvidia.com/mig-1c.3g.40gb": 3}),
        ("2c.7g.80gb", 1, {"nvidia.com/mig-2c.7g.80gb": 1}),  # QA configs/ci-profile-2c.7g.80gb.yaml
    ],
)
def test_compute_instance_profiles_are_valid(profile: str, count: int, after: dict[str, int]) -> None:
    """D4: compute-instance profiles, with go-nvlib VisitMigProfiles' rule c < g, 2c <= g + 1."""
    text = f'version: v1\nmig-configs:\n  c:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {{"{profile}": {count}}}\n'
    change = plan_mig(_node("NVIDIA-H100-80GB-HBM3", 1), [], parse_mig_parted_config(text), "c")
    assert change.capacity_after == after


def test_overlapping_entries_last_wins_with_a_warning() -> None:
    """D7, QA configs/overlap.yaml: WalkSelectedMigConfigForEachGPU (assert.go) calls every matching entry in
    order and apply/config.go sets each one's layout, so GPU 0 ends as the last entry (7g.80gb)."""
    text = """
version: v1
mig-configs:
  c:
    - devices: all
      mig-enabled: true
      mig-devices: {"1g.10gb": 7}
    - devices: [0]
      mig-enabled: true
      mig-devices: {"7g.80gb": 1}
"""
    change = plan_mig(_node("NVIDIA-H100-80GB-HBM3", 2), [], parse_mig_parted_config(text), "c")
    assert change.capacity_after == {"nvidia.com/mig-1g.10gb": 7, "nvidia.com/mig-7g.80gb": 1}
    assert any("entry 1 is what it keeps" in w for w in change.warnings)
