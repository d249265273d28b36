"""``kubegpu bench openb`` and ``kubegpu simulate`` end to end on a tiny openb-shaped data folder."""

from __future__ import annotations

import csv
from pathlib import Path

from click.testing import CliRunner

from kubegpu.cli.sim_cmd import bench, simulate
from tests.sim.cli_inputs import data_folder


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
