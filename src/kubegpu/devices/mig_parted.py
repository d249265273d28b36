"""NVIDIA mig-parted config files (``version: v1``) and which GPUs their entries select (R6.3).

``parse_mig_parted_config`` reads ``mig-configs: {name: [{devices, mig-enabled, mig-devices, device-filter}]}``
and refuses what mig-parted refuses (api/spec/v1/spec.go ``UnmarshalJSON``, pkg/types/mig_config.go
``AssertValidFormat``, NVIDIA/mig-parted commit bd7160f), naming file and field on every error.

Selection follows mig-parted: ``WalkSelectedMigConfigForEachGPU`` (cmd/nvidia-mig-parted/assert/assert.go)
walks the entries in order and calls each one on every GPU whose PCI id its ``device-filter`` matches
(api/spec/v1/helpers.go ``MatchesDeviceFilter``, pkg/types/device.go ``Matches``) and whose index it lists;
a GPU no entry selects is left as it is, and a GPU two entries select gets both, the last one winning.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kubegpu.devices.mig import PROFILE_NAME, MigCatalog
from kubegpu.errors import InputError, read_text, yaml_documents


@dataclass(frozen=True, slots=True)
class DeviceFilter:
    """One device-filter item as mig-parted's ``NewDeviceIDFromString`` reads it."""

    text: str
    primary: int | None  # device << 16 | vendor; None: mig-parted cannot parse it and so matches nothing
    subsystem: int | None = None  # subdevice << 16 | subvendor, when given after ":"

    @classmethod
    def parse(cls, text: str) -> DeviceFilter:
        parts = text.split(":")
        values = [parse_uint32(p) for p in parts]
        if len(parts) > 2 or None in values:
            return cls(text, None)
        return cls(text, values[0], values[1] if len(values) == 2 else None)


def parse_uint32(text: str) -> int | None:
    """Go ``strconv.ParseUint(s, 0, 32)``, None where it fails: the base from the prefix (``0x``, ``0o``, ``0b``,
    and a bare leading ``0`` is octal, which Python's ``int(s, 0)`` refuses), no sign or space, at most 32 bits."""
    if not re.fullmatch(r"[0-9A-Za-z_]+", text):  # no sign, no space: ParseUint refuses them
        return None
    try:
        value = int("0o" + text[1:], 0) if re.fullmatch(r"0[0-7_]+", text) else int(text, 0)
    except ValueError:
        return None
    return value if value < 1 << 32 else None


@dataclass(frozen=True, slots=True)
class Selection:
    """Whether an entry selects a GPU, and what kubegpu could not tell about it."""

    selected: bool
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MigConfigEntry:
    """One item of a mig-parted config: which GPUs, MIG on or off, and the MIG devices to create."""

    devices: tuple[int, ...] | None  # None: "all"
    mig_enabled: bool
    mig_devices: Mapping[str, int]
    device_filter: tuple[str, ...] = ()  # PCI ids ("0x233510DE", "0x233010DE:0x16C110DE"); empty: every GPU

    def applies_to(self, gpu_index: int, catalog: MigCatalog | None) -> bool:
        """mig-parted's selection: the index is listed (or ``all``) and the device filter matches."""
        return self.select(gpu_index, catalog).selected

    def select(self, gpu_index: int, catalog: MigCatalog | None) -> Selection:
        """``applies_to`` with notes where kubegpu cannot tell: GFD labels carry no PCI id, so the GPU's id is
        its product's; a product with two ids, a subsystem id in the filter, or a filter mig-parted cannot
        parse (it matches nothing there) is said, not silently decided."""
        if self.devices is not None and gpu_index not in self.devices:
            return Selection(False)
        if not self.device_filter:
            return Selection(True)
        filters = [DeviceFilter.parse(f) for f in self.device_filter]
        notes = [
            f"device-filter {f.text!r} is not a PCI id mig-parted can read: it matches no GPU"
            for f in filters
            if f.primary is None
        ]
        if catalog is None or not catalog.pci_device_ids:
            what = catalog.product if catalog else "this GPU"
            notes.append(f"kubegpu does not know the PCI device id of {what}: planned as not selected")
            return Selection(False, tuple(notes))
        ids = {int(i, 16) for i in catalog.pci_device_ids}
        hits = [f for f in filters if f.primary in ids]
        if not hits:
            return Selection(False, tuple(notes))
        named = {f.primary for f in hits}
        if named != ids:
            notes.append(
                f"{catalog.product} GPUs have PCI id {' or '.join(catalog.pci_device_ids)}, the node's labels do "
                f"not say which; the device-filter names only {', '.join(f.text for f in hits)}: planned as selected"
            )
        if all(f.subsystem is not None for f in hits):
            notes.append(
                f"device-filter {', '.join(f.text for f in hits)} also names a PCI subsystem id, which the "
                "node's labels do not carry: planned as selected, mig-parted selects the GPU only if it matches"
            )
        return Selection(True, tuple(notes))


@dataclass(frozen=True, slots=True)
class MigPartedConfig:
    """A parsed mig-parted config file: named layouts (``mig-configs``)."""

    configs: Mapping[str, tuple[MigConfigEntry, ...]]
    source: str = ""

    def config(self, name: str) -> tuple[MigConfigEntry, ...]:
        if name not in self.configs:
            raise InputError(
                f"no mig-config named {name!r} (configs: {', '.join(self.configs)})",
                source=self.source,
                field="mig-configs",
            )
        return self.configs[name]


def load_mig_parted_config(path: Path) -> MigPartedConfig:
    return parse_mig_parted_config(read_text(path, "MIG config"), source=str(path))


def parse_mig_parted_config(text: str, *, source: str = "") -> MigPartedConfig:
    """Parse a mig-parted config (``version: v1``); bad input raises ``InputError`` naming the field.

    Profile names are checked for form (``[<c>c.]<g>g.<gb>gb`` with an optional ``+me``, ``+me.all``,
    ``+gfx`` or ``-me``) here and against a GPU's catalog by ``validate_layout``, since one file usually
    serves several GPU models.
    """
    docs = yaml_documents(text, source)  # bounded: depth, aliases, duplicate keys
    raw = docs[0] if docs else None
    if not isinstance(raw, dict):
        raise InputError("expected a mapping with version and mig-configs", source=source)
    unknown = sorted(str(k) for k in raw if k not in ("version", "mig-configs"))
    if unknown:
        raise InputError("unknown field (known: mig-configs, version)", source=source, field=unknown[0])
    if raw.get("version") != "v1":
        raise InputError(
            f"unknown version: {raw.get('version')!r} (expected v1)", source=source, field="version"
        )
    configs = raw.get("mig-configs")
    if not isinstance(configs, dict) or not configs:
        raise InputError("expected a non-empty mapping of named configs", source=source, field="mig-configs")
    out: dict[str, tuple[MigConfigEntry, ...]] = {}
    for name, entries in configs.items():
        where = f"mig-configs.{name}"
        if not isinstance(entries, list) or not entries:
            raise InputError("expected a non-empty list of entries", source=source, field=where)
        out[str(name)] = tuple(_entry(e, source, f"{where}[{i}]") for i, e in enumerate(entries))
    return MigPartedConfig(out, source)


def _entry(raw: object, source: str, where: str) -> MigConfigEntry:
    allowed = {"devices", "mig-enabled", "mig-devices", "device-filter"}
    if not isinstance(raw, dict):
        raise InputError(f"expected a mapping, got {type(raw).__name__}", source=source, field=where)
    unknown = sorted(str(k) for k in raw if k not in allowed)
    if unknown:
        raise InputError(
            f"unknown field (known: {', '.join(sorted(allowed))})",
            source=source,
            field=f"{where}.{unknown[0]}",
        )
    devices_raw = raw.get("devices")
    devices: tuple[int, ...] | None
    if devices_raw == "all":
        devices = None
    elif isinstance(devices_raw, list) and all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in devices_raw
    ):
        devices = tuple(devices_raw)
    else:
        raise InputError(
            f"expected all or a list of GPU indexes, got {devices_raw!r}",
            source=source,
            field=f"{where}.devices",
        )
    enabled = raw.get("mig-enabled")
    if not isinstance(enabled, bool):
        raise InputError(
            f"expected true or false, got {enabled!r}", source=source, field=f"{where}.mig-enabled"
        )
    mig = _mig_devices(raw.get("mig-devices"), source, f"{where}.mig-devices")
    # mig-parted spec.go: a null or absent mig-devices is "missing"; an empty mapping ({}) is valid.
    if enabled and mig is None:
        raise InputError(
            "missing required field 'mig-devices' when 'mig-enabled' is true", source=source, field=where
        )
    if mig and not enabled:
        raise InputError(
            "mig-devices given with mig-enabled: false", source=source, field=f"{where}.mig-devices"
        )
    filt = raw.get("device-filter", [])
    filters = ([filt] if filt else []) if isinstance(filt, str) else filt  # helpers.go: "" is no filter
    if not isinstance(filters, list) or not all(isinstance(f, str) for f in filters):
        raise InputError(
            "expected a PCI device id or a list of them", source=source, field=f"{where}.device-filter"
        )
    return MigConfigEntry(devices, enabled, mig or {}, tuple(filters))


def _mig_devices(mig_raw: object, source: str, where: str) -> dict[str, int] | None:
    """The ``mig-devices`` mapping, None when absent or null, refused as mig-parted refuses it."""
    if mig_raw is None:
        return None
    if not isinstance(mig_raw, dict):
        raise InputError("expected a mapping of profile to count", source=source, field=where)
    mig: dict[str, int] = {}
    for profile, count in mig_raw.items():
        field = f"{where}.{profile}"
        if not isinstance(profile, str) or PROFILE_NAME.match(profile) is None:
            raise InputError(
                f"not a MIG profile name ([<c>c.]<g>g.<gb>gb[+me|+me.all|+gfx|-me]): {profile!r}",
                source=source,
                field=field,
            )
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise InputError(f"expected a count, got {count!r}", source=source, field=field)
        mig[profile] = count
    if mig and not any(mig.values()):
        raise InputError("all counts for all MigProfiles are 0", source=source, field=where)
    return mig
