"""The Ray executor of ``kubegpu bench openb --executor ray``: the grid's packing runs as Ray tasks.

Each cell of the grid is one Ray task running ``bench.run_on``, the same packing run as the local process
pool's ``run_one``, so a seed gives the same result on either executor. The driver reads the node list
and each trace once and puts them in Ray's object store (about 0.2 MB for the 1,213 openb nodes and
0.6 MB for the default trace, pickled); tasks receive them from there, so Ray nodes need kubegpu and its
dependencies installed but not the data folder. Ray is an optional extra (``kubegpu[ray]``): it is
imported only when this executor is chosen.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubegpu.errors import KubegpuError
from kubegpu.sim.bench import Cell, Executor, RunResult, load_nodes, load_trace, run_on

if TYPE_CHECKING:
    from types import ModuleType

INSTALL_HINT = "--executor ray needs Ray, an optional extra: pip install 'kubegpu[ray]'"


def import_ray() -> ModuleType:
    """Ray, or a one-line error naming the extra to install."""
    try:
        import ray
    except ImportError as e:
        raise KubegpuError(INSTALL_HINT) from e
    return ray


def ray_executor(address: str | None = None, workers: int | None = None) -> Executor:
    """An executor on Ray: ``address`` connects to an existing cluster (``ray.init(address=...)``);
    without it a local Ray is started with ``workers`` CPUs (default: all) and stopped afterwards. A Ray
    already initialised in this process is used as it is and left running."""
    ray = import_ray()

    def run(data: Path, grid: Sequence[Cell]) -> Iterator[RunResult]:
        with _connected(ray, address, workers):
            nodes = ray.put(load_nodes(data))
            traces = {t: ray.put(load_trace(data, t)) for t in dict.fromkeys(t for t, _, _ in grid)}
            task = ray.remote(run_on)
            pending = [task.remote(nodes, traces[t], t, p, s) for t, p, s in grid]
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                result: RunResult = ray.get(done[0])
                yield result

    return run


@contextlib.contextmanager
def _connected(ray: Any, address: str | None, workers: int | None) -> Iterator[None]:
    if ray.is_initialized():
        yield
        return
    try:
        if address:
            ray.init(address=address, logging_level="warning")
        else:
            # "local": always a new instance, never a cluster that `ray start` left on this machine
            ray.init(address="local", num_cpus=workers, include_dashboard=False, logging_level="warning")
    except (ConnectionError, RuntimeError, ValueError) as e:
        cause = f" ({str(e.__cause__).splitlines()[0]})" if e.__cause__ else ""
        raise KubegpuError(f"cannot start or reach Ray at {address or 'a local instance'}: {e}{cause}") from e
    try:
        yield
    finally:
        ray.shutdown()
