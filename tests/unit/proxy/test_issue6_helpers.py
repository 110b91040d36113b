"""Pure helpers behind the real-kubectl fixes: DeleteOptions parsing, the Scale view,
Secret defaults, nesting and alias limits of bodies, and Go quoting (the system
namespaces are written by a post-start hook: tests/integration/test_post_start_hooks.py)."""

from __future__ import annotations

from typing import Any

import pytest
from multidict import MultiDict

from proxy import apierrors
from proxy.endpoints import decoding, negotiation
from proxy.endpoints.handlers.delete_options import parse_delete_options
from proxy.kube.prepare import secret_defaults
from proxy.kube.scale import SPEC_REPLICAS
from proxy.registry import scale
from proxy.request.delete_options import DeleteOptions
from storage.interfaces import Preconditions


def test_delete_options_body_wins_over_the_query() -> None:
    body = b'{"kind":"DeleteOptions","dryRun":["All"],"preconditions":{"uid":"u"}}'
    opts = parse_delete_options(MultiDict(gracePeriodSeconds="x"), body, "application/json")
    assert opts == DeleteOptions(preconditions=Preconditions(uid="u"), dry_run=True)
    query = MultiDict([("dryRun", "All"), ("gracePeriodSeconds", "5")])
    opts = parse_delete_options(query, b"", "")
    assert (opts.dry_run, opts.grace_period_seconds) == (True, 5)
    yaml_body = b"propagationPolicy: Foreground\n"
    assert parse_delete_options(MultiDict(), yaml_body, "application/yaml").propagation_policy == (
        "Foreground"
    )


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b'{"dryRun":"All"}', 400),
        (b'{"gracePeriodSeconds":true}', 400),
        (b'{"orphanDependents":1}', 400),
        (b"[1]", 400),
        (b'{"propagationPolicy":"Later"}', 422),
        (b'{"dryRun":["None"]}', 422),
    ],
)
def test_delete_options_errors(body: bytes, code: int) -> None:
    with pytest.raises(apierrors.StatusError) as err:
        parse_delete_options(MultiDict(), body, "application/json")
    assert err.value.code == code


def test_scale_view_of_a_deployment() -> None:
    deployment = {
        "metadata": {"name": "d", "namespace": "n", "uid": "u", "resourceVersion": "7",
                     "labels": {"x": "y"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "d", "tier": "web"}}},
        "status": {"replicas": 1},
    }  # fmt: skip
    assert scale.to_scale(deployment, SPEC_REPLICAS) == {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {"name": "d", "namespace": "n", "uid": "u", "resourceVersion": "7"},
        "spec": {"replicas": 2},
        "status": {"replicas": 1, "selector": "app=d,tier=web"},
    }
    assert scale.to_scale({"metadata": {}, "spec": {"replicas": 0}}, SPEC_REPLICAS)["spec"] == {}


def test_secret_string_data_merges_into_data() -> None:
    secret: dict[str, Any] = {"data": {"a": "eA==", "b": "eQ=="}, "stringData": {"b": "z"}}
    secret_defaults(secret)
    assert secret == {"data": {"a": "eA==", "b": "eg=="}, "type": "Opaque"}
    typed: dict[str, Any] = {"type": "kubernetes.io/tls"}
    secret_defaults(typed)
    assert typed == {"type": "kubernetes.io/tls"}


def test_nesting_and_alias_limits() -> None:
    nested: Any = 1
    for _ in range(decoding.MAX_DEPTH):
        nested = {"a": nested}
    assert not decoding.too_deep(nested)
    assert decoding.too_deep({"a": nested})
    shared = ["x"] * 10
    bomb = [shared] * 10
    assert decoding._expanded_size([bomb] * 10) == 1 + 10 * (1 + 10 * 11)
    with pytest.raises(ValueError, match="exceeded max depth"):
        decoding.decode_structured(b"[" * 300 + b"]" * 300, negotiation.JSON_TYPE)


def test_go_quote_escapes_like_percent_q() -> None:
    assert apierrors._go_quote('a\x07"\\\n\u0085é') == '"a\\a\\"\\\\\\n\\u0085é"'
    assert apierrors._go_quote(5) == "5"


def test_a_yaml_body_stops_decoding_at_its_node_limit() -> None:
    """The pure-Python parser costs ~60 µs a node: a 3 MiB flow sequence would hold a
    decoder thread for 90 s; it stops at ``MAX_YAML_BODY_NODES`` (~6 s)."""
    limit = decoding.MAX_YAML_BODY_NODES
    fits = b"x: [" + b",".join([b"0"] * (limit - 3)) + b"]"
    assert len(decoding.decode_structured(fits, "application/yaml")["x"]) == limit - 3
    over = b"x: [" + b",".join([b"0"] * limit) + b"]"
    with pytest.raises(ValueError, match=f"too many nodes \\(more than {limit}\\)"):
        decoding.decode_structured(over, "application/yaml")


async def test_large_bodies_are_decoded_beside_the_loop() -> None:
    import threading

    def where() -> str:
        return threading.current_thread().name

    small = await decoding.off_loop(b"{}", "application/json", where)
    large = await decoding.off_loop(b" " * (decoding.LARGE_BODY + 1), "application/json", where)
    yaml_pod = await decoding.off_loop(b"a: 1\n" * 200, "application/yaml", where)
    assert small == threading.current_thread().name
    assert large.startswith("body-decoder") and yaml_pod.startswith("body-decoder")
