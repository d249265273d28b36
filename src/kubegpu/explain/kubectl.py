"""The ``kubectl`` line builder every proposed change shares, ``explain``'s findings and ``kubegpu plan``'s
procedures alike: a mutating command comes as its ``--dry-run=server`` form first, then the real one, each with
``-n <namespace>`` explicit (on a cluster-scoped object such as a Node kubectl ignores it). It lives here, the
lowest layer that proposes changes, so ``plan`` (above) imports it rather than keeping a copy."""

from __future__ import annotations


def kubectl(namespace: str, command: str) -> str:
    """A ``kubectl`` line with its namespace explicit: a read, or a rollback shown beside its change."""
    return f"kubectl -n {namespace} {command}"


def mutate(namespace: str, command: str, *, output: str = "") -> tuple[str, str]:
    """A mutating ``kubectl`` command: its server-side dry run, then the real one. ``output`` (``yaml``) has the
    dry run print the object the server would store: the result of a patch or a label merged into the live
    object, which the patch text alone does not show (kubectl patch reference, ``--dry-run`` and ``-o``;
    kubernetes/kubernetes#72644). The real line prints kubectl's one-line summary."""
    line = kubectl(namespace, command)
    return f"{line} --dry-run=server" + (f" -o {output}" if output else ""), line
