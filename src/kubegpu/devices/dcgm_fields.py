"""The DCGM fields kubegpu exports, with dcgm-exporter's names, Prometheus types and HELP texts (R13.2).

Each ``DcgmField`` is one line of dcgm-exporter's ``etc/default-counters.csv`` (``DCGM FIELD, Prometheus
metric type, help message``; NVIDIA/dcgm-exporter 4.5.3-4.8.2), copied exactly, restricted to the fields
NVML can give without the DCGM daemon (``DCGM_FI_DEV_FB_RESERVED``, also in the file, is added by
``kubegpu.exporter.values``). The four ECC totals are commented out in that file but listed in it with these
names and texts; they are exported because R13 asks for ECC where NVML has it. Left out, because NVML has
no equivalent with the same meaning: the profiling (DCP) fields the file enables, ``DCGM_FI_PROF_GR_ENGINE_ACTIVE``,
``PIPE_TENSOR_ACTIVE``, ``DRAM_ACTIVE`` and ``PCIE_TX_BYTES``/``PCIE_RX_BYTES`` (DCGM's profiling module
measures them; NVML only samples a 20 ms PCIe rate), ``DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL`` and
``DCGM_FI_DEV_VGPU_LICENSE_STATUS``.

``DCGM_FI_DEV_XID_ERRORS`` is a gauge holding the *last* XID code, as dcgm-exporter has it (R13.3): a
``rate()`` over it is meaningless; alert on ``> 0`` or on changes.

Must not: read NVML or decide which value a field gets (``kubegpu.exporter.values`` does).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass


class PromType(enum.StrEnum):
    GAUGE = "gauge"
    COUNTER = "counter"


@dataclass(frozen=True, slots=True)
class DcgmField:
    name: str
    type: PromType
    help: str


G, C = PromType.GAUGE, PromType.COUNTER

# In default-counters.csv order, so that a scrape lists them as dcgm-exporter's file does.
SM_CLOCK = DcgmField("DCGM_FI_DEV_SM_CLOCK", G, "SM clock frequency (in MHz).")
MEM_CLOCK = DcgmField("DCGM_FI_DEV_MEM_CLOCK", G, "Memory clock frequency (in MHz).")
MEMORY_TEMP = DcgmField("DCGM_FI_DEV_MEMORY_TEMP", G, "Memory temperature (in C).")
GPU_TEMP = DcgmField("DCGM_FI_DEV_GPU_TEMP", G, "GPU temperature (in C).")
POWER_USAGE = DcgmField("DCGM_FI_DEV_POWER_USAGE", G, "Power draw (in W).")
TOTAL_ENERGY = DcgmField(
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", C, "Total energy consumption since boot (in mJ)."
)
PCIE_REPLAY = DcgmField("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", C, "Total number of PCIe retries.")
GPU_UTIL = DcgmField("DCGM_FI_DEV_GPU_UTIL", G, "GPU utilization (in %).")
MEM_COPY_UTIL = DcgmField("DCGM_FI_DEV_MEM_COPY_UTIL", G, "Memory utilization (in %).")
ENC_UTIL = DcgmField("DCGM_FI_DEV_ENC_UTIL", G, "Encoder utilization (in %).")
DEC_UTIL = DcgmField("DCGM_FI_DEV_DEC_UTIL", G, "Decoder utilization (in %).")
XID_ERRORS = DcgmField("DCGM_FI_DEV_XID_ERRORS", G, "Value of the last XID error encountered.")
FB_FREE = DcgmField("DCGM_FI_DEV_FB_FREE", G, "Framebuffer memory free (in MiB).")
FB_USED = DcgmField("DCGM_FI_DEV_FB_USED", G, "Framebuffer memory used (in MiB).")
ECC_SBE_VOL = DcgmField("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", C, "Total number of single-bit volatile ECC errors.")
ECC_DBE_VOL = DcgmField("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", C, "Total number of double-bit volatile ECC errors.")
ECC_SBE_AGG = DcgmField(
    "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", C, "Total number of single-bit persistent ECC errors."
)
ECC_DBE_AGG = DcgmField(
    "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", C, "Total number of double-bit persistent ECC errors."
)
UNCORRECTABLE_REMAPPED_ROWS = DcgmField(
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", C, "Number of remapped rows for uncorrectable errors"
)
CORRECTABLE_REMAPPED_ROWS = DcgmField(
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", C, "Number of remapped rows for correctable errors"
)
ROW_REMAP_FAILURE = DcgmField("DCGM_FI_DEV_ROW_REMAP_FAILURE", G, "Whether remapping of rows has failed")

DCGM_FIELDS: tuple[DcgmField, ...] = (
    SM_CLOCK,
    MEM_CLOCK,
    MEMORY_TEMP,
    GPU_TEMP,
    POWER_USAGE,
    TOTAL_ENERGY,
    PCIE_REPLAY,
    GPU_UTIL,
    MEM_COPY_UTIL,
    ENC_UTIL,
    DEC_UTIL,
    XID_ERRORS,
    FB_FREE,
    FB_USED,
    ECC_SBE_VOL,
    ECC_DBE_VOL,
    ECC_SBE_AGG,
    ECC_DBE_AGG,
    UNCORRECTABLE_REMAPPED_ROWS,
    CORRECTABLE_REMAPPED_ROWS,
    ROW_REMAP_FAILURE,
)
FIELDS_BY_NAME = {f.name: f for f in DCGM_FIELDS}

# dcgm-exporter's label names (the gpuMetricsFormat template; "UUID" unless --use-old-namespace) and the
# pod labels its PodMapper adds (transformation/const.go: podAttribute, namespaceAttribute, …, vgpu).
LABEL_GPU = "gpu"
LABEL_UUID = "UUID"
LABEL_PCI_BUS_ID = "pci_bus_id"
LABEL_DEVICE = "device"
LABEL_MODEL = "modelName"
LABEL_MIG_PROFILE = "GPU_I_PROFILE"
LABEL_MIG_ID = "GPU_I_ID"
LABEL_HOSTNAME = "Hostname"
# NVIDIA/dcgm-exporter PR #655 (merged 2026-05-12) renamed the label to lower case: releases after 4.8.2 write
# ``hostname``. kubegpu's exporter writes ``Hostname`` (the 4.5.3-4.8.2 spelling its rules and dashboard use);
# what reads a scrape or Prometheus accepts both generations (``host_label``).
LABEL_HOSTNAME_LOWER = "hostname"
LABEL_POD = "pod"
LABEL_NAMESPACE = "namespace"
LABEL_CONTAINER = "container"
LABEL_VGPU = "vgpu"
# The DRA labels its PodMapper adds with --kubernetes-enable-dra (transformation/const.go: draClaimName, …):
# the claim a container got the device through and the device's driver/pool/device triplet.
LABEL_DRA_CLAIM_NAME = "dra_claim_name"
LABEL_DRA_CLAIM_NAMESPACE = "dra_claim_namespace"
LABEL_DRA_DRIVER_NAME = "dra_driver_name"
LABEL_DRA_POOL_NAME = "dra_pool_name"
LABEL_DRA_DEVICE_NAME = "dra_device_name"


def host_label(labels: Mapping[str, str]) -> str:
    """The node a dcgm-exporter series came from, under either spelling of the label ("" when neither)."""
    return labels.get(LABEL_HOSTNAME) or labels.get(LABEL_HOSTNAME_LOWER) or ""
