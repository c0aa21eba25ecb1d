"""The Markdown report (conformance/report.py, report.md) on hand-built results: what was run, the
table of verdicts, what was not judged, every statement, and each distinct failure with its case, what
the fake and the target saw, and the command that replays it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.catalogue import CATALOGUE
from conformance.report import RunInfo, save_failure_cases, waiting_line, write_markdown
from conformance.runner import Failure, Result, Status
from tests.conformance.report.report_support import TARGET, failed

# --- the Markdown report -------------------------------------------------------------------------


def _markdown(
    results: list[Result], tmp_path: Path, target_spec: str | None = "python:engine", flags: str | None = None
) -> list[str]:
    """The report's lines; without ``flags`` the target needs no options besides ``--target``."""
    cases = save_failure_cases(results, tmp_path, TARGET)
    path = tmp_path / "deep" / "md" / "report.md"
    if flags is None:
        assert write_markdown(results, path, TARGET, target_spec, cases) == path
    else:
        assert write_markdown(results, path, TARGET, target_spec, cases, flags) == path
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n")
    return text.split("\n")[:-1]


def _section(lines: list[str], heading: str) -> list[str]:
    """The lines of one verdict's section: from its heading to the next section's (or the end)."""
    start = lines.index(heading)
    after = [i for i, line in enumerate(lines) if i > start and line.startswith("## ")]
    return lines[start : after[0] - 1 if after else len(lines)]


@pytest.mark.parametrize(
    ("shrunk", "cut_short", "heading"),
    [
        (True, False, "Minimal counterexample:"),
        (False, False, "Counterexample (as found, not shrunk):"),
        (False, True, "Smallest counterexample found before shrinking was cut short:"),
    ],
)
def test_the_case_heading_says_whether_the_case_was_shrunk_or_its_shrinking_cut_short(
    tmp_path: Path, shrunk: bool, cut_short: bool, heading: str
) -> None:
    failure = Failure(Status.FAIL, "wrong", {"n": 7}, {}, shrunk=shrunk, cut_short=cut_short)
    lines = _markdown([failed("SO-1", [failure])], tmp_path)
    assert [line for line in lines if "ounterexample" in line] == [heading]


def test_the_markdown_report_shows_the_table_and_each_failure_with_case_wire_and_replay(tmp_path: Path) -> None:
    failure = Failure(Status.FAIL, "two error frames, expected one", {"stream": True}, {"frames": ["data: é"]})
    results = [
        Result(CATALOGUE["WIRE-1"], Status.PASS, seconds=2.5, examples=40),
        Result(CATALOGUE["STORE-8"], Status.NOT_CHECKABLE, "it lacks store"),
        failed("SO-1", [failure], seconds=0.126, examples=7),
    ]
    results[0].refused, results[0].unjudged = 3, 2
    results[0].reasons = {"the target refused the input: 400 seed": 3, "no resume": 2}
    assert _markdown(results, tmp_path, flags=" --api-key 'k 1'") == [
        "# Conformance report",
        "",
        f"- Target: `{TARGET}`",
        "",
        "**3 invariant(s): 1 pass, 1 fail, 1 not checkable**",
        "",
        "| invariant | result | judged | refused | not judged | seconds |",
        "|---|---|---|---|---|---|",
        "| WIRE-1 | pass | 40 | 3 | 2 | 2.50 |",
        "| STORE-8 | not checkable | 0 | 0 | 0 | 0.00 |",
        "| SO-1 | fail | 7 | 0 | 0 | 0.13 |",
        "",
        "## SO-1: fail",
        "",
        f"> {CATALOGUE['SO-1'].statement}",
        "",
        "```",
        "two error frames, expected one",
        "```",
        "",
        "Minimal counterexample:",
        "",
        "```json",
        "{",
        '  "stream": true',
        "}",
        "```",
        "",
        "What the fake and the target saw (decoded):",
        "",
        "```json",
        "{",
        '  "frames": [',
        '    "data: é"',
        "  ]",
        "}",
        "```",
        "",
        "Replay exactly this case:",
        "",
        "```",
        f"cascade-conformance replay {tmp_path}/cases/so-1.json --target python:engine --api-key 'k 1'",
        "```",
        "",
        "## What was not judged",
        "",
        "- **WIRE-1** (pass): 40 judged, 3 refused, 2 not judged; not judged: the target refused the input: 400 seed "
        "(3 examples); no resume (2 examples)",
        "- **STORE-8** (not checkable): it lacks store",
        "",
        "## What each invariant states",
        "",
        f"- **WIRE-1** (pass): {CATALOGUE['WIRE-1'].statement}",
        f"- **STORE-8** (not checkable): {CATALOGUE['STORE-8'].statement}",
        f"- **SO-1** (fail): {CATALOGUE['SO-1'].statement}",
    ]


def test_results_without_distinct_failures_show_their_message(tmp_path: Path) -> None:
    results = [
        Result(CATALOGUE["WIRE-2"], Status.PARTIAL, "partial: journal not exposed by the target", examples=5),
        Result(CATALOGUE["SO-2"], Status.UNEXPECTED_PASS, "listed as a known failure (issue 7) but it passes"),
    ]
    lines = _markdown(results, tmp_path)
    # The unexpected pass (a failure of the run) comes before the partial pass.
    assert lines[lines.index("## SO-2: known failure passed") : lines.index("## What was not judged") - 1] == [
        "## SO-2: known failure passed",
        "",
        f"> {CATALOGUE['SO-2'].statement}",
        "",
        "```",
        "listed as a known failure (issue 7) but it passes",
        "```",
        "",
        "## WIRE-2: pass (partial: journal not exposed by the target)",
        "",
        f"> {CATALOGUE['WIRE-2'].statement}",
        "",
        "```",
        "partial: journal not exposed by the target",
        "```",
    ]


def test_a_known_failure_shows_its_case_and_replay_without_a_target(tmp_path: Path) -> None:
    known = Result(CATALOGUE["SO-3"], Status.KNOWN_FAILURE, "issue 9: frames reordered", {"n": 2}, {"frames": 2})
    lines = _markdown([known], tmp_path, target_spec=None)
    assert _section(lines, "## SO-3: known failure") == [
        "## SO-3: known failure",
        "",
        f"> {CATALOGUE['SO-3'].statement}",
        "",
        "```",
        "issue 9: frames reordered",
        "```",
        "",
        "Minimal counterexample:",
        "",
        "```json",
        "{",
        '  "n": 2',
        "}",
        "```",
        "",
        "What the fake and the target saw (decoded):",
        "",
        "```json",
        "{",
        '  "frames": 2',
        "}",
        "```",
        "",
        "Replay exactly this case:",
        "",
        "```",
        f"cascade-conformance replay {tmp_path}/cases/so-3.json",
        "```",
    ]


def test_each_distinct_failure_gets_a_heading_and_replays_its_own_case(tmp_path: Path) -> None:
    failures = [
        Failure(Status.FAIL, "5 images attached", {"turns": 3}, {}),
        Failure(Status.ERROR, "the target misbehaved: reset", None, {}),
        Failure(Status.FAIL, "bytes over the bound", {"turns": 1}, {}),
    ]
    lines = _markdown([failed("IMG-3", failures, Status.ERROR)], tmp_path)
    section = _section(lines, "## IMG-3: error (3 distinct failures)")
    assert section[4:] == [
        "### Failure 1 of 3 (fail)",
        "",
        "```",
        "5 images attached",
        "```",
        "",
        "Minimal counterexample:",
        "",
        "```json",
        "{",
        '  "turns": 3',
        "}",
        "```",
        "",
        "Replay exactly this case:",
        "",
        "```",
        f"cascade-conformance replay {tmp_path}/cases/img-3.json --target python:engine",
        "```",
        "",
        "### Failure 2 of 3 (error)",
        "",
        "```",
        "the target misbehaved: reset",
        "```",
        "",
        "### Failure 3 of 3 (fail)",
        "",
        "```",
        "bytes over the bound",
        "```",
        "",
        "Minimal counterexample:",
        "",
        "```json",
        "{",
        '  "turns": 1',
        "}",
        "```",
        "",
        "Replay exactly this case:",
        "",
        "```",
        f"cascade-conformance replay {tmp_path}/cases/img-3-3.json --target python:engine",
        "```",
    ]


def test_two_distinct_failures_are_numbered_one_of_two_and_two_of_two(tmp_path: Path) -> None:
    failures = [Failure(Status.FAIL, "no typed error", None, {}), Failure(Status.ERROR, "reset", None, {})]
    lines = _markdown([failed("SO-1", failures, Status.ERROR)], tmp_path)
    assert [line for line in lines if line.startswith("#")] == [
        "# Conformance report",
        "## SO-1: error (2 distinct failures)",
        "### Failure 1 of 2 (fail)",
        "### Failure 2 of 2 (error)",
        "## What each invariant states",
    ]


def test_no_replay_command_is_printed_for_cases_that_were_not_saved(tmp_path: Path) -> None:
    failures = [Failure(Status.FAIL, "a", None, {}), Failure(Status.FAIL, "b", {"turns": 1}, {})]
    result = failed("IMG-3", failures)
    for cases in ({}, {"IMG-3": [tmp_path / "x.json", tmp_path / "y.json"]}):
        text = write_markdown([result], tmp_path / "report.md", TARGET, "python:engine", cases).read_text()
        assert "Minimal counterexample:" in text
        assert "Replay exactly this case:" not in text


@pytest.mark.parametrize(("extra", "clipped"), [(-1, False), (0, False), (1, True)])
def test_long_json_is_cut_at_20000_characters_with_a_count_of_the_rest(
    tmp_path: Path, extra: int, clipped: bool
) -> None:
    case = {"k": "x" * (20000 - len('{\n  "k": ""\n}') + extra)}
    full = json.dumps(case, indent=2)
    assert len(full) == 20000 + extra
    result = failed("IMG-8", [Failure(Status.FAIL, "differs", case, {})])
    text = write_markdown([result], tmp_path / "report.md", TARGET, None, {}).read_text(encoding="utf-8")
    shown = full[:20000] + "\n... (1 more characters)" if clipped else full
    assert f"```json\n{shown}\n```\n" in text


def test_evidence_that_is_not_json_is_shown_as_text(tmp_path: Path) -> None:
    evidence = {"frame": b"\x00\x01", "at": Path("/tmp/x")}
    result = failed("WIRE-3", [Failure(Status.FAIL, "no gRPC status", None, evidence)])
    text = write_markdown([result], tmp_path / "report.md", TARGET, None, {}).read_text(encoding="utf-8")
    assert '{\n  "frame": "b\'\\\\x00\\\\x01\'",\n  "at": "/tmp/x"\n}' in text


@pytest.mark.parametrize(
    ("info", "lines"),
    [
        (
            RunInfo("0.1.0", "ci", None, True, None, "2026-12-03T12:00:00+00:00"),
            [
                "- Kit: cascade-conformance 0.1.0",
                "- Profile: ci (derandomized), shrinking on, the profile's examples per invariant",
                "- Started: 2026-12-03T12:00:00+00:00",
            ],
        ),
        (
            RunInfo("0.1.0", "ci", None, True, None, "2026-12-03T12:00:00+00:00", shrink_budget_s=60.0),
            [
                "- Kit: cascade-conformance 0.1.0",
                "- Profile: ci (derandomized), shrinking on (budget 60 s), the profile's examples per invariant",
                "- Started: 2026-12-03T12:00:00+00:00",
            ],
        ),
        (
            RunInfo("0.1.0", "ci", None, True, None, "2026-12-03T12:00:00+00:00", shrink_budget_s=0.5),
            [
                "- Kit: cascade-conformance 0.1.0",
                "- Profile: ci (derandomized), shrinking on (budget 0.5 s), the profile's examples per invariant",
                "- Started: 2026-12-03T12:00:00+00:00",
            ],
        ),
        (
            RunInfo("0.1.0", "thorough", 1234, False, 5, "2026-12-03T12:00:00+00:00", shrink_budget_s=60.0),
            [
                "- Kit: cascade-conformance 0.1.0",
                "- Profile: thorough (seed 1234), shrinking off, at most 5 examples per invariant",
                "- Started: 2026-12-03T12:00:00+00:00",
            ],
        ),
    ],
)
def test_the_report_says_what_was_run(tmp_path: Path, info: RunInfo, lines: list[str]) -> None:
    path = write_markdown([Result(CATALOGUE["WIRE-1"], Status.PASS)], tmp_path / "r.md", TARGET, None, {}, info=info)
    text = path.read_text(encoding="utf-8").splitlines()
    assert text[: 4 + len(lines)] == ["# Conformance report", "", f"- Target: `{TARGET}`", *lines, ""]


# --- waiting for the gateway ---------------------------------------------------------------------


def test_the_time_spent_waiting_for_the_gateway_is_shown_apart_per_invariant(tmp_path: Path) -> None:
    results = [
        Result(CATALOGUE["SO-1"], Status.PASS, seconds=30.0, examples=6, waits=4, waited_s=12.5),
        Result(CATALOGUE["SO-3"], Status.PASS, seconds=5.0, examples=6),
        Result(CATALOGUE["ACC-2"], Status.PASS, seconds=10.25, examples=6, waits=1, waited_s=0.25),
    ]

    def lines_of(chosen: list[Result]) -> list[str]:
        path = write_markdown(chosen, tmp_path / f"{len(chosen)}.md", TARGET, "http://127.0.0.1:8000", {})
        return path.read_text(encoding="utf-8").split("\n")

    lines = lines_of(results)
    start = lines.index("## Waiting for the gateway")
    assert lines[start : start + 6] == [
        "## Waiting for the gateway",
        "",
        "time: 45.2 s, of which 12.8 s waiting for the gateway (5 wait(s): rate limits and pace) and 32.5 s the "
        "kit's own.",
        "",
        "- **SO-1**: 4 wait(s), 12.5 s of 30.0 s",
        "- **ACC-2**: 1 wait(s), 0.2 s of 10.2 s",
    ]
    assert waiting_line(results[1:2]) is None  # no wait, no line (and no section)
    assert "## Waiting for the gateway" not in lines_of(results[1:2])


def test_the_header_starts_with_the_command_and_ends_with_the_exit_status_and_counts(tmp_path: Path) -> None:
    info = RunInfo(
        "0.1.0",
        "ci",
        None,
        True,
        None,
        "2026-12-03T12:00:00+00:00",
        interrupted="interrupted during SO-2: 1 of 2 finished",
        command="cascade-conformance run --target http://127.0.0.1:0 --launch-env 'A=1 2' --api-key k1",
    )
    results = [Result(CATALOGUE["SO-1"], Status.PASS), failed("SO-3", [Failure(Status.FAIL, "no", None, {})])]
    path = write_markdown(results, tmp_path / "r.md", TARGET, None, {}, info=info, callers="1 API key", exit_code=130)
    assert path.read_text(encoding="utf-8").splitlines()[:11] == [
        "# Conformance report",
        "",
        "- Command: `cascade-conformance run --target http://127.0.0.1:0 --launch-env 'A=1 2' --api-key k1`",
        f"- Target: `{TARGET}`",
        "- Callers: 1 API key",
        "- Kit: cascade-conformance 0.1.0",
        "- Profile: ci (derandomized), shrinking on, the profile's examples per invariant",
        "- Started: 2026-12-03T12:00:00+00:00",
        "- **Stopped early**: interrupted during SO-2: 1 of 2 finished; the invariants not listed below were not run",
        "",
        "**exit status 130: 2 invariant(s): 1 pass, 1 fail**",
    ]
