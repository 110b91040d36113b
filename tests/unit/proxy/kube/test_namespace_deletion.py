"""The namespace controller's conditions (``namespaceConditionUpdater.Update``): each
of the five kept as it was while status, reason and message stay, its transition time
with it; a changed one gets a new time; others' conditions are kept after ours."""

from __future__ import annotations

from collections import Counter

from proxy.kube.namespace.deletion import CONDITION_TYPES, ContentTotals, update_conditions


def test_a_clean_pass_writes_the_five_successful_conditions_in_order() -> None:
    out = update_conditions([], ContentTotals(), now="T1")
    assert [c["type"] for c in out] == list(CONDITION_TYPES)
    assert all(c["status"] == "False" and c["lastTransitionTime"] == "T1" for c in out)


def test_unchanged_conditions_keep_their_time_changed_ones_get_a_new_one() -> None:
    held = ContentTotals(remaining={"configmaps.": 2}, finalizers=Counter({"x/y": 2}), estimate=15)
    first = update_conditions([{"type": "Other", "status": "True"}], held, now="T1")
    again = update_conditions(first, held, now="T2")
    assert again == first  # nothing to write
    done = update_conditions(first, ContentTotals(), now="T3")
    times = {c["type"]: c.get("lastTransitionTime") for c in done}
    assert times["NamespaceContentRemaining"] == times["NamespaceFinalizersRemaining"] == "T3"
    assert times["NamespaceDeletionDiscoveryFailure"] == "T1"
    assert done[-1] == {"type": "Other", "status": "True"}


def test_failures_name_every_resource_and_finalizer_sorted() -> None:
    totals = ContentTotals(
        remaining={"pods.": 1, "deployments.apps": 3},
        finalizers=Counter({"b/f": 1, "a/f": 3}),
        errors=["boom"],
    )
    out = {c["type"]: c for c in update_conditions([], totals, now="T")}
    assert out["NamespaceContentRemaining"]["message"] == (
        "Some resources are remaining: deployments.apps has 3 resource instances, "
        "pods. has 1 resource instances"
    )
    assert out["NamespaceFinalizersRemaining"]["message"] == (
        "Some content in the namespace has finalizers remaining: a/f in 3 resource "
        "instances, b/f in 1 resource instances"
    )
    assert out["NamespaceDeletionContentFailure"] == {
        "type": "NamespaceDeletionContentFailure", "status": "True",
        "reason": "ContentDeletionFailed",
        "message": "Failed to delete all resource types, 1 remaining: boom",
        "lastTransitionTime": "T",
    }  # fmt: skip
