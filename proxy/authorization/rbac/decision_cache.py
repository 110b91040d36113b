"""Memoized RBAC decisions, exact under policy changes.

Upstream's RBAC authorizer resolves the rules on every request (Go makes that cheap);
here the walk over the bindings and their rules is most of what RBAC costs on a cached
read, so ``RBACAuthorizer`` remembers its answers. The contract that keeps this exact:

- The key is everything a decision reads from the request: the user's name and groups
  (subjects match on nothing else) and the attributes ``rule_allows`` reads (verb,
  resource or not, namespace, API group, resource, subresource, name; the path only for
  a non-resource request).
- The value is read from the RBAC state at one ``generation``: the state bumps it on
  every change of any role, binding, cluster role or cluster role binding (before the
  change is visible), and a lookup that sees another generation empties the cache. The
  state is changed and read on the event loop only, so the very next decision after a
  change is computed from the changed state.
- A state without a ``generation`` (tests' in-memory states) is never cached.

The cache is bounded (``MAX_ENTRIES``; emptied when full) so that requests naming
many objects cannot grow it without limit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from proxy.authorization.authorizer import Attributes, Decision

__all__ = ["MAX_ENTRIES", "DecisionCache", "decision_key"]

MAX_ENTRIES = 4096

Key = tuple[object, ...]


def decision_key(attrs: Attributes) -> Key:
    """What an RBAC decision depends on, besides the RBAC state."""
    user = attrs.user
    if not attrs.resource_request:
        return (user.name, user.groups, attrs.verb, False, attrs.path)
    return (user.name, user.groups, attrs.verb, True, attrs.namespace, attrs.api_group,
            attrs.resource, attrs.subresource, attrs.name)  # fmt: skip


class DecisionCache:
    """Decisions and reasons by ``decision_key``, valid for one state generation."""

    def __init__(self) -> None:
        self._generation = -1
        self._entries: dict[Key, tuple[Decision, str]] = {}

    def get(self, key: Key, generation: int) -> tuple[Decision, str] | None:
        if generation != self._generation:
            self._entries.clear()
            self._generation = generation
            return None
        return self._entries.get(key)

    def put(self, key: Key, generation: int, value: tuple[Decision, str]) -> None:
        if generation != self._generation:
            return  # computed against a state that has changed since: not kept
        if len(self._entries) >= MAX_ENTRIES:
            self._entries.clear()
        self._entries[key] = value
