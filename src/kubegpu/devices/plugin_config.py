"""The NVIDIA device plugin config file, accepted and refused as k8s-device-plugin v0.20.0 does (issue 26).

Upstream reads the file with ``sigs.k8s.io/yaml`` into ``api/config/v1`` structs (``config.go``,
``flags.go``, ``replicas.go``, ``resources.go``, ``imex.go``, ``duration.go``) and then checks it in
``cmd/nvidia-device-plugin/main.go`` ``validateFlags``. What that means here:

* refused, with upstream's reason: a version other than ``v1``; a value of the wrong type; an unknown
  ``migStrategy``, ``deviceListStrategy``, ``deviceIDStrategy``, ``sharedDevicesAllocationPolicy`` or
  ``deviceDiscoveryStrategy`` (the plugin takes auto / nvml / tegra); a ``gfd.sleepInterval`` that is not
  a Go duration, a number or ``infinite``; ``imex.channelIDs`` other than ``[]`` or ``[0]``; a
  ``sharing.timeSlicing`` / ``sharing.mps`` without ``resources`` ("no resources specified"); a shared
  resource without ``name`` or ``replicas``, with ``replicas`` below 2, or a name that is not a valid
  resource name; a ``devices`` value that is neither ``all``, a count > 0 nor a list of indices / UUIDs;
  a ``resources.gpus`` / ``resources.mig`` entry without ``pattern`` or ``name``; MPS with
  ``migStrategy: mixed``; MPS with an empty ``mpsRoot``.
* accepted with a warning, because upstream ignores them (silently or with a log line): unknown keys
  (named with the closest known key: the Go decoder drops them), top-level ``resources``
  (``DisableResourceNamingInConfig``), per-resource ``rename`` and ``devices``
  (``disableResoureRenaming``), ``sharing.timeSlicing`` next to ``sharing.mps`` (``ReplicatedResources``
  returns MPS), a shared resource name the plugin never advertises, a name listed twice (the first wins).
* accepted silently, as upstream: ``name: gpu`` (``NewResourceName`` adds ``nvidia.com/``), every
  ``flags`` field of v0.20.0 (``gdrcopyEnabled``, ``gdsEnabled``, ``mofedEnabled``, ``useNodeFeatureAPI``,
  ``plugin.sharedDevicesAllocationPolicy`` …), ``sharing.mps.failRequestsGreaterThanOne: false`` (honoured:
  ``NewConfig`` defaults it to true only when unset).

Must not: read files other than the one named, or import anything above ``kubegpu.devices``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from kubegpu.devices.sharing import (
    DEFAULT_MPS_ROOT,
    GO_MAX_INT,
    GPU_RESOURCE,
    MAX_MODELLED_REPLICA_IDS,
    MIG_RESOURCE_PREFIX,
    SHARED_SUFFIX,
    DeviceIdStrategy,
    DeviceListStrategy,
    MigStrategy,
    PluginConfig,
    ReplicatedResource,
    replica_model_note,
)
from kubegpu.errors import InputError, read_text, yaml_documents

# The v0.20.0 structs' JSON keys (flags.go CommandLineFlags, PluginCommandLineFlags, GFDCommandLineFlags).
TOP_KEYS = ("version", "flags", "resources", "sharing", "imex")
FLAG_TYPES: dict[str, type] = {
    "migStrategy": str, "failOnInitError": bool, "mpsRoot": str, "nvidiaDriverRoot": str, "nvidiaDevRoot": str,
    "gdrcopyEnabled": bool, "gdsEnabled": bool, "mofedEnabled": bool, "useNodeFeatureAPI": bool,
    "deviceDiscoveryStrategy": str, "plugin": dict, "gfd": dict,
}  # fmt: skip
PLUGIN_TYPES: dict[str, type] = {
    "passDeviceSpecs": bool, "deviceListStrategy": object, "deviceIDStrategy": str, "cdiAnnotationPrefix": str,
    "nvidiaCTKPath": str, "containerDriverRoot": str, "sharedDevicesAllocationPolicy": str,
}  # fmt: skip
GFD_TYPES: dict[str, type] = {
    "oneshot": bool, "noTimestamp": bool, "sleepInterval": object, "outputFile": str, "machineTypeFile": str,
}  # fmt: skip
SHARING_KEYS = ("timeSlicing", "mps")
REPLICATED_KEYS = ("renameByDefault", "failRequestsGreaterThanOne", "resources")
RESOURCE_KEYS = ("name", "rename", "devices", "replicas")
IMEX_KEYS = ("channelIDs", "required")
DISCOVERY_STRATEGIES = ("auto", "nvml", "tegra")  # the plugin's validateFlags; GFD also takes vfio
ALLOCATION_POLICIES = ("distributed", "packed")
MAX_RESOURCE_NAME = 63  # consts.go MaxResourceNameLength
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_GO_DURATION = re.compile(r"[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+|[-+]?0")
_INDEX = re.compile(r"\d+(:\d+)?")
_UUID = re.compile(r"(GPU|MIG)-[0-9a-fA-F-]{36}(/\d+/\d+)?")
_T = TypeVar("_T")


class _Reader:
    """Walks the document, collecting warnings; every error names the file and the field."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.warnings: list[str] = []

    def fail(self, where: str, problem: str) -> InputError:
        return InputError(problem, source=self.source, field=where)

    def warn(self, where: str, problem: str) -> None:
        self.warnings.append(f"{self.source + ': ' if self.source else ''}{where}: {problem}")

    def obj(self, raw: object, where: str, known: tuple[str, ...] | Mapping[str, type]) -> dict[str, object]:
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            raise self.fail(where or "(top level)", f"expected a mapping, got {type(raw).__name__}")
        for key in raw:
            if key not in known:
                close = difflib.get_close_matches(str(key), list(known), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(known)})"
                self.warn(
                    _join(where, str(key)), f"unknown field, ignored as the NVIDIA plugin ignores it{hint}"
                )
        return {k: v for k, v in raw.items() if k in known and v is not None}

    def typed(self, obj: Mapping[str, object], key: str, kind: type[_T], where: str, default: _T) -> _T:
        value = obj.get(key, default)
        ok = isinstance(value, kind) and not (kind is not bool and isinstance(value, bool))
        if not ok:
            want = {bool: "true or false", str: "a string", int: "an integer", dict: "a mapping"}.get(
                kind, str(kind)
            )
            raise self.fail(_join(where, key), f"expected {want}, got {value!r}")
        return value  # type: ignore[return-value]

    def choice(self, value: str, allowed: tuple[str, ...], where: str, message: Callable[[str], str]) -> str:
        if value not in allowed:
            raise self.fail(where, f"{message(value)} (supported: {', '.join(allowed)})")
        return value


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def parse(text: str, *, source: str = "") -> PluginConfig:
    """Parse the device plugin config (YAML or JSON); refusals raise ``InputError``, the rest warns."""
    docs = yaml_documents(text, source)  # bounded: depth, aliases, duplicate keys
    raw = docs[0] if docs else None
    r = _Reader(source)
    top = r.obj(raw, "", TOP_KEYS)
    version = top.get("version", "v1")
    if version not in ("v1", ""):
        raise r.fail("version", f"unknown version: {version}")
    flags = r.obj(top.get("flags"), "flags", FLAG_TYPES)
    for key, kind in FLAG_TYPES.items():
        if key in flags and kind is not object:
            r.typed(flags, key, kind, "flags", None)
    plugin = r.obj(flags.get("plugin"), "flags.plugin", PLUGIN_TYPES)
    gfd = r.obj(flags.get("gfd"), "flags.gfd", GFD_TYPES)
    for section, types, where in ((plugin, PLUGIN_TYPES, "flags.plugin"), (gfd, GFD_TYPES, "flags.gfd")):
        for key, kind in types.items():
            if key in section and kind is not object:
                r.typed(section, key, kind, where, None)
    _resources(r, top.get("resources"))
    _imex(r, top.get("imex"))
    _sleep_interval(r, gfd.get("sleepInterval"))
    r.choice(str(flags.get("deviceDiscoveryStrategy", "auto")), DISCOVERY_STRATEGIES, "flags.deviceDiscoveryStrategy",
             lambda v: f"invalid --device-discovery-strategy option {v}")  # fmt: skip
    if "sharedDevicesAllocationPolicy" in plugin:
        r.choice(str(plugin["sharedDevicesAllocationPolicy"]), ALLOCATION_POLICIES,
                 "flags.plugin.sharedDevicesAllocationPolicy",
                 lambda v: f"invalid --shared-devices-allocation-policy option: {v}")  # fmt: skip
    mig = MigStrategy(r.choice(str(flags.get("migStrategy", "none")), tuple(m.value for m in MigStrategy),
                               "flags.migStrategy", lambda v: f"unknown MIG strategy: {v}"))  # fmt: skip
    lists = plugin.get("deviceListStrategy", "envvar")
    lists = [lists] if isinstance(lists, str) else lists
    if not isinstance(lists, list) or not all(isinstance(s, str) for s in lists):
        raise r.fail("flags.plugin.deviceListStrategy", f"invalid deviceListStrategy: {lists!r}")
    for s in lists:
        r.choice(s, tuple(d.value for d in DeviceListStrategy), "flags.plugin.deviceListStrategy",
                 lambda v: f"invalid --device-list-strategy option: invalid strategy: {v}")  # fmt: skip
    id_strategy = r.choice(str(plugin.get("deviceIDStrategy", "uuid")), tuple(d.value for d in DeviceIdStrategy),
                           "flags.plugin.deviceIDStrategy", lambda v: f"invalid --device-id-strategy option: {v}")  # fmt: skip

    sharing = r.obj(top.get("sharing"), "sharing", SHARING_KEYS)
    ts_raw, mps_raw = sharing.get("timeSlicing"), sharing.get("mps")
    ts = _replicated(r, ts_raw, "sharing.timeSlicing") if ts_raw is not None else None
    mps = _replicated(r, mps_raw, "sharing.mps") if mps_raw is not None else None
    if ts is not None and mps is not None:
        r.warn("sharing.timeSlicing", "ignored: sharing.mps is set, and the NVIDIA plugin then uses MPS only")
    mps_root = r.typed(flags, "mpsRoot", str, "flags", DEFAULT_MPS_ROOT)
    if mps is not None:
        if mig is MigStrategy.MIXED:
            raise r.fail("flags.migStrategy", "using --mig-strategy=mixed is not supported with MPS")
        if not mps_root:
            raise r.fail("flags.mpsRoot", "using MPS requires --mps-root to be specified")
        if "mpsRoot" not in flags:
            # main.go's --mps-root (env MPS_ROOT) has no default; NVIDIA's Helm chart sets MPS_ROOT, a DaemonSet
            # of one's own may not (NVIDIA/k8s-device-plugin#1132)
            r.warn("flags.mpsRoot", f"not set: planned as {DEFAULT_MPS_ROOT}, which NVIDIA's Helm chart passes as "
                   "MPS_ROOT; a plugin DaemonSet without MPS_ROOT or --mps-root stops with \"using MPS requires "
                   "--mps-root to be specified\"")  # fmt: skip
        for i, res in enumerate(mps[2]):
            if res.name != GPU_RESOURCE:
                r.warn(f"sharing.mps.resources[{i}].name",
                       f"{res.name}: MPS shares full GPUs only; the NVIDIA plugin stops if MIG devices are MPS-shared")  # fmt: skip
    driver_root = r.typed(flags, "nvidiaDriverRoot", str, "flags", "/")
    dev_root = r.typed(flags, "nvidiaDevRoot", str, "flags", "") or driver_root
    if not dev_root.startswith("/"):
        r.warn(
            "flags.nvidiaDevRoot", f"{dev_root!r} is not an absolute path; device specs are joined under it"
        )
    # Sharing.ReplicatedResources: MPS when set, so time-slicing next to it is dropped entirely
    rename_ts, fail_ts, ts_res = ts if ts is not None and mps is None else (False, False, ())
    rename_mps, fail_mps, mps_res = mps or (False, True, ())
    return PluginConfig(
        mig_strategy=mig,
        device_list_strategy=tuple(DeviceListStrategy(s) for s in lists),
        device_id_strategy=DeviceIdStrategy(id_strategy),
        rename_by_default=rename_ts,
        fail_requests_greater_than_one=fail_ts,
        time_slicing=ts_res,
        mps=mps_res,
        mps_rename_by_default=rename_mps,
        mps_fail_requests_greater_than_one=fail_mps,
        mps_root=mps_root,
        cdi_annotation_prefix=r.typed(plugin, "cdiAnnotationPrefix", str, "flags.plugin", "cdi.k8s.io/"),
        pass_device_specs=r.typed(plugin, "passDeviceSpecs", bool, "flags.plugin", False),
        nvidia_dev_root=dev_root,
        warnings=tuple(r.warnings),
    )


def _replicated(r: _Reader, raw: object, where: str) -> tuple[bool, bool, tuple[ReplicatedResource, ...]]:
    """replicas.go ``ReplicatedResources.UnmarshalJSON`` and ``disableResoureRenaming``."""
    obj = r.obj(raw, where, REPLICATED_KEYS)
    rename_default = r.typed(obj, "renameByDefault", bool, where, False)
    fail = r.typed(obj, "failRequestsGreaterThanOne", bool, where, where.endswith("mps"))
    items = obj.get("resources")
    if not isinstance(items, list) or not items:
        raise r.fail(_join(where, "resources"), "no resources specified")
    out: list[ReplicatedResource] = []
    for i, item in enumerate(items):
        at = f"{where}.resources[{i}]"
        res = r.obj(item, at, RESOURCE_KEYS)
        if "name" not in res:
            raise r.fail(at, "no resource name specified")
        name = _resource_name(r, res["name"], f"{at}.name")
        _devices(r, res.get("devices", "all"), f"{at}.devices")
        if "replicas" not in res:
            raise r.fail(at, "no replicas specified")
        replicas = r.typed(res, "replicas", int, at, 0)
        if replicas < 2:
            raise r.fail(f"{at}.replicas", "number of replicas must be >= 2")
        if replicas > GO_MAX_INT:  # json.Unmarshal into Go's int: "cannot unmarshal number ... of type int"
            raise r.fail(
                f"{at}.replicas", f"{replicas} does not fit the plugin's integer (at most {GO_MAX_INT})"
            )
        if replicas > MAX_MODELLED_REPLICA_IDS:  # accepted, as the plugin does; kubegpu's limit is said
            r.warn(f"{at}.replicas", replica_model_note(replicas, 1))
        if "rename" in res:
            renamed = _resource_name(r, res["rename"], f"{at}.rename")
            if renamed != (name + SHARED_SUFFIX if rename_default else ""):
                r.warn(
                    f"{at}.rename",
                    "setting the 'rename' field is not yet supported by the NVIDIA plugin: ignored",
                )
        if name != GPU_RESOURCE and not name.startswith(MIG_RESOURCE_PREFIX):
            r.warn(
                f"{at}.name", f"{name} is no resource the NVIDIA plugin advertises: nothing is shared by it"
            )
        if any(o.name == name for o in out):
            r.warn(f"{at}.name", f"{name} is listed twice: the NVIDIA plugin uses the first entry")
            continue
        out.append(ReplicatedResource(name=name, replicas=replicas))
    return rename_default, fail, tuple(out)


def _resource_name(r: _Reader, raw: object, where: str) -> str:
    """resources.go ``NewResourceName``: ``nvidia.com/`` is added; the rest must be a DNS subdomain."""
    if not isinstance(raw, str):
        raise r.fail(where, f"expected a string, got {raw!r}")
    name = raw if raw.startswith("nvidia.com/") else "nvidia.com/" + raw
    if len(name) > MAX_RESOURCE_NAME:
        raise r.fail(
            where, f"fully-qualified resource name must be {MAX_RESOURCE_NAME} characters or less: {name}"
        )
    short = name.split("/", 1)[1]
    if len(short) > 253 or not _DNS_SUBDOMAIN.fullmatch(short):
        raise r.fail(
            where, f"incorrect format for resource name '{name}': not a lowercase RFC 1123 subdomain"
        )
    return name


def _devices(r: _Reader, raw: object, where: str) -> None:
    """replicas.go ``ReplicatedDevices.UnmarshalJSON``; anything but ``all`` is then ignored with a warning."""
    if raw == "all":
        return
    if isinstance(raw, str):
        raise r.fail(where, f"devices set as '{raw}' but the only valid string input is 'all'")
    if isinstance(raw, int) and not isinstance(raw, bool):
        if raw <= 0:
            raise r.fail(where, f"devices set as '{raw}' but a count of devices must be > 0")
    elif isinstance(raw, list):
        for d in raw:
            ok = (isinstance(d, int) and not isinstance(d, bool) and d >= 0) or (
                isinstance(d, str) and bool(_INDEX.fullmatch(d) or _UUID.fullmatch(d))
            )
            if not ok:
                raise r.fail(where, f"unsupported type for device in devices list: {d!r}")
    else:
        raise r.fail(where, f"unrecognized type for devices spec: {raw!r}")
    r.warn(
        where,
        "customizing the 'devices' field is not yet supported by the NVIDIA plugin: all devices are shared",
    )


def _resources(r: _Reader, raw: object) -> None:
    """config.go ``Resources`` (``Resource.UnmarshalJSON``), then ``DisableResourceNamingInConfig``."""
    obj = r.obj(raw, "resources", ("gpus", "mig"))
    found = False
    for key in ("gpus", "mig"):
        items = obj.get(key, [])
        if not isinstance(items, list):
            raise r.fail(f"resources.{key}", f"expected a list, got {items!r}")
        for i, item in enumerate(items):
            at = f"resources.{key}[{i}]"
            entry = r.obj(item, at, ("pattern", "name"))
            for must in ("pattern", "name"):
                if must not in entry:
                    raise r.fail(at, f"resources must have a '{must}' field set")
            _resource_name(r, entry["name"], f"{at}.name")
            found = True
    if found:
        r.warn(
            "resources",
            "customizing the 'resources' field is not yet supported by the NVIDIA plugin: ignored",
        )


def _imex(r: _Reader, raw: object) -> None:
    obj = r.obj(raw, "imex", IMEX_KEYS)
    r.typed(obj, "required", bool, "imex", False)
    ids = obj.get("channelIDs", [])
    if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise r.fail("imex.channelIDs", f"expected a list of integers, got {ids!r}")
    if ids and ids != [0]:
        found = "[" + " ".join(str(i) for i in ids) + "]"  # Go's %v of a slice
        raise r.fail(
            "imex.channelIDs",
            f"invalid IMEX channel IDs: invalid IMEX config: channelIDs must be [] or [0]; found {found}",
        )


def _sleep_interval(r: _Reader, raw: object) -> None:
    """duration.go ``Duration.UnmarshalJSON``: a number (nanoseconds), a Go duration or ``infinite``."""
    if raw is None or (isinstance(raw, (int, float)) and not isinstance(raw, bool)):
        return
    if isinstance(raw, str) and (raw == "infinite" or _GO_DURATION.fullmatch(raw)):
        return
    if isinstance(raw, str):
        raise r.fail("flags.gfd.sleepInterval", f'time: invalid duration "{raw}"')
    raise r.fail("flags.gfd.sleepInterval", "invalid duration")


def load_plugin_config(path: Path) -> PluginConfig:
    """The NVIDIA device plugin config file at ``path`` (see ``parse_plugin_config``)."""
    return parse_plugin_config(read_text(path, "config"), source=str(path))


def parse_plugin_config(text: str, *, source: str = "") -> PluginConfig:
    """Parse the NVIDIA device plugin config file (YAML or JSON) as v0.20.0 does.

    Refusals raise ``InputError``; what upstream ignores is accepted and listed in ``PluginConfig.warnings``.
    """
    return parse(text, source=source)
