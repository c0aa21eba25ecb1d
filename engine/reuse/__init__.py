"""Cascades reused across the turns of one conversation: the pool (:class:`ConversationPool`) and the
request fingerprints it stores them under.
"""

from __future__ import annotations

from engine.reuse.fingerprint import FingerprintOptions, fingerprint_after, fingerprint_before
from engine.reuse.pool import DEFAULT_MAX_ENTRIES, DEFAULT_TTL_S, ConversationPool, Expected, PoolEntry

__all__ = [
    "DEFAULT_MAX_ENTRIES",
    "DEFAULT_TTL_S",
    "ConversationPool",
    "Expected",
    "FingerprintOptions",
    "PoolEntry",
    "fingerprint_after",
    "fingerprint_before",
]
