"""Shuffle sharding (upstream's ``shufflesharding.Dealer``): a flow's hash deals it a
hand of ``hand_size`` distinct queues out of a deck of ``deck_size``, so two flows
rarely share their whole hand and one elephant flow cannot fill every queue."""

from __future__ import annotations

import hashlib

__all__ = ["deal", "flow_hash"]


def flow_hash(flow_schema: str, distinguisher: str) -> int:
    """A 64-bit hash of the flow (its FlowSchema and distinguisher). A distinguisher
    from a header byte that is not UTF-8 (a lone surrogate) hashes too."""
    text = f"{flow_schema}\x00{distinguisher}"
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "little")


def deal(hash_value: int, deck_size: int, hand_size: int) -> list[int]:
    """``hand_size`` distinct card indexes in [0, deck_size), drawn by reading the hash
    as a mixed-radix number (deck_size, deck_size-1, ...) and skipping cards already
    dealt, as upstream's dealer does."""
    if not 0 < hand_size <= deck_size:
        raise ValueError(f"hand size {hand_size} must be in 1..deck size {deck_size}")
    remainders = []
    for i in range(hand_size):
        base = deck_size - i
        hash_value, rem = divmod(hash_value, base)
        remainders.append(rem)
    hand: list[int] = []
    for i, card in enumerate(remainders):
        for j in range(i, 0, -1):
            if card >= remainders[j - 1]:
                card += 1
        hand.append(card)
    return hand
