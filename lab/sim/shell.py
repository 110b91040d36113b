"""The simulated container's shell: what ``kubectl exec`` runs. No real process starts
and no file of the lab host is read: the commands are Python functions over the
container's in-memory filesystem (:mod:`lab.sim.container_fs`).

``exec POD -- CMD ARGS`` runs one command; ``sh``/``bash`` reads command lines from
stdin (a prompt and echo when a TTY is asked for, ``exit`` or end of input ends it);
``sh -c 'LINE'`` runs one line. A line is words (shell quoting) joined by ``;`` or
``&&``, with ``>``/``>>`` redirection of stdout. Commands: ``ls [-l] [-a]``, ``cat``,
``echo``, ``env``/``printenv``, ``pwd``, ``cd``, ``hostname``, ``id``, ``whoami``,
``uname [-a]``, ``date``, ``mkdir [-p]``, ``rm [-r]``, ``touch``, ``sleep``, ``true``,
``false``, ``tar`` (``c``/``x``, ``f -``, ``-C DIR``: what ``kubectl cp`` runs), ``exit``.
Anything else: ``sh: CMD: not found``, exit code 127.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import posixpath
import shlex
import stat
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from lab.sim.container_fs import FileSystem, FsError

__all__ = ["SHELLS", "Shell", "StdIO"]

SHELLS = frozenset({"sh", "bash", "/bin/sh", "/bin/bash", "ash", "/bin/ash"})
_NOT_FOUND = 127


@dataclass
class StdIO:
    """A command's streams: ``read()`` the next stdin bytes (b"" at its end), and the
    writers of stdout and stderr."""

    read: Callable[[], Awaitable[bytes]]
    out: Callable[[bytes], Awaitable[None]]
    err: Callable[[bytes], Awaitable[None]]
    tty: bool = False

    async def read_all(self) -> bytes:
        chunks = []
        while chunk := await self.read():
            chunks.append(chunk)
        return b"".join(chunks)


class _Exit(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


@dataclass
class Shell:
    fs: FileSystem
    env: dict[str, str]
    hostname: str
    cwd: str = "/"
    _out: list[bytes] = field(default_factory=list)

    async def run(self, argv: list[str], io: StdIO) -> int:
        """Run ``argv`` as the container's runtime runs an exec: its exit code."""
        try:
            if argv and argv[0] in SHELLS:
                if len(argv) > 2 and argv[1] == "-c":
                    return await self._line(argv[2], io)
                return await self._interactive(io)
            return await self._command(argv, io)
        except _Exit as e:
            return e.code

    # -- lines --------------------------------------------------------------------------

    async def _interactive(self, io: StdIO) -> int:
        code = 0
        if io.tty:
            await io.out(self._prompt())
        async for line in _lines(io):
            code = await self._line(line, io)
            if io.tty:
                await io.out(self._prompt())
        return code

    def _prompt(self) -> bytes:
        return f"{self.cwd} # ".encode()

    async def _line(self, line: str, io: StdIO) -> int:
        code = 0
        for part, joiner in _split(line):
            if joiner == "&&" and code != 0:
                continue
            try:
                words = shlex.split(part, comments=True)
            except ValueError:
                await io.err(b"sh: syntax error: unterminated quoted string\n")
                return 2
            words = [self._expand(w) for w in words]
            code = await self._redirected(words, io) if words else code
        return code

    def _expand(self, word: str) -> str:
        if word.startswith("$") and word[1:].replace("_", "").isalnum():
            return self.env.get(word[1:], "")
        return word

    async def _redirected(self, words: list[str], io: StdIO) -> int:
        for op in (">>", ">"):
            if op in words[:-1]:
                at = words.index(op)
                target = self.fs.resolve(self.cwd, words[at + 1])
                captured: list[bytes] = []
                code = await self._command(
                    words[:at], StdIO(io.read, _appender(captured), io.err, io.tty)
                )
                try:
                    self.fs.write(target, b"".join(captured), append=op == ">>")
                except FsError as e:
                    await io.err(f"sh: can't create {e}\n".encode())
                    return 1
                return code
        return await self._command(words, io)

    # -- commands -----------------------------------------------------------------------

    async def _command(self, argv: list[str], io: StdIO) -> int:
        if not argv:
            return 0
        name = posixpath.basename(argv[0])
        if argv[0] in SHELLS:
            return await self.run(argv, io)
        handler = _COMMANDS.get(name)
        if handler is None:
            await io.err(f"sh: {argv[0]}: not found\n".encode())
            return _NOT_FOUND
        try:
            return await handler(self, argv[1:], io)
        except FsError as e:
            await io.err(f"{name}: {e}\n".encode())
            return 1

    async def _ls(self, args: list[str], io: StdIO) -> int:
        flags = "".join(a[1:] for a in args if a.startswith("-"))
        paths = [a for a in args if not a.startswith("-")] or ["."]
        code = 0
        for arg in paths:
            path = self.fs.resolve(self.cwd, arg)
            if not self.fs.exists(path):
                await io.err(f"ls: {arg}: No such file or directory\n".encode())
                code = 1
                continue
            names = self.fs.listdir(path) if self.fs.is_dir(path) else [posixpath.basename(path)]
            if "a" in flags:
                names = [".", "..", *names]
            where = path if self.fs.is_dir(path) else posixpath.dirname(path)
            if len(paths) > 1:
                await io.out(f"{arg}:\n".encode())
            if "l" in flags:
                rows = [self._long(where, n) for n in names]
                await io.out("".join(rows).encode())
            elif names:
                await io.out(("\n".join(names) + "\n").encode())
        return code

    def _long(self, directory: str, name: str) -> str:
        path = self.fs.resolve(directory, name)
        is_dir, mode, size, mtime = self.fs.stat(path) if self.fs.exists(path) else (
            True, 0o755, 0, 0.0)  # fmt: skip
        kind = stat.S_IFDIR if is_dir else stat.S_IFREG
        when = dt.datetime.fromtimestamp(mtime, dt.UTC).strftime("%b %d %H:%M")
        return f"{stat.filemode(kind | mode)}    1 root     root     {size:>8} {when} {name}\n"

    async def _cat(self, args: list[str], io: StdIO) -> int:
        if not args:
            await io.out(await io.read_all())
            return 0
        code = 0
        for arg in args:
            try:
                await io.out(self.fs.read(self.fs.resolve(self.cwd, arg)))
            except FsError:
                await io.err(f"cat: can't open '{arg}': No such file or directory\n".encode())
                code = 1
        return code

    async def _echo(self, args: list[str], io: StdIO) -> int:
        newline = not (args and args[0] == "-n")
        text = " ".join(args[1:] if not newline else args)
        await io.out((text + ("\n" if newline else "")).encode())
        return 0

    async def _env(self, args: list[str], io: StdIO) -> int:
        if args:
            value = self.env.get(args[0])
            if value is None:
                return 1
            await io.out(f"{value}\n".encode())
            return 0
        await io.out("".join(f"{k}={v}\n" for k, v in self.env.items()).encode())
        return 0

    async def _pwd(self, args: list[str], io: StdIO) -> int:
        await io.out(f"{self.cwd}\n".encode())
        return 0

    async def _cd(self, args: list[str], io: StdIO) -> int:
        path = self.fs.resolve(self.cwd, args[0] if args else "/root")
        if not self.fs.is_dir(path):
            await io.err(f"sh: cd: can't cd to {args[0] if args else path}: No such file or "
                         "directory\n".encode())  # fmt: skip
            return 2
        self.cwd = path
        self.env["PWD"] = path
        return 0

    async def _text(self, text: str, io: StdIO) -> int:
        await io.out(f"{text}\n".encode())
        return 0

    async def _uname(self, args: list[str], io: StdIO) -> int:
        if "-a" in args:
            return await self._text(f"Linux {self.hostname} 6.8.0-48-generic #48-Ubuntu SMP "
                                    "x86_64 GNU/Linux", io)  # fmt: skip
        return await self._text("Linux", io)

    async def _date(self, args: list[str], io: StdIO) -> int:
        return await self._text(dt.datetime.now(dt.UTC).strftime("%a %b %d %H:%M:%S UTC %Y"), io)

    async def _mkdir(self, args: list[str], io: StdIO) -> int:
        for arg in (a for a in args if not a.startswith("-")):
            path = self.fs.resolve(self.cwd, arg)
            if "-p" not in args and not self.fs.is_dir(posixpath.dirname(path)):
                raise FsError(f"can't create directory '{arg}': No such file or directory")
            self.fs.mkdir(path)
        return 0

    async def _rm(self, args: list[str], io: StdIO) -> int:
        recursive = any(a.startswith("-") and ("r" in a or "R" in a) for a in args)
        for arg in (a for a in args if not a.startswith("-")):
            self.fs.remove(self.fs.resolve(self.cwd, arg), recursive)
        return 0

    async def _touch(self, args: list[str], io: StdIO) -> int:
        for arg in args:
            path = self.fs.resolve(self.cwd, arg)
            if not self.fs.exists(path):
                self.fs.write(path, b"")
        return 0

    async def _sleep(self, args: list[str], io: StdIO) -> int:
        try:
            await asyncio.sleep(min(float(args[0]) if args else 0.0, 3600.0))
        except ValueError:
            await io.err(f"sleep: invalid number '{args[0]}'\n".encode())
            return 1
        return 0

    async def _exit(self, args: list[str], io: StdIO) -> int:
        raise _Exit(int(args[0]) if args and args[0].isdigit() else 0)

    async def _tar(self, args: list[str], io: StdIO) -> int:
        """``tar cf - PATHS`` and ``tar xf - [-C DIR]`` (kubectl cp's two commands)."""
        words = list(args)
        directory = self.cwd
        if "-C" in words:
            at = words.index("-C")
            directory = self.fs.resolve(self.cwd, words[at + 1])
            del words[at:at + 2]
        flags = words[0].lstrip("-") if words else ""
        rest = [w for w in words[1:] if w != "-"]
        if "c" in flags:
            await io.out(self.fs.tar_create(directory, rest))
            return 0
        if "x" in flags:
            self.fs.tar_extract(directory, await io.read_all())
            return 0
        await io.err(b"tar: You must specify one of the '-Acdtrux' options\n")
        return 2


_Command = Callable[[Shell, list[str], StdIO], Awaitable[int]]
_COMMANDS: dict[str, _Command] = {
    "ls": Shell._ls, "cat": Shell._cat, "echo": Shell._echo, "env": Shell._env,
    "printenv": Shell._env, "pwd": Shell._pwd, "cd": Shell._cd, "uname": Shell._uname,
    "date": Shell._date, "mkdir": Shell._mkdir, "rm": Shell._rm, "touch": Shell._touch,
    "sleep": Shell._sleep, "exit": Shell._exit, "tar": Shell._tar,
    "hostname": lambda sh, args, io: sh._text(sh.hostname, io),
    "id": lambda sh, args, io: sh._text("uid=0(root) gid=0(root) groups=0(root)", io),
    "whoami": lambda sh, args, io: sh._text("root", io),
    "true": lambda sh, args, io: _code(0), "false": lambda sh, args, io: _code(1),
}  # fmt: skip


def _appender(into: list[bytes]) -> Callable[[bytes], Awaitable[None]]:
    async def append(data: bytes) -> None:
        into.append(data)

    return append


async def _code(code: int) -> int:
    return code


def _split(line: str) -> list[tuple[str, str]]:
    """``a; b && c`` -> [(a, ""), (b, ";"), (c, "&&")] (quotes respected)."""
    parts: list[tuple[str, str]] = []
    current, joiner, quote, i = "", "", "", 0
    while i < len(line):
        ch = line[i]
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == ";" or line.startswith("&&", i):
            parts.append((current, joiner))
            joiner = ";" if ch == ";" else "&&"
            current = ""
            i += 1 if ch == ";" else 2
            continue
        current += ch
        i += 1
    parts.append((current, joiner))
    return [(p.strip(), j) for p, j in parts if p.strip()]


def _lines(io: StdIO) -> _LineReader:
    return _LineReader(io)


class _LineReader:
    """Lines from stdin; with a TTY, the terminal's line discipline: typed characters
    are echoed, backspace erases, Enter (CR) ends a line, Ctrl-C drops it, Ctrl-D on an
    empty line ends the input."""

    def __init__(self, io: StdIO) -> None:
        self.io = io
        self.buffer = b""
        self.done = False

    def __aiter__(self) -> _LineReader:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self._take_line()
            if line is not None:
                return line
            if self.done:
                raise StopAsyncIteration
            chunk = await self.io.read()
            if not chunk:
                self.done = True
                if self.buffer:
                    rest, self.buffer = self.buffer, b""
                    return rest.decode("utf-8", "replace")
                raise StopAsyncIteration
            self.buffer += await self._discipline(chunk) if self.io.tty else chunk

    async def _take_line(self) -> str | None:
        if b"\n" not in self.buffer:
            return None
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode("utf-8", "replace")

    async def _discipline(self, chunk: bytes) -> bytes:
        kept = bytearray()
        pending = self.buffer
        for byte in chunk:
            if byte in (0x0D, 0x0A):
                await self.io.out(b"\r\n")
                kept += b"\n"
            elif byte in (0x7F, 0x08):
                if kept and kept[-1:] != b"\n":
                    del kept[-1]
                    await self.io.out(b"\b \b")
                elif pending and not pending.endswith(b"\n"):
                    pending = pending[:-1]
                    await self.io.out(b"\b \b")
            elif byte == 0x03:  # Ctrl-C: the line is dropped
                await self.io.out(b"^C\r\n")
                kept = bytearray(b"\n")
                pending = b""
            elif byte == 0x04 and not kept and not pending:  # Ctrl-D on an empty line
                self.done = True
                kept += b"exit\n"
            elif byte >= 0x20 or byte == 0x09:
                await self.io.out(bytes([byte]))
                kept.append(byte)
        self.buffer = pending
        return bytes(kept)
