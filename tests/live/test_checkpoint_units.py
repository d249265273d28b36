"""A preemption's waiting victims grouped into eviction units (``live.checkpoint.Wait``): a queue
workload's victim gang is evicted whole, a single pod's victims one by one, as kube-scheduler evicts."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from kubegpu.live.checkpoint import Wait
from kubegpu.model.objects import Pod
from kubegpu.model.podgroup import KUBEGPU_GROUP_LABEL
from tests.sim.builders import pod


def member(name: str, gang: str = "") -> Pod:
    p = pod(name)
    return replace(p, labels={KUBEGPU_GROUP_LABEL: gang}) if gang else p


def waiting(victims: list[Pod], workload: str) -> Wait:
    at = datetime(2026, 12, 3, tzinfo=UTC)
    return Wait(member("preemptor"), "", at, 0.0, {v.key: v for v in victims}, workload=workload)


def test_a_workloads_victims_group_by_gang_in_order_of_their_first_member() -> None:
    """Victims g1-a (gang g1), solo, g1-b, g2-a (gang g2): units [g1-a, g1-b], [solo], [g2-a], each the
    same as ``unit`` gives for any of its members."""
    victims = [member("g1-a", "g1"), member("solo"), member("g1-b", "g1"), member("g2-a", "g2")]
    wait = waiting(victims, "default/job")
    units = wait.units()
    assert [[v.name for v in u] for u in units] == [["g1-a", "g1-b"], ["solo"], ["g2-a"]]
    assert all(wait.unit(v) == u for u in units for v in u)


def test_a_single_pods_victims_are_each_their_own_unit() -> None:
    victims = [member("g1-a", "g1"), member("g1-b", "g1")]
    assert [[v.name for v in u] for u in waiting(victims, "").units()] == [["g1-a"], ["g1-b"]]
