"""Where a snapshot's load time goes: the load of ``kubegpu diagnose --snapshot FILE`` split by phase.

Each phase is the same function the command calls, timed on its own, in the order the command runs
them (so each phase gets the previous phase's output):

- ``read``: the file's text (``Path.read_text``);
- ``parse``: ``sources.read_text``, JSON/YAML to dicts and ``List`` items split into objects;
- ``objects``: ``model.snapshot.build_snapshot``, typed ``Node`` / ``Pod`` / … objects;
- ``device models``: ``scheduler.assembly.device_models``, one device model per GPU node;
- ``state build``: ``scheduler.cluster.ClusterState``, the columns (allocatable, requested, pods);
- ``device replay``: which device IDs each running pod holds (recorded, or chosen as the device plugin
  would). The state replays a node's devices the first time something asks for them, so a command that
  never looks at device IDs skips it; here every node is asked, to show what it costs;
- ``framework``: the rest of ``Engine`` (release chosen, profile, plugins, nominations).

Times are CPU seconds of the process (``time.process_time``): they hold still when other jobs share the
machine. ``json.load`` of the same file is the reference (issue 25: load <= 10 x json.load). ``load`` is the
whole ``Engine(sources.load_files(FILE))`` timed on its own afterwards, without the forced replay;
``ClusterState builds`` counts the constructions during that whole load (one per command).

    python benchmarks/bench_load_phases.py [FILE ...]   (default: the bench_scale.py clusters in
        /tmp/kubegpu-scale, generated there by ``bench_scale.py`` if missing)
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

_PHASES = """
import gc, json, sys, time
from pathlib import Path

path = Path(sys.argv[1])
t = time.process_time()
with open(path, "rb") as f:
    json.load(f)
ref = time.process_time() - t

from kubegpu import sources
from kubegpu.errors import InputError
from kubegpu.scheduler import assembly as engine_mod
from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler import cluster as cluster_mod

try:  # the load pauses the cyclic collector (kubegpu.model.bulk); time the phases the same way
    from kubegpu.model.bulk import bulk_load
except ImportError:  # a tree from before that change
    from contextlib import nullcontext as bulk_load

out = {"json": ref}
gc.collect()
paused = bulk_load()
paused.__enter__()
t = time.process_time()
text = path.read_text(encoding="utf-8")
out["read"] = time.process_time() - t
t = time.process_time()
errors: list[InputError] = []
objects = sources.read_text(text, str(path), errors)
out["parse"] = time.process_time() - t
t = time.process_time()
snap = build_snapshot(objects)
out["objects"] = time.process_time() - t
t = time.process_time()
models = engine_mod.device_models(snap)
out["device models"] = time.process_time() - t
t = time.process_time()
state = cluster_mod.ClusterState(snap.nodes, snap.pods, models)
out["state build"] = time.process_time() - t
t = time.process_time()
settle = getattr(state.devices, "settle_all", None)  # absent before the replay was made lazy
if settle is not None:
    settle()
out["device replay"] = time.process_time() - t
paused.__exit__(None, None, None)
t = time.process_time()
engine_mod.Engine(snap)  # the framework part, timed as the rest of a second Engine (state included)
engine_total = time.process_time() - t
del state, snap, objects, text, models
gc.collect()

builds = 0
init = cluster_mod.ClusterState.__init__

def counting(self, *a, **k):
    global builds
    builds += 1
    init(self, *a, **k)

cluster_mod.ClusterState.__init__ = counting
t = time.process_time()
snap = sources.load_files(path)
engine_mod.Engine(snap)
out["load"] = time.process_time() - t
out["builds"] = builds
out["engine"] = engine_total
print(json.dumps(out))
"""

PHASES = ("read", "parse", "objects", "device models", "state build", "device replay")


def phases(path: Path) -> dict[str, Any]:
    """One fresh process per file, so imports and caches of one measurement never help another."""
    done = subprocess.run(
        [sys.executable, "-c", _PHASES, str(path)], capture_output=True, text=True, check=True
    )
    result: dict[str, Any] = json.loads(done.stdout)
    # the second Engine rebuilt device models and state; what is left of it is the framework part
    result["framework"] = max(result["engine"] - result["device models"] - result["state build"], 0.0)
    return result


def main() -> None:
    paths = [Path(p) for p in sys.argv[1:]]
    if not paths:
        sys.path.insert(0, str(Path(__file__).parent))
        from bench_scale import generate

        out = Path("/tmp/kubegpu-scale")
        out.mkdir(parents=True, exist_ok=True)
        for nodes, pending in ((500, 100), (5000, 1000)):
            path = out / f"cluster-{nodes}-{pending}.json"
            if not path.exists():
                path.write_text(json.dumps(generate(nodes, pending)))
            paths.append(path)
    head = ("file", "json.load s", *(f"{p} s" for p in PHASES), "framework s", "load s", "load/json",
            "ClusterState builds")  # fmt: skip
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for path in paths:
        gc.collect()
        r = phases(path)
        cells = (path.name, f"{r['json']:.2f}", *(f"{r[p]:.2f}" for p in PHASES), f"{r['framework']:.2f}",
                 f"{r['load']:.2f}", f"{r['load'] / r['json']:.1f}x", str(r["builds"]))  # fmt: skip
        print("| " + " | ".join(cells) + " |")
        sys.stdout.flush()


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"(total {time.perf_counter() - t0:.0f} s)", file=sys.stderr)
