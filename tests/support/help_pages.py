"""Print the command line's help pages afresh into the test that pins them, after a change of an option's
help text (then read the diff: it is the change a user sees):

    python -m tests.support.help_pages

Rewrites ``TOP_HELP``, ``RUN_HELP``, ``REPLAY_HELP`` and ``HTTP_TARGET_OPTIONS`` of
tests/conformance/cli/test_cli_pages.py from the parser as it is, at 120 columns as the test reads them."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

PAGES = Path(__file__).resolve().parents[1] / "conformance" / "cli" / "test_cli_pages.py"
_GROUP = "http:// targets (docs"


def page(argv: list[str]) -> str:
    from conformance.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        main([*argv, "--help"])
    return out.getvalue()


def _block(name: str, text: str) -> str:
    return f'{name} = """\\\n{text}"""\n'


def _composed(name: str, text: str) -> str:
    head = text[: text.index(_GROUP)]
    return f'{name} = (\n    """\\\n{head}"""\n    + HTTP_TARGET_OPTIONS\n)\n'


def main() -> None:
    os.environ["COLUMNS"] = "120"
    run, replay = page(["run"]), page(["replay"])
    group = run[run.index(_GROUP) :]
    if replay[replay.index(_GROUP) :] != group:
        raise SystemExit("run and replay show different HTTP options: they must share one group")
    text = PAGES.read_text(encoding="utf-8")
    patterns = {
        r'TOP_HELP = """\\\n.*?"""\n': _block("TOP_HELP", page([])),
        r'HTTP_TARGET_OPTIONS = """\\\n.*?"""\n': _block("HTTP_TARGET_OPTIONS", group),
        r'RUN_HELP = \(\n    """\\\n.*?"""\n    \+ HTTP_TARGET_OPTIONS\n\)\n': _composed("RUN_HELP", run),
        r'REPLAY_HELP = \(\n    """\\\n.*?"""\n    \+ HTTP_TARGET_OPTIONS\n\)\n': _composed("REPLAY_HELP", replay),
    }
    for pattern, new in patterns.items():
        text = re.sub(pattern, new.replace("\\", "\\\\"), text, count=1, flags=re.S)
    PAGES.write_text(text, encoding="utf-8")
    print(f"rewrote {PAGES}")


if __name__ == "__main__":
    main()
