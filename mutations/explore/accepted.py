"""Survivors and the accepted-survivor list: which surviving mutant an entry accepts, and why it is safe.

mutmut's mutant names are positional (``..._compute__mutmut_7``): any edit to a function renumbers
its mutants. An entry therefore names the function with a glob and pins the mutation by its changed
source lines (see :mod:`mutations.explore.score`).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mutations.explore.results import load_document

ACCEPTED_PATH = Path("mutations") / "explore" / "accepted-survivors.json"
MIN_REASON_CHARS = 30

_MUTANT_NAME = re.compile(r"^(?P<module>.+)\.x(?:ǁ(?P<cls>[^ǁ]+)ǁ|_)(?P<func>.+)__mutmut_(?P<n>\d+)$")
_POSITIONAL = re.compile(r"__mutmut_\d+$")


@dataclass(frozen=True)
class Survivor:
    name: str
    removed: str
    added: str
    diff: str

    @property
    def function(self) -> str:
        return function_of(self.name)


@dataclass(frozen=True)
class Accepted:
    mutant: str
    reason: str
    removed: str | None = None
    added: str | None = None

    def matches(self, survivor: Survivor) -> bool:
        if not fnmatch.fnmatchcase(survivor.name, self.mutant):
            return False
        if self.removed is not None and normalize_lines(self.removed) != survivor.removed:
            return False
        return self.added is None or normalize_lines(self.added) == survivor.added


def function_of(mutant_name: str) -> str:
    """``fakels.journal.xǁJournalǁappend__mutmut_3`` -> ``fakels.journal.Journal.append``."""
    match = _MUTANT_NAME.match(mutant_name)
    if match is None:
        return mutant_name
    owner = f"{match['cls']}." if match["cls"] else ""
    return f"{match['module']}.{owner}{match['func']}"


def order(mutant_name: str) -> tuple[str, int]:
    """Function first, then mutant number (so _2 sorts before _10)."""
    match = _MUTANT_NAME.match(mutant_name)
    return (mutant_name, 0) if match is None else (function_of(mutant_name), int(match["n"]))


def normalize_lines(text: str) -> str:
    return "\n".join(" ".join(line.split()) for line in text.splitlines() if line.strip())


def changed_lines(diff: str) -> tuple[str, str]:
    """The removed and added source lines of a unified diff, whitespace-normalized."""
    removed: list[str] = []
    added: list[str] = []
    for line in diff.splitlines():
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("-"):
            removed.append(line[1:])
        elif line.startswith("+"):
            added.append(line[1:])
    return normalize_lines("\n".join(removed)), normalize_lines("\n".join(added))


def parse_accepted(data: Any) -> list[Accepted]:
    """Validate the accepted-survivor list; raises ValueError naming the bad entry."""
    if not isinstance(data, list):
        raise ValueError("the accepted-survivor list must be a JSON list of objects")
    entries: list[Accepted] = []
    for index, item in enumerate(data):
        where = f"entry {index}"
        if not isinstance(item, dict):
            raise ValueError(f"{where}: not an object")
        unknown = set(item) - {"mutant", "reason", "removed", "added"}
        if unknown:
            raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
        mutant, reason = item.get("mutant"), item.get("reason")
        removed, added = item.get("removed"), item.get("added")
        if not isinstance(mutant, str) or not mutant.strip():
            raise ValueError(f"{where}: 'mutant' must be a mutant name or glob")
        if not isinstance(reason, str) or len(reason.strip()) < MIN_REASON_CHARS:
            raise ValueError(f"{where} ({mutant}): 'reason' must say why it is harmless ({MIN_REASON_CHARS}+ chars)")
        for key, value in (("removed", removed), ("added", added)):
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ValueError(f"{where} ({mutant}): {key!r} must be the changed source line(s)")
        if _POSITIONAL.search(mutant) and (removed is None or added is None):
            raise ValueError(
                f"{where} ({mutant}): a numbered mutant name is positional and renumbers on any edit; "
                "use a function glob (..__mutmut_*) with 'removed' and 'added', or pin both lines"
            )
        entries.append(Accepted(mutant=mutant, reason=reason.strip(), removed=removed, added=added))
    return entries


def load_accepted(path: Path) -> list[Accepted]:
    """The accepted-survivor list at ``path``; none when there is no such file."""
    if not path.exists():
        return []
    return load_document(path, "the accepted-survivor list", parse_accepted)


def triage(
    survivors: Sequence[Survivor], accepted: Sequence[Accepted]
) -> tuple[list[tuple[Survivor, Accepted]], list[Survivor], list[Accepted]]:
    """Split survivors into accepted (with the entry) and not accepted; also the unused entries."""
    matched: list[tuple[Survivor, Accepted]] = []
    unaccepted: list[Survivor] = []
    used: set[int] = set()
    for survivor in survivors:
        entry = next((e for e in accepted if e.matches(survivor)), None)
        if entry is None:
            unaccepted.append(survivor)
        else:
            matched.append((survivor, entry))
            used.add(id(entry))
    unused = [e for e in accepted if id(e) not in used]
    return matched, unaccepted, unused
