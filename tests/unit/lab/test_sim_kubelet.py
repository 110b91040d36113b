"""The simulated kubelet's pure parts: the shell over the in-memory filesystem, tar as
kubectl cp runs it, the container log's reproducible lines, and the SPDY session's
framing (the end-to-end paths through the real kubectl are tests/e2e/test_kubelet_api.py)."""

from __future__ import annotations

import asyncio
import struct
import zlib

from lab.sim.container_fs import FileSystem
from lab.sim.container_logs import Instance, instance_lines
from lab.sim.shell import Shell, StdIO
from lab.sim.spdy import DICTIONARY, SYN_REPLY, SYN_STREAM, Session, Stream


def _run(argv: list[str], stdin: bytes = b"", fs: FileSystem | None = None,
         tty: bool = False) -> tuple[int, bytes, bytes]:  # fmt: skip
    fs = fs or FileSystem()
    fs.mkdir("/tmp")
    out: list[bytes] = []
    err: list[bytes] = []
    chunks = [stdin, b""] if stdin else [b""]

    async def read() -> bytes:
        return chunks.pop(0) if chunks else b""

    async def write_out(data: bytes) -> None:
        out.append(data)

    async def write_err(data: bytes) -> None:
        err.append(data)

    shell = Shell(fs, {"MODE": "lab"}, "pod-a")
    code = asyncio.run(shell.run(argv, StdIO(read, write_out, write_err, tty)))
    return code, b"".join(out), b"".join(err)


def test_shell_commands_redirection_and_exit_codes() -> None:
    code, out, _ = _run(["sh", "-c", "echo $MODE > /tmp/a; cat /tmp/a && pwd; hostname"])
    assert (code, out) == (0, b"lab\n/\npod-a\n")
    code, _, err = _run(["sh", "-c", "false && echo never; nope"])
    assert (code, err) == (127, b"sh: nope: not found\n")
    assert _run(["sh", "-c", "exit 4"])[0] == 4
    code, out, _ = _run(["sh"], stdin=b"cd /tmp\npwd\nexit 2\necho after\n")
    assert (code, out) == (2, b"/tmp\n")


def test_tty_line_discipline_echoes_and_erases() -> None:
    code, out, _ = _run(["sh"], stdin=b"echo hx\x7fi\rexit\r", tty=True)
    # typed ahead in one chunk: the terminal echoes it all before the shell reads a line
    assert (code, out) == (0, b"/ # echo hx\b \bi\r\nexit\r\nhi\n/ # ")


def test_tar_round_trip_as_kubectl_cp() -> None:
    fs = FileSystem()
    fs.mkdir("/etc/web")
    fs.write("/etc/web/greeting", b"hello")
    code, stream, _ = _run(["tar", "cf", "-", "/etc/web"], fs=fs)
    assert code == 0
    other = FileSystem()
    code, _, _ = _run(["tar", "xmf", "-", "-C", "/copy"], stdin=stream, fs=other)
    assert code == 0 and other.read("/copy/etc/web/greeting") == b"hello"


def test_log_lines_are_reproducible_and_follow_from_where_they_left() -> None:
    inst = Instance("p", "c", "nginx:1.27", "id-1", started=1_000.0)
    lines = list(instance_lines(inst, 1_100.0))
    assert lines == list(instance_lines(inst, 1_100.0))
    assert "Configuration complete" in lines[1][1]
    later = list(instance_lines(inst, 1_200.0, after=1_100.0))
    assert later and all(1_100.0 < t <= 1_200.0 for t, _ in later)
    assert list(instance_lines(inst, 1_200.0)) == lines + later
    crashed = Instance("p", "c", "app:1", "id-0", started=900.0, finished=950.0, exit_code=1)
    assert "exitCode=1" in list(instance_lines(crashed, 2_000.0))[-1][1]
    quiet = Instance("p", "c", "busybox", "id-2", started=1_000.0, quiet=True)
    assert list(instance_lines(quiet, 2_000.0)) == []


def _syn_stream(stream_id: int, headers: dict[str, str], deflate: zlib._Compress) -> bytes:
    block = struct.pack(">I", len(headers)) + b"".join(
        struct.pack(">I", len(k)) + k.encode() + struct.pack(">I", len(v)) + v.encode()
        for k, v in headers.items())  # fmt: skip
    payload = (struct.pack(">IIH", stream_id, 0, 0) + deflate.compress(block)
               + deflate.flush(zlib.Z_SYNC_FLUSH))  # fmt: skip
    head = struct.pack(">HH", 0x8003, SYN_STREAM) + b"\0" + len(payload).to_bytes(3, "big")
    return head + payload


def test_spdy_session_answers_a_stream_and_carries_its_data() -> None:
    sent: list[bytes] = []
    seen: list[tuple[dict[str, str], bytes]] = []

    async def send(frame: bytes) -> None:
        sent.append(frame)

    async def echo(stream: Stream) -> None:
        data = await stream.read()
        seen.append((stream.headers, data))
        await stream.write(data.upper())
        await stream.close()

    async def main() -> None:
        session = Session(send, echo)
        deflate = zlib.compressobj(zdict=DICTIONARY)
        frame = _syn_stream(1, {"streamType": "data", "port": "80"}, deflate)
        data = struct.pack(">I", 1) + b"\x01" + (3).to_bytes(3, "big") + b"abc"  # FIN
        await session.feed(frame[:5])  # frames may arrive in pieces
        await session.feed(frame[5:] + data)
        await asyncio.gather(*session.tasks)

    asyncio.run(main())
    assert seen == [({"streamtype": "data", "port": "80"}, b"abc")]
    assert int.from_bytes(sent[0][2:4], "big") == SYN_REPLY
    assert sent[1] == struct.pack(">I", 1) + b"\x00" + (3).to_bytes(3, "big") + b"ABC"
    assert sent[2] == struct.pack(">I", 1) + b"\x01" + (0).to_bytes(3, "big")
