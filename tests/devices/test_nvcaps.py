"""MIG capability device nodes under ``passDeviceSpecs`` (R12).

Expected values follow NVIDIA k8s-device-plugin ``internal/mig`` ``GetMigCapabilityDevicePaths`` (the
``mig-minors`` line formats ``gpu%d/gi%d/access %d``, ``gpu%d/gi%d/ci%d/access %d``, ``config %d``,
``monitor %d``, keyed by ``/proc/driver/nvidia/capabilities/gpu<G>/mig/gi<I>[/ci<C>]/access`` and mapped to
``/dev/nvidia-caps/nvidia-cap<N>``; unparsable lines skipped) and ``internal/rm/nvml_devices.go``
``GetPaths`` (a MIG device's paths: parent ``/dev/nvidia<minor>``, GI access node, CI access node; ``G`` is
the parent's minor number; a missing capability is ``missing MIG GPU instance capability path: <path>``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from device_readings import mig_node

from kubegpu.devices import NodeInventory, cdi_spec, parse_plugin_config, plan_resources
from kubegpu.devices.container_view import allocate_response
from kubegpu.devices.inventory import inventory_to_reading, parse_reading
from kubegpu.devices.nvcaps import mig_capability_nodes, parse_mig_minors, read_mig_minors
from kubegpu.errors import ConfigError, InputError

# Generated in the layout of the driver's file (config 1, monitor 2, then per GPU minor and GPU instance
# 0..14: the GI's access line and its compute instances 0..7, nine minors per GI), which gives the lines
# the MIG user guide and the brief quote: gpu0/gi1/access 12, gpu0/gi1/ci0/access 13.
MIG_MINORS = [
    "config 1",
    "monitor 2",
    *(
        line
        for gpu in range(2)
        for gi in range(15)
        for line in (
            f"gpu{gpu}/gi{gi}/access {3 + 9 * (15 * gpu + gi)}",
            *(f"gpu{gpu}/gi{gi}/ci{ci}/access {4 + 9 * (15 * gpu + gi) + ci}" for ci in range(8)),
        )
    ),
]
CONTROL = ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"]
CAPS = "/proc/driver/nvidia/capabilities"


def test_parse_keys_each_line_by_its_capability_path_and_skips_the_rest() -> None:
    parsed = parse_mig_minors(["config 1", "monitor 2", "gpu0/gi1/access 12", "gpu0/gi1/ci0/access 13",
                               "gpu3/gi2/ci1/access 293", "not a capability line", ""])  # fmt: skip
    assert parsed == {
        f"{CAPS}/mig/config": "/dev/nvidia-caps/nvidia-cap1",
        f"{CAPS}/mig/monitor": "/dev/nvidia-caps/nvidia-cap2",
        f"{CAPS}/gpu0/mig/gi1/access": "/dev/nvidia-caps/nvidia-cap12",
        f"{CAPS}/gpu0/mig/gi1/ci0/access": "/dev/nvidia-caps/nvidia-cap13",
        f"{CAPS}/gpu3/mig/gi2/ci1/access": "/dev/nvidia-caps/nvidia-cap293",
    }


def test_a_mig_device_gets_its_gi_and_ci_access_nodes() -> None:
    minors = parse_mig_minors(MIG_MINORS)
    assert mig_capability_nodes(minors, 0, 1, 0) == (
        "/dev/nvidia-caps/nvidia-cap12",
        "/dev/nvidia-caps/nvidia-cap13",
    )
    # GPU minor 1, GI 2, CI 3: GI minor 3 + 9 * 17 = 156, CI minor 4 + 153 + 3 = 160
    assert mig_capability_nodes(minors, 1, 2, 3) == (
        "/dev/nvidia-caps/nvidia-cap156",
        "/dev/nvidia-caps/nvidia-cap160",
    )


def test_a_missing_capability_is_upstreams_error() -> None:
    minors = parse_mig_minors(["gpu0/gi1/access 12"])
    with pytest.raises(
        ValueError, match=f"^missing MIG compute instance capability path: {CAPS}/gpu0/mig/gi1/ci0/access$"
    ):
        mig_capability_nodes(minors, 0, 1, 0)
    with pytest.raises(
        ValueError, match=f"^missing MIG GPU instance capability path: {CAPS}/gpu0/mig/gi2/access$"
    ):
        mig_capability_nodes(minors, 0, 2, 0)


def test_read_mig_minors_reads_lines_and_a_missing_file_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "mig-minors"
    path.write_text("config 1\nmonitor 2\ngpu0/gi0/access 3\n")
    assert read_mig_minors(path) == ["config 1", "monitor 2", "gpu0/gi0/access 3"]
    assert read_mig_minors(tmp_path / "absent") == []


def _mig(
    h200: NodeInventory, profiles: list[str], minors: list[str] | None, minor: int | None = None
) -> NodeInventory:
    inv = mig_node(h200, profiles)  # MIG device i is GI i+1, CI 0
    gpu = dataclasses.replace(inv.devices[0], minor=minor) if minor is not None else inv.devices[0]
    return dataclasses.replace(inv, devices=(gpu,), mig_minors=tuple(minors) if minors is not None else None)


MIXED_SPECS = parse_plugin_config("flags: {migStrategy: mixed, plugin: {passDeviceSpecs: true}}")


def test_allocate_passes_the_parent_gpu_then_gi_and_ci_nodes_per_mig_device(h200: NodeInventory) -> None:
    inv = _mig(h200, ["3g.71gb", "3g.71gb"], MIG_MINORS)
    (plan,) = plan_resources(inv, MIXED_SPECS)
    assert [d.mig_caps for d in plan.devices] == [
        ("/dev/nvidia-caps/nvidia-cap12", "/dev/nvidia-caps/nvidia-cap13"),  # GI 1, CI 0
        ("/dev/nvidia-caps/nvidia-cap21", "/dev/nvidia-caps/nvidia-cap22"),  # GI 2, CI 0
    ]
    alloc = allocate_response(
        plan, MIXED_SPECS, [plan.devices[1].id, plan.devices[0].id], node_exists=lambda p: True
    )
    assert [(d.container_path, d.host_path, d.permissions) for d in alloc.device_specs] == [
        (p, p, "rw") for p in [*CONTROL, "/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap21", "/dev/nvidia-caps/nvidia-cap22",
                               "/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap12", "/dev/nvidia-caps/nvidia-cap13"]
    ]  # fmt: skip
    assert not [n for n in alloc.notes if "nvidia-caps" in n]


def test_caps_are_looked_up_by_the_gpu_minor_and_placed_under_the_dev_root(h200: NodeInventory) -> None:
    # /dev/nvidia1 although NVML index 0: mig-minors counts GPUs by minor number.
    inv = _mig(h200, ["1g.18gb"], MIG_MINORS, minor=1)
    config = parse_plugin_config(
        "flags: {migStrategy: single, nvidiaDevRoot: /run/nvidia/driver, plugin: {passDeviceSpecs: true}}"
    )
    (plan,) = plan_resources(inv, config)
    alloc = allocate_response(plan, config, [plan.devices[0].id], node_exists=lambda p: False)
    # GPU minor 1, GI 1, CI 0: 3 + 9 * 16 = 147, 148
    assert [(d.container_path, d.host_path) for d in alloc.device_specs] == [
        ("/dev/nvidia1", "/run/nvidia/driver/dev/nvidia1"),
        ("/dev/nvidia-caps/nvidia-cap147", "/run/nvidia/driver/dev/nvidia-caps/nvidia-cap147"),
        ("/dev/nvidia-caps/nvidia-cap148", "/run/nvidia/driver/dev/nvidia-caps/nvidia-cap148"),
    ]


def test_without_recorded_minors_the_caps_are_left_out_and_a_note_says_so(h200: NodeInventory) -> None:
    (plan,) = plan_resources(_mig(h200, ["3g.71gb"], None), MIXED_SPECS)
    alloc = allocate_response(plan, MIXED_SPECS, [plan.devices[0].id], node_exists=lambda p: False)
    assert [d.container_path for d in alloc.device_specs] == ["/dev/nvidia0"]
    assert alloc.notes == (
        "the MIG devices' /dev/nvidia-caps nodes are not passed (the reading has no mig_minors)",
    )


def test_a_mig_device_without_its_capabilities_stops_the_plugin(h200: NodeInventory) -> None:
    # Upstream builds each MIG device's paths at start and does not start without them; an empty list is
    # a driver without /proc/driver/nvidia-caps/mig-minors.
    with pytest.raises(ConfigError) as err:
        plan_resources(_mig(h200, ["3g.71gb"], []), MIXED_SPECS)
    inv = _mig(h200, ["3g.71gb"], [])
    assert str(err.value) == (
        f"error getting device paths of MIG device {inv.devices[0].mig_devices[0].uuid}: "
        f"missing MIG GPU instance capability path: {CAPS}/gpu0/mig/gi1/access"
    )
    # Whole GPUs never need the file.
    whole = parse_plugin_config("flags: {plugin: {passDeviceSpecs: true}}")
    assert plan_resources(dataclasses.replace(h200, mig_minors=()), whole)[0].devices[0].mig_caps == ()


def test_mig_minors_round_trip_through_the_reading(h200: NodeInventory) -> None:
    inv = _mig(h200, ["3g.71gb"], MIG_MINORS)
    reading = inventory_to_reading(inv)
    assert reading["mig_minors"] == MIG_MINORS
    assert parse_reading(reading, source="r.json") == dataclasses.replace(inv, source="r.json")
    assert "mig_minors" not in inventory_to_reading(h200)  # not recorded stays not recorded


def test_a_bad_mig_minors_entry_names_the_file_and_field(h200: NodeInventory) -> None:
    reading = {**inventory_to_reading(h200), "mig_minors": "gpu0/gi1/access 12"}
    with pytest.raises(InputError) as err:
        parse_reading(reading, source="node.json")
    assert (err.value.source, err.value.field) == ("node.json", "mig_minors")


def test_cdi_spec_lists_mig_devices_after_the_gpus_with_parent_and_cap_nodes(h200: NodeInventory) -> None:
    """nvidia-ctk cdi generate (pkg/nvcdi): GPU specs first, then one spec per MIG device named
    ``<gpu index>:<mig index>`` and by its MIG UUID, edits = the parent's /dev/nvidia<minor> and the
    GI / CI access nodes; ``all`` holds every node once. GPU minor 1: gpu1/gi1 is minor 3 + 9 * 16 = 147,
    its ci0 148; gpu1/gi2 is 3 + 9 * 17 = 156, its ci0 157 (the generated layout above)."""
    inv = _mig(h200, ["3g.71gb", "3g.71gb"], MIG_MINORS, minor=1)
    spec = cdi_spec(inv, dev_root="/host/dev")
    names = [d["name"] for d in spec["devices"]]  # type: ignore[attr-defined,index]
    migs = [m.uuid for m in inv.devices[0].mig_devices]
    assert names == ["0", inv.devices[0].uuid, "0:0", migs[0], "0:1", migs[1], "all"]
    nodes = {d["name"]: [n["path"] for n in d["containerEdits"]["deviceNodes"]] for d in spec["devices"]}  # type: ignore[attr-defined,index]
    first = [
        "/host/dev/nvidia1",
        "/host/dev/nvidia-caps/nvidia-cap147",
        "/host/dev/nvidia-caps/nvidia-cap148",
    ]
    second = [
        "/host/dev/nvidia1",
        "/host/dev/nvidia-caps/nvidia-cap156",
        "/host/dev/nvidia-caps/nvidia-cap157",
    ]
    assert nodes["0:0"] == nodes[migs[0]] == first
    assert nodes["0:1"] == nodes[migs[1]] == second
    assert nodes["all"] == [*first, *second[1:]]


def test_cdi_spec_without_recorded_mig_minors_has_no_mig_entries(h200: NodeInventory) -> None:
    names = [d["name"] for d in cdi_spec(_mig(h200, ["3g.71gb"], None))["devices"]]  # type: ignore[attr-defined,index]
    assert names == ["0", h200.devices[0].uuid, "all"]


def test_cdi_spec_with_a_missing_capability_is_a_config_error(h200: NodeInventory) -> None:
    inv = _mig(h200, ["3g.71gb"], ["gpu0/gi1/access 12"])
    with pytest.raises(ConfigError, match=r"MIG device MIG-00000000.*compute instance capability path"):
        cdi_spec(inv)
