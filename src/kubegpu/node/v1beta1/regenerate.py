"""Regenerate ``api_pb2.py``/``api_pb2_grpc.py`` from ``api.proto`` with grpcio-tools (a test extra).

Run ``python -m kubegpu.node.v1beta1.regenerate`` after editing the .proto; ``generate(out_dir)`` is what
the freshness test calls to compare the committed stubs with fresh ones.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
STUBS = ("api_pb2.py", "api_pb2_grpc.py", "api_pb2.pyi")
GENERATED_HEADER = "# ruff: noqa\n# fmt: off\n"


def generate(out_dir: Path) -> None:
    """Write the stubs for ``api.proto`` into ``out_dir`` with the package-relative import fixed."""
    from grpc_tools import protoc  # type: ignore[import-untyped]  # a test extra, without type hints

    code = protoc.main(
        [
            "grpc_tools.protoc",
            f"-I{HERE}",
            f"--python_out={out_dir}",
            f"--pyi_out={out_dir}",
            f"--grpc_python_out={out_dir}",
            str(HERE / "api.proto"),
        ]
    )
    if code != 0:
        raise RuntimeError(f"protoc failed with exit code {code}")
    # protoc writes "import api_pb2", which only works with this directory on sys.path.
    grpc_stub = out_dir / "api_pb2_grpc.py"
    text = grpc_stub.read_text(encoding="utf-8")
    grpc_stub.write_text(text.replace("import api_pb2 as api__pb2", "from . import api_pb2 as api__pb2"))
    # Generated code follows protoc's layout, not the project's: keep ruff's linter and formatter off it.
    for name in STUBS:
        stub = out_dir / name
        stub.write_text(GENERATED_HEADER + stub.read_text(encoding="utf-8"), encoding="utf-8")


if __name__ == "__main__":
    generate(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
