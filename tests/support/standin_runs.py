"""A tiny repository and its runs of ``python -m mutations.explore`` against the stand-in ``mutmut``
(tests/support/mutmut_standin.py): two scopes, seven mutants, and a plan of each mutant's outcome."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import mutations.explore.score as mutmut_score
from mutations.explore.score import EXIT_NO_SCORE, main
from tests.support import mutmut_standin

DECODER = {f"fakels.decoder.x_decode__mutmut_{n}": 1 for n in range(1, 4)} | {
    "fakels.decoder.x_frame__mutmut_1": 1,
    "fakels.decoder.x_frame__mutmut_2": 1,
}
USAGE = {"engine.usage.x_offset__mutmut_1": 1, "engine.usage.x_offset__mutmut_2": 1}
SURVIVOR = {**DECODER, "fakels.decoder.x_frame__mutmut_2": 0}
SCOPES = {
    "scopes": [
        {"name": "decoder", "about": "the decoder", "min_score": 80.0, "mutants": ["fakels.decoder.*"]},
        {"name": "usage", "about": "usage", "min_score": 90.0, "mutants": ["engine.usage.*"]},
    ]
}


def make_tree(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The repository at ``root``, with ``mutmut_score`` pointed at the stand-in."""
    (root / "pyproject.toml").write_text(
        '[tool.mutmut]\nsource_paths = ["fakels", "engine"]\nalso_copy = ["mutations/"]\n', encoding="utf-8"
    )
    for path, text in {
        "fakels/decoder.py": "def decode(): return 1\n",
        "engine/usage.py": "def offset(): return 2\n",
        "tests/test_decoder.py": "def test_decode(): pass\n",
        "mutations/explore/scopes.json": json.dumps(SCOPES),
        "mutations/explore/accepted-survivors.json": "[]",
    }.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    plan(root, die_after=None)
    monkeypatch.setattr(mutmut_score, "mutmut_command", lambda: [sys.executable, mutmut_standin.__file__])
    return root


def plan(root: Path, die_after: int | None, decoder: dict[str, int] = DECODER) -> None:
    """What the stand-in's next runs give: ``decoder``'s outcomes, and a SIGKILL after ``die_after`` results."""
    document = {"modules": {"fakels/decoder.py": decoder, "engine/usage.py": USAGE}, "die_after": die_after}
    (root / "mutmut-plan.json").write_text(json.dumps(document), encoding="utf-8")


def runs(root: Path) -> list[list[str]]:
    """The arguments of every ``mutmut run`` the stand-in was given."""
    calls = [json.loads(line) for line in (root / "mutmut-calls.jsonl").read_text(encoding="utf-8").splitlines()]
    return [call for call in calls if call[0] == "run"]


def results(root: Path, module_path: str) -> dict[str, Any]:
    data = json.loads((root / "mutants" / f"{module_path}.meta").read_text(encoding="utf-8"))
    found: dict[str, Any] = data["exit_code_by_key"]
    return found


def score(root: Path, *args: str) -> int:
    return main(["--root", str(root), "--max-children", "2", *args])


def cut_off_run(root: Path, after: int, *args: str, decoder: dict[str, int] = DECODER) -> None:
    """A run that mutmut's machine ends (SIGKILL) after ``after`` results; the next run goes on with the same
    outcomes for ``decoder``'s mutants."""
    plan(root, die_after=after, decoder=decoder)
    assert score(root, *args) == EXIT_NO_SCORE
    plan(root, die_after=None, decoder=decoder)
