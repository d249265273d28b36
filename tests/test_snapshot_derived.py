"""``ClusterSnapshot.derived``: a value made once per snapshot, and made again when a list it read changes (the
pods and batch objects always, the other lists a caller names in ``over``): the indexes ``explain`` reads per
Pending pod (KAI events, HAMi node reads, Volcano and Kueue queue objects) rely on it to stay true to the
snapshot when a list is replaced or grows."""

from __future__ import annotations

from kubegpu.model.objects import Node
from kubegpu.model.snapshot import ClusterSnapshot


def _names(snap: ClusterSnapshot, made: list[int]) -> list[str]:
    def make() -> list[str]:
        made.append(1)
        return [n.name for n in snap.nodes]

    return snap.derived("names", make, over=(snap.nodes,))


def test_a_value_over_the_nodes_is_made_once_and_again_when_the_node_list_changes() -> None:
    snap, made = ClusterSnapshot(nodes=[Node(name="a")]), []
    assert _names(snap, made) == ["a"] and _names(snap, made) == ["a"]
    assert len(made) == 1  # the second read is the kept value
    snap.nodes.append(Node(name="b"))  # grown
    assert _names(snap, made) == ["a", "b"]
    snap.nodes = [Node(name="c"), Node(name="b")]  # replaced, same length
    assert _names(snap, made) == ["c", "b"]
    snap.nodes[0] = Node(name="d")  # its first element replaced in place
    assert _names(snap, made) == ["d", "b"]
    assert len(made) == 4


def test_a_value_is_made_again_when_the_pods_change_whatever_it_names() -> None:
    snap, made = ClusterSnapshot(nodes=[Node(name="a")]), []
    _names(snap, made)
    snap.pods = []  # another list object
    _names(snap, made)
    assert len(made) == 2
