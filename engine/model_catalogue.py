"""The models the engine serves: the OpenAI-facing name, the LS model uid sent on the wire, and the credit cost.

Lookups are exact (the mirror's ``getModelInfo`` is an exact catalogue-key lookup): an unknown name, or a
known one spelt differently, has no entry, so it is not served and costs no credit (engine.md section 4.A).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final

#: ``created`` of every ``GET /v1/models`` entry: a fixed date (2025-01-01T00:00:00Z), so the list is stable.
MODELS_CREATED: Final = 1735689600


@dataclass(frozen=True)
class ModelInfo:
    """One served model. ``credit`` is what one upstream turn costs; 0 for a free model."""

    name: str
    uid: str
    provider: str
    credit: float
    vision: bool

    def __post_init__(self) -> None:
        if not self.name or not self.uid:
            raise ValueError(f"a model needs a name and a uid (got name={self.name!r}, uid={self.uid!r})")
        if not (math.isfinite(self.credit) and self.credit >= 0):
            raise ValueError(f"model {self.name!r}: credit must be a finite number >= 0 (got {self.credit!r})")


_BUILT_IN: Final = (
    ModelInfo(name="claude-sonnet-4-6", uid="claude-sonnet-4-6", provider="anthropic", credit=1.0, vision=True),
    ModelInfo(name="claude-opus-4-1", uid="claude-opus-4-1", provider="anthropic", credit=4.0, vision=True),
    ModelInfo(name="gpt-5", uid="gpt-5", provider="openai", credit=1.0, vision=True),
    ModelInfo(name="gemini-2.5-pro", uid="gemini-2.5-pro", provider="google", credit=1.0, vision=True),
    ModelInfo(name="swe-1", uid="MODEL_SWE_1", provider="windsurf", credit=0.0, vision=False),
    # Its label names no provider, so its prompts carry no "[Context: ...]" line (system_prompt.PROVIDERS).
    ModelInfo(name="cascade-base", uid="MODEL_CASCADE_BASE", provider="windsurf", credit=0.5, vision=True),
)


class ModelCatalogue:
    """An immutable set of :class:`ModelInfo` by name, in the order given."""

    def __init__(self, models: Iterable[ModelInfo]) -> None:
        self._models: dict[str, ModelInfo] = {}
        for model in models:
            if model.name in self._models:
                raise ValueError(f"model {model.name!r} is listed twice")
            self._models[model.name] = model

    @classmethod
    def default(cls) -> ModelCatalogue:
        """The built-in catalogue."""
        return cls(_BUILT_IN)

    def get(self, name: str) -> ModelInfo | None:
        """The model called exactly ``name`` (no case folding, no aliases), or ``None``."""
        return self._models.get(name)

    def names(self) -> list[str]:
        return list(self._models)

    def __iter__(self) -> Iterator[ModelInfo]:
        return iter(self._models.values())

    def __len__(self) -> int:
        return len(self._models)

    def openai_list(self) -> dict[str, Any]:
        """The ``GET /v1/models`` body."""
        return {
            "object": "list",
            "data": [
                {"id": model.name, "object": "model", "created": MODELS_CREATED, "owned_by": model.provider}
                for model in self._models.values()
            ],
        }
