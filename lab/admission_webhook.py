"""A small HTTPS admission webhook server, for the ``admission-webhook`` demo and the
webhook tests (run as its own process: ``python -m lab.admission_webhook``).

Each path is one behaviour, answering AdmissionReview v1:

- ``/allow``    allowed, with a warning and an audit annotation;
- ``/deny``     denied: ``this object is not welcome here`` (code 403 as the demo's
                webhook sets it; ``/deny-nocode`` leaves the code out);
- ``/mutate``   allowed with a JSONPatch adding the label ``admission-demo/mutated=true``;
- ``/slow``     answers after ``--slow`` seconds (beyond a webhook's timeoutSeconds);
- ``/garbage``  answers 200 with a body that is not JSON.

``generate_pki`` writes a CA and a serving certificate for 127.0.0.1 / localhost and
the ``admission-demo.<namespace>.svc`` names a Service reference uses.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import ssl
import sys
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web

from proxy.server.certs import new_ca, sign

__all__ = ["DENY_MESSAGE", "MUTATED_LABEL", "generate_pki", "main"]

DENY_MESSAGE = "this object is not welcome here"
MUTATED_LABEL = "admission-demo/mutated"


def generate_pki(directory: Path, service_names: tuple[str, ...] = ()) -> tuple[Path, Path, Path]:
    """(ca.crt, tls.crt, tls.key) in ``directory`` for a webhook on 127.0.0.1."""
    ca = new_ca("admission-webhook-ca")
    serving = sign(ca, "admission-webhook", dns_names=("localhost", *service_names),
                   ips=("127.0.0.1",), server=True)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "ca.crt").write_bytes(ca.cert_pem)
    serving.write(directory / "tls.crt", directory / "tls.key")
    return directory / "ca.crt", directory / "tls.crt", directory / "tls.key"


def ca_bundle(ca_path: Path) -> str:
    """The base64 ``caBundle`` of a webhook configuration."""
    return base64.b64encode(ca_path.read_bytes()).decode()


def _review(request_body: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    uid = (request_body.get("request") or {}).get("uid", "")
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": uid, **response}}


def _mutation(obj: dict[str, Any]) -> list[dict[str, Any]]:
    labels = (obj.get("metadata") or {}).get("labels")
    escaped = MUTATED_LABEL.replace("~", "~0").replace("/", "~1")
    if labels is None:
        return [{"op": "add", "path": "/metadata/labels", "value": {MUTATED_LABEL: "true"}}]
    return [{"op": "add", "path": f"/metadata/labels/{escaped}", "value": "true"}]


def build_app(slow_seconds: float) -> web.Application:
    async def handle(request: web.Request) -> web.Response:
        review = orjson.loads(await request.read())
        path = request.path
        if path == "/garbage":
            return web.Response(body=b"<html>not a review</html>", content_type="application/json")
        if path == "/slow":
            await asyncio.sleep(slow_seconds)
            return web.json_response(_review(review, {"allowed": True}))
        if path == "/deny":
            return web.json_response(_review(review, {
                "allowed": False, "status": {"code": 403, "reason": "Forbidden",
                                             "message": DENY_MESSAGE}}))
        if path == "/deny-nocode":
            return web.json_response(_review(review, {
                "allowed": False, "status": {"message": DENY_MESSAGE}}))
        if path == "/mutate":
            obj = (review.get("request") or {}).get("object") or {}
            patch = base64.b64encode(orjson.dumps(_mutation(obj))).decode()
            return web.json_response(_review(review, {
                "allowed": True, "patchType": "JSONPatch", "patch": patch}))
        return web.json_response(_review(review, {
            "allowed": True, "warnings": ["admission-demo: looked at this object"],
            "auditAnnotations": {"seen": "true"}}))

    app = web.Application()
    app.router.add_post("/{tail:.*}", handle)
    return app


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.admission_webhook")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--slow", type=float, default=30.0)
    args = parser.parse_args(argv)
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(args.cert, args.key)
    web.run_app(build_app(args.slow), host="127.0.0.1", port=args.port, ssl_context=tls,
                print=None, handle_signals=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
