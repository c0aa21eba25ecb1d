"""The pytest plugin end to end: a real inner pytest run (``pytester``) with the plugin loaded from
its ``pytest11`` entry point, against small deliberately built targets
(tests/support/broken_targets.py). Each run selects one or two cheap invariants."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conformance.plugin.plugin_support import FORGETS_FIELDS, IMPLEMENTS_NOTHING, RAISES, run_in_subprocess
from tests.conformance.plugin.plugin_support import run as _run

pytest_plugins = ["pytester"]

NO_COUNTERS = "python:tests.support.broken_targets:without_counters"


def _known(pytester: pytest.Pytester, *ids: str) -> Path:
    entries = "".join(f"  - id: {inv_id}\n    reason: broken on purpose\n" for inv_id in ids)
    return pytester.makefile(".yaml", known=f"known_failures:\n{entries}")


def test_collect_only_lists_one_item_per_invariant_with_stable_node_ids(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "--cascade-target", "reference", "--cascade-only", "wire", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK
    assert result.outlines[:4] == [f"cascade-conformance::WIRE-{n}" for n in (1, 2, 3, 4)]
    result.stdout.fnmatch_lines(["4 tests collected*"])


def test_items_are_selectable_by_keyword_and_node_id(pytester: pytest.Pytester) -> None:
    selected = _run(pytester, "--cascade-target", "reference", "--collect-only", "-q", "-k", "WIRE-2")
    assert selected.outlines[0] == "cascade-conformance::WIRE-2"
    selected.stdout.fnmatch_lines(["1/* tests collected (* deselected)*"])
    deselected = _run(
        pytester,
        "--cascade-target",
        "reference",
        "--cascade-only",
        "WIRE-1,WIRE-2",
        "--collect-only",
        "-q",
        "--deselect",
        "cascade-conformance::WIRE-1",
    )
    assert deselected.outlines[0] == "cascade-conformance::WIRE-2"


def test_a_failing_invariant_fails_with_statement_message_and_minimal_case(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "--cascade-target", FORGETS_FIELDS, "--cascade-only", "WIRE-1")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "WIRE-1: Every RPC of the cascade flow decodes field for field as real clients encode it." in out
    assert "decoded fields differ" in out
    assert "minimal counterexample:" in out
    assert "Traceback" not in out
    result.stdout.fnmatch_lines(["FAILED cascade-conformance::WIRE-1*"])


def test_a_listed_known_failure_is_xfail_and_a_listed_pass_fails_the_run(pytester: pytest.Pytester) -> None:
    known = _known(pytester, "WIRE-1", "WIRE-2")  # WIRE-1 fails on this target, WIRE-2 passes
    result = _run(
        pytester,
        "--cascade-target",
        FORGETS_FIELDS,
        "--cascade-only",
        "WIRE-1,WIRE-2",
        "--cascade-known-failures",
        str(known),
        "-rxf",
    )
    result.assert_outcomes(xfailed=1, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "XFAIL cascade-conformance::WIRE-1 - known failure (broken on purpose)*",
            "FAILED cascade-conformance::WIRE-2*",
        ]
    )
    assert "WIRE-2 is listed as a known failure (broken on purpose) but passes: remove it from the list" in (
        result.stdout.str()
    )


def test_a_known_failure_alone_is_a_green_run(pytester: pytest.Pytester) -> None:
    result = _run(
        pytester,
        "--cascade-target",
        FORGETS_FIELDS,
        "--cascade-only",
        "WIRE-1",
        "--cascade-known-failures",
        str(_known(pytester, "WIRE-1")),
    )
    result.assert_outcomes(xfailed=1)
    assert result.ret == pytest.ExitCode.OK


def test_not_checkable_is_a_skip_with_the_reason(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "--cascade-target", IMPLEMENTS_NOTHING, "--cascade-only", "wire-1", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED *not checkable on this target: it lacks ls.decode_request*"])


def test_a_target_that_errors_fails_saying_so(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "--cascade-target", RAISES, "--cascade-only", "WIRE-1")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "WIRE-1: the target errored (it crashed, hung or broke the protocol)" in out
    assert "this target crashes on every call" in out


def test_a_partial_pass_passes_and_shows_what_was_not_judged(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "--cascade-target", NO_COUNTERS, "--cascade-only", "IMG-3", "-rP", "--junitxml=j.xml")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*- Captured cascade-conformance call -*", "IMG-3 pass (partial: *not exposed*)"])
    junit = (pytester.path / "j.xml").read_text(encoding="utf-8")
    assert 'name="cascade_verdict" value="partial"' in junit


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--cascade-target", "nonsense", "ERROR: --cascade-target: 'nonsense' is not a target. *"),
        ("--cascade-target", "python:no.such.module:f", "ERROR: --cascade-target: *cannot import no.such.module*"),
        (
            "--cascade-only",
            "NOPE",
            "ERROR: --cascade-only: 'NOPE' is neither an invariant ID nor a family (families: WIRE, IMG, OFF, *)",
        ),
        ("--cascade-known-failures", "missing.yaml", "ERROR: --cascade-known-failures: *missing.yaml: cannot read*"),
    ],
)
def test_bad_options_are_one_usage_error_line(pytester: pytest.Pytester, option: str, value: str, message: str) -> None:
    pytester.makepyfile("def test_user(): pass")
    args = [option, value] if option == "--cascade-target" else ["--cascade-target", "reference", option, value]
    result = _run(pytester, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    everything = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in everything
    assert "INTERNALERROR" not in everything
    assert [line for line in result.errlines if line.strip()] == [result.errlines[0]], "exactly one line"


def test_options_without_a_target_are_a_usage_error(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "--cascade-only", "WIRE-1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --cascade-only needs --cascade-target: the suite runs only against a target"])


def test_without_a_target_the_plugin_adds_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_user(): pass")
    result = _run(pytester, "--collect-only", "-q")
    assert result.outlines[0].endswith("::test_user")
    result.stdout.fnmatch_lines(["1 test collected*"])
    assert not (pytester.path / ".cascade-cache").exists()


def test_hypothesis_storage_goes_to_the_cache_dir_not_the_working_directory(pytester: pytest.Pytester) -> None:
    # A fresh process: Hypothesis caches what it computed in memory, so only a new one writes storage.
    result = run_in_subprocess(pytester, "--cascade-target", "reference", "--cascade-only", "WIRE-1", timeout=120)
    result.assert_outcomes(passed=1)
    assert not (pytester.path / ".hypothesis").exists()
    assert {p.name for p in (pytester.path / ".cascade-cache").iterdir()} >= {"unicode_data"}


def test_a_thorough_runs_database_goes_to_the_example_db_and_nothing_to_the_default_storage(
    pytester: pytest.Pytester,
) -> None:
    # A randomized (thorough) run keeps its failing examples in Hypothesis's database, under the example db.
    result = _run(
        pytester,
        "--cascade-target",
        FORGETS_FIELDS,
        "--cascade-only",
        "WIRE-1",
        "--cascade-profile",
        "thorough",
        "--cascade-cache-dir",
        "elsewhere",
    )
    result.assert_outcomes(failed=1)
    assert any(p.is_file() for p in pytester.path.glob("reports/conformance/examples/*/hypothesis/**/*"))
    assert not (pytester.path / ".hypothesis").exists()
    assert not (pytester.path / ".cascade-cache").exists()


def test_the_suite_under_xdist_gives_the_serial_verdicts(pytester: pytest.Pytester) -> None:
    # Workers each load the target and collect the same items; verdicts must not depend on -n.
    pytester.makepyfile(test_users_own="def test_users_own() -> None:\n    assert 1 + 1 == 2\n")
    known = _known(pytester, "WIRE-1")  # fails: xfail; WIRE-2 passes; WIRE-3 is not checkable: skipped
    # Unshrunk: the verdicts are the point, and shrinking WIRE-1's failure twice was most of the time.
    args = (
        "--cascade-target",
        FORGETS_FIELDS,
        "--cascade-only",
        "WIRE-1,WIRE-2,WIRE-3",
        "--cascade-no-shrink",
        "--cascade-known-failures",
    )
    serial = _run(pytester, *args, str(known), "-rs")
    serial.assert_outcomes(passed=2, xfailed=1, skipped=1)
    pytester.syspathinsert(Path(__file__).resolve().parents[3])
    shutil.rmtree(pytester.path / "reports")  # the serial run's: the parallel run must write its own
    parallel = run_in_subprocess(pytester, "-n", "2", *args, str(known), "-rs", timeout=300)
    parallel.assert_outcomes(passed=2, xfailed=1, skipped=1)
    parallel.stdout.fnmatch_lines(["SKIPPED * not checkable on this target: it lacks ls.journal, ls.serve, ls.stop"])
    # The workers' verdicts and counts reach the controller's summary.
    summary = [
        "*= cascade-conformance =*",
        "WIRE-1  fail (* judged)",
        "WIRE-2  pass (* judged)",
        "WIRE-3  not checkable",
    ]
    parallel.stdout.fnmatch_lines(summary, consecutive=True)
    # One report of the whole run, written by the controller from the workers' verdicts.
    report = (pytester.path / "reports" / "conformance" / "report.md").read_text(encoding="utf-8")
    rows = [line.split(" | ")[:2] for line in report.splitlines() if line.startswith("| WIRE-")]
    assert rows == [["| WIRE-1", "known failure"], ["| WIRE-2", "pass"], ["| WIRE-3", "not checkable"]]


def test_the_plugin_loads_in_a_project_with_a_package_named_like_the_kits(pytester: pytest.Pytester) -> None:
    # The plugin is imported in every session of the environment: it must not import fakels (or
    # engine) at start-up, where the user's own package of that name would be found first.
    for package in ("fakels", "engine"):
        pytester.mkpydir(package)
    pytester.makepyfile(test_users_own="import fakels\n\ndef test_users_own() -> None:\n    assert fakels.__file__\n")
    result = run_in_subprocess(pytester, timeout=120)
    result.assert_outcomes(passed=1)
