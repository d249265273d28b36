"""The real control plane for these tests: kube-apiserver and kube-scheduler of one release, built from the
Go module proxy (``tools/kube/build.py``), started once per test session on 127.0.0.1.

The version is ``$KUBEGPU_KUBE_VERSION`` (a minor such as ``1.35``), else the newest supported minor. A
missing toolchain or a failed build fails these tests with the reason; they never skip.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools" / "kube"


def _tool(name: str) -> ModuleType:
    if str(TOOLS) not in sys.path:
        sys.path.insert(0, str(TOOLS))
    spec = importlib.util.spec_from_file_location(f"kubegpu_tools_{name}", TOOLS / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


build = _tool("build")
controlplane = _tool("controlplane")


def kube_version() -> str:
    return str(build.release(os.environ.get("KUBEGPU_KUBE_VERSION") or build.NEWEST))


@pytest.fixture(scope="session")
def control_plane() -> Iterator[Any]:
    version = kube_version()
    try:
        build.build(version, jobs=int(os.environ.get("KUBEGPU_KUBE_BUILD_JOBS", "2")))
    except (RuntimeError, OSError) as err:
        pytest.fail(f"could not build Kubernetes {version} from the module proxy: {err}", pytrace=False)
    cp = controlplane.start(version)
    try:
        yield cp
    finally:
        cp.stop()
