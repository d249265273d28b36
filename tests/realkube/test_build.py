"""tools/kube/build.py's pure parts (no Go needed): the release a version names, and the staging modules
read from a kubernetes go.mod (the list its ``replace`` block maps to ``./staging/src/k8s.io/…``)."""

from __future__ import annotations

import re

import pytest

from tests.realkube.conftest import build

# the shape of kubernetes' own go.mod (v1.36.x: replace block, k8s.io/streaming new in 1.36), abridged by hand
GOMOD = """module k8s.io/kubernetes

go 1.25.0

require (
\tk8s.io/api v0.0.0
\tk8s.io/utils v0.0.0-20250820121507-0af2bda4dd1d
)

replace (
\tk8s.io/api => ./staging/src/k8s.io/api
\tk8s.io/client-go => ./staging/src/k8s.io/client-go
\tk8s.io/streaming => ./staging/src/k8s.io/streaming
\tgithub.com/example/fork => github.com/example/fork v1.0.0
)
"""


def test_staging_modules_are_the_replaces_to_staging_paths_only() -> None:
    assert build.staging_modules(GOMOD) == ["k8s.io/api", "k8s.io/client-go", "k8s.io/streaming"]


def test_a_minor_names_its_pinned_patch_and_a_release_names_itself() -> None:
    assert build.release("1.37") == build.MINORS["1.37"]
    assert build.release("v1.35.4") == "1.35.4"
    assert build.NEWEST == "1.37"


def test_an_exact_pre_release_names_itself_without_becoming_a_supported_minor() -> None:
    """kubernetes tags pre-releases v1.38.0-alpha.N / -beta.N / -rc.N (the module proxy serves
    k8s.io/kubernetes v1.38.0-beta.0, its staging modules v0.38.0-beta.0); hack/lib/version.sh gives such a
    tag gitMinor "38+"."""
    assert build.release("1.38.0-beta.0") == "1.38.0-beta.0"
    assert build.release("v1.38.0-rc.1") == "1.38.0-rc.1"
    assert "1.38" not in build.MINORS and build.NEWEST == "1.37"
    assert build.version_vars("1.38.0-beta.0")["gitMinor"] == "38+"
    assert build.version_vars("1.37.2") == {"gitVersion": "v1.37.2", "gitMajor": "1", "gitMinor": "37",
                                            "gitTreeState": "clean"}  # fmt: skip
    with pytest.raises(ValueError, match="not a Kubernetes version"):
        build.release("1.38.0-beta")


@pytest.mark.parametrize("bad", ["1.29", "latest", "1.37.x", ""])
def test_an_unsupported_or_malformed_version_is_refused_with_the_supported_list(bad: str) -> None:
    supported = "supported minors: 1.30, 1.31, 1.32, 1.33, 1.34, 1.35, 1.36, 1.37"
    with pytest.raises(ValueError, match=re.escape(supported)):
        build.release(bad)


def test_every_supported_minor_is_built_as_the_release_its_behaviour_models_and_has_goldens() -> None:
    """The build table and the behaviour table name the same release per minor (1.31: 1.31.13, since the proxy
    refuses k8s.io/kube-scheduler@v0.31.14), and that release's real messages are committed, base and storage."""
    from pathlib import Path

    from kubegpu.scheduler.versions import BEHAVIOURS

    golden = Path(__file__).resolve().parent / "golden"
    assert sorted(build.MINORS) == sorted(b.name for b in BEHAVIOURS.values())
    for b in BEHAVIOURS.values():
        assert build.MINORS[b.name] == b.release
        assert (golden / f"{b.release}.json").exists() and (golden / "volumes" / f"{b.release}.json").exists()
