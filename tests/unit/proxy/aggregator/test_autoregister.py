"""The autoregister controller on its work queue, over an informer fed by the test and a
recording client: the first round creates what is missing and deletes what is no longer
served, then ``ready``; an APIService deleted by hand is put back from its event alone."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from proxy.aggregator.apiservice import AUTOMANAGED_LABEL
from proxy.aggregator.autoregister import AutoRegister, local_apiservices
from proxy.aggregator.lister import APIServiceLister
from tests.unit.proxy.informer.fakes import deliver, fake_factory, until

JSON = dict[str, Any]


class RecordingClient:
    """The loopback client's three writes, recorded (the informer is fed by the test)."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, str]] = []

    async def create_if_absent(self, collection: str, obj: JSON) -> JSON | None:
        self.writes.append(("create", obj["metadata"]["name"]))
        return obj

    async def update(self, path: str, mutate: Any) -> JSON | None:
        self.writes.append(("update", path.rsplit("/", 1)[-1]))
        return None

    async def delete(self, path: str) -> bool:
        self.writes.append(("delete", path.rsplit("/", 1)[-1]))
        return True


def _stored(obj: JSON, rv: int) -> JSON:
    return {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(rv)}}


async def test_the_first_round_then_an_event_driven_put_back() -> None:
    lister = APIServiceLister(fake_factory())
    served = [("", "v1"), ("widgets.example.com", "v1")]
    autoregister = AutoRegister(lister, lambda: served, interval=3600)
    gone = local_apiservices([("old.example.com", "v1")])[0]
    assert gone["metadata"]["labels"][AUTOMANAGED_LABEL] == "true"
    lister.informer.replace([_stored(gone, 1)], "1")
    lister.synced.set()
    client = RecordingClient()
    task = asyncio.create_task(autoregister.run(client))  # type: ignore[arg-type]
    try:
        await until(autoregister.ready.is_set)
        assert sorted(client.writes) == [
            ("create", "v1."), ("create", "v1.widgets.example.com"),
            ("delete", "v1.old.example.com"),
        ]  # fmt: skip
        crd_apiservice = local_apiservices([served[1]])[0]
        deliver(lister.informer, "ADDED", _stored(crd_apiservice, 2))
        deliver(lister.informer, "DELETED", _stored(crd_apiservice, 3))  # by hand
        await until(lambda: len(client.writes) == 4)
        assert client.writes[3] == ("create", "v1.widgets.example.com")
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def test_what_is_wanted_follows_the_served_group_versions() -> None:
    served = [("", "v1"), ("widgets.example.com", "v1")]
    autoregister = AutoRegister(APIServiceLister(fake_factory()), lambda: list(served))
    first = autoregister._wanted()
    assert set(first) == {"v1.", "v1.widgets.example.com"}
    assert autoregister._wanted() is first  # the same group-versions: not rebuilt
    served.append(("gadgets.example.com", "v2"))  # a CRD's version is served
    assert set(autoregister._wanted()) == {"v1.", "v1.widgets.example.com",
                                           "v2.gadgets.example.com"}  # fmt: skip
    served.remove(("widgets.example.com", "v1"))  # and one is gone
    assert set(autoregister._wanted()) == {"v1.", "v2.gadgets.example.com"}
