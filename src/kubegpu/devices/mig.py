"""MIG profile catalog with placements, layout geometry and mig-parted config files (R6.3).

Owns what a MIG-capable GPU can be carved into, per product, as NVIDIA documents it and as
``nvidia-smi mig -lgip`` / ``-lgipp`` print it:

* a profile is a GPU-instance profile: name (``3g.71gb``, ``1g.18gb+me``), NVML profile id as
  ``nvidia-smi`` shows it (19, 20, 15, 14, 9, 5, 0), compute slices (the ``g``), memory slices (the
  placement size), the per-GPU instance limit (``Instances Total``) and the allowed start slots;
* a placement is ``(start, size)`` in memory slices (NVML ``nvmlGpuInstancePlacement_t``); a GPU
  instance can only be created where its memory slices do not overlap an existing one, so whether a
  layout is possible is a placement search, not a sum;
* the extended resource a profile becomes under ``migStrategy: mixed`` is ``nvidia.com/mig-<profile>``
  with ``+`` replaced by ``.`` (NVIDIA k8s-device-plugin ``internal/rm/rm.go``:
  ``strings.ReplaceAll("mig-"+p.String(), "+", ".")``), so ``1g.18gb+me`` is
  ``nvidia.com/mig-1g.18gb.me``.

Catalogs (A100-SXM4-40GB, A100-SXM4-80GB, H100-SXM5-80GB, H200-141GB; the others below ``CATALOGS`` say
where each comes from, the 4-slice A30 and RTX PRO 6000 in ``_four_slice``) follow NVIDIA's MIG user guide
"Supported MIG Profiles" tables and the ``-lgipp`` placements it prints (identical on all four: 8 memory
slices, 7 compute slices): 1g at {0..6}:1, the 2-memory-slice 1g (profile 15) at {0,2,4,6}:2, 2g at
{0,2,4}:2, 3g at {0,4}:4, 4g at {0}:4, 7g at {0}:8. The H200 catalog equals the real reading in
``shared/fixtures/nodes/h200-1gpu`` (driver 580.159.04), which the tests check. PCI device ids are the
ones the GPU Operator's default mig-parted config filters on (H200: the real reading's ``pci_device_id``),
one product to its own ids (pci.ids names each id's product).

A compute-instance profile ``<c>c.<g>g.<gb>gb`` (go-nvlib ``parseMigProfileFields``) is ``c`` compute
slices of a ``<g>g.<gb>gb`` GPU instance; its resource is ``nvidia.com/mig-<c>c.<g>g.<gb>gb`` (the device
plugin names a MIG device by its profile's ``String()``: internal/resource/nvml-mig-device.go ``GetName``).
Not modelled: two compute-instance sizes sharing one GPU instance (mig-parted tries it when consecutive
devices have the same GPU-instance profile); kubegpu gives each profile name its own GPU instances.

mig-parted config files are ``kubegpu.devices.mig_parted``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from kubegpu.devices.time_slicing import GFD_SUFFIX
from kubegpu.errors import ConfigError, InputError
from kubegpu.model.names import GPU_PRODUCT_LABEL, MIG_CAPABLE_LABEL
from kubegpu.model.names import MIG_RESOURCE_PREFIX as MIG_RESOURCE_PREFIX

MEMORY_SLICES = 8
MEDIA_EXTENSIONS = "+me"
# Suffixes as NVML / nvidia-smi name GPU-instance profiles and mig-parted's default config uses them:
# "+me" (media extensions), "+me.all" (all media engines), "+gfx" (graphics), "-me" (no media engines).
SUFFIXES = ("+me", "+me.all", "+gfx", "-me")
# go-nvlib parseMigProfileFields: "<g>g.<gb>gb", or "<c>c.<g>g.<gb>gb" for a compute instance of c of the GPU
# instance's g compute slices (mig-parted pkg/types/mig_profile.go example "1c.2g.10gb").
PROFILE_NAME = re.compile(r"^(?:(\d+)c\.)?(\d+)g\.(\d+)gb(\+me|\+me\.all|\+gfx|-me)?$")


@dataclass(frozen=True, slots=True)
class MigProfile:
    """One GPU-instance profile of a product, with where it may be placed."""

    name: str  # "1g.18gb+me", as nvidia-smi and mig-parted spell it (without the "MIG " prefix)
    profile_id: int  # GPU-instance profile id nvidia-smi prints (MIG 3g.71gb → 9)
    compute_slices: int
    memory_slices: int  # placement size
    max_instances: int
    starts: tuple[int, ...]  # allowed start memory slices
    gi_compute_slices: int = 0  # a compute-instance profile (1c.3g.40gb): its GPU instance's g; else 0

    @property
    def per_gpu_instance(self) -> int:
        """How many of these compute instances share one GPU instance: 1, or g // c for ``<c>c.<g>g``
        (NVML's compute-instance limits: a 7g instance holds 7 × 1c, 3 × 2c, 2 × 3c, 1 × 4c)."""
        return self.gi_compute_slices // self.compute_slices if self.gi_compute_slices else 1

    @property
    def media_extensions(self) -> bool:
        """``+me``: the instance also owns the GPU's JPEG/OFA engines (at most one per GPU)."""
        return self.name.endswith(MEDIA_EXTENSIONS) or self.name.endswith("+me.all")

    @property
    def resource_name(self) -> str:
        """The extended resource under ``migStrategy: mixed``: ``nvidia.com/mig-1g.18gb.me`` (only ``+`` becomes
        ``.``: ``1g.24gb+me.all`` → ``mig-1g.24gb.me.all``, ``1g.24gb-me`` stays ``mig-1g.24gb-me``)."""
        return MIG_RESOURCE_PREFIX + self.name.replace("+", ".")

    @property
    def memory_gb(self) -> int:
        """The nominal memory in the profile name (``3g.71gb`` → 71)."""
        match = PROFILE_NAME.match(self.name)
        assert match is not None  # every catalog name is checked when the catalog is built
        return int(match.group(3))

    def placements(self) -> str:
        """The ``-lgipp`` form: ``{0,2,4}:2``."""
        return "{" + ",".join(str(s) for s in self.starts) + f"}}:{self.memory_slices}"


@dataclass(frozen=True, slots=True)
class MigCatalog:
    """The MIG profiles one GPU product offers."""

    product: str  # kubegpu's key, e.g. "H200-141GB"
    names: tuple[str, ...]  # NVML product names ("NVIDIA H200") that map here
    pci_device_ids: tuple[str, ...]  # as mig-parted's device-filter spells them ("0x233510DE")
    profiles: tuple[MigProfile, ...]
    memory_slices: int = MEMORY_SLICES

    def profile(self, name: str) -> MigProfile:
        """A profile by ``3g.71gb``, ``MIG 3g.71gb``, ``mig-1g.18gb.me`` or its resource name.

        Raises ``MigLayoutError`` (reason ``unknown-profile``) listing the product's profiles.
        """
        key = name.removeprefix("MIG ").removeprefix(MIG_RESOURCE_PREFIX).removeprefix("mig-")
        ci = re.match(r"^(\d+)c\.(.+)$", key)
        if ci is not None:
            return self._compute_instance(name, int(ci.group(1)), ci.group(2))
        for p in self.profiles:
            if key in (p.name, p.name.replace("+", ".")):
                return p
        known = ", ".join(p.name for p in self.profiles)
        raise MigLayoutError(
            "unknown-profile", f"{self.product} has no MIG profile {name!r} (profiles: {known})"
        )

    def _compute_instance(self, name: str, c: int, gi_name: str) -> MigProfile:
        """``<c>c.<g>g.<gb>gb``: compute instances of c slices inside ``<g>g.<gb>gb`` GPU instances.

        Valid as go-nvlib ``VisitMigProfiles`` enumerates them (pkg/nvlib/device/device.go): c < g and
        2c <= g + 1; ``c == g`` is the GPU-instance profile itself, which NVML and the device plugin name
        without the ``<c>c.`` part, so ``7c.7g.80gb`` is refused with that name.
        """
        gi = self.profile(gi_name)
        g = gi.compute_slices
        if not (0 < c < g and 2 * c <= g + 1):
            valid = [f"{k}c.{gi.name}" for k in range(1, g) if 2 * k <= g + 1]
            raise MigLayoutError(
                "unknown-profile",
                f"{self.product} has no compute-instance profile {name!r} "
                f"({gi.name} takes {', '.join(valid) or 'none'}; the whole instance is {gi.name})",
            )
        return replace(gi, name=f"{c}c.{gi.name}", compute_slices=c, gi_compute_slices=g)


@dataclass(frozen=True, slots=True)
class Placement:
    """Where one GPU instance sits: memory slices ``start .. start+size-1``."""

    profile: str
    start: int
    size: int

    def __str__(self) -> str:
        return f"{self.profile}@{self.start}:{self.size}"


class MigLayoutError(ConfigError):
    """A MIG layout the GPU cannot hold; ``reason`` is one of ``unknown-profile``, ``count-limit``,
    ``media-engine-conflict``, ``slice-overflow``, ``placement-conflict``, ``not-mig-capable``."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        super().__init__(message)


def _ampere_hopper(product: str, names: Sequence[str], pci: Sequence[str], gb: Sequence[int]) -> MigCatalog:
    """The seven-profile table of A100 / H100 / H200, memory names from ``gb``.

    ``gb`` = nominal memory of the 1-, 2-, 4- and 8-memory-slice profiles (A100-40GB: 5, 10, 20, 40).
    Rows are (name, profile id, memory slices, instances, starts) as ``-lgip`` / ``-lgipp`` print them.
    """
    one, two, four, eight = gb
    rows = [
        (f"1g.{one}gb", 19, 1, 7, (0, 1, 2, 3, 4, 5, 6)),
        (f"1g.{one}gb+me", 20, 1, 1, (0, 1, 2, 3, 4, 5, 6)),
        (f"1g.{two}gb", 15, 2, 4, (0, 2, 4, 6)),
        (f"2g.{two}gb", 14, 2, 3, (0, 2, 4)),
        (f"3g.{four}gb", 9, 4, 2, (0, 4)),
        (f"4g.{four}gb", 5, 4, 1, (0,)),
        (f"7g.{eight}gb", 0, 8, 1, (0,)),
    ]
    profiles = []
    for name, pid, size, instances, starts in rows:
        match = PROFILE_NAME.match(name)
        assert match is not None, name
        profiles.append(MigProfile(name, pid, int(match.group(2)), size, instances, starts))
    return MigCatalog(product, tuple(names), tuple(pci), tuple(profiles))


def _four_slice(
    product: str, names: Sequence[str], pci: Sequence[str], rows: Sequence[tuple[str, int, int]]
) -> MigCatalog:
    """A GPU of 4 memory / 4 compute slices (A30, RTX PRO 6000 Blackwell): ``rows`` = (name, profile id,
    instances) as ``nvidia-smi mig -lgip`` prints them. Placements are the 4-slice ``-lgipp`` ones: a 1g
    instance at {0,1,2,3}:1, a 2g at {0,2}:2, a 4g at {0}:4 (the slice diagrams of the MIG user guide's
    A30 and RTX PRO 6000 sections)."""
    starts = {1: (0, 1, 2, 3), 2: (0, 2), 4: (0,)}
    profiles = []
    for name, pid, instances in rows:
        match = PROFILE_NAME.match(name)
        assert match is not None, name
        size = int(match.group(2))  # on these GPUs compute and memory slices come in the same numbers
        profiles.append(MigProfile(name, pid, size, size, instances, starts[size]))
    return MigCatalog(product, tuple(names), tuple(pci), tuple(profiles), memory_slices=4)


_RTX_PRO_6000 = [
    ("1g.24gb", 14, 4), ("1g.24gb+me", 21, 1), ("1g.24gb+gfx", 47, 4), ("1g.24gb+me.all", 65, 1),
    ("1g.24gb-me", 67, 4), ("2g.48gb", 5, 2), ("2g.48gb+gfx", 35, 2), ("2g.48gb+me.all", 64, 1),
    ("2g.48gb-me", 66, 2), ("4g.96gb", 0, 1), ("4g.96gb+gfx", 32, 1),
]  # fmt: skip

CATALOGS: Mapping[str, MigCatalog] = {
    c.product: c
    for c in (
        _ampere_hopper("A100-SXM4-40GB", ["NVIDIA A100-SXM4-40GB"], ["0x20B010DE"], (5, 10, 20, 40)),
        _ampere_hopper("A100-SXM4-80GB", ["NVIDIA A100-SXM4-80GB"], ["0x20B210DE"], (10, 20, 40, 80)),
        _ampere_hopper("H100-SXM5-80GB", ["NVIDIA H100 80GB HBM3"], ["0x233010DE"], (10, 20, 40, 80)),
        _ampere_hopper("H200-141GB", ["NVIDIA H200"], ["0x233510DE"], (18, 35, 71, 141)),
        # Below: names and PCI ids from mig-parted's default config (deployments/systemd/config-default.yaml,
        # commit bd7160f43f16462eeb21e1eda5e67b5b6b03fd7d: the device-filter of each product's all-balanced
        # entry and its all-1g/2g/3g/4g/7g names); 7 instances from the MIG user guide "Supported GPUs" table.
        # Profile ids and placements are the GH100 ones above (same 7 compute / 8 memory slices). For B200 the
        # MIG user guide's "GPU Instance Profiles on B200" table confirms the memory fractions (1/8, 2/8, 4/8,
        # full) and instance counts; `-lgip` posted from real boards (B200: mig-parted PR 166 and 187; a
        # production GB200: mig-parted issue 227) confirm ids 19, 20, 15, 14 and their counts, the posts being
        # cut off after 2g. The 3g/4g/7g ids and every start slot are an assumption no recorded `-lgipp`
        # confirms yet. Pre-production GB200 boards named the 1g profiles 1g.24gb (gpu-operator PR 1303);
        # mig-parted PR 228 moved to the production names used here.
        _ampere_hopper("H100-PCIE-80GB", ["NVIDIA H100 PCIe"], ["0x233110DE"], (10, 20, 40, 80)),
        _ampere_hopper("H100-NVL-94GB", ["NVIDIA H100 NVL"], ["0x232110DE"], (12, 24, 47, 94)),
        _ampere_hopper("GH200-96GB", ["NVIDIA GH200 480GB"], ["0x234210DE"], (12, 24, 48, 96)),
        _ampere_hopper("GH200-144GB", ["NVIDIA GH200 144G HBM3e"], ["0x234810DE"], (18, 36, 72, 144)),
        _ampere_hopper("B200-180GB", ["NVIDIA B200"], ["0x290110DE"], (23, 45, 90, 180)),
        _ampere_hopper("GB200-186GB", ["NVIDIA GB200"], ["0x294110DE"], (23, 47, 93, 186)),
        # Blackwell Ultra: names and device ids from the same config (its B300 / GB300 all-balanced entries and
        # all-1g.34gb … all-7g.278gb); 7 compute / 8 memory slices and GH100 placements assumed as for B200.
        _ampere_hopper("B300-269GB", ["NVIDIA B300 SXM6 AC"], ["0x318210DE"], (34, 67, 135, 269)),
        _ampere_hopper("GB300-278GB", ["NVIDIA GB300"], ["0x31C210DE"], (35, 70, 139, 278)),
        # Siblings whose profiles config-default.yaml (same commit) lists in one all-balanced entry with a
        # product above: "A100-40GB" (0x20B1, 0x20F1: both "A100 PCIe 40GB" in pci.ids, GFD cannot tell them
        # apart), "A100-80GB" (0x20B5 "A100 PCIe 80GB"), "H200 141GB, H200 NVL" (0x233B), "H100-80GB,
        # H800-80GB" (0x2324 "H800"), "H100-96GB, PG506-96GB, GH200, H20" (0x2329 "H20"). The MIG user guide's
        # "Supported GPUs" table lists A100-PCIE 40/80GB, H200 NVL and H20 (7 instances); H800 only mig-parted.
        # NVML names as nvidia-smi prints them (GFD: NVIDIA-A100-PCIE-40GB, NVIDIA-A100-80GB-PCIe, ...).
        _ampere_hopper("A100-PCIE-40GB", ["NVIDIA A100-PCIE-40GB"], ["0x20B110DE", "0x20F110DE"], (5, 10, 20, 40)),
        _ampere_hopper("A100-PCIE-80GB", ["NVIDIA A100 80GB PCIe"], ["0x20B510DE"], (10, 20, 40, 80)),
        _ampere_hopper("H200-NVL-141GB", ["NVIDIA H200 NVL"], ["0x233B10DE"], (18, 35, 71, 141)),
        _ampere_hopper("H20-96GB", ["NVIDIA H20"], ["0x232910DE"], (12, 24, 48, 96)),
        _ampere_hopper("H800-80GB", ["NVIDIA H800"], ["0x232410DE"], (10, 20, 40, 80)),
        # More siblings config-default.yaml (same commit) partitions with a product above: "A800-80GB" (0x20F3,
        # 0x20F5) and "H800-80GB" (0x2322) with the 80GB A100 / H100, "A800-40GB" (0x20F6) with the 40GB A100
        # (its all-1g.10gb entry gives that filter 4), "H800 NVL" (0x233A) with the H100 NVL, "PG506-96GB"
        # (0x20B6) with the 96GB GH200 / H20. Product names per id as the driver names them: the "Compatible
        # GPUs" table of NVIDIA/open-gpu-kernel-modules README.md, 560.31.02 (20F5 subsystem 179A is "... LC").
        # Profile ids are the GA100 / GH100 ones above: no `-lgip` of these boards is on record. 0x233D (the
        # same config's "H100-96GB") has no product name in that table: not mapped.
        _ampere_hopper("A800-SXM4-80GB", ["NVIDIA A800-SXM4-80GB"], ["0x20F310DE"], (10, 20, 40, 80)),
        _ampere_hopper(
            "A800-PCIE-80GB", ["NVIDIA A800 80GB PCIe", "NVIDIA A800 80GB PCIe LC"], ["0x20F510DE"], (10, 20, 40, 80)
        ),
        _ampere_hopper("A800-40GB-ACTIVE", ["NVIDIA A800 40GB Active"], ["0x20F610DE"], (5, 10, 20, 40)),
        _ampere_hopper("H800-PCIE-80GB", ["NVIDIA H800 PCIe"], ["0x232210DE"], (10, 20, 40, 80)),
        _ampere_hopper("H800-NVL-94GB", ["NVIDIA H800 NVL"], ["0x233A10DE"], (12, 24, 47, 94)),
        _ampere_hopper("PG506-96GB", ["NVIDIA PG506-232"], ["0x20B610DE"], (12, 24, 48, 96)),
        # 4-slice GPUs. A30: the MIG user guide's A30 table and a recorded `-lgip` of an A30 (ids 14, 21, 5,
        # 6, 0; 2g.12gb+me needs R525 or newer). RTX PRO 6000 Blackwell (GB202): `-lgip` ids and limits as
        # recorded on the GPU and as mig-parted's builder test lists them (pkg/mig/builder/builder_test.go,
        # same commit), the same for its three editions (MIG user guide "Supported GPUs": 96GB, 4 instances).
        # Each edition has its own PCI device id (pci.ids: 0x2BB5 Server, 0x2BB1 Workstation, 0x2BB4 Max-Q
        # Workstation); mig-parted's default config filters on 0x2BB510DE only, so it leaves the other two as
        # they are.
        _four_slice("A30-24GB", ["NVIDIA A30"], ["0x20B710DE"], [
            ("1g.6gb", 14, 4), ("1g.6gb+me", 21, 1), ("2g.12gb", 5, 2), ("2g.12gb+me", 6, 1), ("4g.24gb", 0, 1),
        ]),
        *(_four_slice(key, [name], [pci], _RTX_PRO_6000) for key, name, pci in (
            ("RTX-PRO-6000-96GB", "NVIDIA RTX PRO 6000 Blackwell Server Edition", "0x2BB510DE"),
            ("RTX-PRO-6000-WS-96GB", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "0x2BB110DE"),
            ("RTX-PRO-6000-MAXQ-96GB", "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "0x2BB410DE"),
        )),
    )
}  # fmt: skip

# MIG-capable products (MIG user guide "Supported GPUs") kubegpu has no catalog for, and what it lacks.
MIG_CAPABLE_UNCATALOGUED: Mapping[str, str] = {
    "NVIDIA RTX PRO 5000 Blackwell": "its profile table, profile ids and placements (2 instances per GPU)",
    "NVIDIA RTX PRO 4500 Blackwell": "its profile table, profile ids and placements (2 instances per GPU)",
}


def catalog_for(product: str, *, mig_capable: str | None = None) -> MigCatalog:
    """The catalog for a catalog key, an NVML product name or a GFD ``nvidia.com/gpu.product`` label value.

    GFD writes the NVML name with spaces as ``-`` (``NVIDIA-H100-80GB-HBM3``) and may append
    ``-MIG-<profile>``, ``-MIG-INVALID`` or ``-SHARED`` (``GFD_SUFFIX``); all forms are accepted,
    case-insensitively. ``mig_capable`` is the node's ``nvidia.com/mig.capable`` label, if any.

    Without a catalog: ``MigLayoutError`` (``not-mig-capable``) when the node says the GPU has no MIG,
    else ``InputError`` saying whether the product is a MIG-capable one kubegpu lacks (and what it lacks).
    """
    base = GFD_SUFFIX.sub("", product.strip())
    wanted = base.replace(" ", "-").lower()
    for c in CATALOGS.values():
        keys = {c.product.lower(), *(n.replace(" ", "-").lower() for n in c.names)}
        if wanted in keys:
            return c
    if mig_capable == "false":
        raise MigLayoutError(
            "not-mig-capable",
            f"GPU product {base!r} does not support MIG (the node's {MIG_CAPABLE_LABEL}=false): "
            "there is nothing to partition",
        )
    lacking = {n.replace(" ", "-").lower(): what for n, what in MIG_CAPABLE_UNCATALOGUED.items()}
    if wanted in lacking:
        raise InputError(
            f"GPU product {base!r} supports MIG, but kubegpu has no MIG profile catalog for it: it lacks "
            f"{lacking[wanted]}",
            field=GPU_PRODUCT_LABEL,
        )
    raise InputError(
        f"no MIG profile catalog for GPU product {product!r}: not a MIG-capable product kubegpu knows, and "
        f"no {MIG_CAPABLE_LABEL}=false label says it has no MIG (catalogs: {', '.join(CATALOGS)})",
        field=GPU_PRODUCT_LABEL,
    )


def validate_layout(product: MigCatalog | str, layout: Mapping[str, int]) -> tuple[Placement, ...]:
    """Placements for ``{profile: count}`` on one GPU of ``product``, or ``MigLayoutError`` saying why.

    ``product`` is a catalog or anything ``catalog_for`` accepts (``"H200-141GB"``, ``"NVIDIA H200"``).

    Checks, in order: every profile exists; no count exceeds the profile's instance limit; media engines
    (``_check_media_engines``); the memory slices sum to at most the GPU's (8, or 4 on A30 / RTX PRO
    6000); then searches every assignment of start slots (largest instances first, lowest start first) for one without overlap. The first placement found is returned, sorted by start.
    """
    catalog = product if isinstance(product, MigCatalog) else catalog_for(product)
    wanted: list[MigProfile] = []
    gis: dict[str, int] = {}  # profile as written → GPU instances it takes
    for name, count in layout.items():
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise MigLayoutError(
                "count-limit", f"{name}: count must be a non-negative integer, got {count!r}"
            )
        p = catalog.profile(name)
        # mig-parted (pkg/mig/config/config.go SetMigConfig) puts consecutive devices of one GPU-instance
        # profile into the last GPU instance while a compute instance still fits there.
        gis[name] = -(-count // p.per_gpu_instance)
        if gis[name] > p.max_instances:
            shared = f" (in {gis[name]} GPU instances)" if p.per_gpu_instance > 1 else ""
            raise MigLayoutError(
                "count-limit",
                f"{p.name} ×{count}{shared} exceeds the {catalog.product} limit of {p.max_instances} "
                f"instance{'s' if p.max_instances > 1 else ''} per GPU",
            )
        wanted.extend([p] * gis[name])
    _check_media_engines(wanted)
    used = sum(p.memory_slices for p in wanted)
    if used > catalog.memory_slices:
        parts = " + ".join(
            f"{p.name} ×{layout[n]} ({p.memory_slices * gis[n]})"
            for n in layout
            if layout[n] and (p := catalog.profile(n))
        )
        raise MigLayoutError(
            "slice-overflow",
            f"needs {used} memory slices, one {catalog.product} GPU has {catalog.memory_slices}: {parts}",
        )
    wanted.sort(key=lambda p: (-p.memory_slices, p.starts, p.name))
    found, deepest = _search(wanted, catalog.memory_slices)
    if found is not None:
        return tuple(sorted(found, key=lambda pl: pl.start))
    stuck = wanted[len(deepest)]
    free = sorted(
        set(range(catalog.memory_slices)) - {s for pl in deepest for s in range(pl.start, pl.start + pl.size)}
    )
    raise MigLayoutError(
        "placement-conflict",
        f"no placement fits although {used} of {catalog.memory_slices} memory slices suffice: after "
        f"{', '.join(str(pl) for pl in deepest) or 'nothing'}, {stuck.name} (placements {stuck.placements()}) "
        f"finds no free start; free memory slices: {', '.join(map(str, free)) or 'none'}",
    )


def _check_media_engines(wanted: Sequence[MigProfile]) -> None:
    """Each GPU has one OFA / JPEG set: ``+me`` and ``+me.all`` instances take it, so at most one per GPU
    (the MIG user guide's A30 table gives 1g.6gb+me and 2g.12gb+me one JPEG / OFA each, on a GPU with one);
    ``+me.all`` also takes every decoder / encoder, so the GPU's other instances must be ``-me`` profiles,
    which have none (RTX PRO 6000 ``-lgip``: 1g.24gb+me.all has 4 DEC / 4 ENC / 4 JPEG / 1 OFA of 4/4/4/1)."""
    media = [p.name for p in wanted if p.media_extensions]
    if len(media) > 1:
        raise MigLayoutError(
            "media-engine-conflict",
            f"{media[0]} and {media[1]} both need the GPU's only OFA / JPEG engines: at most one instance "
            "with +me or +me.all per GPU",
        )
    if media and media[0].endswith("+me.all"):
        others = sorted({p.name for p in wanted if p.name != media[0] and not p.name.endswith("-me")})
        if others:
            raise MigLayoutError(
                "media-engine-conflict",
                f"{media[0]} takes every media engine of the GPU, so its other instances must be -me "
                f"profiles; {', '.join(others)} {'is' if len(others) == 1 else 'are'} not",
            )


def _search(wanted: Sequence[MigProfile], slices: int) -> tuple[list[Placement] | None, list[Placement]]:
    """Depth-first placement search; returns (a full placement or None, the deepest partial one)."""
    deepest: list[Placement] = []
    chosen: list[Placement] = []
    occupied = [False] * slices

    def place(i: int) -> bool:
        nonlocal deepest
        if len(chosen) > len(deepest):
            deepest = list(chosen)
        if i == len(wanted):
            return True
        p = wanted[i]
        # Identical instances are interchangeable: start after the previous one to skip permutations.
        lowest = chosen[-1].start + 1 if i and wanted[i - 1] == p else 0
        for start in p.starts:
            span = range(start, start + p.memory_slices)
            if start < lowest or any(occupied[s] for s in span):
                continue
            for s in span:
                occupied[s] = True
            chosen.append(Placement(p.name, start, p.memory_slices))
            if place(i + 1):
                return True
            chosen.pop()
            for s in span:
                occupied[s] = False
        return False

    return (list(chosen) if place(0) else None), deepest
