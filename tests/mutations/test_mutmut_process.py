"""``python -m mutations.explore`` and the ``mutmut run`` process: whatever mutmut leaves behind (its
fork server, when it stops early) is ended, and Ctrl-C reaches mutmut; with the stand-in ``mutmut``."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mutations.explore.score import EXIT_NO_SCORE, EXIT_OK, INTERRUPT_GRACE_S
from tests.support.standin_runs import make_tree, score


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return make_tree(tmp_path, monkeypatch)


def _plan_more(root: Path, **extra: object) -> None:
    path = root / "mutmut-plan.json"
    path.write_text(json.dumps(json.loads(path.read_text(encoding="utf-8")) | extra), encoding="utf-8")


def _running(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie waiting for init to reap it does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def _left_behind(root: Path) -> int:
    return int((root / "mutmut-left-behind.pid").read_text(encoding="utf-8"))


@pytest.mark.parametrize(("exit_code", "verdict"), [(1, EXIT_NO_SCORE), (0, EXIT_OK)])
def test_what_mutmut_leaves_running_is_ended(root: Path, exit_code: int, verdict: int) -> None:
    _plan_more(root, exit_code=exit_code, leave_behind=True)
    assert score(root) == verdict
    pid = _left_behind(root)
    deadline = time.monotonic() + 5
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(pid), f"mutmut's left-behind child {pid} still runs"


@pytest.fixture
def ctrl_c_raises() -> Iterator[None]:
    """Ctrl-C as at a terminal: a pytest-xdist worker ignores SIGINT (and a child would inherit that)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


@pytest.mark.usefixtures("ctrl_c_raises")
def test_ctrl_c_is_passed_on_to_mutmut(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _plan_more(root, stall_s=10 * INTERRUPT_GRACE_S)
    pressed: list[float] = []

    def press_ctrl_c_once_mutmut_runs() -> None:
        deadline = time.monotonic() + 60
        while not (root / "mutmut-calls.jsonl").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # the script is waiting on mutmut by now
        pressed.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    presser = threading.Thread(target=press_ctrl_c_once_mutmut_runs, daemon=True)
    presser.start()
    assert score(root) == EXIT_NO_SCORE
    presser.join()
    assert "interrupted: mutmut did not finish, so there is no score" in capsys.readouterr().err
    # mutmut stopped on the SIGINT itself, well before the grace period would have ended it.
    assert time.monotonic() - pressed[0] < INTERRUPT_GRACE_S / 2


def test_mutmut_runs_with_a_fixed_hash_seed(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # mutmut passes each mutant's tests as a set: the seed fixes their order, and so the verdicts.
    monkeypatch.delenv("PYTHONHASHSEED", raising=False)
    assert score(root) == EXIT_OK
    assert (root / "mutmut-hash-seed.txt").read_text(encoding="utf-8") == "0"


def test_a_hash_seed_the_caller_chose_is_kept(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONHASHSEED", "1234")
    assert score(root) == EXIT_OK
    assert (root / "mutmut-hash-seed.txt").read_text(encoding="utf-8") == "1234"
