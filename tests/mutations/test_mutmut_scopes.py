"""Scopes of the exploratory mutmut run (mutations/explore/scopes.json): the committed file, its
validation, the choice of scopes, and each scope's score against its floor, exact at the floor."""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from mutations.explore.results import NoScore
from mutations.explore.scopes import SCOPES_PATH, Scope, choose, load_scopes, parse_scopes, statuses_of
from mutations.explore.score import EXIT_NO_SCORE, EXIT_OK, main, print_scopes, scope_rows

ROOT = Path(__file__).resolve().parents[2]
VALID = {"name": "core", "about": "the core", "min_score": 95.0, "mutants": ["fakels.decoder.*"]}


@pytest.mark.static_check
def test_every_committed_scope_names_modules_mutmut_mutates() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mutmut"]
    scopes = load_scopes(ROOT / SCOPES_PATH)
    assert scopes, "at least one scope"
    for scope in scopes:
        for module in scope.modules():
            path = module.replace(".", "/") + ".py"
            assert (ROOT / path).is_file(), f"{scope.name}: {module} is not a module file"
            assert any(path.startswith(f"{source}/") for source in config["source_paths"]), (scope.name, path)
            assert any(fnmatch.fnmatch(path, p) for p in config.get("only_mutate", [path])), (scope.name, path)
            assert not any(fnmatch.fnmatch(path, p) for p in config.get("do_not_mutate", [])), (scope.name, path)


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ([], "must be an object"),
        ({"scopes": []}, "lists no scope"),
        ({"scopes": [{**VALID, "extra": 1}]}, "needs exactly the keys"),
        ({"scopes": [{**VALID, "name": "Core"}]}, "lower-case letters"),
        ({"scopes": [VALID, VALID]}, "listed twice"),
        ({"scopes": [{**VALID, "about": " "}]}, "'about' must say"),
        ({"scopes": [{**VALID, "min_score": True}]}, "percentage from 0 to 100"),
        ({"scopes": [{**VALID, "min_score": "95"}]}, "percentage from 0 to 100"),
        ({"scopes": [{**VALID, "min_score": -0.1}]}, "percentage from 0 to 100"),
        ({"scopes": [{**VALID, "min_score": 100.1}]}, "percentage from 0 to 100"),
        ({"scopes": [{**VALID, "mutants": []}]}, "non-empty list"),
        ({"scopes": [{**VALID, "mutants": ["fakels.decoder"]}]}, "not a module glob"),
        ({"scopes": [{**VALID, "mutants": ["fakels/decoder.*"]}]}, "not a module glob"),
        ({"scopes": [{**VALID, "mutants": ["fakels.decoder.*", "fakels.decoder.*"]}]}, "listed twice"),
    ],
)
def test_a_bad_scopes_file_is_refused_naming_the_place(document: Any, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_scopes(document)


@pytest.mark.parametrize("floor", [0, 100, 95])
def test_floors_at_the_ends_of_the_range_are_accepted(floor: int) -> None:
    (scope,) = parse_scopes({"scopes": [{**VALID, "min_score": floor}]})
    assert scope.min_score == float(floor)


SCOPES = [
    Scope("first", "a", 95.0, ("fakels.decoder.*",)),
    Scope("second", "b", 90.0, ("engine.usage.*", "engine.prompt.*")),
]


def test_choose_keeps_the_files_order_and_refuses_unknown_names() -> None:
    assert choose(SCOPES, None) == SCOPES
    assert choose(SCOPES, ["second", "first", "second"]) == SCOPES
    with pytest.raises(NoScore, match=r"unknown scope\(s\) third; the scopes are: first, second"):
        choose(SCOPES, ["first", "third"])


def _statuses(killed: int, survived: int, module: str = "fakels.decoder") -> dict[str, str]:
    names = [f"{module}.x_f__mutmut_{n}" for n in range(1, killed + survived + 1)]
    return {name: ("killed" if i < killed else "survived") for i, name in enumerate(names)}


def test_a_scope_holds_the_mutants_of_its_modules_only() -> None:
    statuses = {**_statuses(2, 1), **_statuses(1, 0, "engine.usage"), **_statuses(1, 0, "engine.usage_extra")}
    assert set(statuses_of(SCOPES[0], statuses)) == {f"fakels.decoder.x_f__mutmut_{n}" for n in (1, 2, 3)}
    assert set(statuses_of(SCOPES[1], statuses)) == {"engine.usage.x_f__mutmut_1"}


@pytest.mark.parametrize(
    ("killed", "survived", "verdict"),
    [(19, 1, "ok"), (20, 0, "ok"), (189, 11, "BELOW THE FLOOR")],  # 95.0 %, 100 %, 94.5 %
)
def test_a_score_exactly_at_the_floor_passes_and_just_under_it_does_not(
    killed: int, survived: int, verdict: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = scope_rows(SCOPES[:1], _statuses(killed, survived))
    below = print_scopes(rows)
    assert below == ([] if verdict == "ok" else ["first"])
    line = next(line for line in capsys.readouterr().out.splitlines() if line.strip().startswith("first"))
    assert line.endswith(verdict)


def test_a_scope_with_an_unchecked_mutant_or_no_mutant_has_no_score() -> None:
    unchecked = {**_statuses(5, 0), "fakels.decoder.x_g__mutmut_1": "not checked"}
    with pytest.raises(NoScore, match="scope 'first': 1 mutant"):
        scope_rows(SCOPES[:1], unchecked)
    with pytest.raises(NoScore, match=re.escape("scope 'second': mutmut made no mutant matching engine.usage.*")):
        scope_rows(SCOPES, _statuses(5, 0))


def _root(tmp_path: Path, scopes: Any) -> Path:
    (tmp_path / SCOPES_PATH).parent.mkdir(parents=True)
    (tmp_path / SCOPES_PATH).write_text(json.dumps(scopes), encoding="utf-8")
    return tmp_path


def test_list_scopes_runs_nothing_and_prints_each_floor(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _root(tmp_path, {"scopes": [VALID]})
    assert main(["--root", str(root), "--list-scopes"]) == EXIT_OK
    assert capsys.readouterr().out.splitlines() == [
        f"{'core':<20} floor 95.0%  the core",
        f"{'':<20} fakels.decoder.*",
    ]
    assert not (root / "mutants").exists()


@pytest.mark.parametrize(
    ("scopes", "args", "message"),
    [
        ({"scopes": [VALID]}, ["--scope", "nope"], "unknown scope(s) nope; the scopes are: core"),
        ({"scopes": "x"}, [], "must be an object"),
        (None, [], "cannot read the scopes file"),
    ],
)
def test_a_bad_scope_choice_or_file_is_no_score(
    tmp_path: Path, scopes: Any, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path if scopes is None else _root(tmp_path, scopes)
    assert main(["--root", str(root), *args]) == EXIT_NO_SCORE
    err = capsys.readouterr().err
    assert err.startswith("mutmut_score: NO SCORE: ")
    assert message in err


@pytest.mark.static_check
def test_only_mutate_is_exactly_the_modules_of_the_scopes() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mutmut"]
    scoped = sorted(m.replace(".", "/") + ".py" for scope in load_scopes(ROOT / SCOPES_PATH) for m in scope.modules())
    assert sorted(config["only_mutate"]) == scoped
