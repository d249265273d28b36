"""``kubegpu.backoff.doubling``: the one doubling-backoff rule (kube client retries, reflectors, kubelet
registration). Expected waits are the first wait doubled by hand: 0.2, 0.4, 0.8, … capped.

client-go's ``wait.Backoff`` (k8s.io/apimachinery ``pkg/util/wait/backoff.go``) multiplies the duration by
``Factor`` per step and stops growing at ``Cap``; kubegpu's jitter scales the wait down to at most half
(``0.5 + random/2``) rather than client-go's up-to-``Jitter`` increase, so a cap is never exceeded.
"""

from __future__ import annotations

import pytest

from kubegpu.backoff import doubling
from kubegpu.kube.client import RETRY_INITIAL_S, RETRY_MAX_S, backoff_delay
from kubegpu.kube.informer import BACKOFF_INITIAL_S, UNAVAILABLE_MAX_S, backoff_s


def test_waits_double_from_the_first_up_to_the_cap() -> None:
    """0.2 s first, then 0.4, 0.8, 1.6, 3.2, then 5 (6.4 is over the 5 s cap) and 5 from there on."""
    assert [doubling(n, 0.2, 5.0) for n in range(1, 8)] == [0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0]


def test_a_first_wait_over_the_cap_is_capped() -> None:
    assert doubling(1, 2.0, 1.0) == 1.0


def test_thousands_of_failures_stay_at_the_cap() -> None:
    """2.0 ** 1024 does not convert to a float (OverflowError): the doublings are bounded."""
    assert doubling(5000, 0.1, 30.0) == 30.0
    assert 15.0 <= doubling(5000, 0.1, 30.0, jitter=True) < 30.0


@pytest.mark.parametrize("failures", [1, 3, 9, 60])
def test_jitter_scales_down_to_at_most_half(failures: int) -> None:
    plain = doubling(failures, 0.1, 30.0)
    assert all(plain / 2 <= doubling(failures, 0.1, 30.0, jitter=True) < plain for _ in range(50))


def test_the_kube_callers_use_it_with_their_own_first_wait_and_cap() -> None:
    """Client retries: 0.1 s first, 5 s cap; reflectors: 0.1 s first, the cap they are given; a
    Retry-After the server sent wins (capped at 30 s)."""
    assert RETRY_INITIAL_S == BACKOFF_INITIAL_S == 0.1 and RETRY_MAX_S == 5.0
    assert 0.05 <= backoff_delay(1, None) < 0.1 and 2.5 <= backoff_delay(60, None) < 5.0
    assert backoff_delay(1, 7.0) == 7.0 and backoff_delay(1, 3600.0) == 30.0
    assert 12.8 <= backoff_s(9, UNAVAILABLE_MAX_S) < 25.6
