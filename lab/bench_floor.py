"""The cache path's floor: a trivial aiohttp handler that serves fixed bytes.

``python -m lab.bench_floor --port P --file BODY``: every GET answers the file's bytes
(read once into memory) as ``application/json`` (``--protobuf-file``'s to a client that
asks for protobuf), with a Content-Length, written in
256 KiB slices of one buffer (no copy, no encoding). Serving a cached LIST can hardly be
cheaper than this, so the benchmark reports the cached LIST relative to it.

With ``--cert``/``--key`` it serves HTTPS, on ``--event-loop`` (the loop ``watchcache
serve`` runs on by default): the floor of a small request, which ``watchcache bench
--reference`` measures beside the servers with the native load — what aiohttp and the
TLS transport cost before any of an API server's own work.
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from aiohttp import web

from lab.etcd import free_port
from proxy.server import event_loop

CHUNK = 256 * 1024


PROTOBUF = "application/vnd.kubernetes.protobuf"


def app(body: bytes, protobuf_body: bytes = b"") -> web.Application:
    bodies = {"application/json": memoryview(body), PROTOBUF: memoryview(protobuf_body)}

    async def handler(request: web.Request) -> web.StreamResponse:
        # the protobuf LIST's bytes when the client asks for protobuf first
        wanted = PROTOBUF if request.headers.get("Accept", "").startswith(PROTOBUF) else ""
        content_type = wanted or "application/json"
        view = bodies[content_type]
        # Slices rather than one write: aiohttp's single huge write is slower for the
        # reader (measured), and the floor must be the fastest way to move these bytes.
        r = web.StreamResponse(headers={"Content-Type": content_type})
        r.content_length = len(view)
        await r.prepare(request)
        for i in range(0, len(view), CHUNK):
            await r.write(view[i : i + CHUNK])
        await r.write_eof()
        return r

    a = web.Application()
    a.router.add_get("/{tail:.*}", handler)
    return a


def spawn(body: Path, *, protobuf: Path | None = None, cert_dir: Path | None = None,
          loop: str = "") -> tuple[subprocess.Popen[bytes], str]:  # fmt: skip
    """This floor in a process of its own on a free loopback port, answering ``body``
    (``protobuf`` to a protobuf client); HTTPS with ``cert_dir``'s ``apiserver.crt`` and
    ``apiserver.key`` when given, on ``loop`` ("": the default). Returns once it
    answers: the process (the caller stops it) and its URL."""
    port = free_port()
    args = [sys.executable, "-m", "lab.bench_floor", "--port", str(port), "--file", str(body)]
    if protobuf is not None:
        args += ["--protobuf-file", str(protobuf)]
    if cert_dir is not None:
        args += ["--cert", str(cert_dir / "apiserver.crt"),
                 "--key", str(cert_dir / "apiserver.key")]  # fmt: skip
    if loop:
        args += ["--event-loop", loop]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip
    url = f"{'https' if cert_dir is not None else 'http'}://127.0.0.1:{port}"
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # loopback, self-signed
    deadline = time.monotonic() + 20
    while True:
        try:
            with urllib.request.urlopen(url + "/", timeout=2, context=context) as r:
                r.read()
            return proc, url
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("the floor server did not start") from None
            time.sleep(0.05)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.bench_floor", description=__doc__)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--file", type=Path, required=True)
    p.add_argument("--protobuf-file", type=Path, help="served to Accept: protobuf requests")
    p.add_argument("--cert", type=Path, help="serve HTTPS with this certificate (PEM)")
    p.add_argument("--key", type=Path, help="the certificate's key (PEM)")
    p.add_argument("--event-loop", choices=event_loop.EVENT_LOOPS,
                   default=event_loop.default_name())  # fmt: skip
    a = p.parse_args(argv)
    if (a.cert is None) != (a.key is None):
        p.error("--cert and --key go together")
    pb = a.protobuf_file.read_bytes() if a.protobuf_file else b""
    context = None
    if a.cert is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(a.cert, a.key)
    event_loop.run(_serve(app(a.file.read_bytes(), pb), a.port, context), a.event_loop)
    return 0


async def _serve(application: web.Application, port: int, context: ssl.SSLContext | None
                 ) -> None:  # fmt: skip
    runner = web.AppRunner(application, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", port, ssl_context=context).start()
        await asyncio.Event().wait()  # until the bench stops the process
    finally:
        await runner.cleanup()


if __name__ == "__main__":
    raise SystemExit(main())
