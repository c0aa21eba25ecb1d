"""One front: ``cascade-conformance run`` and the pytest plugin, on the same target with the same options,
write the same reports (conformance/run_reports.py writes them for both): the same results.json, junit.xml,
report.md, case files and replay lines, but for when each ran, how long it took and the command line."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest

from conformance.cli import main
from tests.conformance.plugin.plugin_support import FORGETS_FIELDS
from tests.conformance.plugin.plugin_support import run as run_plugin

pytest_plugins = ["pytester"]

ONLY = "WIRE-1,WIRE-2,OFF-1"  # a failure, a pass and a not checkable verdict on ForgetsFields


def _results(folder: Path) -> dict[str, Any]:
    document = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    for key in ("command", "started"):
        document.pop(key)
    for entry in document["invariants"]:
        entry.pop("seconds")
        entry["waits"].pop("seconds")
    normalised: dict[str, Any] = json.loads(json.dumps(document).replace(str(folder), "REPORT"))
    return normalised


def _junit(folder: Path) -> list[tuple[str, list[tuple[str, str]], list[tuple[str, str]]]]:
    suite = ET.parse(folder / "junit.xml").getroot()
    return [
        (
            case.attrib["name"],
            [(p.attrib["name"], p.attrib["value"]) for p in case.iter("property")],
            [
                (child.tag, (child.text or "").replace(str(folder), "REPORT"))
                for child in case
                if child.tag != "properties"
            ],
        )
        for case in suite.iter("testcase")
    ]


def _markdown(folder: Path) -> list[str]:
    lines = (folder / "report.md").read_text(encoding="utf-8").replace(str(folder), "REPORT").splitlines()
    kept = [line for line in lines if not line.startswith(("- Command: ", "- Started: "))]
    return [re.sub(r"\| [0-9.]+ \|$", "| S |", line) for line in kept]  # the seconds column


def _cases(folder: Path) -> dict[str, Any]:
    return {
        path.name: json.loads(path.read_text(encoding="utf-8").replace(str(folder), "REPORT"))
        for path in sorted((folder / "cases").iterdir())
    }


def test_the_command_line_and_the_plugin_write_the_same_reports(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    cli, plugin = pytester.path / "cli", pytester.path / "plugin"
    argv = ["run", "--target", FORGETS_FIELDS, "--only", ONLY, "--no-shrink", "--report", str(cli)]
    assert main(argv) == 1
    printed = capsys.readouterr().out
    outcome = run_plugin(
        pytester,
        "--cascade-target",
        FORGETS_FIELDS,
        "--cascade-only",
        ONLY,
        "--cascade-no-shrink",
        "--cascade-report",
        str(plugin),
    )
    outcome.assert_outcomes(passed=1, failed=1, skipped=1)
    assert _results(plugin) == _results(cli)
    assert _junit(plugin) == _junit(cli)
    assert _markdown(plugin) == _markdown(cli)
    assert _cases(plugin) == _cases(cli)
    assert _results(cli)["exit_code"] == 1
    # The replay line each front prints is the one both reports name.
    (failure,) = json.loads((cli / "results.json").read_text(encoding="utf-8"))["invariants"][0]["failures"]
    assert f"  replay: {failure['replay']}" in printed.splitlines()
    plugin_replay = failure["replay"].replace(str(cli), str(plugin))
    assert f"replay: {plugin_replay}" in outcome.outlines
    commands = {
        front: json.loads((folder / "results.json").read_text(encoding="utf-8"))["command"]
        for front, folder in (("cli", cli), ("plugin", plugin))
    }
    assert commands["cli"].endswith(" " + " ".join(argv))
    assert commands["plugin"].startswith("pytest ")
    assert f"--cascade-only {ONLY}" in commands["plugin"]
