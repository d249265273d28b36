"""The seeded mutation corpus (tests/fuzz/corpus.py) through every command that reads each kind.

Each (case, command) runs the real console entry point in a forked child (tests/fuzz/runner.py) under a
20 s limit and a 2 GiB address-space allowance. Invariants, for every run:

* the exit status is 0, 1 or 2, and no Python traceback is printed;
* it ends within the limit, and its resident memory grows by less than 1 GiB;
* an input the API server (or the owning tool) refuses is reported: an ``error`` line that names the
  file, and ``--strict`` exits 2 (``lint`` exits non-zero; the webhook does not allow the review);
* the valid seed of every kind runs clean (exit 0; ``inspect`` 0 or 1 for its findings), so a case that
  fails is the mutation's doing.

The corpus is generated from one seed (``corpus.SEED``), so a failure reproduces; the summary line
printed at the end gives the corpus size (inputs × kinds × commands).
"""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.fuzz.corpus import Case
from tests.fuzz.kinds import all_cases
from tests.fuzz.runner import Outcome, cli_main, run_all, warm

MEMORY_GROWTH = 1024**3  # the child may grow by less than this


class _Prometheus(BaseHTTPRequestHandler):
    """Answers every query under ``/<case dir>/api/v1/...`` with that case's ``prometheus.json``."""

    def do_GET(self) -> None:
        case_dir, _, endpoint = self.path.partition("/api/v1/")
        try:
            body = (Path(case_dir) / "prometheus.json").read_bytes()
        except OSError:
            body = b"{}"
        if endpoint.startswith("query_range"):  # the mutations are of the instant answer
            body = b'{"status": "success", "data": {"resultType": "matrix", "result": []}}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def prometheus() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Prometheus)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def review_main(path: Path) -> Callable[[], int]:
    """The webhook's body handler on one posted AdmissionReview: 0 allowed, 1 denied, 2 answered 400."""

    def run() -> int:
        from kubegpu.admission.lint import LintContext
        from kubegpu.admission.mutate import MutationOptions
        from kubegpu.live.webhook import Policy, answer_body

        raw = path.read_bytes()
        codes = []
        for endpoint in ("/validate", "/mutate"):
            status, answer = answer_body(endpoint, raw, LintContext(), Policy(), MutationOptions())
            json.dumps(answer)  # the answer must serialise
            if status != 200:
                codes.append(2)
                continue
            response = answer["response"]
            assert isinstance(response["allowed"], bool)
            if not response["allowed"]:
                print(f"error: {path.name}: {response['status']['message']}")
            codes.append(0 if response["allowed"] else 1)
        return codes[0]  # /mutate allows everything it cannot patch; /validate decides

    return run


def materialise(case: Case, where: Path, prometheus: str) -> list[tuple[tuple[str, ...], Callable[[], int]]]:
    where.mkdir(parents=True)
    for name, content in case.files.items():
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        (where / name).write_bytes(content)
    runs = []
    for command in case.commands:
        if command == ("review",):
            runs.append((command, review_main(where / "review.json")))
            continue
        args = tuple(
            a.replace("{dir}", str(where)).replace("{prometheus}", f"{prometheus}{where}") for a in command
        )
        runs.append((args, cli_main(list(args))))
    return runs


def problems(case: Case, args: tuple[str, ...], out: Outcome) -> list[str]:
    found = []
    if out.hung:
        return ["hang (killed at the time limit)"]
    if out.traceback:
        return ["traceback: " + out.err.strip().splitlines()[-1][:300]]
    if out.code not in (0, 1, 2):
        found.append(f"exit status {out.code}")
    if out.peak_rss_growth > MEMORY_GROWTH:
        found.append(f"memory grew by {out.peak_rss_growth >> 20} MiB")
    text = out.out + out.err
    # lint reports on stdout, one `<file>: <object>: <field>: <problem> [rule]` line per violation
    # the others report an input error as one `error: …` line (click's own usage errors: `Error: …`)
    error_lines = [
        line for line in text.splitlines() if args[0] == "lint" or line.lower().startswith("error:")
    ]
    command = args[0]
    if case.name == "valid" and case.kind == "Prometheus response":
        # the fake answers one vector to every query (Xid, memory, idle), so inspect may find errors in it
        # (its exit 2 means "error findings"); the answer itself must be read without an input error
        if any(line.startswith("error: http") for line in out.err.splitlines()):
            found.append(f"the valid seed was refused: {out.err.strip()[-300:]}")
    elif case.name == "valid":
        if out.code not in ((0, 1) if command == "inspect" else (0,)):
            found.append(f"the valid seed failed (exit {out.code}): {text.strip()[-300:]}")
    elif case.invalid:
        if command == "review":
            if out.code == 0:
                found.append("silent: the webhook allowed it")
        elif out.code != 2:
            found.append(f"silent: exit {out.code} (--strict must exit 2)")
        # the input's name: its file, or for a Prometheus answer the URL it came from
        names = [Path(f).name for f in case.files] + (
            ["/api/v1/query"] if case.kind == "Prometheus response" else []
        )
        named = [line for line in error_lines if any(n in line for n in names)]
        if command != "review" and not named:
            found.append(
                "vague: no error line names the file: " + (error_lines[:1] or [text.strip()[-200:]])[0]
            )
    return found


def test_every_input_kind_through_every_command(tmp_path: Path, prometheus: str) -> None:
    """CI runs each input through one of the commands that read its kind, in turn (so every command meets
    every kind several times: 9 snapshot commands over 19-42 inputs of each snapshot kind) and stays within
    about two minutes on two cores; ``KUBEGPU_FUZZ_FULL=1`` runs every input through every command."""
    warm()
    cases = all_cases()
    full = os.environ.get("KUBEGPU_FUZZ_FULL") == "1"
    jobs = []
    turn = Counter[str]()
    for i, case in enumerate(cases):
        runs = materialise(case, tmp_path / f"c{i:04d}", prometheus)
        if not full:
            runs = [runs[turn[case.kind] % len(runs)]]
            turn[case.kind] += 1
        for args, fn in runs:
            jobs.append((case, args, fn))
    outcomes = run_all([fn for _, _, fn in jobs], workers=2)
    failures = Counter[str]()
    report = []
    for (case, args, _), out in zip(jobs, outcomes, strict=True):
        for problem in problems(case, args, out):
            kind = problem.split(":")[0].split(" ")[0]
            failures[kind] += 1
            report.append(
                f"{case.kind} | {case.name} | {args[0]} {args[1] if len(args) > 1 else ''}: {problem}"
            )
    kinds = Counter(c.kind for c in cases)
    print(
        f"\ncorpus: {len(cases)} inputs over {len(kinds)} kinds, {len(jobs)} runs; failures: {dict(failures)}"
    )
    assert not report, "\n".join(report[:80]) + f"\n… {len(report)} in all"
