"""The usage one generator entry reports, as the ledger tests feed it."""

from __future__ import annotations

from engine.cascade.usage import GeneratorUsage


def entry_usage(
    input_tokens: int = 5, output_tokens: int = 3, cache_read: int = 0, cache_write: int = 0
) -> GeneratorUsage:
    """One generator entry's usage, with ``has_usage`` set (a turn the LS metered)."""
    return GeneratorUsage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        entry_count=1,
        has_usage=True,
    )
