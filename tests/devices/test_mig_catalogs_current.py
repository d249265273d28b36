"""MIG catalogs of H100 PCIe / NVL, GH200 (96 and 144 GB), B200, GB200, B300, GB300, A30 and RTX PRO 6000
Blackwell, and every profile-name suffix.

Pinned against NVIDIA/mig-parted ``deployments/systemd/config-default.yaml`` at commit
bd7160f43f16462eeb21e1eda5e67b5b6b03fd7d (the GPU Operator's default MIG config): the ``all-balanced``
entries per ``device-filter`` and the ``all-<profile>`` entries with their counts are copied by hand below;
each must validate on the product's catalog, and one more instance than mig-parted's count must not.

The A800s, H800 PCIe, H800 NVL and PG506-232 (kubegpu answered "no MIG profile catalog" for them before) take
their product names per PCI device id from the "Compatible GPUs" table of NVIDIA/open-gpu-kernel-modules
README.md, release 560.31.02 (``NVIDIA A800-SXM4-80GB | 20F3``, ``NVIDIA A800 80GB PCIe | 20F5 10DE 1799``,
``NVIDIA A800 80GB PCIe LC | 20F5 10DE 179A``, ``NVIDIA A800 40GB Active | 20F6``, ``NVIDIA H800 PCIe | 2322``,
``NVIDIA H800 NVL | 233A``, ``NVIDIA PG506-232 | 20B6``); GFD writes them with spaces as ``-``.
"""

from __future__ import annotations

import pytest

from kubegpu.devices.mig import MigLayoutError, catalog_for, validate_layout
from kubegpu.devices.mig_parted import parse_mig_parted_config

# device-filter → all-balanced mig-devices (config-default.yaml, all-balanced)
BALANCED = {
    "0x233110DE": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
    "0x232110DE": {"1g.12gb": 2, "2g.24gb": 1, "3g.47gb": 1},
    "0x234210DE": {"1g.12gb": 2, "2g.24gb": 1, "3g.48gb": 1},
    "0x234810DE": {"1g.18gb": 2, "2g.36gb": 1, "3g.72gb": 1},
    "0x290110DE": {"1g.23gb": 2, "2g.45gb": 1, "3g.90gb": 1},
    "0x294110DE": {"1g.23gb": 2, "2g.47gb": 1, "3g.93gb": 1},
    "0x318210DE": {"1g.34gb": 2, "2g.67gb": 1, "3g.135gb": 1},
    "0x31C210DE": {"1g.35gb": 2, "2g.70gb": 1, "3g.139gb": 1},
    "0x20B710DE": {"1g.6gb": 2, "2g.12gb": 1},
    "0x2BB510DE": {"1g.24gb": 2, "2g.48gb": 1},
    # "H100-80GB, H800-80GB, A100-80GB, A800-80GB" / "A100-40GB, A800-40GB" / "H100 NVL, H800 NVL" /
    # "H100-96GB, PG506-96GB, GH200, H20"
    "0x20F310DE": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
    "0x20F510DE": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
    "0x232210DE": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
    "0x20F610DE": {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1},
    "0x233A10DE": {"1g.12gb": 2, "2g.24gb": 1, "3g.47gb": 1},
    "0x20B610DE": {"1g.12gb": 2, "2g.24gb": 1, "3g.48gb": 1},
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
    "B300-269GB": {"1g.34gb": 7, "1g.34gb+me": 1, "1g.67gb": 4, "2g.67gb": 3, "3g.135gb": 2, "4g.135gb": 1,
                   "7g.269gb": 1},
    "GB300-278GB": {"1g.35gb": 7, "1g.35gb+me": 1, "1g.70gb": 4, "2g.70gb": 3, "3g.139gb": 2, "4g.139gb": 1,
                    "7g.278gb": 1},
    "A30-24GB": {"1g.6gb": 4, "1g.6gb+me": 1, "2g.12gb": 2, "2g.12gb+me": 1, "4g.24gb": 1},
    "RTX-PRO-6000-96GB": {"1g.24gb": 4, "1g.24gb+gfx": 4, "1g.24gb+me.all": 1, "1g.24gb-me": 4, "2g.48gb": 2,
                          "2g.48gb+gfx": 2, "2g.48gb+me.all": 1, "2g.48gb-me": 2, "4g.96gb": 1, "4g.96gb+gfx": 1},
    "A800-SXM4-80GB": {"1g.10gb": 7, "1g.10gb+me": 1, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1,
                       "7g.80gb": 1},
    "A800-PCIE-80GB": {"1g.10gb": 7, "1g.20gb": 4, "3g.40gb": 2, "7g.80gb": 1},
    "H800-PCIE-80GB": {"1g.10gb": 7, "1g.10gb+me": 1, "2g.20gb": 3, "4g.40gb": 1},
    "A800-40GB-ACTIVE": {"1g.5gb": 7, "1g.5gb+me": 1, "2g.10gb": 3, "3g.20gb": 2, "4g.20gb": 1, "7g.40gb": 1},
    "H800-NVL-94GB": {"1g.12gb": 7, "1g.12gb+me": 1, "1g.24gb": 4, "2g.24gb": 3, "3g.47gb": 2, "4g.47gb": 1,
                      "7g.94gb": 1},
    "PG506-96GB": {"1g.12gb": 7, "1g.12gb+me": 1, "1g.24gb": 4, "2g.24gb": 3, "3g.48gb": 2, "4g.48gb": 1,
                   "7g.96gb": 1},
}  # fmt: skip


@pytest.mark.parametrize("pci", sorted(BALANCED))
def test_all_balanced_fits_the_product_with_that_pci_id(pci: str) -> None:
    from kubegpu.devices.mig import CATALOGS

    (catalog,) = [c for c in CATALOGS.values() if pci in c.pci_device_ids]
    placements = validate_layout(catalog, BALANCED[pci])
    # 3g (4 memory slices) + 2g (2) + two 1g (1 each) = 8, or on the 4-slice A30 / RTX PRO 6000 2g (2) +
    # two 1g = 4: every memory slice used exactly once
    used = sorted(s for p in placements for s in range(p.start, p.start + p.size))
    four_slice = pci in ("0x20B710DE", "0x2BB510DE")
    assert used == list(range(4 if four_slice else 8))
    assert sorted(p.size for p in placements) == ([1, 1, 2] if four_slice else [1, 1, 2, 4])


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
        ("NVIDIA A30", "A30-24GB"),
        ("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", "RTX-PRO-6000-96GB"),
        ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "RTX-PRO-6000-MAXQ-96GB"),
        ("NVIDIA B300 SXM6 AC", "B300-269GB"),
        ("NVIDIA-GB300", "GB300-278GB"),
        ("NVIDIA-A800-SXM4-80GB", "A800-SXM4-80GB"),
        ("NVIDIA-A800-80GB-PCIe", "A800-PCIE-80GB"),
        ("NVIDIA-A800-80GB-PCIe-LC-MIG-1g.10gb", "A800-PCIE-80GB"),
        ("NVIDIA-A800-40GB-Active-SHARED", "A800-40GB-ACTIVE"),
        ("NVIDIA-H800-PCIe", "H800-PCIE-80GB"),
        ("NVIDIA-H800-NVL-MIG-3g.47gb", "H800-NVL-94GB"),
        ("NVIDIA-PG506-232", "PG506-96GB"),
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


# `nvidia-smi mig -lgip` ids as recorded on an A30 (1g.6gb 14, 1g.6gb+me 21, 2g.12gb 5, 2g.12gb+me 6, 4g.24gb 0)
# and on an RTX PRO 6000 Blackwell (14, 21, 47, 65, 67, 5, 35, 64, 66, 0, 32), copied by hand.
LGIP_IDS = {
    "A30-24GB": {"1g.6gb": 14, "1g.6gb+me": 21, "2g.12gb": 5, "2g.12gb+me": 6, "4g.24gb": 0},
    "RTX-PRO-6000-96GB": {"1g.24gb": 14, "1g.24gb+me": 21, "1g.24gb+gfx": 47, "1g.24gb+me.all": 65,
                          "1g.24gb-me": 67, "2g.48gb": 5, "2g.48gb+gfx": 35, "2g.48gb+me.all": 64,
                          "2g.48gb-me": 66, "4g.96gb": 0, "4g.96gb+gfx": 32},
}  # fmt: skip


@pytest.mark.parametrize("product", sorted(LGIP_IDS))
def test_four_slice_gpus_have_lgip_ids_and_four_slice_placements(product: str) -> None:
    from kubegpu.devices.mig import CATALOGS

    catalog = CATALOGS[product]
    assert catalog.memory_slices == 4
    assert {p.name: p.profile_id for p in catalog.profiles} == LGIP_IDS[product]
    # 4 slices: a 1g can start anywhere, a 2g on an even slice, a 4g only at 0 (the user guide's diagrams)
    want = {1: "{0,1,2,3}:1", 2: "{0,2}:2", 4: "{0}:4"}
    assert {p.name: p.placements() for p in catalog.profiles} == {
        p.name: want[int(p.name[0])] for p in catalog.profiles
    }


@pytest.mark.parametrize(
    ("product", "layout", "reason"),
    [
        # one OFA / JPEG per GPU: both +me profiles of the A30 cannot coexist
        ("A30-24GB", {"1g.6gb+me": 1, "2g.12gb+me": 1}, "media-engine-conflict"),
        # +me.all takes every decoder / encoder: a 1g.24gb (1 DEC / 1 ENC of its own) cannot be created beside it
        ("RTX-PRO-6000-96GB", {"1g.24gb+me.all": 1, "1g.24gb": 1}, "media-engine-conflict"),
        ("RTX-PRO-6000-96GB", {"2g.48gb+me.all": 1, "1g.24gb+gfx": 1}, "media-engine-conflict"),
        ("RTX-PRO-6000-96GB", {"1g.24gb+me": 1, "2g.48gb+me.all": 1}, "media-engine-conflict"),
        # 2g at {0,2}: three 2g need 6 of 4 slices
        ("RTX-PRO-6000-96GB", {"2g.48gb": 1, "2g.48gb-me": 1, "1g.24gb": 1}, "slice-overflow"),
        # a 4g uses all 4 slices: nothing fits beside it
        ("RTX-PRO-6000-96GB", {"4g.96gb": 1, "1g.24gb-me": 1}, "slice-overflow"),
    ],
)
def test_layouts_the_gpu_refuses(product: str, layout: dict[str, int], reason: str) -> None:
    with pytest.raises(MigLayoutError) as err:
        validate_layout(product, layout)
    assert err.value.reason == reason, str(err.value)


def test_me_all_beside_no_media_instances_is_valid() -> None:
    # the MIG user guide's RTX PRO 6000 configuration with +me.all on the first instance and -me on the rest
    placements = validate_layout("RTX-PRO-6000-96GB", {"1g.24gb+me.all": 1, "1g.24gb-me": 1, "2g.48gb-me": 1})
    # largest first, lowest start first: the 2g takes slices 0-1, the two 1g take 2 and 3
    assert sorted((p.start, p.profile) for p in placements) == [
        (0, "2g.48gb-me"), (2, "1g.24gb+me.all"), (3, "1g.24gb-me"),
    ]  # fmt: skip


def test_b200_matches_the_mig_user_guide_table() -> None:
    # MIG user guide, Supported MIG Profiles, "GPU Instance Profiles on B200" (B200 180 GB): fraction of memory
    # (in eighths = memory slices) and number of instances per profile, copied by hand
    table = {
        "1g.23gb": (1, 7), "1g.23gb+me": (1, 1), "1g.45gb": (2, 4), "2g.45gb": (2, 3), "3g.90gb": (4, 2),
        "4g.90gb": (4, 1), "7g.180gb": (8, 1),
    }  # fmt: skip
    catalog = catalog_for("NVIDIA B200")
    assert {p.name: (p.memory_slices, p.max_instances) for p in catalog.profiles} == table


# `nvidia-smi mig -lgip` (ID, Instances Total) posted from real boards: B200 in NVIDIA/mig-parted PR 166 and
# PR 187 (also NVIDIA/gpu-operator PR 1242), a production GB200 in NVIDIA/mig-parted issue 227 (the names
# mig-parted PR 228 adopted). The stored posts show the first four rows; the 3g/4g/7g rows are cut off.
POSTED_LGIP = {
    "B200-180GB": {"1g.23gb": (19, 7), "1g.23gb+me": (20, 1), "1g.45gb": (15, 4), "2g.45gb": (14, 3)},
    "GB200-186GB": {"1g.23gb": (19, 7), "1g.23gb+me": (20, 1), "1g.47gb": (15, 4), "2g.47gb": (14, 3)},
}


@pytest.mark.parametrize("product", sorted(POSTED_LGIP))
def test_blackwell_profile_ids_match_posted_lgip(product: str) -> None:
    catalog = catalog_for(product)
    assert {
        name: (catalog.profile(name).profile_id, catalog.profile(name).max_instances)
        for name in POSTED_LGIP[product]
    } == POSTED_LGIP[product]


def test_default_all_1g_10gb_gives_each_a800_its_own_count() -> None:
    # config-default.yaml all-1g.10gb: 7 per GPU for the 80GB filter list, 4 for the 40GB one
    cfg = parse_mig_parted_config(
        "version: v1\nmig-configs:\n  all-1g.10gb:\n"
        '    - device-filter: ["0x233010DE", "0x233110DE", "0x232210DE", "0x20B210DE", "0x20B510DE", '
        '"0x20F310DE", "0x20F510DE", "0x232410DE"]\n'
        "      devices: all\n      mig-enabled: true\n      mig-devices: {'1g.10gb': 7}\n"
        '    - device-filter: ["0x20B010DE", "0x20B110DE", "0x20F110DE", "0x20F610DE"]\n'
        "      devices: all\n      mig-enabled: true\n      mig-devices: {'1g.10gb': 4}\n"
    )
    from kubegpu.devices.mig import CATALOGS

    entries = cfg.config("all-1g.10gb")
    for product, count in (("A800-SXM4-80GB", 7), ("H800-PCIE-80GB", 7), ("A800-40GB-ACTIVE", 4)):
        (chosen,) = [e for e in entries if e.select(0, CATALOGS[product]).selected]
        assert chosen.mig_devices == {"1g.10gb": count}
        validate_layout(CATALOGS[product], chosen.mig_devices)
    # 0x233D (config-default's "H100-96GB") has no product name in the driver's table: no catalog claims it
    assert not [c for c in CATALOGS.values() if "0x233D10DE" in c.pci_device_ids]
