"""Which kube-scheduler release kubegpu reproduces (``scheduler.versions``): version strings as clusters
write them, the choice rule, and the CLI's refusal of what it does not support."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kubegpu.cli.main import cli
from kubegpu.errors import ConfigError
from kubegpu.scheduler.versions import behaviour, choose, parse_minor


@pytest.mark.parametrize(
    ("text", "minor"),
    [
        ("1.35", 35),
        ("v1.35.4", 35),
        ("v1.34.3-eks-113cf36", 34),  # EKS kubeletVersion
        ("v1.35.1+k3s1", 35),  # k3s
        ("v1.33.5-gke.1200000", 33),  # GKE
        ("2.1", None),
        ("latest", None),
        ("v1", None),
    ],
)
def test_version_strings_as_clusters_write_them(text: str, minor: int | None) -> None:
    assert parse_minor(text) == minor


def test_the_choice_rule_flag_then_server_then_newest_kubelet_then_newest() -> None:
    kubelets = ["v1.33.2", "v1.34.3-eks-113cf36", "v1.31.0"]
    assert choose("1.31", "v1.36.1", kubelets)[:2] == (behaviour(31), "--kube-version")
    assert choose(None, "v1.36.1", kubelets)[:2] == (behaviour(36), "the API server (v1.36.1)")
    assert choose(None, "", kubelets)[:2] == (behaviour(34), "the newest kubelet (v1.34.3-eks-113cf36)")
    assert choose(None, "", [])[:2] == (behaviour(37), "the newest supported release")
    # a server newer than the table: said, then the kubelets decide
    chosen, where, warning = choose(None, "v1.40.0", ["v1.35.2"])
    assert (chosen, where) == (behaviour(35), "the newest kubelet (v1.35.2)")
    assert "Kubernetes v1.40.0 is not supported (supported: 1.30 to 1.37)" in warning
    # every kubelet older than 1.30 (pangeo-data/pangeo-eosc#74 posted v1.29-era messages): a kubelet is at
    # most 3 minors older than its API server (kubernetes.io/releases/version-skew-policy, since 1.28), so
    # the cluster runs 1.29-1.32 at most: the oldest supported, said, never the newest (1.37's rules, e.g.
    # kubernetes#131345, are in no such cluster)
    chosen, where, warning = choose(None, "", ["v1.28.5-eks-5e0fdde", "v1.29.3+k3s1"])
    assert (chosen, where) == (behaviour(30), "the oldest supported release (kubelets v1.29.3+k3s1)")
    assert warning.startswith(
        "the newest kubelet (v1.29.3+k3s1) is older than the supported range (1.30 to 1.37)"
    )
    # kubelets newer than the newest supported minor: the newest supported (never below the cluster)
    assert choose(None, "", ["v1.39.0"])[0] == behaviour(37)
    with pytest.raises(ConfigError, match="not a Kubernetes version: 'one'"):
        choose("one", "", [])


def test_a_too_new_server_or_kubelet_is_warned_with_what_its_pre_release_showed() -> None:
    """v1.38.0-beta.0 (k8s.io/kubernetes on the module proxy) was run on every recorded case against 1.37's
    rules (tests/realkube/test_prerelease.py holds its goldens to the count and the case quoted): a 1.38
    cluster is reproduced as 1.37 and the warning names what 1.38 does differently, for the API server and,
    with none, the newest kubelet."""
    checked = (
        "1.38.0-beta.0 was checked against the 1.37 rules on 63 recorded cases and differed on 1: "
        "spread-empty-selector, a topology spread constraint's labelSelector {} counts every pod of the "
        "namespace where 1.30-1.37 count none (kubernetes/kubernetes#141340)"
    )
    chosen, where, warning = choose(None, "v1.38.0-beta.0", [])
    assert (chosen, where) == (behaviour(37), "the newest supported release")
    assert warning.startswith("Kubernetes v1.38.0-beta.0 is not supported (supported: 1.30 to 1.37)")
    assert checked in warning
    # no API server version (a snapshot without /version): the kubelets decide, and one newer than 1.37 is said
    chosen, where, warning = choose(None, "", ["v1.37.2", "v1.38.0-beta.0"])
    assert (chosen, where) == (behaviour(37), "the newest kubelet (v1.38.0-beta.0)")
    assert warning.startswith(
        "the newest kubelet (v1.38.0-beta.0) is newer than the supported range (1.30 to 1.37)"
    )
    assert checked in warning
    # nothing was checked for 1.39: the warning claims nothing
    chosen, _, warning = choose(None, "", ["v1.39.0"])
    assert chosen == behaviour(37) and warning == (
        "the newest kubelet (v1.39.0) is newer than the supported range (1.30 to 1.37); reproducing 1.37, the "
        "newest: messages and defaults of the cluster's own release may differ"
    )
    assert "checked" not in choose(None, "v1.39.2", [])[2]


def test_the_cli_refuses_an_unsupported_version_and_prints_the_one_it_uses() -> None:
    bad = CliRunner().invoke(cli, ["diagnose", "--demo", "--kube-version", "1.29"])
    assert bad.exit_code == 2
    assert "Kubernetes 1.29 is not supported (supported: 1.30 to 1.37)" in bad.output
    # the demo's kubelets report v1.34.2
    out = CliRunner().invoke(cli, ["explain", "ml-train/llm-finetune-0", "--demo", "-o", "json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["kubeVersion"] == "1.34"
    table = CliRunner().invoke(
        cli, ["explain", "ml-train/llm-finetune-0", "--demo", "--kube-version", "1.37"]
    )
    assert table.stdout.splitlines()[0] == "kube-scheduler 1.37 (from --kube-version)"


def test_dra_v1_objects_raise_a_release_chosen_from_older_kubelets_dra_driver_nvidia_gpu_766() -> None:
    """kubernetes-sigs/dra-driver-nvidia-gpu#766: a 1.34.1 control plane, a node on kubelet 1.33.1, the claims in
    resource.k8s.io/v1. The version skew policy lets kubelets be 3 minors older, and resource.k8s.io/v1 is served
    from 1.34 (DRA GA, KEP-4381; the driver's chart picks v1 on 1.34+, v1beta1/v1beta2 on 1.32-1.33, #534): the
    snapshot came from a 1.34+ API server, and 1.33's rules (DRA off by default) are not its scheduler's."""
    v1 = ["v1", "resource.k8s.io/v1"]
    chosen, where, warning = choose(None, "", ["v1.33.1"], v1)
    assert chosen == behaviour(34) and "resource.k8s.io/v1" in where and "served from 1.34" in where
    assert warning == ""
    # kubelets older than the supported range: their warning does not hold once the objects set the release
    chosen, _, warning = choose(None, "", ["v1.29.3+k3s1"], v1)
    assert chosen == behaviour(34) and warning == ""
    # a newer kubelet, the API server's own version and --kube-version still decide
    assert choose(None, "", ["v1.36.3"], v1)[0] == behaviour(36)
    assert choose(None, "v1.35.0", ["v1.33.1"], v1)[0] == behaviour(35)
    assert choose("1.33", "", ["v1.33.1"], v1)[0] == behaviour(33)
    # the beta versions say nothing: 1.32-1.33 serve them, and so may 1.34
    assert choose(None, "", ["v1.33.1"], ["resource.k8s.io/v1beta1"])[0] == behaviour(33)
