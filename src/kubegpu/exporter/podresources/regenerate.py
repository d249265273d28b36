"""Regenerate the Pod Resources v1 stubs from ``v1/api.proto`` with grpcio-tools (a test extra).

Run ``python -m kubegpu.exporter.podresources.regenerate`` after editing the .proto; ``generate(out_dir)``
is what the freshness test calls to compare the committed stubs with fresh ones. Same procedure as
``kubegpu.node.v1beta1.regenerate``, with one difference that matters: the .proto is compiled as
``podresources/v1/api.proto`` rather than ``api.proto``, because protobuf's default descriptor pool is
process-wide and the device plugin's v1beta1 stubs already registered a file named ``api.proto``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent  # the -I root: the .proto is registered as "podresources/v1/api.proto"
PROTO = Path("podresources") / "v1" / "api.proto"
STUBS = ("api_pb2.py", "api_pb2_grpc.py", "api_pb2.pyi")
GENERATED_HEADER = "# ruff: noqa\n# fmt: off\n# mypy: ignore-errors\n"


def generate(out_dir: Path) -> None:
    """Write the stubs for ``v1/api.proto`` into ``out_dir`` with the package-relative import fixed."""
    from grpc_tools import protoc  # type: ignore[import-untyped]  # a test extra, without type hints

    with tempfile.TemporaryDirectory() as tmp:
        _protoc(protoc, Path(tmp), out_dir)


def _protoc(protoc: object, work: Path, out_dir: Path) -> None:
    code = protoc.main(  # type: ignore[attr-defined]
        [
            "grpc_tools.protoc",
            f"-I{ROOT}",
            f"--python_out={work}",
            f"--pyi_out={work}",
            f"--grpc_python_out={work}",
            str(ROOT / PROTO),
        ]
    )
    if code != 0:
        raise RuntimeError(f"protoc failed with exit code {code}")
    produced = work / PROTO.parent
    # protoc writes "from podresources.v1 import api_pb2", which needs the exporter dir on sys.path.
    grpc_stub = produced / "api_pb2_grpc.py"
    text = grpc_stub.read_text(encoding="utf-8")
    grpc_stub.write_text(
        text.replace("from podresources.v1 import api_pb2 as", "from . import api_pb2 as"), encoding="utf-8"
    )
    # Generated code follows protoc's layout and has no annotations: keep ruff and mypy --strict off it.
    for name in STUBS:
        stub = produced / name
        (out_dir / name).write_text(GENERATED_HEADER + stub.read_text(encoding="utf-8"), encoding="utf-8")


if __name__ == "__main__":
    generate(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "v1")
