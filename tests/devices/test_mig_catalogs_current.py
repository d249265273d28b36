"""MIG catalogs of H100 PCIe / NVL, GH200 (96 and 144 GB), B200 and GB200, and every profile-name suffix.

Pinned against NVIDIA/mig-parted ``deployments/systemd/config-default.yaml`` at commit
bd7160f43f16462eeb21e1eda5e67b5b6b03fd7d (the GPU Operator's default MIG config): the ``all-balanced``
entries per ``device-filter`` and the ``all-<profile>`` entries with their counts are copied by hand below;
each must validate on the product's catalog, and one more instance than mig-parted's count must not.
"""

from __future__ import annotations

import pytest

from kubegpu.devices.mig import MigLayoutError, catalog_for, parse_mig_parted_config, validate_layout

# device-filter → all-balanced mig-devices (config-default.yaml, all-balanced)
BALANCED = {
    "0x233110DE": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
    "0x232110DE": {"1g.12gb": 2, "2g.24gb": 1, "3g.47gb": 1},
    "0x234210DE": {"1g.12gb": 2, "2g.24gb": 1, "3g.48gb": 1},
    "0x234810DE": {"1g.18gb": 2, "2g.36gb": 1, "3g.72gb": 1},
    "0x290110DE": {"1g.23gb": 2, "2g.45gb": 1, "3g.90gb": 1},
    "0x294110DE": {"1g.23gb": 2, "2g.47gb": 1, "3g.93gb": 1},
}
# all-<profile> entries (devices: all) for the products above: profile → count
SINGLE = {
    "B200-180GB": {"1g.23gb": 7, "1g.23gb+me": 1, "1g.45gb": 4, "2g.45gb": 3, "3g.90gb": 2, "4g.90gb": 1,
                   "7g.180gb": 1},
    "GB200-186GB": {"1g.23gb": 7, "1g.47gb": 4, "2g.47gb": 3, "3g.93gb": 2, "4g.93gb": 1, "7g.186gb": 1},
    "GH200-144GB": {"1g.18gb": 7, "1g.36gb": 4, "7g.144gb": 1},
    "GH200-96GB": {"1g.12gb": 7, "1g.24gb": 4, "2g.24gb": 3, "3g.48gb": 2, "4g.48gb": 1, "7g.96gb": 1},
    "H100-NVL-94GB": {"1g.12gb": 7, "1g.12gb+me": 1, "1g.24gb": 4, "2g.24gb": 3, "3g.47gb": 2, "4g.47gb": 1,
                      "7g.94gb": 1},
    "H100-PCIE-80GB": {"1g.10gb": 7, "1g.10gb+me": 1, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1,
                       "7g.80gb": 1},
}  # fmt: skip


@pytest.mark.parametrize("pci", sorted(BALANCED))
def test_all_balanced_fits_the_product_with_that_pci_id(pci: str) -> None:
    from kubegpu.devices.mig import CATALOGS

    (catalog,) = [c for c in CATALOGS.values() if pci in c.pci_device_ids]
    placements = validate_layout(catalog, BALANCED[pci])
    # 3g (4 memory slices) + 2g (2) + two 1g (1 each) = 8: every memory slice used exactly once
    used = sorted(s for p in placements for s in range(p.start, p.start + p.size))
    assert used == list(range(8))
    assert sorted(p.size for p in placements) == [1, 1, 2, 4]


@pytest.mark.parametrize(("product", "profile"), [(p, n) for p, d in sorted(SINGLE.items()) for n in d])
def test_mig_parted_counts_are_the_limits(product: str, profile: str) -> None:
    count = SINGLE[product][profile]
    validate_layout(product, {profile: count})
    with pytest.raises(MigLayoutError) as err:
        validate_layout(product, {profile: count + 1})
    assert err.value.reason in ("count-limit", "slice-overflow", "placement-conflict")


@pytest.mark.parametrize(
    ("name", "product"),
    [
        ("NVIDIA B200", "B200-180GB"),
        ("NVIDIA-GH200-480GB", "GH200-96GB"),
        ("NVIDIA H100 NVL", "H100-NVL-94GB"),
    ],
)
def test_gfd_and_nvml_names_find_the_catalog(name: str, product: str) -> None:
    assert catalog_for(name).product == product


def test_every_suffix_form_of_the_default_config_is_read() -> None:
    # RTX PRO 6000 Blackwell entries of config-default.yaml (all-1g.24gb.gfx, all-1g.24gb.me.all, all-1g.24gb-me)
    cfg = parse_mig_parted_config(
        "version: v1\nmig-configs:\n"
        "  all-1g.24gb.gfx: [{devices: all, mig-enabled: true, mig-devices: {'1g.24gb+gfx': 4}}]\n"
        "  all-1g.24gb.me.all: [{devices: all, mig-enabled: true, mig-devices: {'1g.24gb+me.all': 1}}]\n"
        "  all-1g.24gb-me: [{devices: all, mig-enabled: true, mig-devices: {'1g.24gb-me': 4}}]\n"
    )
    assert sorted(cfg.configs) == ["all-1g.24gb-me", "all-1g.24gb.gfx", "all-1g.24gb.me.all"]


def test_resource_name_replaces_only_plus() -> None:
    # k8s-device-plugin v0.20.0 internal/resource/nvml-mig-device.go GetName: strings.ReplaceAll(p, "+", ".")
    me = catalog_for("B200-180GB").profile("1g.23gb+me")
    assert me.resource_name == "nvidia.com/mig-1g.23gb.me"
    assert catalog_for("B200-180GB").profile("mig-1g.23gb.me") == me
