"""docs/ci.md holds to the kit: every YAML block parses and has the shape its CI reads (a GitHub workflow,
a GitLab job, a known-failures file the kit loads), every ``cascade-conformance`` command on the page parses
with the kit's own argument parser and passes its http:// target checks, and the job summary step writes its
table from a results.json the kit wrote."""

from __future__ import annotations

import dataclasses
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.cli import _parser, main
from conformance.errors import TargetSpecError
from conformance.known_failures import load_known_failures
from conformance.options import http_values
from conformance.report import kit_version
from conformance.targets import http_options

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "ci.md"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
_PROGRAM = "cascade-conformance"
NOTHING = "python:tests.support.broken_targets:implements_nothing"  # every invariant: not checkable, at once


def _blocks(language: str) -> list[str]:
    return [body for lang, body in _FENCE.findall(DOC.read_text(encoding="utf-8")) if lang == language]


def _documents() -> list[dict[str, Any]]:
    documents = [yaml.safe_load(block) for block in _blocks("yaml")]
    assert all(isinstance(document, dict) for document in documents), documents
    return documents


def _kind(document: dict[str, Any]) -> str:
    if "jobs" in document:
        return "github"
    if "known_failures" in document:
        return "known-failures"
    if any(isinstance(job, dict) and "script" in job for job in document.values()):
        return "gitlab"
    raise AssertionError(f"docs/ci.md: a YAML block that is no workflow, job or known-failures file: {document}")


def _github_steps(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [step for job in document["jobs"].values() for step in job["steps"]]


def _shell_scripts(document: dict[str, Any]) -> list[str]:
    """The shell text each step or job runs (a ``shell: python`` step is not shell)."""
    if _kind(document) == "github":
        return [step["run"] for step in _github_steps(document) if "run" in step and step.get("shell") != "python"]
    if _kind(document) == "gitlab":
        jobs = [job for job in document.values() if isinstance(job, dict) and "script" in job]
        return [
            line for job in jobs for key in ("before_script", "script", "after_script") for line in job.get(key, [])
        ]
    return []


# What the CI expands before the shell runs a matrix job's command: its first machine's values.
_MATRIX = {"${{ matrix.shard }}": "1", "$CI_NODE_INDEX": "1", "$CI_NODE_TOTAL": "4"}


def _kit_commands(script: str) -> list[str]:
    """The kit's command lines in a shell script, continuation lines (a trailing backslash) joined, a matrix
    job's variables as its first machine has them."""
    joined = script.replace("\\\n", " ")
    for variable, value in _MATRIX.items():
        joined = joined.replace(variable, value)
    return [line.strip() for line in joined.splitlines() if line.strip().startswith(f"{_PROGRAM} ")]


def _every_kit_command() -> list[str]:
    scripts = [script for document in _documents() for script in _shell_scripts(document)] + _blocks("sh")
    return [command for script in scripts for command in _kit_commands(script)]


def test_every_yaml_block_parses_and_has_the_shape_its_ci_reads() -> None:
    documents = _documents()
    kinds = [_kind(document) for document in documents]
    assert sorted(kinds) == ["github", "github", "gitlab", "gitlab", "known-failures"], kinds
    for document in documents:
        if _kind(document) == "github":
            # YAML 1.1, which PyYAML reads, takes the key `on` for true; GitHub reads it as `on`.
            assert "name" in document, document
            assert {"on", True} & set(document), document
            for job in document["jobs"].values():
                assert job["runs-on"], job
                assert job["steps"], job
            for step in _github_steps(document):
                assert ("run" in step) != ("uses" in step), step
        if _kind(document) == "gitlab":
            for job in (job for job in document.values() if isinstance(job, dict)):
                assert isinstance(job["script"], list), job
                assert all(isinstance(line, str) for line in job["script"]), job


def test_each_workflow_runs_the_kit_and_keeps_what_the_page_says() -> None:
    for document in _documents():
        kind = _kind(document)
        if kind == "known-failures":
            continue
        commands = [command for script in _shell_scripts(document) for command in _kit_commands(script)]
        sharded = [shlex.split(command)[1] for command in commands] == ["run", "merge"]
        assert sharded or [shlex.split(command)[1] for command in commands] == ["run"], (kind, commands)
        words = shlex.split(commands[0])
        for option in ("--launch", "--known-failures", "--shard" if sharded else "--example-db", "--report"):
            assert option in words, (kind, option)
        text = yaml.safe_dump(document)
        kept_files = ("report.md", "junit.xml", "results.json", "cases/", "gateway-output.log", ".conformance-examples")
        for kept in ("reports/conformance",) if sharded and kind == "gitlab" else kept_files[: 4 if sharded else 6]:
            assert kept in text, (kind, kept)
    uses = {
        step["uses"].split("@")[0]
        for d in _documents()
        if _kind(d) == "github"
        for step in _github_steps(d)
        if "uses" in step
    }
    assert uses == {
        "actions/checkout",
        "actions/setup-node",
        "actions/setup-python",
        "actions/cache/restore",
        "actions/cache/save",
        "actions/upload-artifact",
        "actions/download-artifact",
    }


@pytest.mark.parametrize("command", _every_kit_command())
def test_every_kit_command_parses_with_the_kits_own_parser(command: str) -> None:
    words = shlex.split(command)
    assert words[0] == _PROGRAM
    try:
        args = _parser().parse_args(words[1:])
    except SystemExit:
        pytest.fail(f"docs/ci.md: the kit's parser refuses: {command}")
    if args.command == "merge":
        return  # no target: it reads the shards' folders
    try:
        options = http_options(args.target, **http_values(lambda flag: getattr(args, flag.dest)))
        if options is not None and options.launch is not None:
            port = int(args.target.rsplit(":", 1)[1])
            dataclasses.replace(options.launch, cwd=None).check(needs_port=port == 0)
    except TargetSpecError as exc:
        pytest.fail(f"docs/ci.md: {exc}: {command}")


def test_the_page_has_kit_commands_in_every_workflow_and_sh_block() -> None:
    assert len(_every_kit_command()) >= 4  # the command, the two workflows' runs, the replay


def test_the_known_failures_file_is_one_the_kit_loads(tmp_path: Path) -> None:
    for document in (d for d in _documents() if _kind(d) == "known-failures"):
        path = tmp_path / "known-failures.yaml"
        path.write_text(yaml.safe_dump(document), encoding="utf-8")
        for entry in document["known_failures"]:
            if "case" in entry:  # a case file saved from a report, pinned beside the list
                (tmp_path / entry["case"]).parent.mkdir(parents=True, exist_ok=True)
                (tmp_path / entry["case"]).write_text("{}", encoding="utf-8")
        assert set(load_known_failures(path)) == {entry["id"] for entry in document["known_failures"]}


def _summary_step() -> str:
    steps = [s for d in _documents() if _kind(d) == "github" for s in _github_steps(d) if s.get("shell") == "python"]
    assert len(steps) == 1, steps
    script: str = steps[0]["run"]
    return script


def test_the_job_summary_step_writes_every_verdict_from_results_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--target", NOTHING, "--only", "WIRE-1,OFF", "--report", "reports/conformance"]) == 1
    capsys.readouterr()
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    exec(compile(_summary_step(), str(DOC), "exec"), {})  # the page's own script, run as the runner runs it
    lines = summary.read_text(encoding="utf-8").splitlines()
    assert lines[0] == f"### Conformance of {NOTHING} (kit {kit_version()})"
    assert lines[1] == "6 not-checkable"
    assert lines[3:5] == ["| invariant | status | verdict |", "|---|---|---|"]
    assert lines[5:] == [
        f"| {inv} | not-checkable | not checkable |" for inv in ("WIRE-1", "OFF-1", "OFF-2", "OFF-3", "OFF-4", "OFF-5")
    ]


def test_the_job_summary_step_says_when_there_is_no_results_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    exec(compile(_summary_step(), str(DOC), "exec"), {})  # the page's own script, run as the runner runs it
    assert summary.read_text(encoding="utf-8") == (
        "No results.json: the run stopped before any verdict (the run step's log says why).\n"
    )


def test_the_readme_and_the_cli_page_link_the_ci_page() -> None:
    assert "(docs/ci.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert "(ci.md)" in (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
