"""The replay command a report prints reaches the same target: an HTTP target's launch and wiring
options travel with it, in the Markdown report as on the console."""

from __future__ import annotations

import shlex
from pathlib import Path

from conformance.catalogue import CATALOGUE
from conformance.report import replay_command, replay_for, save_failure_cases, write_markdown
from conformance.runner import Failure, Result, Status

FLAGS = " " + shlex.join(["--launch", "my-gateway --port {port}", "--ls-wiring", "spawn", "--api-key", "k 1"])


def test_replay_command_carries_the_target_flags() -> None:
    command = replay_command(Path("cases/so-1.json"), "http://127.0.0.1:0", FLAGS)
    assert shlex.split(command) == [
        "cascade-conformance", "replay", "cases/so-1.json", "--target", "http://127.0.0.1:0",
        "--launch", "my-gateway --port {port}", "--ls-wiring", "spawn", "--api-key", "k 1",
    ]  # fmt: skip
    assert replay_command(Path("c.json"), None) == "cascade-conformance replay c.json"


def test_the_markdown_report_replays_with_the_target_flags(tmp_path: Path) -> None:
    failure = Failure(Status.FAIL, "one typed error expected", {"stream": True}, {})
    result = Result(CATALOGUE["SO-1"], Status.FAIL, failure.message, failure.case, failures=[failure], examples=3)
    cases = save_failure_cases([result], tmp_path, "a gateway")
    report = write_markdown([result], tmp_path / "report.md", "a gateway", "http://127.0.0.1:0", cases, FLAGS)
    text = report.read_text(encoding="utf-8")
    assert replay_command(cases["SO-1"][0], "http://127.0.0.1:0", FLAGS) in text


def test_the_replay_of_a_targets_words_is_the_replay_of_its_spec_and_options() -> None:
    case = Path("my reports/cases/so-1.json")
    assert replay_for(case, ()) == replay_command(case, None)
    words = ("--target", "http://127.0.0.1:0", "--launch", "gw --port {port}", "--api-key", "k 1")
    assert replay_for(case, words, "prog") == replay_command(case, words[1], " " + shlex.join(words[2:]), "prog")
