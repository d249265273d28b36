"""MIG profile catalog, placements, layout geometry and mig-parted configs (R6.3).

Expected values come from NVIDIA, not from kubegpu: the ``nvidia-smi mig -lgipp`` output NVIDIA's MIG user
guide prints for A100/H100 (8 memory slices; identical on every product listed here), the profile tables
of the MIG user guide ("Supported MIG Profiles"), the GPU Operator's default mig-parted config (which
layouts NVIDIA ships as valid per product), NVIDIA k8s-device-plugin ``internal/rm/rm.go`` for resource
names, the real H200 reading in ``shared/fixtures/nodes/h200-1gpu`` and the real H100 reading in
``tests/fixtures/nodes/h100-1gpu`` (lent machine, 2026-12-06; its README lists the commands).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from device_readings import GENERATED, SHARED_H200

from kubegpu.devices.mig import (
    CATALOGS,
    MigLayoutError,
    Placement,
    catalog_for,
    validate_layout,
)
from kubegpu.devices.mig_parted import parse_mig_parted_config
from kubegpu.errors import InputError

# `nvidia-smi mig -lgipp` as NVIDIA's MIG user guide prints it (A100-80GB / H100; A100-40GB from R525).
LGIPP = """
GPU  0 Profile ID 19 Placements: {0,1,2,3,4,5,6}:1
GPU  0 Profile ID 20 Placements: {0,1,2,3,4,5,6}:1
GPU  0 Profile ID 15 Placements: {0,2,4,6}:2
GPU  0 Profile ID 14 Placements: {0,2,4}:2
GPU  0 Profile ID  9 Placements: {0,4}:4
GPU  0 Profile ID  5 Placement : {0}:4
GPU  0 Profile ID  0 Placement : {0}:8
"""

# Profile names per product from the MIG user guide's tables (A100-40GB; "For A100-SXM4-80GB, the profile
# names will change according to the memory proportion"), H100 80GB and H200 141GB.
NAMES = {
    "A100-SXM4-40GB": ["1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"],
    "A100-SXM4-80GB": ["1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"],
    "H100-SXM5-80GB": ["1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"],
    "H200-141GB": ["1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"],
}


def _lgipp() -> dict[int, str]:
    return {
        int(m.group(1)): m.group(2)
        for m in re.finditer(r"Profile ID\s+(\d+) Placements?\s*: (\{[\d,]+\}:\d+)", LGIPP)
    }


@pytest.mark.parametrize("product", list(NAMES))
def test_catalog_names_ids_and_placements_match_nvidia(product: str) -> None:
    catalog = CATALOGS[product]
    assert [p.name for p in catalog.profiles] == NAMES[product]
    assert {p.profile_id: p.placements() for p in catalog.profiles} == _lgipp()


H100 = GENERATED / "h100-1gpu"
# (NVML reading, the product kubegpu's catalog must resolve its name to)
REAL_READINGS = [(SHARED_H200 / "nvml.json", "H200-141GB"), (H100 / "discover.json", "H100-SXM5-80GB")]


@pytest.mark.parametrize(("reading", "product"), REAL_READINGS, ids=["h200", "h100"])
def test_catalog_equals_the_real_nvml_reading(reading: Path, product: str) -> None:
    device = json.loads(reading.read_text())["devices"][0]
    real = {p["name"].removeprefix("MIG "): p for p in device["gi_profiles"] if "err" not in p}
    catalog = catalog_for(device["name"])
    assert catalog.product == product
    assert set(real) == {p.name for p in catalog.profiles}
    for p in catalog.profiles:
        r = real[p.name]
        assert (r["id"], r["slices"], r["instances"]) == (p.profile_id, p.compute_slices, p.max_instances)
    # Memory follows memory slices: equal slices, equal memory; more slices, more memory.
    by_slices: dict[int, set[int]] = {}
    for p in catalog.profiles:
        by_slices.setdefault(p.memory_slices, set()).add(real[p.name]["memMiB"])
    assert all(len(v) == 1 for v in by_slices.values())
    sizes = [next(iter(by_slices[k])) for k in sorted(by_slices)]
    assert sizes == sorted(sizes) and len(set(sizes)) == len(sizes)


@pytest.mark.parametrize(
    ("folder", "product"), [(SHARED_H200, "H200-141GB"), (H100, "H100-SXM5-80GB")], ids=["h200", "h100"]
)
def test_catalog_equals_the_real_lgip_table(folder: Path, product: str) -> None:
    text = (folder / "nvidia-smi-mig-lgip.txt").read_text()
    rows = re.findall(r"MIG (\S+)\s+(\d+)\s+\d+/(\d+)", text)
    assert len(rows) == 7
    catalog = CATALOGS[product]
    assert {(n, int(i), int(t)) for n, i, t in rows} == {
        (p.name, p.profile_id, p.max_instances) for p in catalog.profiles
    }


def test_the_real_h100_prints_the_placements_of_nvidias_guide_and_the_catalog() -> None:
    """``nvidia-smi mig -lgipp`` on the real H100: the same table as the MIG user guide's (``LGIPP``), and the
    catalog's start slots and sizes per profile id."""
    real = (H100 / "nvidia-smi-mig-lgipp.txt").read_text()
    assert real.split() == LGIPP.split()
    assert {p.profile_id: p.placements() for p in CATALOGS["H100-SXM5-80GB"].profiles} == _lgipp()


def test_the_h100_reading_asked_every_profile_index_and_kept_the_seven_it_has() -> None:
    """The reading asked NVML for GPU-instance profile indices 0 to 0x11 (``GI_PROFILE_IDS``, nvml.h of CUDA
    13.2.1) on driver 580.159.04 and the read succeeded: the indices the H100 lacks (5, 6, 8, 10 to 0x11, the
    RTX PRO 6000's 2_SLICE_ALL_ME 0x10 and 3_SLICE_GFX 0x11 among them) answered an error and left no
    profile, and the seven it has kept their NVML indices (nvml.h: ``NVML_GPU_INSTANCE_PROFILE_1_SLICE`` 0,
    ``2_SLICE`` 1, ``3_SLICE`` 2, ``4_SLICE`` 3, ``7_SLICE`` 4, ``1_SLICE_REV1`` 7 (+me), ``1_SLICE_REV2`` 9)."""
    from kubegpu.node.discovery import GI_PROFILE_IDS

    assert list(GI_PROFILE_IDS) == list(range(0x12))
    device = json.loads((H100 / "discover.json").read_text())["devices"][0]
    assert {p["profile"]: p["name"] for p in device["gi_profiles"]} == {
        0: "MIG 1g.10gb", 1: "MIG 2g.20gb", 2: "MIG 3g.40gb", 3: "MIG 4g.40gb", 4: "MIG 7g.80gb",
        7: "MIG 1g.10gb+me", 9: "MIG 1g.20gb",
    }  # fmt: skip


def test_mixed_strategy_resource_names_replace_plus_with_dot() -> None:
    # k8s-device-plugin rm.go: strings.ReplaceAll("mig-"+p.String(), "+", ".")
    h200 = CATALOGS["H200-141GB"]
    assert h200.profile("1g.18gb+me").resource_name == "nvidia.com/mig-1g.18gb.me"
    assert h200.profile("3g.71gb").resource_name == "nvidia.com/mig-3g.71gb"
    assert h200.profile("nvidia.com/mig-1g.18gb.me").name == "1g.18gb+me"
    assert h200.profile("MIG 7g.141gb").memory_gb == 141


def test_catalog_lookup_by_nvml_name_gfd_label_or_key() -> None:
    assert catalog_for("NVIDIA H100 80GB HBM3").product == "H100-SXM5-80GB"
    assert catalog_for("NVIDIA-A100-SXM4-40GB").product == "A100-SXM4-40GB"  # GFD label form
    assert catalog_for("h200-141gb").product == "H200-141GB"
    with pytest.raises(InputError, match="no MIG profile catalog for GPU product 'Tesla-T4'"):
        catalog_for("Tesla-T4")


# Layouts NVIDIA ships as valid in the GPU Operator's default mig-parted config (all-1g, all-2g, all-3g,
# all-4g, all-7g, all-balanced, the 2-memory-slice 1g) per product.
VALID = {
    "A100-SXM4-40GB": [
        {"1g.5gb": 7},
        {"1g.10gb": 4},
        {"2g.10gb": 3},
        {"3g.20gb": 2},
        {"4g.20gb": 1},
        {"7g.40gb": 1},
        {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1},
        {"1g.5gb+me": 1},
    ],
    "A100-SXM4-80GB": [
        {"1g.10gb": 7},
        {"1g.20gb": 4},
        {"2g.20gb": 3},
        {"3g.40gb": 2},
        {"4g.40gb": 1},
        {"7g.80gb": 1},
        {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
        {"1g.10gb+me": 1},
    ],
    "H100-SXM5-80GB": [
        {"1g.10gb": 7},
        {"1g.20gb": 4},
        {"2g.20gb": 3},
        {"3g.40gb": 2},
        {"4g.40gb": 1},
        {"7g.80gb": 1},
        {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
    ],
    "H200-141GB": [
        {"1g.18gb": 7},
        {"1g.35gb": 4},
        {"2g.35gb": 3},
        {"3g.71gb": 2},
        {"4g.71gb": 1},
        {"7g.141gb": 1},
        {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1},
        {"1g.18gb+me": 1, "1g.18gb": 6},
    ],
}


@pytest.mark.parametrize(("product", "layout"), [(p, layout) for p, ls in VALID.items() for layout in ls])
def test_layouts_nvidia_ships_are_valid(product: str, layout: dict[str, int]) -> None:
    placements = validate_layout(CATALOGS[product], layout)
    assert sorted(p.profile for p in placements) == sorted(n for n, c in layout.items() for _ in range(c))
    taken = [s for p in placements for s in range(p.start, p.start + p.size)]
    assert len(taken) == len(set(taken)) and max(taken) < 8


def test_balanced_h200_layout_places_like_nvidia_smi_would_allow() -> None:
    # 3g at 0 (4 slices), 2g at 4, 1g at 6 — the only start slots left by -lgipp's table.
    assert validate_layout(CATALOGS["H200-141GB"], {"1g.18gb": 1, "2g.35gb": 1, "3g.71gb": 1}) == (
        Placement("3g.71gb", 0, 4),
        Placement("2g.35gb", 4, 2),
        Placement("1g.18gb", 6, 1),
    )


@pytest.mark.parametrize("product", list(NAMES))
def test_invalid_layouts_say_why(product: str) -> None:
    catalog = CATALOGS[product]
    one, me, _one2, two, three, four, seven = NAMES[product]
    cases = [
        # 2g at {0,2,4} leaves slice 6 for one 1g; slice 7 is no 1g start: 8 slices but no placement.
        ({two: 3, one: 2}, "placement-conflict"),
        # 4g takes {0}:4; 2g starts are {0,2,4}: only 4 is free, the second 2g cannot start at 6.
        ({four: 1, two: 2}, "placement-conflict"),
        # 1g has 7 start slots: an eighth 1g (with +me) cannot be placed.
        ({one: 7, me: 1}, "placement-conflict"),
        ({four: 1, three: 1, one: 1}, "slice-overflow"),
        ({seven: 1, one: 1}, "slice-overflow"),
        ({three: 3}, "count-limit"),
        ({me: 2}, "count-limit"),
        ({"9g.1gb": 1}, "unknown-profile"),
    ]
    for layout, reason in cases:
        with pytest.raises(MigLayoutError) as err:
            validate_layout(catalog, layout)
        assert err.value.reason == reason, (layout, str(err.value))


def test_conflict_message_names_the_profile_and_free_slices() -> None:
    with pytest.raises(MigLayoutError) as err:
        validate_layout(CATALOGS["H200-141GB"], {"2g.35gb": 3, "1g.18gb": 2})
    assert str(err.value) == (
        "no placement fits although 8 of 8 memory slices suffice: after 2g.35gb@0:2, 2g.35gb@2:2, "
        "2g.35gb@4:2, 1g.18gb@6:1, 1g.18gb (placements {0,1,2,3,4,5,6}:1) finds no free start; "
        "free memory slices: 7"
    )


def test_validate_layout_takes_a_product_name() -> None:
    assert len(validate_layout("NVIDIA H100 80GB HBM3", {"3g.40gb": 2})) == 2


def test_a_profile_of_another_product_is_unknown() -> None:
    with pytest.raises(MigLayoutError, match=r"H200-141GB has no MIG profile '3g.40gb'"):
        validate_layout(CATALOGS["H200-141GB"], {"3g.40gb": 1})


# An excerpt of the GPU Operator's default mig-parted config, plus an H200 entry (PCI id of the real reading).
MIG_PARTED = """
version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false
  all-1g.10gb:
    - device-filter: ["0x233010DE", "0x233110DE", "0x232210DE", "0x20B210DE", "0x20B510DE"]
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 7
    - device-filter: ["0x20B010DE", "0x20B110DE", "0x20F110DE", "0x20F610DE"]
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 4
  h200-balanced:
    - device-filter: "0x233510DE"
      devices: [0, 1]
      mig-enabled: true
      mig-devices:
        "1g.18gb": 2
        "2g.35gb": 1
        "3g.71gb": 1
"""


def test_mig_parted_config_parses_and_selects_by_device_filter() -> None:
    config = parse_mig_parted_config(MIG_PARTED, source="mig.yaml")
    assert list(config.configs) == ["all-disabled", "all-1g.10gb", "h200-balanced"]
    entries = config.config("all-1g.10gb")
    a100_40 = CATALOGS["A100-SXM4-40GB"]
    chosen = [e for e in entries if e.applies_to(0, a100_40)]
    assert [dict(e.mig_devices) for e in chosen] == [{"1g.10gb": 4}]
    assert validate_layout(a100_40, chosen[0].mig_devices)
    (h200,) = config.config("h200-balanced")
    assert h200.applies_to(1, CATALOGS["H200-141GB"]) and not h200.applies_to(2, CATALOGS["H200-141GB"])
    assert config.config("all-disabled")[0].mig_enabled is False


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("version: v2\nmig-configs: {a: [{devices: all, mig-enabled: false}]}", "mig.yaml: version: unknown"),
        ("version: v1\nmig-configs: {}", "mig.yaml: mig-configs: expected a non-empty mapping"),
        (
            "version: v1\nmig-configs: {a: [{devices: all, mig-enabled: yes please}]}",
            "mig.yaml: mig-configs.a[0].mig-enabled: expected true or false",
        ),
        (
            "version: v1\nmig-configs: {a: [{devices: [0, x], mig-enabled: true}]}",
            "mig.yaml: mig-configs.a[0].devices: expected all or a list of GPU indexes",
        ),
        (
            "version: v1\nmig-configs: {a: [{devices: all, mig-enabled: true, mig-devices: {3g: 1}}]}",
            "mig.yaml: mig-configs.a[0].mig-devices.3g: not a MIG profile name",
        ),
        (
            "version: v1\nmig-configs: {a: [{devices: all, mig-enabled: true, migdevices: {}}]}",
            "mig.yaml: mig-configs.a[0].migdevices: unknown field",
        ),
        (
            "version: v1\nmig-configs: {a: [{devices: all, mig-enabled: false, mig-devices: {1g.5gb: 1}}]}",
            "mig.yaml: mig-configs.a[0].mig-devices: mig-devices given with mig-enabled: false",
        ),
    ],
)
def test_mig_parted_config_errors_name_file_and_field(text: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        parse_mig_parted_config(text, source="mig.yaml")
    assert str(err.value).startswith(message), str(err.value)


def test_unknown_config_name_lists_the_known_ones() -> None:
    config = parse_mig_parted_config(MIG_PARTED, source="mig.yaml")
    with pytest.raises(InputError, match=r"no mig-config named 'x' \(configs: all-disabled, all-1g.10gb"):
        config.config("x")
