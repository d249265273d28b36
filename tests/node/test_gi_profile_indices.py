"""The NVML backend reads every GPU-instance profile index NVML defines, replayed against a real H200.

NVML numbers GPU-instance profiles NVML_GPU_INSTANCE_PROFILE_1_SLICE (0) .. NVML_GPU_INSTANCE_PROFILE_COUNT - 1;
nvml.h (NVIDIA/go-nvml@2f9e261fe40a7a1c54783d66805e8920564763b4 gen/nvml/nvml.h, CUDA 13.2.1) defines
NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME 0x10 (since NVML 12.9, go-nvml 62ce1e3) and 3_SLICE_GFX 0x11, COUNT
0x12. A reading that stops at 15 never sees the RTX PRO 6000's 2g.48gb+me.all (NVIDIA/mig-parted
pkg/mig/builder/builder_test.go lists it for the RTX PRO 6000; its `-lgip` id 64 in
GoogleCloudPlatform/container-engine-accelerators PR 564).

The fake NVML answers each index as the H200 in ``shared/fixtures/nodes/h200-1gpu/nvml.json`` did (driver
580.159.04: seven profiles, NotSupported for the rest); an index it was never asked does not exist there.
"""

from __future__ import annotations

import json
import types
from pathlib import Path
from typing import Any

from kubegpu.node.discovery import gi_profile_readings

SHARED = Path(__file__).parents[2] / ".." / "shared" / "fixtures" / "nodes" / "h200-1gpu"


class NVMLError(Exception):
    pass


class NVMLError_NotSupported(NVMLError):  # pynvml's class name, as the recording spells it
    def __str__(self) -> str:
        return "Not Supported"


def _replay(recorded: list[dict[str, Any]], asked: list[int]) -> Any:
    by_index = {p["profile"]: p for p in recorded}

    def info(_h: object, profile: int) -> object:
        asked.append(profile)
        p = by_index.get(profile)
        if p is None or "err" in p:
            raise NVMLError_NotSupported()
        return types.SimpleNamespace(
            id=p["id"], sliceCount=p["slices"], instanceCount=p["instances"], memorySizeMB=p["memMiB"],
            copyEngineCount=p["copyEngines"], decoderCount=p["decoders"], name=p["name"].encode(),
        )  # fmt: skip

    return types.SimpleNamespace(NVMLError=NVMLError, nvmlDeviceGetGpuInstanceProfileInfo=info)


def _q(nvml: Any) -> Any:
    def q(fn: Any, *args: Any) -> Any:  # as discovery._device wraps every optional NVML call
        try:
            return fn(*args)
        except nvml.NVMLError as exc:
            return f"ERR:{type(exc).__name__}:{exc}"

    return q


def test_every_nvml_profile_index_is_read_including_2_slice_all_me_and_3_slice_gfx() -> None:
    recorded = json.loads((SHARED / "nvml.json").read_text())["devices"][0]["gi_profiles"]
    asked: list[int] = []
    nvml = _replay(recorded, asked)
    reading = gi_profile_readings(nvml, object(), _q(nvml))
    assert asked == list(range(0x12))  # 1_SLICE .. 3_SLICE_GFX; COUNT is 0x12
    # indices 0..15 read back exactly as the H200 answered them; 0x10 and 0x11 it does not support
    assert reading[:16] == recorded
    assert reading[16:] == [
        {"profile": 0x10, "err": "ERR:NVMLError_NotSupported:Not Supported"},
        {"profile": 0x11, "err": "ERR:NVMLError_NotSupported:Not Supported"},
    ]
