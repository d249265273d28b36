"""The device plugin's Allocate response per deviceListStrategy, MPS, and the container's CUDA view (R9.3, R12).

Expected values follow NVIDIA k8s-device-plugin: internal/plugin/server.go (getAllocateResponse,
updateResponseForCDI, updateResponseForDeviceMounts: /var/run/nvidia-container-devices, host /dev/null),
internal/plugin/mps.go (CUDA_MPS_PIPE_DIRECTORY, pipe and shm mounts), cmd/mps-control-daemon/mps
(root.go paths, daemon.go limits), internal/rm/devices.go (AnnotatedIDs.GetIDs keeps duplicates),
cmd/nvidia-device-plugin (CDI vendor k8s.device-plugin.nvidia.com) and container-device-interface
(annotation key cdi.k8s.io/<plugin>_<id>).
"""

from __future__ import annotations

import pytest
from device_readings import README_TIME_SLICING, mig_node

from kubegpu.devices import NodeInventory, gfd_labels, parse_plugin_config, plan_resources
from kubegpu.devices.container_view import AllocateError, allocate_response
from kubegpu.devices.sharing import PluginConfig, ResourcePlan, SharingStrategy
from kubegpu.errors import ConfigError, InputError


def _plan(inv: NodeInventory, config: PluginConfig, name: str = "nvidia.com/gpu") -> ResourcePlan:
    return next(p for p in plan_resources(inv, config) if p.name == name)


def test_envvar_injects_uuids_in_request_order(dgx1: NodeInventory) -> None:
    config = PluginConfig()
    ids = [dgx1.devices[5].uuid, dgx1.devices[2].uuid]
    alloc = allocate_response(_plan(dgx1, config), config, ids)
    assert alloc.envs == {"NVIDIA_VISIBLE_DEVICES": f"{ids[0]},{ids[1]}"}
    assert (alloc.mounts, alloc.cdi_devices, dict(alloc.annotations)) == ((), (), {})
    # CUDA numbers the injected GPUs in PCI (host index) order: host GPU 2 is CUDA 0, host GPU 5 is CUDA 1.
    assert [(v.cuda_index, v.host_index, v.uuid) for v in alloc.visible] == [(0, 2, ids[1]), (1, 5, ids[0])]


def test_index_strategy_injects_indexes(dgx1: NodeInventory) -> None:
    config = parse_plugin_config("flags: {plugin: {deviceIDStrategy: index}}")
    alloc = allocate_response(_plan(dgx1, config), config, [dgx1.devices[6].uuid, dgx1.devices[1].uuid])
    assert alloc.envs == {"NVIDIA_VISIBLE_DEVICES": "6,1"}


def test_volume_mounts_list_devices_as_mounts_of_dev_null(dgx1: NodeInventory) -> None:
    config = parse_plugin_config("flags: {plugin: {deviceListStrategy: volume-mounts}}")
    uuid = dgx1.devices[0].uuid
    alloc = allocate_response(_plan(dgx1, config), config, [uuid])
    assert alloc.envs == {"NVIDIA_VISIBLE_DEVICES": "/var/run/nvidia-container-devices"}
    assert [(m.container_path, m.host_path) for m in alloc.mounts] == [
        (f"/var/run/nvidia-container-devices/{uuid}", "/dev/null")
    ]


def test_cdi_annotations_and_cri_use_the_plugins_cdi_vendor(dgx1: NodeInventory) -> None:
    config = parse_plugin_config("flags: {plugin: {deviceListStrategy: [cdi-annotations, cdi-cri]}}")
    a, b = dgx1.devices[0].uuid, dgx1.devices[1].uuid
    alloc = allocate_response(_plan(dgx1, config), config, [a, b], response_id="r1")
    names = (f"k8s.device-plugin.nvidia.com/gpu={a}", f"k8s.device-plugin.nvidia.com/gpu={b}")
    assert alloc.annotations == {"cdi.k8s.io/nvidia-device-plugin_r1": ",".join(names)}
    assert alloc.cdi_devices == names
    # Only CDI strategies: no NVIDIA_VISIBLE_DEVICES (upstream AllCDIEnabled returns early).
    assert alloc.envs == {} and alloc.mounts == ()


def test_custom_cdi_annotation_prefix(dgx1: NodeInventory) -> None:
    config = parse_plugin_config(
        "flags: {plugin: {deviceListStrategy: [envvar, cdi-annotations], cdiAnnotationPrefix: cdi.example.com/}}"
    )
    alloc = allocate_response(_plan(dgx1, config), config, [dgx1.devices[0].uuid], response_id="r1")
    assert list(alloc.annotations) == ["cdi.example.com/nvidia-device-plugin_r1"]
    assert "NVIDIA_VISIBLE_DEVICES" in alloc.envs


def test_time_sliced_replicas_collapse_to_one_cuda_device(dgx1: NodeInventory) -> None:
    config = parse_plugin_config("sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 4}]}}")
    uuid = dgx1.devices[3].uuid
    alloc = allocate_response(_plan(dgx1, config), config, [f"{uuid}::0", f"{uuid}::2"])
    # AnnotatedIDs.GetIDs strips the replica; uniqueDeviceIDsFromAnnotatedDeviceIDs injects the GPU once.
    assert alloc.envs == {"NVIDIA_VISIBLE_DEVICES": uuid}
    (only,) = alloc.visible
    assert (only.cuda_index, only.host_index, only.device_ids) == (0, 3, (f"{uuid}::0", f"{uuid}::2"))
    assert any("share its memory" in n for n in alloc.notes)


def test_fail_requests_greater_than_one_text_and_admission_message(h200: NodeInventory) -> None:
    config = parse_plugin_config(README_TIME_SLICING)
    plan = _plan(h200, config, "nvidia.com/gpu.shared")
    uuid = h200.devices[0].uuid
    with pytest.raises(AllocateError) as err:
        allocate_response(plan, config, [f"{uuid}::0", f"{uuid}::1"])
    # v0.20.0 internal/plugin/server.go Allocate wraps internal/rm/rm.go ValidateRequest's error
    assert str(err.value) == (
        'invalid allocation request for "nvidia.com/gpu.shared": invalid request: maximum request size for '
        "shared resources is 1; found 2"
    )
    assert err.value.admission_message.startswith("Allocate failed due to rpc error: code = Unknown desc = ")
    with pytest.raises(AllocateError, match="unknown device: GPU-nope"):
        allocate_response(plan, config, ["GPU-nope"])


def test_mig_devices_in_mixed_strategy(h200: NodeInventory) -> None:
    inv = mig_node(h200, ["3g.71gb", "3g.71gb"])
    config = parse_plugin_config("flags: {migStrategy: mixed, plugin: {deviceIDStrategy: index}}")
    plan = _plan(inv, config, "nvidia.com/mig-3g.71gb")
    alloc = allocate_response(plan, config, [d.id for d in plan.devices])
    assert alloc.envs == {"NVIDIA_VISIBLE_DEVICES": "0:0,0:1"}
    assert [(v.host_index, v.mig_index) for v in alloc.visible] == [(0, 0), (0, 1)]
    assert any("only one MIG device" in n for n in alloc.notes)


MPS = """
version: v1
sharing:
  mps:
    renameByDefault: true
    resources:
    - name: nvidia.com/gpu
      replicas: 4
"""


def test_mps_config_advertises_shared_replicas_and_labels_say_mps(h200: NodeInventory) -> None:
    config = parse_plugin_config(MPS)
    assert config.sharing_strategy is SharingStrategy.MPS
    plan = _plan(h200, config, "nvidia.com/gpu.shared")
    assert (plan.replicas, plan.sharing, plan.fail_requests_greater_than_one) == (
        4,
        SharingStrategy.MPS,
        True,
    )
    assert [d.id for d in plan.devices] == [f"{h200.devices[0].uuid}::{n}" for n in range(4)]
    labels = gfd_labels(h200, config)
    assert labels["nvidia.com/gpu.sharing-strategy"] == "mps"
    assert labels["nvidia.com/mps.capable"] == "true"
    assert labels["nvidia.com/gpu.replicas"] == "4"


def test_mps_allocate_mounts_pipe_and_shm_and_daemon_limits(h200: NodeInventory) -> None:
    config = parse_plugin_config(MPS)
    plan = _plan(h200, config, "nvidia.com/gpu.shared")
    uuid = h200.devices[0].uuid
    alloc = allocate_response(plan, config, [f"{uuid}::1"], gpu_memory={0: h200.devices[0].memory_total})
    assert alloc.envs == {
        "CUDA_MPS_PIPE_DIRECTORY": "/mps/nvidia.com/gpu.shared/pipe",
        "NVIDIA_VISIBLE_DEVICES": uuid,
    }
    assert [(m.container_path, m.host_path) for m in alloc.mounts] == [
        ("/mps/nvidia.com/gpu.shared/pipe", "/run/nvidia/mps/nvidia.com/gpu.shared/pipe"),
        ("/dev/shm", "/run/nvidia/mps/shm"),
    ]
    assert alloc.mps is not None
    # daemon.go: 100/replicas percent, total memory / replicas in MiB (H200: 150754820096 B = 143771 MiB).
    assert alloc.mps.control_commands() == (
        "set_default_device_pinned_mem_limit 0 35942M",
        "set_default_active_thread_percentage 25",
    )
    assert alloc.mps.client_env() == {
        "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "25",
        "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=35942M",
    }
    # MPS refuses a second replica in one container whatever failRequestsGreaterThanOne says.
    with pytest.raises(AllocateError, match="maximum request size for shared resources is 1"):
        allocate_response(plan, config, [f"{uuid}::0", f"{uuid}::1"])


def test_mps_on_mig_gpus_is_two_sharing_modes(h200: NodeInventory) -> None:
    # internal/plugin/mps.go getMPSOptions (v0.20.0): MIG devices under MPS stop the plugin
    config = parse_plugin_config(MPS + "flags: {migStrategy: single}\n")
    with pytest.raises(ConfigError, match="sharing using MPS is not supported for MIG devices"):
        plan_resources(mig_node(h200, ["1g.18gb"]), config)


# cmd/nvidia-device-plugin/main.go validateFlags and replicas.go UnmarshalJSON (v0.20.0)
@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        ("sharing: {mps: {failRequestsGreaterThanOne: false, resources: []}}", "sharing.mps.resources",
         "no resources specified"),
        (MPS + "flags: {migStrategy: mixed}", "flags.migStrategy", "using --mig-strategy=mixed is not supported with MPS"),
        (MPS + "flags: {mpsRoot: ''}", "flags.mpsRoot", "using MPS requires --mps-root to be specified"),
    ],
)  # fmt: skip
def test_bad_mps_config_names_the_field(text: str, field: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        parse_plugin_config(text, source="c.yaml")
    assert (err.value.field, err.value.problem) == (field, message)


# passDeviceSpecs: upstream server.go apiDeviceSpecs (optional control nodes only where os.Stat finds them,
# permissions "rw", host path filepath.Join(nvidiaDevRoot, path)) over rm GetDevicePaths (the four control
# nodes first, then each requested device's paths in request order).
def test_pass_device_specs_lists_existing_control_nodes_then_gpu_nodes(dgx1: NodeInventory) -> None:
    config = parse_plugin_config("flags: {plugin: {passDeviceSpecs: true}}")
    ids = [dgx1.devices[5].uuid, dgx1.devices[2].uuid]
    without_modeset = {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"}
    alloc = allocate_response(_plan(dgx1, config), config, ids, node_exists=without_modeset.__contains__)
    assert [(d.container_path, d.host_path, d.permissions) for d in alloc.device_specs] == [
        ("/dev/nvidiactl", "/dev/nvidiactl", "rw"),
        ("/dev/nvidia-uvm", "/dev/nvidia-uvm", "rw"),
        ("/dev/nvidia-uvm-tools", "/dev/nvidia-uvm-tools", "rw"),
        ("/dev/nvidia5", "/dev/nvidia5", "rw"),
        ("/dev/nvidia2", "/dev/nvidia2", "rw"),
    ]
    assert alloc.envs == {"NVIDIA_VISIBLE_DEVICES": f"{ids[0]},{ids[1]}"}
    assert alloc.as_dict()["device_specs"][3] == {
        "container_path": "/dev/nvidia5",
        "host_path": "/dev/nvidia5",
        "permissions": "rw",
    }


def test_device_specs_use_the_recorded_minor_and_the_dev_root(h200: NodeInventory) -> None:
    # The real H200 nvml.json records no minor, so its index stands in; the same node's nvidia-smi -q shows
    # <minor_number>0</minor_number>. A driver container's root puts the host paths under it.
    config = parse_plugin_config(
        "flags: {nvidiaDevRoot: /run/nvidia/driver, plugin: {passDeviceSpecs: true}}"
    )
    alloc = allocate_response(
        _plan(h200, config), config, [h200.devices[0].uuid], node_exists=lambda p: False
    )
    assert [(d.container_path, d.host_path) for d in alloc.device_specs] == [
        ("/dev/nvidia0", "/run/nvidia/driver/dev/nvidia0")
    ]


def test_device_specs_off_by_default_and_absent_when_only_cdi(dgx1: NodeInventory) -> None:
    uuid = dgx1.devices[0].uuid
    default = PluginConfig()
    assert allocate_response(_plan(dgx1, default), default, [uuid]).device_specs == ()
    cdi_only = parse_plugin_config("flags: {plugin: {passDeviceSpecs: true, deviceListStrategy: cdi-cri}}")
    assert allocate_response(_plan(dgx1, cdi_only), cdi_only, [uuid]).device_specs == ()


def test_device_specs_offline_assume_control_nodes_and_say_so(h200: NodeInventory) -> None:
    inv = mig_node(h200, ["3g.71gb", "3g.71gb"])
    config = parse_plugin_config("flags: {migStrategy: mixed, plugin: {passDeviceSpecs: true}}")
    plan = _plan(inv, config, "nvidia.com/mig-3g.71gb")
    alloc = allocate_response(plan, config, [plan.devices[1].id])
    assert [d.container_path for d in alloc.device_specs] == [
        "/dev/nvidiactl",
        "/dev/nvidia-uvm",
        "/dev/nvidia-uvm-tools",
        "/dev/nvidia-modeset",
        "/dev/nvidia0",  # the MIG device's parent GPU
    ]
    assert any("only where it exists" in n for n in alloc.notes)
    assert any("/dev/nvidia-caps" in n for n in alloc.notes)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("flags: {plugin: {passDeviceSpecs: 'yes'}}", "flags.plugin.passDeviceSpecs"),
    ],
)
def test_bad_device_spec_flags_name_the_field(text: str, field: str) -> None:
    with pytest.raises(InputError) as err:
        parse_plugin_config(text, source="c.yaml")
    assert err.value.field == field


TWO_REPLICAS = "sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 4}]}}"


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ("deviceListStrategy: envvar", {"env": "{uuid}"}),
        ("deviceListStrategy: envvar, deviceIDStrategy: index", {"env": "0"}),
        ("deviceListStrategy: volume-mounts", {"mounts": ["/var/run/nvidia-container-devices/{uuid}"]}),
        ("deviceListStrategy: cdi-cri", {"cdi": ["k8s.device-plugin.nvidia.com/gpu={uuid}"]}),
        ("deviceListStrategy: envvar, passDeviceSpecs: true", {"env": "{uuid}", "specs": 2}),
    ],
)
def test_two_replicas_of_one_gpu_inject_it_once(
    dgx1: NodeInventory, flags: str, expected: dict[str, object]
) -> None:
    """NVIDIA k8s-device-plugin v0.18.0+ internal/plugin/server.go ``uniqueDeviceIDsFromAnnotatedDeviceIDs``
    (commit 75633e25); expected values are v0.20.0's own Allocate on ``GPU-0::0, GPU-0::1`` (QA
    out/upstream_go_results.txt): ``GPU-0`` once, index ``0``, one mount, one CDI name, while
    ``apiDeviceSpecs`` gets the request ids and passes the GPU node twice."""
    config = parse_plugin_config(f"{TWO_REPLICAS}\nflags: {{plugin: {{{flags}}}}}")
    uuid = dgx1.devices[0].uuid
    alloc = allocate_response(
        _plan(dgx1, config), config, [f"{uuid}::0", f"{uuid}::1"], node_exists=lambda _: False
    )
    if "env" in expected:
        assert alloc.envs["NVIDIA_VISIBLE_DEVICES"] == str(expected["env"]).format(uuid=uuid)
    if "mounts" in expected:
        assert [m.container_path for m in alloc.mounts] == [
            str(p).format(uuid=uuid) for p in expected["mounts"]
        ]  # type: ignore[attr-defined]
    if "cdi" in expected:
        assert list(alloc.cdi_devices) == [str(n).format(uuid=uuid) for n in expected["cdi"]]  # type: ignore[attr-defined]
    if "specs" in expected:
        assert [d.container_path for d in alloc.device_specs] == ["/dev/nvidia0", "/dev/nvidia0"]


def test_cdi_annotation_names_each_device_once(dgx1: NodeInventory) -> None:
    """v0.20.0 server.go ``updateResponseForCDI`` is given the unique device ids."""
    config = parse_plugin_config(
        f"{TWO_REPLICAS}\nflags: {{plugin: {{deviceListStrategy: cdi-annotations}}}}"
    )
    uuid = dgx1.devices[0].uuid
    alloc = allocate_response(_plan(dgx1, config), config, [f"{uuid}::0", f"{uuid}::1"], response_id="r1")
    assert alloc.annotations == {
        "cdi.k8s.io/nvidia-device-plugin_r1": f"k8s.device-plugin.nvidia.com/gpu={uuid}"
    }


def test_an_unknown_device_is_refused_before_the_replica_count(h200: NodeInventory) -> None:
    """v0.20.0 internal/rm/rm.go ``ValidateRequest`` checks every id is known before it counts replicas;
    ``Allocate`` (internal/plugin/server.go) wraps the error with ``invalid allocation request for %q``."""
    config = parse_plugin_config(README_TIME_SLICING)
    plan = _plan(h200, config, "nvidia.com/gpu.shared")
    with pytest.raises(AllocateError) as err:
        allocate_response(plan, config, ["GPU-nope::0", "GPU-nope::1"])
    assert str(err.value) == (
        'invalid allocation request for "nvidia.com/gpu.shared": invalid request: unknown device: GPU-nope::0'
    )
