"""kai-scheduler's NonPreemptibleOverQuota refusal, read from its message (KAI @d5bc503a, v0.17.0-9:
pkg/scheduler/api/unschedule_info.go GetBuildOverCapacityMessageForQueue;
pkg/scheduler/plugins/proportion/capacity_policy/quota_check.go isAllocatedNonPreemptibleOverQuota compares
``deserved < allocatedNotPreemptible + requested`` in float64). The fixture is kai-scheduler/KAI-Scheduler#2209
(open): 0.2 requested + 0.1 allocated against a 0.3 quota was refused; 0.31 let it schedule."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kubegpu.cli.main import cli
from tests.realcases.cases import HERE, diagnosed

FIXTURE = HERE / "kai-2209-nonpreemptible-exact-quota.yaml"
POD = "aafa/aafa-parser-table-detection-6c8f7d9b5-x4q7m"


def test_exact_fit_refused_by_float_sum_kai_2209(tmp_path: Path) -> None:
    data = diagnosed(FIXTURE)
    assert data["summary"]["causes"] == [
        {
            "cause": "kai-scheduler: non-preemptible GPU quota refused at an exact fit (float sum, KAI-Scheduler#2209)",
            "pods": 1,
        }
    ]
    first = data["summary"]["firstStep"]
    assert "0.2 requested + 0.1 already allocated to non-preemptible pods against a quota of 0.3" in first
    assert (
        "kubectl -n aafa patch queues.scheduling.run.ai aafa --type merge -p "
        """'{"spec":{"resources":{"gpu":{"quota":0.31}}}}' --dry-run=server""" in first
    )
    assert "rollback: the same patch with quota 0.3" in first
    # really over the quota (0.2 allocated): KAI's verdict stands, no rounding is claimed
    text = FIXTURE.read_text(encoding="utf-8").replace("while 0.1 GPUs", "while 0.2 GPUs")
    (tmp_path / "over.yaml").write_text(text, encoding="utf-8")
    data = diagnosed(tmp_path / "over.yaml")
    assert data["summary"]["causes"][0]["cause"] == (
        "kai-scheduler: non-preemptible workload over its queue's GPU quota"
    )
    assert "use a preemptible workload" in data["summary"]["firstStep"]
    assert "KAI-Scheduler#2209" not in data["summary"]["firstStep"]


def test_html_report_names_the_cause_and_the_podgroup_event_kai_2209(tmp_path: Path) -> None:
    """The HTML report says what the text views say: the established cause and whose event it shows."""
    page = tmp_path / "r.html"
    res = CliRunner().invoke(cli, ["report", "--snapshot", str(FIXTURE), "-O", str(page)])
    assert res.exit_code == 0, res.output
    html = page.read_text(encoding="utf-8")
    assert "<b>Cause</b>: kai-scheduler: non-preemptible GPU quota refused at an exact fit" in html
    assert "kai-scheduler on PodGroup aafa/pg-aafa-parser-table-detection-6c8f7d9b5-9e4a" in html
