"""benchmarks/openb_sliver_bound.py: the sliver bound and the offline first-fit-decreasing reference,
on pod lists made up for the case (expected values worked out by hand in each docstring)."""

from __future__ import annotations

from benchmarks.openb_sliver_bound import offline_slack, sliver_bound

from kubegpu.sim.openb import TracePod


def share(name: str, milli: int, gpus: int = 1) -> TracePod:
    return TracePod(name, 4000, 1024, gpus, milli)


def test_bound_is_unfillable_slack_beside_large_sharing_pods() -> None:
    """Pods 810, 810, 700 milli and a 160: θ can be 190 (beside an 810) or 300 (beside a 700).
    θ = 190: slack 2 × 190 = 380, fillable only by pods ≤ 190 milli: the 160 → 220.
    θ = 300: slack 380 + 300 = 680, fill 160 → 520: the larger, so the bound is (520, 300).
    A whole-GPU pod neither adds slack nor fills it."""
    pods = [share("a", 810), share("b", 810), share("c", 700), share("d", 160), share("w", 1000, 2)]
    assert sliver_bound(pods) == (520, 300)


def test_bound_is_zero_when_small_pods_fill_every_sliver() -> None:
    """One 810 (190 left) and two 100s (200 ≥ 190): 190 − 200 < 0, never above the starting 0."""
    assert sliver_bound([share("a", 810), share("b", 100), share("c", 100)]) == (0, 0)


def test_offline_packing_fills_gpus_largest_first() -> None:
    """Sizes 810, 470, 470, 160, 100 sorted down: 810 → GPU 1 (190 left); 470 → GPU 2 (530); 470 →
    GPU 2 (60); 160 → GPU 1 (30); 100 → GPU 3 (900). Free left: 30 + 60 + 900 = 990."""
    pods = [share(str(m), m) for m in (160, 470, 810, 100, 470)]
    assert offline_slack(pods) == 990
