"""``kubegpu bench openb`` and ``kubegpu simulate`` end to end on a tiny openb-shaped data folder."""

from __future__ import annotations

import csv
from pathlib import Path

from click.testing import CliRunner

from kubegpu.cli.sim_cmd import bench, simulate

NODES = "sn,cpu_milli,memory_mib,gpu,model\n" + "".join(
    f"openb-node-{i:02d},32000,131072,{g},{m}\n"
    for i, (g, m) in enumerate([(8, "G2"), (4, "T4"), (2, "P100")] * 4)
)
HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"


def data_folder(tmp_path: Path) -> Path:
    csv_dir = tmp_path / "data" / "csv"
    csv_dir.mkdir(parents=True)
    (csv_dir / "openb_node_list_gpu_node.csv").write_text(NODES)
    shapes = [(1, 500), (1, 1000), (0, 0), (2, 1000), (1, 300)]
    rows = "".join(
        f"openb-pod-{i:03d},{2000 + 500 * (i % 3)},4096,{g},{m},,LS,Running,{10 * i},{10 * i + 35},{10 * i}\n"
        for i, (g, m) in enumerate(shapes[i % 5] for i in range(24))
    )
    (csv_dir / "openb_pod_list_tiny.csv").write_text(HEADER + rows)
    return tmp_path / "data"


def test_bench_openb_writes_the_contracted_summary(tmp_path: Path) -> None:
    data, out = data_folder(tmp_path), tmp_path / "out"
    args = ["openb", "--data", str(data), "--traces", "tiny", "--policies", "FGD,BestFit"]
    result = CliRunner().invoke(bench, [*args, "--seeds", "1-2", "--out", str(out), "--workers", "1"])
    assert result.exit_code == 0, result.output
    with (out / "summary.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(r["trace"], r["policy"], r["seed"]) for r in rows] == [
        ("tiny", "FGD", "1"), ("tiny", "FGD", "2"), ("tiny", "BestFit", "1"), ("tiny", "BestFit", "2"),
    ]  # fmt: skip
    expected = {
        "trace",
        "policy",
        "seed",
        "pods",
        "unallocated_gpu_pct_at_100",
        "frag_amount_pct_at_100",
        "seconds",
    }
    assert expected <= set(rows[0])
    assert (out / "runs" / "tiny_FGD_1.csv").is_file()
    assert (out / "figures" / "tiny_unallocated.png").is_file()


def test_bench_rejects_unknown_policy(tmp_path: Path) -> None:
    args = ["openb", "--data", str(data_folder(tmp_path)), "--policies", "Nope", "--out", str(tmp_path / "o")]
    result = CliRunner().invoke(bench, args)
    assert result.exit_code == 2 and "unknown policies" in result.output


def test_simulate_prints_before_and_after(tmp_path: Path) -> None:
    result = CliRunner().invoke(simulate, ["--data", str(data_folder(tmp_path)), "--trace", "tiny"])
    assert result.exit_code == 0, result.output
    assert "before: BestFit" in result.output and "after: FGD" in result.output
