#!/usr/bin/env python3
"""Build kube-apiserver and kube-scheduler of one Kubernetes release from the Go module proxy.

    python tools/kube/build.py 1.37          # the newest patch we pin for a minor (MINORS below)
    python tools/kube/build.py 1.35.4        # an exact release
    python tools/kube/build.py 1.38.0-beta.0 # an exact pre-release (checked against the rules, not supported)
    python tools/kube/build.py --all         # every supported minor (~4 min each cold on 2 cores)
    python tools/kube/build.py --list        # the supported minors

Standard library only; needs ``go`` (1.26+) and the module proxy. Nothing of Kubernetes' source is kept in
the repo: ``k8s.io/kubernetes`` cannot be ``go install``ed (its go.mod replaces its staging modules by
paths), so a throw-away module requires it and replaces each staging module ``k8s.io/X`` by ``k8s.io/X
v0.<minor>.<patch>``, the list read from that release's own go.mod. ``tools/kube/go.mod`` is that module for
the newest minor, kept in the repo so the pinned build is reviewable. Binaries are cached by version in
``$KUBEGPU_KUBE_CACHE`` (default ``~/.cache/kubegpu-kube``); a cached version is not rebuilt.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Supported minors and the patch built for each: the newest whose modules `go build` needs the module proxy
# served when last checked (2026-12-04; 1.34-1.36 moved on 2026-12-06 to the newest patches the proxy
# served in full: it lists v1.34.7/.8 of k8s.io/kubernetes but refuses k8s.io/cri-api and k8s.io/externaljwt
# v0.34.7/.8, and serves no v1.36.6+ or v1.37.3+). kubegpu reproduces 1.30 to 1.37 (src/kubegpu/scheduler/versions.py).
# 1.31 is built as 1.31.13, not 1.31.14: the proxy refuses k8s.io/kube-scheduler@v0.31.14 ("403 This module
# version is not available", for its .zip as well as its .info). For 1.31.13 it refuses the .info of
# k8s.io/cloud-provider@v0.31.13 but serves its .mod and .zip, all that `go mod tidy` fetches for a replace that
# names an exact version; the other modules it refuses for 1.31.13 and 1.30.14 (k8s.io/kube-proxy,
# k8s.io/cri-client, k8s.io/sample-*) neither binary imports. 1.30 and 1.31 name Go 1.22 in their go.mod and
# build with the Go 1.26 toolchain of the newer minors (GOTOOLCHAIN=local).
MINORS = {
    "1.30": "1.30.14",
    "1.31": "1.31.13",
    "1.32": "1.32.13",
    "1.33": "1.33.13",
    "1.34": "1.34.5",
    "1.35": "1.35.8",
    "1.36": "1.36.5",
    "1.37": "1.37.2",
}
NEWEST = max(MINORS, key=lambda m: tuple(int(x) for x in m.split(".")))
BINARIES = ("kube-apiserver", "kube-scheduler")


def release(version: str) -> str:
    """``1.37`` → ``1.37.2``; ``v1.35.4`` / ``1.35.4`` → ``1.35.4``; ``1.38.0-beta.0`` → itself (a pre-release
    is tagged like ``v1.38.0-alpha.1``, ``-beta.0``, ``-rc.1``; its staging modules are ``v0.38.0-beta.0``)."""
    v = version.removeprefix("v")
    if v in MINORS:
        return MINORS[v]
    if not re.fullmatch(r"1\.\d+\.\d+(-(alpha|beta|rc)\.\d+)?", v):
        raise ValueError(f"not a Kubernetes version: {version!r} (supported minors: {', '.join(MINORS)})")
    return v


def cache_dir() -> Path:
    return Path(os.environ.get("KUBEGPU_KUBE_CACHE") or Path.home() / ".cache" / "kubegpu-kube")


def binaries_for(version: str) -> dict[str, Path]:
    """The cached binaries of ``version``; raises if they are not built yet (see ``build``)."""
    rel = release(version)
    out = {b: cache_dir() / rel / "bin" / b for b in BINARIES}
    missing = [str(p) for p in out.values() if not p.exists()]
    if missing:
        raise FileNotFoundError(f"Kubernetes {rel} is not built: run `python tools/kube/build.py {rel}`")
    return out


def _go(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(["nice", "go", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        detail = (proc.stderr.strip() or proc.stdout.strip())[-4000:]  # `go mod download -json`: in its JSON
        raise RuntimeError(f"`go {' '.join(args)}` failed in {cwd} (exit {proc.returncode}):\n{detail}")
    return proc.stdout


def staging_modules(gomod: str) -> list[str]:
    """The ``k8s.io/*`` modules a kubernetes go.mod replaces by ``./staging/...`` paths."""
    return sorted(m.group(1) for m in re.finditer(r"^\s*(k8s\.io/[\w.-]+)\s*=>\s*\./staging/", gomod, re.M))


def module_for(rel: str, env: dict[str, str], into: Path) -> None:
    """Write the throw-away module for release ``rel`` into ``into`` (go.mod, tools.go; go.sum by tidy)."""
    minor = rel.split(".", 1)[1]  # "37.2"
    if rel == MINORS[NEWEST] and (HERE / "go.sum").exists():
        for name in ("go.mod", "go.sum", "tools.go"):
            shutil.copy(HERE / name, into / name)
        return
    info = json.loads(_go(["mod", "download", "-json", f"k8s.io/kubernetes@v{rel}"], into, env))
    gomod = Path(info["GoMod"]).read_text()
    go_line = re.search(r"^go (\S+)", gomod, re.M)
    lines = ["module kubegpu.dev/tools/kube", "", f"go {go_line.group(1) if go_line else '1.22'}", "",
             f"require k8s.io/kubernetes v{rel}", "", "replace ("]  # fmt: skip
    lines += [f"\t{m} => {m} v0.{minor}" for m in staging_modules(gomod)]
    (into / "go.mod").write_text("\n".join([*lines, ")", ""]))
    shutil.copy(HERE / "tools.go", into / "tools.go")
    _go(["mod", "tidy"], into, env)


def version_vars(rel: str) -> dict[str, str]:
    """The version variables linked in, as hack/lib/version.sh sets them for the tag ``v<rel>``: a pre-release
    (v1.38.0-beta.0) has gitMinor "38+", as ``kubectl version`` shows for such a build."""
    major, minor = rel.split(".")[:2]
    return {"gitVersion": f"v{rel}", "gitMajor": major, "gitMinor": minor + ("+" if "-" in rel else ""),
            "gitTreeState": "clean"}  # fmt: skip


def build(version: str, jobs: int | None = None) -> dict[str, Path]:
    """Build (or find cached) kube-apiserver and kube-scheduler of ``version``; returns their paths."""
    rel = release(version)
    try:
        return binaries_for(rel)
    except FileNotFoundError:
        pass
    if shutil.which("go") is None:
        raise RuntimeError("no `go` on PATH: Go 1.26+ is needed to build Kubernetes from the module proxy")
    root = cache_dir() / rel
    src = root / "module"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    # GOTOOLCHAIN=local unless the caller names a toolchain: a release whose go.mod needs a newer Go than the
    # local one (1.38 names go 1.27.0) is built with `GOTOOLCHAIN=go1.27.3`, which the go command fetches.
    toolchain = os.environ.get("GOTOOLCHAIN") or "local"
    env = {**os.environ, "GOFLAGS": "-mod=mod", "CGO_ENABLED": "0", "GOTOOLCHAIN": toolchain}
    module_for(rel, env, src)
    ldflags = " ".join(
        f"-X {pkg}.{k}={v}"
        for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
        for k, v in version_vars(rel).items()
    )
    tmp = root / "bin.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    _go(["build", f"-p={jobs or os.cpu_count() or 2}", "-trimpath", f"-ldflags=-s -w {ldflags}", "-o", f"{tmp}/",
         *(f"k8s.io/kubernetes/cmd/{b}" for b in BINARIES)], src, env)  # fmt: skip
    shutil.rmtree(root / "bin", ignore_errors=True)
    tmp.rename(root / "bin")
    return binaries_for(rel)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="build.py", description=__doc__.split("\n", 1)[0])
    ap.add_argument("versions", nargs="*", help=f"minors or releases (default {NEWEST})")
    ap.add_argument("--all", action="store_true", help="every supported minor")
    ap.add_argument("--list", action="store_true", help="print the supported minors and exit")
    ap.add_argument("--jobs", type=int, default=None, help="go build -p (default: the CPU count)")
    args = ap.parse_args(argv[1:])
    if args.list:
        print(" ".join(MINORS))
        return 0
    for v in list(MINORS) if args.all else args.versions or [NEWEST]:
        started = time.monotonic()
        try:
            paths = build(v, jobs=args.jobs)
        except (RuntimeError, ValueError, OSError) as err:
            print(f"error: Kubernetes {v}: {err}", file=sys.stderr)
            return 1
        sizes = ", ".join(f"{name} {p.stat().st_size / 1e6:.0f} MB" for name, p in paths.items())
        took = time.monotonic() - started
        print(
            f"Kubernetes {release(v)}: {paths['kube-apiserver'].parent} ({sizes}; {took:.0f} s)", flush=True
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
