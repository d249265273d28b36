"""One list of the kinds a snapshot should hold (``sources.SNAPSHOT_KINDS``): the README's and the demo
page's ``kubectl get`` commands and the hint given for pasted ``kubectl describe`` output show the same
list, and it holds what the readers need — the Services and controllers of PodTopologySpread's default
selector (``model.default_spread.RESOURCES``) and the storage objects of the volume plugins
(``model.volumes.RESOURCES``)."""

from __future__ import annotations

import re

from kubegpu import sources
from kubegpu.model import default_spread, volumes
from tests.conftest import REPO

_GET = re.compile(r"kubectl get (nodes,pods[a-z,.]*) -A -o yaml")


def test_readme_and_demo_page_show_the_one_kinds_list() -> None:
    for doc in ("README.md", "docs/demo.md"):
        found = _GET.findall((REPO / doc).read_text(encoding="utf-8"))
        assert found, doc
        assert all(kinds == sources.SNAPSHOT_KINDS for kinds in found), (doc, found)


def test_the_describe_hint_gives_the_same_command() -> None:
    assert sources.SNAPSHOT_COMMAND in sources.DESCRIBE_HINT
    assert sources.SNAPSHOT_COMMAND.startswith(f"kubectl get {sources.SNAPSHOT_KINDS} -A -o yaml")


def test_the_list_holds_what_the_readers_need_once_each() -> None:
    kinds = sources.SNAPSHOT_KINDS.split(",")
    assert len(kinds) == len(set(kinds))
    needed = {*default_spread.RESOURCES.split(","), *volumes.RESOURCES.split(","), "nodes", "pods"}
    assert needed <= set(kinds)
