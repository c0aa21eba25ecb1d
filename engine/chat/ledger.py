"""The accounting ledger: served traffic, credits, upstream tokens and per-account spend (engine.md section 4).

The fixed rule of seed 001 D4 (section 4.B): a cache-served answer is served traffic (counted in the
totals, per model and per account, and flagged on its row) but ran no upstream turn, so it charges no
credit, and the replay arms record neither token usage nor account spend for it. Only
:meth:`Ledger.record_request` knows about replays (``cache_served=True``); the two usage methods are
simply not called on a replay.

Credit follows the mirror's ``recordRequest``: the catalogue credit of the exact model name (0 when the
name is unknown), added to the totals only for a successful turn that ran upstream, and written on the
row even for a failed one (0 on a cache-served row, Q4.1).

:meth:`Ledger.document` is the kit's ledger document (``gateway.ledger``); :meth:`Ledger.stats` is a
richer view for the metrics endpoint.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Final

from engine.cascade.usage import GeneratorUsage
from engine.model_catalogue import ModelCatalogue

DEFAULT_MAX_ROWS: Final = 500
DEFAULT_MAX_MODELS: Final = 500
#: The bucket of the models seen after ``max_models`` distinct ones (names are client-chosen).
OTHER_MODEL: Final = "(other)"
#: How many recent durations the latency view keeps (only durations > 0, so replays are left out, Q4.3).
LATENCY_WINDOW: Final = 200


@dataclass
class _Counts:
    requests: int = 0
    success: int = 0
    errors: int = 0
    cache_served: int = 0

    def add(self, success: bool, cache_served: bool) -> None:
        self.requests += 1
        if success:
            self.success += 1
        else:
            self.errors += 1
        if cache_served:
            self.cache_served += 1


@dataclass
class _Tokens:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0


class Ledger:
    """Thread-safe counters of one gateway's traffic, from its start.

    ``max_rows`` recent request rows are kept (the oldest dropped; ``row_count`` keeps counting all).
    Per-model counts hold at most ``max_models`` names, later ones going to :data:`OTHER_MODEL`
    (0: unbounded); credits by model are keyed by catalogue names only, so they are bounded anyway.
    """

    def __init__(
        self,
        catalogue: ModelCatalogue,
        *,
        max_rows: int = DEFAULT_MAX_ROWS,
        max_models: int = DEFAULT_MAX_MODELS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if max_rows < 0:
            raise ValueError(f"max_rows must be >= 0 (got {max_rows})")
        if max_models < 0:
            raise ValueError(f"max_models must be >= 0 (got {max_models})")
        self._catalogue = catalogue
        self._max_models = max_models
        self._clock = clock
        self._lock = threading.Lock()
        self._totals = _Counts()
        self._by_model: dict[str, _Counts] = {}
        self._by_account: dict[str, _Counts] = {}
        self._credits = 0.0
        self._credits_by_model: dict[str, float] = {}
        self._tokens = _Tokens()
        self._requests_with_usage = 0
        self._account_spend: dict[str, int] = {}
        self._rows: deque[dict[str, Any]] = deque(maxlen=max_rows)
        self._row_count = 0
        self._recent_ms: deque[float] = deque(maxlen=LATENCY_WINDOW)

    def record_request(
        self, model: str, success: bool, duration_ms: float, account: str | None, *, cache_served: bool = False
    ) -> None:
        """Count one answered request. ``account`` is the upstream account's label (never a secret), if any.

        A cache-served request is a success by definition; ``cache_served`` with ``success=False`` raises.
        """
        if cache_served and not success:
            raise ValueError("a cache-served request is a successful one")
        info = self._catalogue.get(model)
        credit = 0.0 if cache_served or info is None else info.credit
        with self._lock:
            self._totals.add(success, cache_served)
            self._model_counts(model).add(success, cache_served)
            if account is not None:
                self._by_account.setdefault(account, _Counts()).add(success, cache_served)
            if success and credit > 0:
                self._credits += credit
                self._credits_by_model[model] = self._credits_by_model.get(model, 0.0) + credit
            if duration_ms > 0:
                self._recent_ms.append(duration_ms)
            self._rows.append(
                {
                    "ts": self._clock(),
                    "model": model,
                    "success": success,
                    "ms": duration_ms,
                    "account": account,
                    "credit": credit,
                    "cache_served": cache_served,
                }
            )
            self._row_count += 1

    def record_token_usage(self, usage: GeneratorUsage | None) -> None:
        """Add the upstream tokens of one turn; no-op for ``None`` or when all four categories are 0."""
        if usage is None or not _usage_total(usage):
            return
        with self._lock:
            self._tokens.input += usage.input_tokens
            self._tokens.output += usage.output_tokens
            self._tokens.cache_read += usage.cache_read_tokens
            self._tokens.cache_write += usage.cache_write_tokens
            self._requests_with_usage += 1

    def record_account_spend(self, account: str, usage: GeneratorUsage | None) -> None:
        """Add one turn's tokens (all four categories) to ``account``'s spend; no-op when there are none."""
        spent = _usage_total(usage) if usage is not None else 0
        if not spent:
            return
        with self._lock:
            self._account_spend[account] = self._account_spend.get(account, 0) + spent

    def document(self) -> dict[str, Any]:
        """The kit's ledger document (``conformance.operations.LEDGER_SCHEMA``).

        ``served`` counts successful requests, cache-served ones included; rows carry only ``model``,
        ``success``, ``cache_served`` and ``credit``, oldest first.
        """
        with self._lock:
            return {
                "tokens": asdict(self._tokens),
                "credits": self._credits,
                "served": self._totals.success,
                "cache_served": self._totals.cache_served,
                "account_spend": dict(self._account_spend),
                "row_count": self._row_count,
                "rows": [
                    {
                        "model": row["model"],
                        "success": row["success"],
                        "cache_served": row["cache_served"],
                        "credit": row["credit"],
                    }
                    for row in self._rows
                ],
            }

    def stats(self) -> dict[str, Any]:
        """Everything the ledger holds, as JSON, for the metrics endpoint."""
        with self._lock:
            recent = list(self._recent_ms)
            tokens = asdict(self._tokens)
            return {
                "requests": asdict(self._totals),
                "credits": {"total": self._credits, "by_model": dict(self._credits_by_model)},
                "tokens": {**tokens, "total": sum(tokens.values())},
                "requests_with_usage": self._requests_with_usage,
                "models": {name: asdict(counts) for name, counts in self._by_model.items()},
                "accounts": {name: asdict(counts) for name, counts in self._by_account.items()},
                "account_spend": dict(self._account_spend),
                "latency_ms": {
                    "samples": len(recent),
                    "avg": sum(recent) / len(recent) if recent else None,
                    "max": max(recent, default=None),
                },
                "row_count": self._row_count,
                "rows": [dict(row) for row in self._rows],
            }

    def _model_counts(self, model: str) -> _Counts:
        counts = self._by_model.get(model)
        if counts is not None:
            return counts
        named = len(self._by_model) - (OTHER_MODEL in self._by_model)
        if self._max_models and named >= self._max_models:
            model = OTHER_MODEL
        return self._by_model.setdefault(model, _Counts())


def _usage_total(usage: GeneratorUsage) -> int:
    return usage.input_tokens + usage.output_tokens + usage.cache_read_tokens + usage.cache_write_tokens
