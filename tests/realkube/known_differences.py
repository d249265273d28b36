"""Where kubegpu's core knowingly differs from a real kube-scheduler release, per minor and per case.

kubegpu's core renders kube-scheduler 1.34.0's texts; the real releases built here changed some of them. Each
entry names the upstream change. The differential tests assert that the cases where kubegpu differs from a
release's real output are EXACTLY the ones listed for that minor: a new difference fails (a regression or an
upstream change to model), and so does a listed one that no longer differs (remove it from the table). This
table is the input of the per-version message work: each entry is a text kubegpu must learn for that minor.
"""

from __future__ import annotations

# kubernetes/kubernetes#134740 (merged 2025-10, "remove taint values from unschedulable messages in pod
# status"): TaintToleration's Filter says `node(s) had untolerated taint(s)` (one reason for every taint, so
# different taints merge into one count); kubegpu prints 1.34.0's `node(s) had untolerated taint {key: value}`.
TAINT_TEXT = "upstream #134740: `node(s) had untolerated taint(s)` replaces `untolerated taint {key: value}`"
# DynamicResources' PostFilter (enabled by default since DRA went GA in 1.34) returns the Unschedulable reason
# `no new claims to deallocate` for a pod without claims, which is joined before `preemption: ` in 1.34–1.36;
# kubernetes/kubernetes#140222 ("reduce scheduler PostFilter event noise") drops it in 1.37. kubegpu has no
# DynamicResources PostFilter.
DRA_POSTFILTER = (
    "upstream DynamicResources PostFilter adds `no new claims to deallocate, ` (1.34–1.36; gone by #140222)"
)
# kubernetes/kubernetes#140180: DefaultPreemption's success status carries `found a potential placement for pod
# on node N, preempting K victims`, so the FailedScheduling message of a pod that preempted gains a
# `preemption: ` part in 1.37; kubegpu prints the 1.34–1.36 message (no preemption part after a success).
PREEMPTION_SUCCESS = (
    "upstream #140180: a successful preemption appends `preemption: found a potential placement ...`"
)

_TAINT_CASES = ("taint-and-insufficient", "taint-empty-value", "two-different-taints",
                "affinity-and-taint-and-insufficient")  # fmt: skip
_NO_DRA_TEXT = ("fits-one-node", "tolerated-taint-fits", "preemption-succeeds")  # bound, or preempted

KNOWN: dict[str, dict[str, str]] = {
    "1.37": {
        **dict.fromkeys(_TAINT_CASES, TAINT_TEXT),
        "preemption-succeeds": PREEMPTION_SUCCESS,
    },
}


def _with_dra(cases: list[str]) -> dict[str, str]:
    """1.34–1.36: every unschedulable case whose PostFilter ran (a pod that preempted has no reasons joined)."""
    out = {c: DRA_POSTFILTER for c in cases if c not in _NO_DRA_TEXT}
    for c in _TAINT_CASES:
        out[c] = f"{TAINT_TEXT}; {DRA_POSTFILTER}"
    return out


def minor_of(version: str) -> str:
    """``1.37.2`` → ``1.37``."""
    return ".".join(version.split(".")[:2])


def known(minor: str, case_names: list[str]) -> dict[str, str]:
    """The cases (name → why) where kubegpu is known to differ from release ``minor`` (``1.36``)."""
    if minor in KNOWN:
        return KNOWN[minor]
    if minor == "1.36":  # 1.35 follows once its golden is recorded (same two changes expected)
        return _with_dra(case_names)
    raise KeyError(f"no known-differences entry for Kubernetes {minor}: record its golden and add one")
