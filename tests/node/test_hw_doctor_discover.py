"""What ``node doctor`` and ``node discover`` printed on the lent H200 against real NVML (recorded beside
``nvidia-smi`` in one command, 2026-12-03; ``hw_h200_doctor_discover.json``, UUID replaced). CI has no GPU,
so this pins the recorded run: discover agrees with ``nvidia-smi --query-gpu`` field by field, and doctor on
the live host walks to the same broken layer (no container toolkit, no CDI spec) as doctor on the recorded
``host.txt`` of the same machine, with the same evidence wherever both read the same source.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

from kubegpu.node.doctor import HostFacts, diagnose

RUN = json.loads((Path(__file__).parent / "hw_h200_doctor_discover.json").read_text())
SHARED = Path(__file__).parents[2] / ".." / "shared" / "fixtures" / "nodes" / "h200-1gpu"


def test_discover_matches_nvidia_smi_field_by_field() -> None:
    (smi,) = csv.DictReader(io.StringIO(RUN["nvidia_smi_query"]), skipinitialspace=True)
    (gpu,) = RUN["discover"]["devices"]
    assert (gpu["index"], gpu["uuid"], gpu["name"], gpu["pci_bus_id"]) == (
        int(smi["index"]),
        smi["uuid"],
        smi["name"],
        smi["pci.bus_id"],
    )
    assert gpu["memory_total"] // 2**20 == int(smi["memory.total [MiB]"].removesuffix(" MiB"))
    assert RUN["discover"]["driver"] == smi["driver_version"]
    assert f"{gpu['cuda_cc'][0]}.{gpu['cuda_cc'][1]}" == smi["compute_cap"]
    assert gpu["mig_mode"][0] == 0 and smi["mig.mode.current"] == "Disabled"
    cuda = re.search(r"CUDA Version: (\d+)\.(\d+)", RUN["nvidia_smi_header"])
    assert cuda is not None
    assert RUN["discover"]["cuda_driver"] == int(cuda.group(1)) * 1000 + int(cuda.group(2)) * 10


def test_doctor_on_the_live_host_stops_where_the_recording_does() -> None:
    live = RUN["doctor"]
    recorded = diagnose(HostFacts.from_recording(SHARED / "host.txt", SHARED / "nvml.json"), (12, 4))
    assert [(s["name"], s["status"]) for s in live] == [(s.name, str(s.status)) for s in recorded]
    assert RUN["doctor_exit_code"] == 1
    by_name = {s["name"]: s for s in live}
    # Same sources, same evidence: NVML and the toolkit/CDI search; sysfs (the recording adds numa=-1).
    for name in ("NVML", "container toolkit / CDI"):
        assert by_name[name]["evidence"] == next(s.evidence for s in recorded if s.name == name)
    pci = "/sys/bus/pci/devices/0000:00:06.0 class=0x030200 device=0x2335"
    assert by_name["PCI device"]["evidence"].startswith(pci)
    assert recorded[0].evidence.startswith(pci.replace(" class", " numa=-1 class"))
    # The live host has /proc/modules (the VM's recording had no lsmod output).
    assert by_name["kernel module"]["evidence"].startswith("/proc/modules: nvidia ")
