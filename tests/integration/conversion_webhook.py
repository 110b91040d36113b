"""A conversion webhook (ConversionReview v1 over HTTPS) for the CRD suites, run as its
own process: ``python -m tests.integration.conversion_webhook --port N --cert C --key K``.

It converts Widgets between ``v1`` (``spec.color``) and ``v2`` (``spec.colour``), copies
everything else, and answers Failure for an object labelled ``convert: refuse``. It
prints ``listening`` once it serves; SIGTERM stops it.
"""

from __future__ import annotations

import argparse
import ssl
import sys
from typing import Any

from aiohttp import web

JSON = dict[str, Any]


def convert(obj: JSON, desired: str) -> JSON:
    out = {**obj, "apiVersion": desired}
    spec = dict(obj.get("spec") or {})
    if desired.endswith("/v2") and "color" in spec:
        spec["colour"] = spec.pop("color")
    elif desired.endswith("/v1") and "colour" in spec:
        spec["color"] = spec.pop("colour")
    if "spec" in obj:
        out["spec"] = spec
    return out


async def review(request: web.Request) -> web.Response:
    body = await request.json()
    req = body["request"]
    objects = req["objects"]
    refused = [
        o
        for o in objects
        if ((o.get("metadata") or {}).get("labels") or {}).get("convert") == "refuse"
    ]
    response: JSON = {"uid": req["uid"]}
    if refused:
        response["result"] = {"status": "Failure", "message": "refusing to convert"}
        response["convertedObjects"] = []
    else:
        response["result"] = {"status": "Success"}
        response["convertedObjects"] = [convert(o, req["desiredAPIVersion"]) for o in objects]
    return web.json_response(
        {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": response}
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    args = parser.parse_args(argv)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(args.cert, args.key)
    app = web.Application()
    app.router.add_post("/convert", review)
    print("listening", flush=True)
    web.run_app(app, host="127.0.0.1", port=args.port, ssl_context=context, print=None)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
