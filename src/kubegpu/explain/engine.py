"""The ``Engine`` the explainer's modules (and the faces that feed them) are written against, re-exported:
it is built by the scheduling core's one assembly, ``kubegpu.scheduler.assembly``, which owns it."""

from kubegpu.scheduler.assembly import Engine

__all__ = ["Engine"]
