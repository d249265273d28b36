"""The bypass battery (``tests/admission/battery.py``) through the real HTTPS server with the chart's defaults:
every attempt denied for its reason, every legitimate pod allowed, and the battery at least as wide as
the review that found 33 of 67 attempts getting through and 8 of 26 legitimate pods denied.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kubegpu.admission.gpu_access import Exemptions
from kubegpu.live.webhook import Policy, review
from tests.admission.battery import SCHEDULER_USER, Case, bypasses, legitimate
from tests.admission.webhook_server import cluster, post, server  # noqa: F401  (the fixture)
from tests.live.conftest import tls_pair  # noqa: F401  (the fixture)

BYPASSES = bypasses()
LEGITIMATE = legitimate()


def test_the_battery_is_at_least_as_wide_as_the_review() -> None:
    assert len(BYPASSES) >= 67 and len(LEGITIMATE) >= 26
    assert len({c.name for c in BYPASSES}) == len(BYPASSES)
    assert len({c.name for c in LEGITIMATE}) == len(LEGITIMATE)


@pytest.mark.parametrize("case", BYPASSES, ids=lambda c: c.name)
def test_every_bypass_is_denied_for_its_reason(
    server: tuple[int, Path],  # noqa: F811
    case: Case,
) -> None:
    response = post(server, case.review)
    assert response["allowed"] is False, case.name
    assert response["status"]["code"] == 403 and response["status"]["reason"] == "Forbidden"
    reasons = response["status"]["message"].split("; ")
    assert any(r.startswith(case.field + ": ") and case.phrase in r for r in reasons), reasons


@pytest.mark.parametrize("case", LEGITIMATE, ids=lambda c: c.name)
def test_every_legitimate_pod_is_allowed(
    server: tuple[int, Path],  # noqa: F811
    case: Case,
) -> None:
    response = post(server, case.review)
    assert response == {"uid": case.review["request"]["uid"], "allowed": True}, response.get("status")


def test_the_operands_pass_because_of_the_exemption_alone() -> None:
    """Without ``webhook.exemptions`` the real operator operands are denied (privileged, hostPath /,
    NVIDIA_VISIBLE_DEVICES=all, CDI annotations): the exemption, not a gap in the rules, lets them in."""
    ctx = cluster().context()
    operands = [c for c in LEGITIMATE if c.name.startswith("operator ")]
    assert len(operands) == 11
    for case in operands:
        answer = review(case.review, ctx, Policy(Exemptions({}), SCHEDULER_USER))["response"]
        assert answer["allowed"] is False, case.name
