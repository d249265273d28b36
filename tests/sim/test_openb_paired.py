"""benchmarks/openb_paired.py: the paired FGD-vs-candidate table, on summary rows made up for the case
(expected cells worked out by hand)."""

from __future__ import annotations

from benchmarks.openb_paired import paired_rows


def rows(trace: str, policy: str, values: list[float]) -> list[dict[str, str]]:
    return [
        {"trace": trace, "policy": policy, "seed": str(seed), "unallocated_gpu_pct_at_100": str(v)}
        for seed, v in zip((1, 2, 3), values, strict=True)
    ]


def test_paired_difference_and_verdicts() -> None:
    """t: FGD 5.0/5.2/5.4 (mean 5.2, sd 0.2), candidate 4.8/4.9/5.0 (4.9, sd 0.1): differences −0.2,
    −0.3, −0.4 → −0.30 ± 0.10, lower on 3/3, improvement 0.3 > 0.2 → beats.
    u: candidate 5.1/5.3/5.3 (mean 5.23, sd 0.12): differences +0.1, +0.1, −0.1 → mean +0.033, sd
    √((2·0.0667² + 0.1333²)/2) = 0.12, lower on 1/3; 0.03 < 0.2 → noise."""
    data = [
        *rows("t", "FGD", [5.0, 5.2, 5.4]), *rows("t", "Ours", [4.8, 4.9, 5.0]),
        *rows("u", "FGD", [5.0, 5.2, 5.4]), *rows("u", "Ours", [5.1, 5.3, 5.3]),
        *rows("u", "BestFit", [7.0, 7.0, 7.0]),
    ]  # fmt: skip
    assert paired_rows(data, "FGD", "Ours") == [
        ["t", "1–3", "5.20 ± 0.20", "4.90 ± 0.10", "-0.30 ± 0.10", "3/3", "beats"],
        ["u", "1–3", "5.20 ± 0.20", "5.23 ± 0.12", "+0.03 ± 0.12", "1/3", "noise"],
    ]


def test_worse_and_seeds_only_one_policy_ran_are_left_out() -> None:
    """FGD on seeds 1–3, the candidate on 1–2 only: seeds 1, 2 pair (FGD 5.0/5.2, sd 0.14; candidate
    5.5/5.7): +0.50 ± 0.00 > 0.14 → worse."""
    data = [*rows("t", "FGD", [5.0, 5.2, 5.4]), *rows("t", "Ours", [5.5, 5.7, 0.0])[:2]]
    assert paired_rows(data, "FGD", "Ours") == [
        ["t", "1–2", "5.10 ± 0.14", "5.60 ± 0.14", "+0.50 ± 0.00", "0/2", "worse"]
    ]
