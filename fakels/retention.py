"""How much a long-running fake keeps in memory: journal entries and bytes, and cascades. Past each
bound the oldest goes first (the journal's oldest entry, the cascade used longest ago), so a
``fakels serve`` that runs for days stays within a fixed size."""

from __future__ import annotations

from dataclasses import dataclass

from fakels.cascade import DEFAULT_MAX_CASCADES
from fakels.journal import DEFAULT_MAX_BYTES, DEFAULT_MAX_ENTRIES


@dataclass(frozen=True)
class Retention:
    journal_max_entries: int = DEFAULT_MAX_ENTRIES
    journal_max_bytes: int = DEFAULT_MAX_BYTES  # raw request bytes; the newest entry is kept however big
    max_cascades: int = DEFAULT_MAX_CASCADES


DEFAULT_RETENTION = Retention()
