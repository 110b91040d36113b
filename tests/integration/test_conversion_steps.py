"""A LIST through a served version (``VersionedStorage``, every custom resource's
storage) works on its items in bounded steps: once the inner storage has answered, the
loop runs other tasks between items instead of checking, converting and selecting
thousands of them in one step (the bench's 10,000 widgets were one step of ~45 ms).
Proven without timing: with ``STEP_SECONDS`` 0 every item is a step of its own, and a
task counting its turns sees them between the inner answer and the list's result."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from etcdclient import EtcdClient
from proxy.registry.conversion import VersionedStorage
from storage.etcd3 import Etcd3Store
from storage.interfaces import ListOptions, ListResult, SelectionPredicate
from storage.selectors import parse_field_selector

ITEMS = 12
V1, V2 = "steps.watchcache.dev/v1", "steps.watchcache.dev/v2"


class _Answered(Etcd3Store):
    """The etcd store, noting when its LIST has answered (the steps counted after it
    are the served version's own)."""

    answered = False

    async def get_list(self, key: str, opts: ListOptions) -> ListResult:
        result = await super().get_list(key, opts)
        self.answered = True
        return result


async def _turns_after_answer(view: VersionedStorage, inner: _Answered, prefix: str,
                              opts: ListOptions) -> tuple[ListResult, int]:  # fmt: skip
    """The view's LIST of ``prefix``, and how many turns another task had after the
    inner store answered and before the view's result."""
    turns = 0
    done = False

    async def other_request() -> None:
        nonlocal turns
        while not done:
            turns += inner.answered
            await asyncio.sleep(0)

    task = asyncio.create_task(other_request())
    try:
        result = await view.get_list(prefix, opts)
    finally:
        done = True
        await task
    return result, turns


async def _seeded(client: EtcdClient) -> tuple[_Answered, str]:
    inner = _Answered(client)
    prefix = f"/steps-{uuid.uuid4().hex[:8]}/widgets/"
    for i in range(ITEMS):
        obj = {"apiVersion": V1, "kind": "Widget", "metadata": {"name": f"w{i}"},
               "spec": {"color": "red" if i % 2 else "blue"}}  # fmt: skip
        await inner.create(f"{prefix}w{i}", obj)
    return inner, prefix


async def test_a_list_in_the_storage_version_yields_between_items(
    client: EtcdClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    inner, prefix = await _seeded(client)
    stored = (await inner.get_list(prefix, ListOptions())).items
    monkeypatch.setattr("storage.steps.STEP_SECONDS", 0.0)
    inner.answered = False
    view = VersionedStorage(inner, V1, V1)
    result, turns = await _turns_after_answer(view, inner, prefix, ListOptions())
    # served as stored (the same bytes), each item's check a step of its own
    assert [i.data for i in result.items] == [i.data for i in stored]
    assert turns >= ITEMS


async def test_a_converted_and_selected_list_yields_between_items(
    client: EtcdClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    inner, prefix = await _seeded(client)
    view = VersionedStorage(inner, V2, V1)
    red = ListOptions(predicate=SelectionPredicate(
        field=parse_field_selector("spec.color=red"),
        get_attrs=lambda o: ({}, {"spec.color": o["spec"]["color"]})))  # fmt: skip
    whole, _ = await _turns_after_answer(view, inner, prefix, red)
    monkeypatch.setattr("storage.steps.STEP_SECONDS", 0.0)
    inner.answered = False
    result, turns = await _turns_after_answer(view, inner, prefix, red)
    assert [i.data for i in result.items] == [i.data for i in whole.items]
    assert len(result.items) == ITEMS // 2
    assert all(i.obj["apiVersion"] == V2 and i.obj["spec"]["color"] == "red"
               for i in result.items)  # fmt: skip
    # checked, converted and selected: a step per item in each pass
    assert turns >= 3 * ITEMS
