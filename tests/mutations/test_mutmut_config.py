"""Static checks of the mutmut setup (no mutmut run): the [tool.mutmut] config, the committed
accepted-survivor list, and the score arithmetic of mutations/explore/score.py."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from mutations.explore.accepted import (
    ACCEPTED_PATH,
    Accepted,
    Survivor,
    changed_lines,
    function_of,
    parse_accepted,
    triage,
)
from mutations.explore.results import (
    Counts,
    NoScore,
    counts_from_cicd,
    counts_from_statuses,
    covered_score,
    mutation_score,
)
from mutations.spec import STATIC_CHECK_MARKER, static_check_files

ROOT = Path(__file__).resolve().parents[2]


def _mutmut_config() -> dict[str, Any]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    section = config["tool"]["mutmut"]
    assert isinstance(section, dict)
    return section


@pytest.mark.static_check
def test_mutmut_config_names_sources_and_in_process_tests() -> None:
    config = _mutmut_config()
    assert config["source_paths"], "source_paths must be set (mutmut's guess picks lib/ or src/)"
    for path in config["source_paths"]:
        assert (ROOT / path).is_dir(), path
    for pattern in config.get("only_mutate", []):
        assert pattern.endswith((".py", "*")), pattern
        assert list(ROOT.glob(pattern)), f"only_mutate pattern {pattern} matches no file"
    for selected in config["pytest_add_cli_args_test_selection"]:
        assert (ROOT / selected).exists(), f"selected test {selected} does not exist"
    for copied in config.get("also_copy", []):
        assert (ROOT / copied).exists(), f"also_copy entry {copied} does not exist"
    assert "paths_to_mutate" not in config, "deprecated: source_paths"
    assert "tests_dir" not in config, "deprecated: pytest_add_cli_args_test_selection"


@pytest.mark.static_check
def test_mutmut_never_runs_static_checks() -> None:
    """A static check fails on any edit to a line it reads: mutmut would count it as a kill."""
    config = _mutmut_config()
    args = config["pytest_add_cli_args"]
    assert ["-m", f"not {STATIC_CHECK_MARKER}"] in [args[i : i + 2] for i in range(len(args) - 1)], args
    for selected in config["pytest_add_cli_args_test_selection"]:
        assert static_check_files(selected, ROOT) == [], f"{selected} holds static checks"


@pytest.mark.static_check
def test_generated_protos_are_not_mutated_and_mutants_dir_is_never_collected() -> None:
    config = _mutmut_config()
    assert any(p.startswith("fakels/proto") for p in config["do_not_mutate"])
    pytest_ini = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    assert "mutants" in pytest_ini["norecursedirs"]
    assert pytest_ini["testpaths"] == ["tests"]


@pytest.mark.static_check
def test_accepted_survivor_list_parses_and_every_entry_has_a_reason() -> None:
    data = json.loads((ROOT / ACCEPTED_PATH).read_text(encoding="utf-8"))
    entries = parse_accepted(data)
    for entry in entries:
        words = entry.reason.split()
        assert len(words) >= 6, f"{entry.mutant}: the reason must say why it is harmless, not just label it"
        assert words[0].rstrip(":").upper() not in {"TODO", "TBD", "FIXME", "XXX"}, entry.mutant
        assert entry.mutant.startswith(tuple(f"{p}." for p in _mutmut_config()["source_paths"])), entry.mutant
    assert len({(e.mutant, e.removed, e.added) for e in entries}) == len(entries), "duplicate entries"


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"mutant": "fakels.journal.x_f__mutmut_*", "reason": "short"}, "reason"),
        ({"mutant": "fakels.journal.x_f__mutmut_3", "reason": "x" * 40}, "positional"),
        ({"mutant": "", "reason": "x" * 40}, "mutant"),
        ({"mutant": "fakels.journal.x_f__mutmut_*", "reason": "x" * 40, "note": 1}, "unknown keys"),
    ],
)
def test_bad_accepted_entries_are_refused(entry: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_accepted([entry])


CANNED_CICD = {
    "killed": 60,
    "survived": 20,
    "total": 100,
    "no_tests": 10,
    "skipped": 0,
    "suspicious": 0,
    "timeout": 5,
    "check_was_interrupted_by_user": 0,
    "segfault": 0,
}


def test_score_arithmetic_on_canned_stats() -> None:
    counts = counts_from_cicd(CANNED_CICD)
    # total 100 - listed 95: the 5 the CI/CD JSON has no field for are type-caught
    assert counts == Counts(killed=60, survived=20, no_tests=10, timeout=5, caught_by_type_check=5)
    assert counts.total == 100
    assert counts.detected == 70
    assert mutation_score(counts) == pytest.approx(0.70)  # 70 / 100: no-tests count against it
    assert covered_score(counts) == pytest.approx(70 / 90)


def test_skipped_leave_the_denominator_and_unverdicted_mutants_give_no_score() -> None:
    assert mutation_score(Counts(killed=3, survived=1, skipped=4)) == pytest.approx(0.75)
    partial = counts_from_cicd(CANNED_CICD, not_checked=5)
    assert (partial.not_checked, partial.caught_by_type_check) == (5, 0)
    assert mutation_score(partial) is None
    assert mutation_score(Counts(killed=9, segfault=1)) is None
    assert mutation_score(Counts()) is None


def test_cicd_stats_that_do_not_add_up_are_refused() -> None:
    with pytest.raises(NoScore, match="does not add up"):
        counts_from_cicd({**CANNED_CICD, "total": 90})
    with pytest.raises(NoScore, match="not a count"):
        counts_from_cicd({**CANNED_CICD, "killed": "60"})


def test_statuses_and_cicd_agree_on_the_same_run() -> None:
    statuses = ["killed"] * 60 + ["survived"] * 20 + ["no tests"] * 10 + ["timeout"] * 5
    statuses += ["caught by type check"] * 5
    assert counts_from_statuses(statuses) == counts_from_cicd(CANNED_CICD)


DIFF = """--- fakels/journal.py
+++ fakels/journal.py
@@ -1,3 +1,3 @@
 def read_jsonl(path):
-    return [json.loads(line) for line in lines if line.strip()]
+    return [json.loads(line) for line in lines if not line.strip()]"""


def test_survivors_match_by_function_and_changed_lines_not_by_number() -> None:
    removed, added = changed_lines(DIFF)
    assert removed == "return [json.loads(line) for line in lines if line.strip()]"
    survivor = Survivor("fakels.journal.x_read_jsonl__mutmut_12", removed, added, DIFF)
    assert function_of(survivor.name) == "fakels.journal.read_jsonl"
    assert function_of("fakels.journal.xǁJournalǁappend__mutmut_3") == "fakels.journal.Journal.append"
    pinned = Accepted("fakels.journal.x_read_jsonl__mutmut_*", "r" * 40, removed=f"  {removed}  ", added=added)
    other_line = Accepted("fakels.journal.x_read_jsonl__mutmut_*", "r" * 40, removed="return []", added=added)
    matched, unaccepted, unused = triage([survivor], [other_line, pinned])
    assert [(s.name, e) for s, e in matched] == [(survivor.name, pinned)]
    assert unaccepted == []
    assert unused == [other_line]


@pytest.mark.static_check
def test_the_selection_names_a_folder_for_test_modules_added_mid_run() -> None:
    """--resume takes a new test module only where mutmut collects it, and a changed selection resets
    every result: without a selected folder, a survivor found mid-run could only be killed afresh."""
    folders = [entry for entry in _mutmut_config()["pytest_add_cli_args_test_selection"] if not entry.endswith(".py")]
    assert folders == ["tests/mutmut_added/"]
    assert (ROOT / "tests/mutmut_added/__init__.py").is_file()
