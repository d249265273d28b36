"""NVIDIA device plugin config (api/config/v1) and the resources a node advertises under it (R6.2, R6.3)."""

from __future__ import annotations

import dataclasses

import pytest
from device_readings import README_TIME_SLICING, mig_node

from kubegpu.devices import (
    DeviceListStrategy,
    Health,
    MigStrategy,
    NodeInventory,
    PluginConfig,
    ReplicatedResource,
    parse_plugin_config,
    plan_resources,
)
from kubegpu.errors import ConfigError, InputError


def test_readme_time_slicing_config_parses() -> None:
    config = parse_plugin_config(README_TIME_SLICING)
    assert config == PluginConfig(
        mig_strategy=MigStrategy.NONE,
        rename_by_default=True,
        fail_requests_greater_than_one=True,
        time_slicing=(ReplicatedResource("nvidia.com/gpu", 10),),
    )
    assert config.sharing_strategy == "time-slicing"


def test_empty_config_is_the_plugin_default() -> None:
    assert parse_plugin_config("") == PluginConfig()
    assert PluginConfig().device_list_strategy == (DeviceListStrategy.ENVVAR,)


def test_device_list_strategy_may_be_a_list() -> None:
    config = parse_plugin_config("flags: {plugin: {deviceListStrategy: [envvar, cdi-cri]}}")
    assert config.device_list_strategy == (DeviceListStrategy.ENVVAR, DeviceListStrategy.CDI_CRI)


# Messages as k8s-device-plugin v0.20.0 gives them (cmd/nvidia-device-plugin/main.go validateFlags,
# api/config/v1/replicas.go, imex.go, duration.go); accepted-with-warning inputs: test_plugin_config_upstream.py
@pytest.mark.parametrize(
    ("text", "field", "problem"),
    [
        ("version: v2", "version", "unknown version: v2"),
        ("flags: {migStrategy: some}", "flags.migStrategy", "unknown MIG strategy: some"),
        ("flags: {plugin: {deviceListStrategy: nvidia-ctk}}", "flags.plugin.deviceListStrategy",
         "invalid --device-list-strategy option: invalid strategy: nvidia-ctk"),
        ("sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 0}]}}",
         "sharing.timeSlicing.resources[0].replicas", "number of replicas must be >= 2"),
        ("sharing: {timeSlicing: {resources: [{replicas: 2}]}}", "sharing.timeSlicing.resources[0]",
         "no resource name specified"),
        ("sharing: {timeSlicing: {resources: [{name: amd.com/gpu, replicas: 2}]}}",
         "sharing.timeSlicing.resources[0].name", "amd.com/gpu"),
        ("sharing: {timeSlicing: {renameByDefault: yes please}}", "sharing.timeSlicing.renameByDefault",
         "true or false"),
        ("sharing: [1, 2]", "sharing", "expected a mapping"),
        ("version: v1\n  bad: indent: here", "", "invalid YAML at line 2"),
    ],
    ids=[
        "version", "mig strategy", "device list strategy", "zero replicas", "no name", "foreign resource",
        "not a bool", "not a mapping", "broken yaml",
    ],
)  # fmt: skip
def test_bad_config_is_input_error_naming_the_field(text: str, field: str, problem: str) -> None:
    with pytest.raises(InputError) as err:
        parse_plugin_config(text, source="config.yaml")
    assert err.value.source == "config.yaml"
    assert err.value.field == field
    assert problem in err.value.problem


def test_whole_gpus_are_one_resource_each(dgx1: NodeInventory) -> None:
    (plan,) = plan_resources(dgx1, PluginConfig())
    assert plan.name == "nvidia.com/gpu" and not plan.shared
    assert [d.id for d in plan.devices] == [g.uuid for g in dgx1.devices]
    assert [d.numa_node for d in plan.devices] == [0, 0, 0, 0, 1, 1, 1, 1]


def test_time_slicing_advertises_replicas_as_annotated_ids_and_renames(h200: NodeInventory) -> None:
    (plan,) = plan_resources(h200, parse_plugin_config(README_TIME_SLICING))
    uuid = h200.devices[0].uuid
    # Upstream: "<uuid>::<n>" for n in 0..replicas-1; renameByDefault → nvidia.com/gpu.shared.
    assert plan.name == "nvidia.com/gpu.shared" and plan.base_name == "nvidia.com/gpu"
    assert [d.id for d in plan.devices] == [f"{uuid}::{n}" for n in range(10)]
    assert {d.device for d in plan.devices} == {uuid}
    assert plan.fail_requests_greater_than_one
    assert plan.replicas_per_gpu() == {uuid: 10}


def test_time_slicing_without_rename_keeps_the_resource_name(h200: NodeInventory) -> None:
    config = parse_plugin_config("sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 4}]}}")
    (plan,) = plan_resources(h200, config)
    assert plan.name == "nvidia.com/gpu" and len(plan.devices) == 4
    assert not plan.fail_requests_greater_than_one  # upstream default for time-slicing: false


def test_mixed_strategy_names_each_mig_profile(h200: NodeInventory) -> None:
    inv = mig_node(h200, ["1g.18gb", "1g.18gb", "3g.71gb"])
    plans = {
        p.name: [d.id for d in p.devices]
        for p in plan_resources(inv, PluginConfig(mig_strategy=MigStrategy.MIXED))
    }
    assert plans == {
        "nvidia.com/mig-1g.18gb": [inv.devices[0].mig_devices[0].uuid, inv.devices[0].mig_devices[1].uuid],
        "nvidia.com/mig-3g.71gb": [inv.devices[0].mig_devices[2].uuid],
    }


def test_single_strategy_exposes_mig_devices_as_gpus_and_refuses_mixed_profiles(h200: NodeInventory) -> None:
    (plan,) = plan_resources(mig_node(h200, ["1g.18gb"] * 7), PluginConfig(mig_strategy=MigStrategy.SINGLE))
    assert plan.name == "nvidia.com/gpu" and len(plan.devices) == 7
    assert all(d.mig_index is not None for d in plan.devices)
    with pytest.raises(ConfigError, match="one profile"):
        plan_resources(mig_node(h200, ["1g.18gb", "3g.71gb"]), PluginConfig(mig_strategy=MigStrategy.SINGLE))


def test_none_strategy_advertises_a_mig_enabled_gpu_as_a_whole_gpu(h200: NodeInventory) -> None:
    (plan,) = plan_resources(mig_node(h200, ["1g.18gb"]), PluginConfig())
    assert [d.id for d in plan.devices] == [h200.devices[0].uuid]


def test_an_unhealthy_gpu_makes_its_replicas_and_mig_devices_unhealthy(h200: NodeInventory) -> None:
    inv = mig_node(h200, ["1g.18gb"])
    sick = dataclasses.replace(inv, devices=(dataclasses.replace(inv.devices[0], health=Health.UNHEALTHY),))
    (plan,) = plan_resources(sick, PluginConfig(mig_strategy=MigStrategy.MIXED))
    assert [d.health for d in plan.devices] == [Health.UNHEALTHY]
