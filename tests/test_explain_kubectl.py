"""``explain.kubectl.mutate``, the one builder of a proposed change's kubectl lines. The flags are kubectl's
own (kubectl patch / label reference, https://kubernetes.io/docs/reference/kubectl/generated/kubectl_patch/):
``--dry-run=server`` submits the request without persisting it, ``-o yaml`` prints the object the server
returns, which for a dry-run patch is the merged result (kubernetes/kubernetes#72644 on why a client-side dry
run cannot show it)."""

from __future__ import annotations

from kubegpu.explain.kubectl import kubectl, mutate


def test_the_dry_run_comes_first_and_the_real_line_is_the_same_command_without_it() -> None:
    dry, real = mutate("team-a", "delete pod p")
    assert real == "kubectl -n team-a delete pod p"
    assert dry == "kubectl -n team-a delete pod p --dry-run=server"


def test_output_asks_only_the_dry_run_to_print_the_object_the_server_would_store() -> None:
    dry, real = mutate("team-a", "patch resourcequota q --type=merge -p '{}'", output="yaml")
    assert dry == "kubectl -n team-a patch resourcequota q --type=merge -p '{}' --dry-run=server -o yaml"
    assert real == "kubectl -n team-a patch resourcequota q --type=merge -p '{}'"


def test_a_rollback_line_is_the_real_form_of_its_command_with_the_namespace_explicit() -> None:
    """``kubectl`` gives the line alone (a rollback shown beside its change); ``mutate``'s real line is it."""
    assert kubectl("gpu-operator", "label node n1 nvidia.com/gpu.present-") == (
        "kubectl -n gpu-operator label node n1 nvidia.com/gpu.present-"
    )
    assert mutate("gpu-operator", "uncordon n1")[1] == kubectl("gpu-operator", "uncordon n1")
