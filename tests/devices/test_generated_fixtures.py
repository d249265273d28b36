"""The generated multi-GPU readings are marked as generated and equal what their generator writes."""

from __future__ import annotations

import importlib.util

import pytest
from device_readings import GENERATED

from kubegpu.devices import load_reading

_spec = importlib.util.spec_from_file_location("generate_nodes", GENERATED / "generate.py")
assert _spec is not None and _spec.loader is not None
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)


@pytest.mark.parametrize("name", sorted(generate.FIXTURES))
def test_generated_reading_is_fresh_and_says_it_is_generated(name: str) -> None:
    path = GENERATED / name
    assert path.read_text(encoding="utf-8") == generate.render(name), (
        f"run tests/fixtures/nodes/generate.py ({name})"
    )
    inv = load_reading(path)
    assert inv.generated.startswith("GENERATED, not read off a machine")


def test_dgx1_every_v100_has_six_nvlinks_as_the_published_matrix_says() -> None:
    inv = load_reading(GENERATED / "dgx1-8xv100.json")
    assert [len(g.nvlinks) for g in inv.devices] == [6] * 8
