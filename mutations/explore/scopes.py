"""Scopes of an exploratory mutmut run: which mutants a run tests, and the score each must reach.

One mutmut config (``[tool.mutmut]`` in pyproject.toml) generates mutants for every module the kit
mutates and names every in-process test; a scope picks its mutants by mutmut name globs
(``engine.cascade.tool_steps.*``), and mutmut runs only the tests that cover each mutant's function. The
scopes live in ``mutations/explore/scopes.json``::

    {"scopes": [{"name": "fakels", "about": "...", "min_score": 95.0,
                 "mutants": ["fakels.decoder.*", "fakels.cascade.*"]}]}
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mutations.explore.results import NoScore, load_document

SCOPES_PATH = Path("mutations") / "explore" / "scopes.json"
_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
_GLOB = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\.\*$")


@dataclass(frozen=True)
class Scope:
    name: str
    about: str
    min_score: float  # percent
    mutants: tuple[str, ...]  # mutmut name globs: "<module>.*"

    def holds(self, mutant_name: str) -> bool:
        return any(fnmatch.fnmatchcase(mutant_name, glob) for glob in self.mutants)

    def modules(self) -> list[str]:
        """The dotted modules the globs name (``engine.cascade.tool_steps.*`` -> ``engine.cascade.tool_steps``)."""
        return [glob[: -len(".*")] for glob in self.mutants]


def parse_scopes(data: Any) -> list[Scope]:
    """Validate a scopes document; raises ValueError naming the bad place."""
    if not isinstance(data, dict) or set(data) != {"scopes"} or not isinstance(data["scopes"], list):
        raise ValueError('the scopes file must be an object {"scopes": [...]}')
    scopes: list[Scope] = []
    for index, item in enumerate(data["scopes"]):
        where = f"scopes[{index}]"
        if not isinstance(item, dict) or set(item) != {"name", "about", "min_score", "mutants"}:
            raise ValueError(f"{where}: needs exactly the keys about, min_score, mutants and name")
        name, about, floor, globs = item["name"], item["about"], item["min_score"], item["mutants"]
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(f"{where}: name {name!r} must be lower-case letters, digits and dashes")
        where = f"scope {name!r}"
        if any(scope.name == name for scope in scopes):
            raise ValueError(f"{where} is listed twice")
        if not isinstance(about, str) or not about.strip():
            raise ValueError(f"{where}: 'about' must say what the scope covers")
        if isinstance(floor, bool) or not isinstance(floor, int | float) or not 0 <= floor <= 100:
            raise ValueError(f"{where}: min_score must be a percentage from 0 to 100 (got {floor!r})")
        if not isinstance(globs, list) or not globs:
            raise ValueError(f"{where}: mutants must be a non-empty list of module globs")
        for glob in globs:
            if not isinstance(glob, str) or not _GLOB.match(glob):
                raise ValueError(f"{where}: {glob!r} is not a module glob such as 'engine.cascade.tool_steps.*'")
        if len(set(globs)) != len(globs):
            raise ValueError(f"{where}: a module is listed twice")
        scopes.append(Scope(name, about.strip(), float(floor), tuple(globs)))
    if not scopes:
        raise ValueError("the scopes file lists no scope")
    return scopes


def load_scopes(path: Path) -> list[Scope]:
    return load_document(path, "the scopes file", parse_scopes)


def choose(scopes: Sequence[Scope], names: Iterable[str] | None) -> list[Scope]:
    """The scopes named (all of them for None), in the file's order; an unknown name is a NoScore."""
    if names is None:
        return list(scopes)
    wanted = list(dict.fromkeys(names))
    known = {scope.name for scope in scopes}
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise NoScore(f"unknown scope(s) {', '.join(unknown)}; the scopes are: {', '.join(sorted(known))}")
    return [scope for scope in scopes if scope.name in wanted]


def statuses_of(scope: Scope, statuses: Mapping[str, str]) -> dict[str, str]:
    return {name: status for name, status in statuses.items() if scope.holds(name)}
