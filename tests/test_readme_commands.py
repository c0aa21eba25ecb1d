"""The README's first lines are the two commands a newcomer runs; CI runs the test command."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _commands() -> list[str]:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()[:12]
    return [line.strip() for line in lines if line.startswith("    ")]


def test_readme_starts_with_the_install_and_run_command_then_the_test_command() -> None:
    commands = _commands()
    assert len(commands) == 2, commands
    assert "pip install" in commands[0]
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert _commands()[1] in ci.splitlines()
