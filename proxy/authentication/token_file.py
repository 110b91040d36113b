"""``--token-auth-file``: static bearer tokens, kube's CSV format::

    token,user,uid,"group1,group2,group3"

At least three columns; the fourth (groups) is optional. Blank lines are skipped; a
later duplicate token replaces the earlier one (kube logs a warning and does the same).
"""

from __future__ import annotations

import csv
import io
import logging
from collections.abc import Mapping
from pathlib import Path

from proxy.authentication.authenticator import Response
from proxy.request.user import UserInfo

__all__ = ["TokenFile", "TokenFileError", "parse_token_file"]

log = logging.getLogger("watchcache.authentication")


class TokenFileError(ValueError):
    """A malformed token file (message names the file and line, never a token)."""


def parse_token_file(text: str, path: str = "") -> dict[str, UserInfo]:
    tokens: dict[str, UserInfo] = {}
    for line_no, record in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not record or (len(record) == 1 and not record[0].strip()):
            continue
        if len(record) < 3:
            raise TokenFileError(
                f"token file '{path}' must have at least 3 columns (token, user name, "
                f"user uid), found {len(record)}"
            )
        token, name, uid = record[0].strip(), record[1].strip(), record[2].strip()
        if not token:
            continue
        groups: tuple[str, ...] = ()
        if len(record) >= 4 and record[3].strip():
            groups = tuple(g.strip() for g in record[3].split(",") if g.strip())
        if token in tokens:
            log.warning("duplicate token in %s on line %d; the last one wins", path, line_no)
        tokens[token] = UserInfo(name=name, uid=uid, groups=groups)
    return tokens


class TokenFile:
    """The static tokens; ``authenticate_token`` is None for an unknown token."""

    def __init__(self, tokens: Mapping[str, UserInfo]) -> None:
        self.tokens = dict(tokens)

    @classmethod
    def from_path(cls, path: str) -> TokenFile:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as e:
            raise TokenFileError(f"cannot read token file '{path}': {e.strerror}") from None
        return cls(parse_token_file(text, path))

    async def authenticate_token(self, token: str) -> Response | None:
        user = self.tokens.get(token)
        return Response(user) if user is not None else None
