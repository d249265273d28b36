"""One object that owns a snapshot's scheduling state, so every command asks the same core the same way.

``Engine`` builds the ``ClusterState`` and the ``Framework`` from a profile once; ``explain``,
``schedule`` and ``diagnose`` go through it.
"""

from __future__ import annotations

from kubegpu.model.snapshot import ClusterSnapshot
from kubegpu.scheduler.cluster import ClusterState
from kubegpu.scheduler.framework import Framework, Profile
from kubegpu.scheduler.registry import default_profile, in_tree_registry
from kubegpu.scheduler.schedule_one import Scheduler


class Engine:
    def __init__(self, snapshot: ClusterSnapshot, profile: Profile | None = None, seed: int = 0) -> None:
        self.snapshot = snapshot
        self.profile = profile or default_profile()
        self.cluster = ClusterState(snapshot.nodes, snapshot.pods)
        self.framework = Framework(self.profile, in_tree_registry(), snapshot.pdbs)
        self.scheduler = Scheduler(self.framework, self.cluster, seed=seed)
