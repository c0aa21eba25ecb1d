"""The pytest plugin's options: validated once at configure time (a usage error is one line, exit code
4, never a failure per item), and the collection they produce: one item per selected invariant
(``cascade-conformance::ID``) next to the user's own tests. No invariant runs here."""

from __future__ import annotations

import sys

import pytest

from conformance.options import HTTP_FLAGS, HttpFlag
from conformance.properties import properties
from tests.conformance.plugin.plugin_support import (
    CLOSES_LOUDLY,
    FAILS_TO_START,
    IMPLEMENTS_NOTHING,
    call_reports,
    collected,
    known_file,
    run,
)
from tests.support import plugin_targets

pytest_plugins = ["pytester"]


def _usage_error(result: pytest.RunResult) -> str:
    """The one line a usage error prints (asserting it is a usage error, alone, without a traceback)."""
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    lines = [line for line in result.errlines if line.strip()]
    assert len(lines) == 1, lines
    assert "Traceback" not in result.stdout.str()
    return lines[0]


# ---------------------------------------------------------------------------- without a target

OPTION_VALUES = [
    ("--cascade-only", "WIRE-1"),
    ("--cascade-known-failures", "known.yaml"),
    ("--cascade-no-shrink", None),
    ("--cascade-shrink-budget", "5"),
    ("--cascade-launch", "gw --port {port}"),
    ("--cascade-launch-cwd", "gw"),
    ("--cascade-launch-env", "A=1"),
    ("--cascade-ls-wiring", "spawn"),
    ("--cascade-api-key", "k"),
    ("--cascade-model", "m"),
    ("--cascade-ledger-path", "/v1/ledger"),
    ("--cascade-ready-timeout", "5"),
    ("--cascade-native-bridge", None),
    ("--cascade-store-limits", "max_messages=3"),
    ("--cascade-caller-scope", "none"),
    ("--cascade-read-scope", "query:user"),
]


@pytest.mark.parametrize(("option", "value"), OPTION_VALUES)
def test_a_suite_option_without_a_target_is_a_usage_error(
    pytester: pytest.Pytester, option: str, value: str | None
) -> None:
    args = [option] if value is None else [option, value]
    line = _usage_error(run(pytester, *args))
    assert line == f"ERROR: {option} needs --cascade-target: the suite runs only against a target"


def test_several_suite_options_without_a_target_are_named_together(pytester: pytest.Pytester) -> None:
    line = _usage_error(run(pytester, "--cascade-only", "WIRE-1", "--cascade-model", "m", "--cascade-api-key", "k"))
    assert line == (
        "ERROR: --cascade-only and --cascade-api-key and --cascade-model need --cascade-target: "
        "the suite runs only against a target"
    )


def test_without_a_target_only_the_users_tests_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_users_own="def test_users_own() -> None:\n    assert True\n")
    result = run(pytester, "--cascade-only=", "--cascade-profile", "thorough")  # empty: not given
    result.assert_outcomes(passed=1)
    assert [r.nodeid for r in call_reports(result)] == ["test_users_own.py::test_users_own"]
    assert collected(result) == ["test_users_own.py::test_users_own"]


def test_the_invariant_marker_is_declared(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.invariant(id): the catalogue invariant (e.g. WIRE-1) a test pins"])


# ---------------------------------------------------------------------------- bad options


def test_an_unknown_name_in_cascade_only_is_a_usage_error(pytester: pytest.Pytester) -> None:
    line = _usage_error(run(pytester, "--cascade-target", IMPLEMENTS_NOTHING, "--cascade-only", "WIRE-1,NOPE"))
    assert line.startswith("ERROR: --cascade-only: 'NOPE' is neither an invariant ID nor a family (families: WIRE, ")


def test_a_cascade_only_that_names_nothing_is_a_usage_error(pytester: pytest.Pytester) -> None:
    line = _usage_error(run(pytester, "--cascade-target", IMPLEMENTS_NOTHING, "--cascade-only", ""))
    assert line == (
        "ERROR: --cascade-only: the selection names no invariant: give IDs or families, comma-separated "
        "(e.g. IMG,SO-1), or leave the option out for every one"
    )


def test_a_target_that_is_not_one_is_a_usage_error_pointing_at_the_reference(pytester: pytest.Pytester) -> None:
    line = _usage_error(run(pytester, "--cascade-target", "nonsense"))
    assert line.startswith("ERROR: --cascade-target: 'nonsense' is not a target. Use python:PACKAGE.MODULE:FACTORY")
    assert line.endswith(", or reference (the kit's own reference, the default)")


def test_a_target_that_fails_to_start_is_a_usage_error(pytester: pytest.Pytester) -> None:
    line = _usage_error(run(pytester, "--cascade-target", FAILS_TO_START))
    assert line == "ERROR: --cascade-target: the target failed to start: the gateway did not answer on 127.0.0.1:9"


def test_a_gateway_that_ends_during_the_session_ends_it_with_exit_2(pytester: pytest.Pytester) -> None:
    target = "python:tests.support.plugin_targets:ends_mid_run"
    result = run(pytester, "--cascade-target", target, "--cascade-only", "WIRE-1,WIRE-2")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ["*stopped during WIRE-1: the gateway (gw --port 1) exited with code 5 during the run; its last words: 'bye'*"]
    )
    result.assert_outcomes()  # no verdict: neither invariant passed, failed or was skipped


@pytest.mark.parametrize(
    ("option", "value"),
    [
        (o, v)
        for o, v in OPTION_VALUES
        if o.removeprefix("--cascade-") not in ("only", "known-failures", "no-shrink", "shrink-budget")
    ],
)
def test_an_http_option_with_another_target_is_a_usage_error_naming_it(
    pytester: pytest.Pytester, option: str, value: str | None
) -> None:
    args = [option] if value is None else [option, value]
    # --collect-only: should the option be lost, the run must not go on to judge the reference.
    line = _usage_error(
        run(pytester, "--cascade-target", "reference", "--cascade-only", "WIRE-1", "--collect-only", *args)
    )
    assert (
        line
        == f"ERROR: --cascade-target: {option} applies only to an http:// target (--cascade-target http://HOST:PORT)"
    )


def test_the_launch_folder_is_relative_to_where_pytest_was_invoked(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        "--cascade-target",
        "http://127.0.0.1:0",
        "--cascade-launch",
        "my-gateway --port {port} {nope}",  # never started: the folder is checked first, then this placeholder
        "--cascade-launch-cwd",
        "nowhere",
        "--collect-only",
    )
    assert _usage_error(result) == f"ERROR: --cascade-target: --launch-cwd {pytester.path / 'nowhere'}: not a directory"


def test_an_unreadable_pinned_case_is_a_usage_error(pytester: pytest.Pytester) -> None:
    (pytester.path / "broken.json").write_text("{not json", encoding="utf-8")
    known = known_file(pytester, ("WIRE-1", "broken.json"))
    line = _usage_error(run(pytester, "--cascade-target", IMPLEMENTS_NOTHING, "--cascade-known-failures", known.name))
    assert line == (
        f"ERROR: --cascade-known-failures: {pytester.path / 'broken.json'}: not valid JSON: "
        "Expecting property name enclosed in double quotes at line 1"
    )


def test_a_known_failures_file_naming_an_unknown_invariant_is_a_usage_error(pytester: pytest.Pytester) -> None:
    known = pytester.makefile(".yaml", known="known_failures:\n  - id: NOPE-1\n    reason: r\n")
    line = _usage_error(run(pytester, "--cascade-target", IMPLEMENTS_NOTHING, "--cascade-known-failures", known.name))
    assert line == f"ERROR: --cascade-known-failures: {known}: 'NOPE-1' is not an invariant ID"


def test_a_missing_conformance_extra_is_a_usage_error_saying_what_to_install(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Neither importable: the extra is missing, so the suite's modules fail to import.
    monkeypatch.setitem(sys.modules, "openai", None)
    monkeypatch.setitem(sys.modules, "conformance.runner", None)
    line = _usage_error(run(pytester, "--cascade-target", IMPLEMENTS_NOTHING))
    assert line == (
        "ERROR: --cascade-target: needs the 'conformance' extra, which is not installed (missing: openai); "
        "install it with: pip install 'cascade-conformance[conformance]'"
    )


def test_an_import_error_of_the_suite_with_the_extra_installed_is_shown_as_it_is(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "conformance.runner", None)  # fails to import, the extra is there
    result = run(pytester, "--cascade-target", IMPLEMENTS_NOTHING)
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR  # a bug to report, not a usage error
    assert "INTERNALERROR> ModuleNotFoundError: import of conformance.runner halted; None in sys.modules" in (
        result.errlines
    )


# ---------------------------------------------------------------------------- collection


def test_the_suite_is_collected_once_after_the_users_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_users_own="def test_users_own() -> None:\n    assert True\n")
    result = run(pytester, "--cascade-target", IMPLEMENTS_NOTHING, "--cascade-only", "wire-2, WIRE-1", "--collect-only")
    assert result.ret == pytest.ExitCode.OK
    assert collected(result) == [
        "test_users_own.py::test_users_own",
        "cascade-conformance::WIRE-1",
        "cascade-conformance::WIRE-2",
    ]


def test_without_cascade_only_every_implemented_invariant_iscollected(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--cascade-target", IMPLEMENTS_NOTHING, "--collect-only")
    assert collected(result) == [f"cascade-conformance::{inv_id}" for inv_id in properties()]


@pytest.mark.parametrize("spec", ["reference", " Reference ", "REFERENCE"])
def test_the_reference_target_is_named_in_any_case(pytester: pytest.Pytester, spec: str) -> None:
    result = run(pytester, "--cascade-target", spec, "--cascade-only", "WIRE-1", "--collect-only")
    assert collected(result) == ["cascade-conformance::WIRE-1"]


def test_the_target_is_closed_when_the_run_ends(pytester: pytest.Pytester) -> None:
    before = len(plugin_targets.CLOSED)
    result = run(pytester, "--cascade-target", CLOSES_LOUDLY, "--cascade-only", "WIRE-1", "--collect-only")
    assert result.ret == pytest.ExitCode.OK
    assert len(plugin_targets.CLOSED) == before + 1


# ---------------------------------------------------------------------------- --help and argument parsing

SUITE_HELP = (
    "cascade-conformance: "
    "--cascade-target=CASCADE_TARGET run the Cascade conformance suite against this target "
    "(python:PKG.MODULE:FACTORY, exec:COMMAND, http://HOST:PORT, or reference) "
    "--cascade-only=CASCADE_ONLY comma-separated invariant IDs or families, in any case (default: every implemented) "
    "--cascade-profile={ci,thorough} Hypothesis profile for the suite "
    "--cascade-known-failures=CASCADE_KNOWN_FAILURES JSON/YAML list of invariants expected to fail "
    "--cascade-no-shrink report each failure with the first example that showed it, unshrunk (sooner over a slow "
    "gateway) "
    "--cascade-shrink-budget=S seconds shrinking may take per invariant from its first failure, then the smallest "
    "case found so far is reported (default: 60 for exec: and http:// targets, no limit in process) "
    "--cascade-report=CASCADE_REPORT where the suite writes report.md, junit.xml and a case file per failure, as "
    "cascade-conformance run does (default: reports/conformance) "
    "--cascade-example-db=CASCADE_EXAMPLE_DB where failing examples are kept between runs, per target, and tried "
    "first, as cascade-conformance run --example-db does (default: REPORT/examples) "
    "--cascade-cache-dir=CASCADE_CACHE_DIR where Hypothesis keeps its storage while the suite runs "
    "(default: <rootdir>/.cascade-cache)"
)


def _pytest_usage(flag: HttpFlag) -> str:
    if flag.switch:
        return flag.option("pytest")
    value = flag.metavar or "{" + ",".join(flag.choices or ()) + "}"
    return f"{flag.option('pytest')}={value}"


# The http:// target options: the command line's, with the prefix, their help texts and order as the one table
# gives them (the command line's page in test_cli_pages.py spells them out).
HELP = " ".join([SUITE_HELP, *(f"{_pytest_usage(flag)} {' '.join(flag.help.split())}" for flag in HTTP_FLAGS)])


def test_help_documents_every_option_of_the_suite(pytester: pytest.Pytester) -> None:
    out = run(pytester, "--help").stdout.str()
    section = out[out.index("\ncascade-conformance:") : out.index("\n\n", out.index("\ncascade-conformance:") + 1)]
    assert " ".join(section.split()) == HELP


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--cascade-profile", "fast"),
            "argument --cascade-profile: invalid choice: 'fast' (choose from ?ci?, ?thorough?)",
        ),
        (
            ("--cascade-ls-wiring", "socket"),
            "argument --cascade-ls-wiring: invalid choice: 'socket' (choose from ?dial?, ?spawn?, ?none?)",
        ),
        (("--cascade-ready-timeout", "soon"), "argument --cascade-ready-timeout: invalid float value: 'soon'"),
        (
            ("--cascade-shrink-budget", "-1"),
            "argument --cascade-shrink-budget: expected a non-negative finite number of seconds, got '-1'",
        ),
        (
            ("--cascade-shrink-budget", "nan"),
            "argument --cascade-shrink-budget: expected a non-negative finite number of seconds, got 'nan'",
        ),
    ],
)
def test_a_value_outside_an_options_choices_is_a_usage_error(
    pytester: pytest.Pytester, args: tuple[str, ...], message: str
) -> None:
    result = run(pytester, "--cascade-target", IMPLEMENTS_NOTHING, *args, "--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*: error: {message}"])  # choices quoted or not, by Python version


def test_repeated_launch_options_reach_the_launch_check(pytester: pytest.Pytester) -> None:
    # Each --cascade-launch-env is one NAME=VALUE; the launch is checked before anything starts, and
    # stops here at the unknown placeholder (so no gateway is started).
    result = run(
        pytester,
        "--cascade-target",
        "http://127.0.0.1:0",
        "--cascade-launch",
        "my-gateway --port {port} {nope}",
        "--cascade-launch-env",
        "A=1",
        "--cascade-launch-env",
        "B={port}",
        "--cascade-api-key",
        "k1",
        "--cascade-launch-cwd",
        ".",
        "--collect-only",
    )
    assert _usage_error(result).startswith(
        "ERROR: --cascade-target: --launch: unknown placeholder {nope}; the placeholders are: {ls_address} ("
    )


def test_a_known_failures_file_is_read_relative_to_the_invocation_folder(pytester: pytest.Pytester) -> None:
    pytester.mkdir("sub")
    pytester.makeconftest("import os\n\nos.chdir('sub')\n")  # a project's conftest moving elsewhere
    known = known_file(pytester, ("WIRE-1", None))
    result = run(pytester, "--cascade-target", IMPLEMENTS_NOTHING, "--cascade-known-failures", known.name, "-rs")
    result.assert_outcomes(skipped=len(properties()))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--cascade-read-scope", "cookie:sid"),
            "--cascade-read-scope 'cookie:sid': expected header:NAME or query:NAME (e.g. --cascade-read-scope "
            "header:x-response-user or --cascade-read-scope query:user)",
        ),
        (
            ("--cascade-caller-scope", "none", "--cascade-read-scope", "query:u"),
            "--cascade-read-scope carries the caller's per-user signal, and --cascade-caller-scope none sends none",
        ),
    ],
)
def test_a_bad_scope_option_is_a_usage_error_in_the_plugins_words(
    pytester: pytest.Pytester, args: tuple[str, ...], message: str
) -> None:
    result = run(pytester, "--cascade-target", "http://127.0.0.1:1", *args, "--collect-only")
    assert _usage_error(result) == f"ERROR: --cascade-target: {message}"


def test_an_empty_api_key_among_the_repeated_ones_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        "--cascade-target",
        "http://127.0.0.1:0",
        "--cascade-launch",
        "my-gateway --port {port} {nope}",  # never started: the keys are checked first
        "--cascade-api-key",
        "k1",
        "--cascade-api-key",
        "",
        "--collect-only",
    )
    assert _usage_error(result) == "ERROR: --cascade-target: --cascade-api-key cannot be empty"
