"""One state per command, device IDs replayed on first use, and ``-o json`` written piecewise (issues 23, 25).

- ``kubegpu diagnose`` builds the scheduling state (``ClusterState``) and the device models once.
- The devices of running pods are replayed per node when first used; the result equals replaying every
  pod at load, in the same order (the ledger before this change), pod for pod and ID for ID.
- ``cli.json_stream.dump`` writes exactly what ``json.dumps(data, indent=2)`` and a newline would.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from click.testing import CliRunner

from kubegpu import sources
from kubegpu.cli import json_stream
from kubegpu.cli.main import cli
from kubegpu.explain.diagnose import diagnose
from kubegpu.model.snapshot import build_snapshot
from kubegpu.scheduler import assembly as engine_mod
from kubegpu.scheduler import cluster as cluster_mod
from kubegpu.scheduler.cluster import ClusterState
from tests.scale_fleet import generator


def test_diagnose_builds_the_state_and_device_models_once(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []
    init, models = ClusterState.__init__, engine_mod.device_models

    def counting_init(self: ClusterState, *a: Any, **k: Any) -> None:
        built.append("state")
        init(self, *a, **k)

    def counting_models(*a: Any, **k: Any) -> Any:
        built.append("models")
        return models(*a, **k)

    monkeypatch.setattr(cluster_mod.ClusterState, "__init__", counting_init)
    monkeypatch.setattr(engine_mod, "device_models", counting_models)
    result = CliRunner().invoke(cli, ["diagnose", "--demo", "-o", "json"])
    assert result.exit_code == 0, result.output
    assert sorted(built) == ["models", "state"]


def test_deferred_device_replay_equals_replaying_every_pod_at_load() -> None:
    """The demo has whole-GPU, MIG and time-sliced nodes, pods with recorded assignments and without."""
    snap = sources.load_demo()
    models = engine_mod.device_models(snap)
    lazy = ClusterState(snap.nodes, snap.pods, models)
    eager = ClusterState(snap.nodes, (), models)  # then every pod added at once, as the load did before
    for pod in snap.pods:
        idx = eager.index.get(pod.node_name) if pod.node_name and not pod.is_terminal else None
        if idx is not None:
            eager.add_pod(pod, idx)
    assert eager.devices.assignments  # the demo's GPU pods hold devices: the comparison is not vacuous
    # nothing replayed yet on the lazy side; asking for one node replays that node only
    some = next(i for i, m in enumerate(lazy.devices.models) if m is not None and lazy.pods_on[i])
    assert lazy.devices.taken(some) == eager.devices.taken(some)
    assert lazy.devices.assignments == eager.devices.assignments
    assert lazy.devices.assumed == eager.devices.assumed
    assert lazy.devices.held == eager.devices.held
    assert (lazy.requested == eager.requested).all() and (lazy.generation == eager.generation).all()


def test_json_stream_writes_what_json_dumps_writes() -> None:
    snap = sources.load_demo()
    report = diagnose(engine_mod.Engine(snap))
    assert any(e.nodes for e in report.pending)  # node evidence present: the shared-list path is exercised
    data = {"kubeVersion": "1.34", **report.to_dict(shallow=True)}
    out = io.StringIO()
    json_stream.dump(data, out.write)
    expected = json.dumps({"kubeVersion": "1.34", **report.to_dict()}, indent=2) + "\n"
    assert out.getvalue() == expected
    small: list[dict[str, Any]] = [{}, {"a": []}, {"a": {}, "b": [1, {"c": [2]}]}]
    for empty in small:
        out = io.StringIO()
        json_stream.dump(empty, out.write)
        assert out.getvalue() == json.dumps(empty, indent=2) + "\n"


def test_json_stream_of_pods_sharing_evidence_writes_what_json_dumps_writes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pods of one equivalence class share their lists; pods of different requests share ``NodeEvidence``
    objects (``explain.shared_evidence``): the generator's 40-node cluster, 20 Pending pods of its 5
    shapes, plus 20 more each asking its own memory (``varied``). The kept texts are dropped as they go
    (a node-text bound of 10 here, so the dropping runs): the output is still ``json.dumps``'s."""
    bench = generator()
    alike = bench.generate(40, 20)
    varied = bench.generate(40, 20, varied=True)
    pending = [o for o in varied["items"] if o["kind"] == "Pod" and not o["spec"].get("nodeName")]
    for o in pending:
        o["metadata"]["name"] += "-v"
        o["metadata"]["uid"] += "-v"
    snap = build_snapshot([("gen.json", o) for o in alike["items"] + pending])
    report = diagnose(engine_mod.Engine(snap))
    nodes = [e.nodes for e in report.pending if e.nodes]
    assert len({id(n) for n in nodes}) < len(nodes)  # some lists shared (classes)
    assert len({id(x) for n in nodes for x in n}) < sum(len(n) for n in nodes)  # objects shared too
    monkeypatch.setattr(json_stream, "KEPT_NODES", 10)
    out = io.StringIO()
    json_stream.dump(report.to_dict(shallow=True), out.write)
    assert out.getvalue() == json.dumps(report.to_dict(), indent=2) + "\n"


def test_bulk_load_pauses_the_collector_and_restores_it() -> None:
    import gc

    from kubegpu.model.bulk import bulk_load

    was = gc.isenabled()
    try:
        gc.enable()
        with bulk_load():
            assert not gc.isenabled()
            with bulk_load():  # a load inside a load (an Engine built while loading) stays paused
                assert not gc.isenabled()
            assert not gc.isenabled()
        assert gc.isenabled()
        gc.disable()  # a caller that had it off keeps it off
        with bulk_load():
            pass
        assert not gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()


def _explain_with_spy(monkeypatch: pytest.MonkeyPatch, run: Any) -> list[bool]:
    """``kubegpu explain`` of a demo pod through ``run``; what ``gc.isenabled()`` said while explaining."""
    import gc

    from kubegpu.explain import pending

    seen: list[bool] = []
    real = pending.explain_pod

    def spy(engine: Any, pod: Any) -> Any:
        seen.append(gc.isenabled())
        return real(engine, pod)

    monkeypatch.setattr(pending, "explain_pod", spy)
    run(["explain", "ml-infer/embed-server", "--demo"])
    return seen


def test_a_one_shot_command_pauses_the_collector_and_a_test_runner_gets_it_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under ``CliRunner`` (many commands in one process) the collector is paused while the command runs
    and resumes after it, nothing frozen (``cli.options.one_shot``)."""
    import gc

    was = gc.isenabled()
    gc.enable()
    frozen = gc.get_freeze_count()
    try:
        seen = _explain_with_spy(
            monkeypatch, lambda args: CliRunner().invoke(cli, args, catch_exceptions=False)
        )
        assert seen == [False]
        assert gc.isenabled()
        assert gc.get_freeze_count() == frozen
    finally:
        (gc.enable if was else gc.disable)()


def test_the_command_line_freezes_what_a_one_shot_command_made(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run as ``main`` runs it (the root context's ``obj``), the command's objects are frozen at its end, so
    that the interpreter's last collection at exit skips them; the collector is paused meanwhile."""
    import gc

    from kubegpu.cli.options import ONE_SHOT_PROCESS

    was = gc.isenabled()
    gc.enable()
    frozen = gc.get_freeze_count()
    try:
        seen = _explain_with_spy(
            monkeypatch, lambda args: cli.main(args, standalone_mode=False, obj=ONE_SHOT_PROCESS)
        )
        assert seen == [False]
        assert gc.get_freeze_count() > frozen
    finally:
        gc.unfreeze()  # (this test process goes on: its objects back to the collector)
        (gc.enable if was else gc.disable)()


def test_the_collector_runs_again_while_the_answer_is_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """Writing the answer makes cycles of its own (``json.dumps(indent=2)`` leaves one per call, its
    pure-Python encoder's closures): paused, a 5,000-node ``diagnose -o json`` grew from 280 to 383 MB peak.
    So ``emit`` freezes what exists (as the command line) and lets the collector run while it writes."""
    import gc
    import types

    from kubegpu.cli import options
    from kubegpu.cli.options import ONE_SHOT_PROCESS

    seen: list[bool] = []

    def dumps(value: Any, **kw: Any) -> str:
        seen.append(gc.isenabled())
        return json.dumps(value, **kw)

    monkeypatch.setattr(options, "json", types.SimpleNamespace(dumps=dumps))
    was = gc.isenabled()
    gc.enable()
    frozen = gc.get_freeze_count()
    try:
        cli.main(
            ["explain", "ml-infer/embed-server", "--demo", "-o", "json"],
            standalone_mode=False,
            obj=ONE_SHOT_PROCESS,
        )
        assert seen == [True]
        assert gc.get_freeze_count() > frozen
    finally:
        gc.unfreeze()
        (gc.enable if was else gc.disable)()
