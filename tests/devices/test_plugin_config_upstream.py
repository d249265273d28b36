"""The device plugin config accepted / refused / warned as k8s-device-plugin v0.20.0 does (issue 26 item 3).

Pins tag v0.20.0 (commit 1b826acc6af3079d8923bac395c3124b8861a9a6): ``api/config/v1/config.go`` (NewConfig,
parseConfigFrom with the non-strict ``sigs.k8s.io/yaml``, DisableResourceNamingInConfig), ``flags.go`` (the
field list), ``replicas.go`` (UnmarshalJSON, disableResoureRenaming), ``resources.go`` (NewResourceName),
``imex.go`` (AssertChannelIDsValid), ``duration.go`` and ``cmd/nvidia-device-plugin/main.go`` validateFlags.
Expected messages are upstream's format strings filled in by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kubegpu.devices import plan_resources
from kubegpu.devices.inventory import NodeInventory
from kubegpu.devices.plugin_config import load_plugin_config, parse_plugin_config
from kubegpu.devices.sharing import SharingStrategy
from kubegpu.errors import InputError

TS = "sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 2}]}}\n"
MPS = "sharing: {mps: {resources: [{name: nvidia.com/gpu, replicas: 2}]}}\n"


@pytest.mark.parametrize(
    "text",
    [
        "flags: {gdrcopyEnabled: true, gdsEnabled: false, mofedEnabled: true, useNodeFeatureAPI: true}",
        "flags: {plugin: {sharedDevicesAllocationPolicy: packed}}",
        "flags: {plugin: {sharedDevicesAllocationPolicy: distributed, nvidiaCTKPath: /usr/bin/nvidia-ctk}}",
        "flags: {deviceDiscoveryStrategy: tegra, failOnInitError: false}",
        "flags: {gfd: {sleepInterval: 60s, oneshot: false, noTimestamp: true}}",
        "flags: {gfd: {sleepInterval: infinite}}",
        "flags: {gfd: {sleepInterval: 1h30m}}",
        "imex: {channelIDs: [0], required: true}",
        "version: ''",
    ],
)
def test_v0_20_fields_are_accepted_without_warning(text: str) -> None:
    assert parse_plugin_config(text).warnings == ()


@pytest.mark.parametrize(
    ("text", "field", "problem"),
    [
        ("flags: {deviceDiscoveryStrategy: cuda}", "flags.deviceDiscoveryStrategy",
         "invalid --device-discovery-strategy option cuda (supported: auto, nvml, tegra)"),
        ("flags: {gfd: {sleepInterval: soon}}", "flags.gfd.sleepInterval", 'time: invalid duration "soon"'),
        ("flags: {gfd: {sleepInterval: 60}}", None, None),  # a number is nanoseconds: accepted
        ("imex: {channelIDs: [1, 2]}", "imex.channelIDs",
         "invalid IMEX channel IDs: invalid IMEX config: channelIDs must be [] or [0]; found [1 2]"),
        ("sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 1}]}}",
         "sharing.timeSlicing.resources[0].replicas", "number of replicas must be >= 2"),
        ("sharing: {timeSlicing: {renameByDefault: true}}", "sharing.timeSlicing.resources",
         "no resources specified"),
        ("sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu}]}}", "sharing.timeSlicing.resources[0]",
         "no replicas specified"),
        (MPS + "flags: {migStrategy: mixed}", "flags.migStrategy",
         "using --mig-strategy=mixed is not supported with MPS"),
        ("flags: {plugin: {sharedDevicesAllocationPolicy: spread}}", "flags.plugin.sharedDevicesAllocationPolicy",
         "invalid --shared-devices-allocation-policy option: spread (supported: distributed, packed)"),
        ("flags: {plugin: {deviceIDStrategy: serial}}", "flags.plugin.deviceIDStrategy",
         "invalid --device-id-strategy option: serial (supported: uuid, index)"),
        ("sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 2, devices: some}]}}",
         "sharing.timeSlicing.resources[0].devices", "devices set as 'some' but the only valid string input is 'all'"),
        ("resources: {gpus: [{name: gpu}]}", "resources.gpus[0]", "resources must have a 'pattern' field set"),
        ("flags: {gdsEnabled: sometimes}", "flags.gdsEnabled", "expected true or false, got 'sometimes'"),
    ],
)  # fmt: skip
def test_refused_as_upstream_refuses(text: str, field: str | None, problem: str | None) -> None:
    if field is None:
        parse_plugin_config(text)
        return
    with pytest.raises(InputError) as err:
        parse_plugin_config(text, source="cm.yaml")
    assert (err.value.field, err.value.problem) == (field, problem)
    assert str(err.value) == f"cm.yaml: {field}: {problem}"


@pytest.mark.parametrize(
    ("text", "warning"),
    [
        ("flags: {migStratgy: mixed}",
         "cm.yaml: flags.migStratgy: unknown field, ignored as the NVIDIA plugin ignores it (did you mean 'migStrategy'?)"),
        ("sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 2, rename: gpu-ts}]}}",
         "cm.yaml: sharing.timeSlicing.resources[0].rename: setting the 'rename' field is not yet supported by the "
         "NVIDIA plugin: ignored"),
        ("sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 2, devices: [0, 'GPU-0:1']}]}}", None),
        ("sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 2, devices: [0, 1]}]}}",
         "cm.yaml: sharing.timeSlicing.resources[0].devices: customizing the 'devices' field is not yet supported by "
         "the NVIDIA plugin: all devices are shared"),
        ("resources: {gpus: [{pattern: '*', name: gpu}]}",
         "cm.yaml: resources: customizing the 'resources' field is not yet supported by the NVIDIA plugin: ignored"),
        (MPS + TS.replace("sharing: {", "sharing2: {"),
         "cm.yaml: sharing2: unknown field, ignored as the NVIDIA plugin ignores it (did you mean 'sharing'?)"),
    ],
)  # fmt: skip
def test_ignored_upstream_is_accepted_with_a_warning(text: str, warning: str | None) -> None:
    if warning is None:  # "GPU-0:1" is neither an index, a MIG index nor a UUID: ReplicatedDevices refuses it
        with pytest.raises(InputError, match="unsupported type for device in devices list"):
            parse_plugin_config(text, source="cm.yaml")
        return
    assert warning in parse_plugin_config(text, source="cm.yaml").warnings


def test_name_without_prefix_is_nvidia_com(h200: NodeInventory) -> None:
    # resources.go NewResourceName: "gpu" → "nvidia.com/gpu"
    config = parse_plugin_config("sharing: {timeSlicing: {resources: [{name: gpu, replicas: 3}]}}")
    assert config.warnings == ()
    (plan,) = plan_resources(h200, config)
    assert (plan.name, plan.replicas) == ("nvidia.com/gpu", 3)


def test_mps_next_to_time_slicing_uses_mps_and_warns() -> None:
    config = parse_plugin_config(
        "flags: {mpsRoot: /run/nvidia/mps}\n"
        "sharing: {mps: {resources: [{name: nvidia.com/gpu, replicas: 2}]},"
        " timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 8}]}}",
        source="cm.yaml",
    )
    assert config.sharing_strategy is SharingStrategy.MPS
    assert config.time_slicing == ()
    assert config.warnings == (
        "cm.yaml: sharing.timeSlicing: ignored: sharing.mps is set, and the NVIDIA plugin then uses MPS only",
    )


def test_mps_fail_requests_greater_than_one_false_is_honoured(h200: NodeInventory) -> None:
    # config.go NewConfig sets it to true only when unset; rm.go ValidateRequest reads the pointer
    default = plan_resources(h200, parse_plugin_config(MPS))
    explicit = plan_resources(
        h200, parse_plugin_config(MPS.replace("{mps: {", "{mps: {failRequestsGreaterThanOne: false, "))
    )
    assert [p.fail_requests_greater_than_one for p in default] == [True]
    assert [p.fail_requests_greater_than_one for p in explicit] == [False]


def test_a_config_that_is_not_utf8_is_one_input_error_not_a_traceback(tmp_path: Path) -> None:
    """A UTF-16 file (as Windows editors save it) raised UnicodeDecodeError; the plugin reads YAML bytes and
    would refuse it too. Now one line naming the file, as every other unreadable input."""
    path = tmp_path / "config.yaml"
    path.write_text("version: v1\n", encoding="utf-16")
    with pytest.raises(
        InputError, match=r"cannot read config: UTF-16 text \(byte-order mark\); save it as UTF-8"
    ) as err:
        load_plugin_config(path)
    assert err.value.source == str(path)


def test_mps_without_mps_root_warns_k8s_device_plugin_1132() -> None:
    """NVIDIA/k8s-device-plugin#1132: an MPS config (version v1, sharing.mps, no flags.mpsRoot) in a plugin
    DaemonSet of the user's own stopped with "error starting plugins: unable to load config: unable to validate
    flags: using MPS requires --mps-root to be specified". cmd/nvidia-device-plugin/main.go (v0.20.0) declares
    --mps-root (env MPS_ROOT) without a default; the Helm chart's daemonset-device-plugin.yml sets MPS_ROOT."""
    config = parse_plugin_config(
        "version: v1\nsharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 10\n",
        source="config1.yaml",
    )
    assert config.sharing_strategy is SharingStrategy.MPS
    (warning,) = config.warnings
    assert warning.startswith("config1.yaml: flags.mpsRoot: not set")
    assert "using MPS requires --mps-root to be specified" in warning
    assert parse_plugin_config("flags: {mpsRoot: /run/nvidia/mps}\n" + MPS).warnings == ()
