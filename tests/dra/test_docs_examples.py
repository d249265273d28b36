"""docs/dra.md's three worked cases: the snapshots in docs/examples/dra/ say what the text says, and every
command of that section prints exactly the output shown.

Hand-derived from the files: case 1 (selector-rejects-every-device) has 4 ``NVIDIA A100-SXM4-40GB`` (40Gi)
on a100-40g-1 and 2 ``NVIDIA A100 80GB PCIe`` (80Gi) on a100-80g-1; the claim's selector asks for product
``NVIDIA A100-SXM4-80GB`` first, so its first clause is false on all 6 devices. Case 2
(mig-match-attribute): one ``1g.10gb`` device on each of mig-1's two GPUs, the two requests constrained
to one ``parentUUID``: 1 free device per value, 2 needed. Case 3 (mixed-double-counting): mixed-1
advertises ``nvidia.com/gpu: 2`` and publishes 2 GPUs; plugin-job uses the plugin, dra-job the claim.
The FailedScheduling texts of cases 1 and 2 are what the real kube-scheduler 1.34.4 printed for these files
(run once through tests/realkube/harness.run_case); tests/realkube/golden/1.34.5.json pins the same texts
(``dra-gpu-count-too-many``, ``dra-match-attribute-unsatisfiable``).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from kubegpu import sources
from kubegpu.explain.dra import double_counting
from kubegpu.explain.engine import Engine
from kubegpu.explain.pending import explain_pod

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "dra.md"
EXAMPLES = REPO / "docs" / "examples" / "dra"
SECTION = "## Three cases"
BLOCK = re.compile(r"```console\n\$ (kubegpu [^\n]+)\n(.*?)```", re.S)


def section_commands() -> list[tuple[str, str]]:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.index("\n## ", start + len(SECTION))
    return BLOCK.findall(text[start:end])


def engine(name: str) -> Engine:
    snap = sources.load_files(EXAMPLES / name)
    assert not snap.errors, [e.one_line() for e in snap.errors]
    snap.kube_version = "1.34"
    return Engine(snap)


def test_case_1_the_product_clause_rejects_every_device_on_both_nodes() -> None:
    eng = engine("selector-rejects-every-device.yaml")
    exp = explain_pod(eng, eng.snapshot.pod("default/train"))
    assert exp.message.startswith("0/2 nodes are available: 2 cannot allocate all claims.")
    ev = {n.name: " ".join(n.evidence) for n in exp.nodes}
    assert "4 device(s) in reach; class admits 4; selectors admit 0" in ev["a100-40g-1"]
    assert "productName='NVIDIA A100-SXM4-40GB'" in ev["a100-40g-1"]
    assert "2 device(s) in reach; class admits 2; selectors admit 0" in ev["a100-80g-1"]
    assert "productName='NVIDIA A100 80GB PCIe'" in ev["a100-80g-1"]


def test_case_2_each_parent_has_one_free_mig_device_of_the_two_needed() -> None:
    eng = engine("mig-match-attribute.yaml")
    exp = explain_pod(eng, eng.snapshot.pod("default/pair"))
    assert exp.message.startswith("0/1 nodes are available: 1 cannot allocate all claims.")
    (node,) = exp.nodes
    assert "free devices by value: GPU-mig-1-0000: 1, GPU-mig-1-0001: 1" in " ".join(node.evidence)


def test_case_3_the_mixed_node_is_found_with_both_pods() -> None:
    (f,) = double_counting(engine("mixed-double-counting.yaml").snapshot)
    assert (
        f.title
        == "mixed-1 advertises its GPUs twice: 2 through the device plugin and 2 through the DRA driver"
    )
    assert f.objects == ["Node mixed-1", "Pod default/plugin-job", "Pod default/dra-job"]


def test_the_section_shows_three_commands() -> None:
    assert [shlex.split(cmd)[1] for cmd, _ in section_commands()] == ["explain", "explain", "diagnose"]


@pytest.mark.parametrize("cmd, shown", section_commands(), ids=lambda v: str(v)[:60])
def test_each_command_prints_what_the_doc_shows(cmd: str, shown: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | {"COLUMNS": "100"}
    args = shlex.split(cmd)[1:]
    proc = subprocess.run(
        [sys.executable, "-m", "kubegpu", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == shown, f"docs/dra.md is stale for: {cmd}"
