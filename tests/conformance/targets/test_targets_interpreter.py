"""Which Python a launched gateway and an ``exec:`` adapter run: ``{python}`` is the kit's own interpreter,
a bare leading ``python`` or ``python3`` too unless an activated venv has it on the PATH, and a process
that dies on a module it cannot import gets an error saying which interpreter ran."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from conformance.errors import TargetError
from conformance.targets import ExecTarget, LaunchedGateway, LaunchSpec
from conformance.targets._interpreter import kit_python, missing_module_hint
from tests.conformance.targets import targets_support

echo_port = targets_support.echo_port
reaped = targets_support.reaped

HINT = (
    f"; the command ran {sys.executable}: is the module installed there? use {{python}} (the kit's own "
    "interpreter) or the venv's full path"
)
# A Python script that says which interpreter runs it, then waits to be stopped.
SAYS_WHICH = "import sys, time; print(sys.executable, flush=True); time.sleep(30)"


def _python_named(folder: Path, name: str, says: str) -> Path:
    """An executable ``folder/name`` that is not the kit's interpreter: it prints ``says`` and waits."""
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / name
    program.write_text(f"#!/bin/sh\necho {says}\nexec sleep 30\n", encoding="utf-8")
    program.chmod(0o755)
    return program


@pytest.fixture
def other_python(tmp_path: Path) -> Path:
    """A folder holding a ``python`` and a ``python3`` that are not the kit's (a system interpreter)."""
    folder = tmp_path / "system-bin"
    for name in ("python", "python3"):
        _python_named(folder, name, "the system python")
    return folder


# ---------------------------------------------------------------------- the resolution


@pytest.mark.parametrize("name", ["python", "python3"])
def test_a_bare_python_outside_a_venv_is_the_kits_interpreter(name: str, other_python: Path) -> None:
    assert kit_python(name, {"PATH": str(other_python)}) == sys.executable
    assert kit_python(name, {}) == sys.executable


@pytest.mark.parametrize("name", ["python", "python3"])
def test_a_bare_python_of_an_activated_venv_stays_the_venvs(name: str, tmp_path: Path, other_python: Path) -> None:
    venv = tmp_path / "gw-venv"
    _python_named(venv / "bin", name, "the venv python")
    env = {"VIRTUAL_ENV": str(venv), "PATH": f"{venv / 'bin'}:{other_python}"}
    assert kit_python(name, env) == name


def test_an_activated_venv_whose_path_finds_another_python_gives_the_kits(tmp_path: Path, other_python: Path) -> None:
    venv = tmp_path / "gw-venv"
    (venv / "bin").mkdir(parents=True)
    assert kit_python("python", {"VIRTUAL_ENV": str(venv), "PATH": str(other_python)}) == sys.executable


@pytest.mark.parametrize("program", ["python3.11", "/usr/bin/python3", "./python", "node", "pythonw"])
def test_any_other_program_is_left_as_given(program: str, other_python: Path) -> None:
    assert kit_python(program, {"PATH": str(other_python)}) == program


@pytest.mark.parametrize(
    "output",
    [
        "Traceback (most recent call last):\n  ...\nModuleNotFoundError: No module named 'starlette'\n",
        "/usr/bin/python3: No module named tests.support.foreigngw\n",
    ],
)
def test_a_missing_module_gets_the_hint_naming_the_interpreter(output: str, other_python: Path) -> None:
    hint = missing_module_hint(output, "python3", {"PATH": str(other_python)})
    assert hint == (
        f"; the command ran {other_python / 'python3'}: is the module installed there? use {{python}} (the kit's "
        "own interpreter) or the venv's full path"
    )
    assert missing_module_hint("ImportError: cannot import name 'x'", "python3", {}) == ""


# ---------------------------------------------------------------------- a launched gateway


def _said(gateway: LaunchedGateway) -> str:
    deadline = time.monotonic() + 10
    while not gateway.output() and time.monotonic() < deadline:
        time.sleep(0.01)
    return gateway.output().strip()


@pytest.mark.parametrize("wiring", ["dial", "spawn", "none"])
def test_the_python_placeholder_fits_every_wiring(wiring: str) -> None:
    way_in = {"dial": " {ls_address}", "spawn": " {ls_binary}", "none": ""}[wiring]
    LaunchSpec("{python} -m gw {port}" + way_in, env={"PY": "{python}"}, wiring=wiring).check(needs_port=True)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "command",
    [
        f'{{python}} -c "{SAYS_WHICH}"',
        f'python -c "{SAYS_WHICH}"',
        f'python3 -c "{SAYS_WHICH}"',
        'sh -c "exec $0 -c \\"$1\\"" {python} "' + SAYS_WHICH + '"',
    ],
    ids=["placeholder", "bare-python", "bare-python3", "placeholder-as-argument"],
)
def test_a_launched_python_is_the_kits_outside_a_venv(
    command: str, echo_port: int, other_python: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    env = {"PATH": f"{other_python}:/usr/bin:/bin"}
    spec = LaunchSpec(command, env=env, wiring="none", own_port=False)
    with LaunchedGateway(spec, host="127.0.0.1", port=echo_port) as gateway:
        assert _said(gateway) == sys.executable


def test_a_launched_bare_python_of_an_activated_venv_is_the_venvs(
    echo_port: int, tmp_path: Path, other_python: Path
) -> None:
    venv = tmp_path / "gw-venv"
    _python_named(venv / "bin", "python", "the venv python")
    env = {"VIRTUAL_ENV": str(venv), "PATH": f"{venv / 'bin'}:{other_python}:/usr/bin:/bin"}
    spec = LaunchSpec(f'python -c "{SAYS_WHICH}"', env=env, wiring="none", own_port=False)
    with LaunchedGateway(spec, host="127.0.0.1", port=echo_port) as gateway:
        assert _said(gateway) == "the venv python"


@pytest.mark.parametrize(
    ("program", "said"),
    [
        (
            '-c "import no_such_module_of_the_gateway"',
            "ModuleNotFoundError: No module named 'no_such_module_of_the_gateway'",
        ),
        ("-m no_such_module_of_the_gateway", f"{sys.executable}: No module named no_such_module_of_the_gateway"),
    ],
    ids=["import", "dash-m"],
)
def test_a_gateway_that_dies_on_a_missing_module_says_which_interpreter_ran(program: str, said: str) -> None:
    command = f"{{python}} {program} {{port}}"
    gateway = LaunchedGateway(LaunchSpec(command, wiring="none"), host="127.0.0.1", port=0)
    with pytest.raises(TargetError) as info:
        gateway.start()
    text = str(info.value)
    assert text.startswith(
        f"the gateway ({command}): exited with code 1 before it answered HTTP{HINT}; its output ends:\n"
    )
    assert text.endswith(said)


def test_a_gateway_that_dies_on_a_missing_module_during_the_run_says_which_interpreter_ran(
    echo_port: int, reaped: list[LaunchedGateway]
) -> None:
    command = '{python} -c "import time; time.sleep(0.5); import no_such_module_of_the_gateway"'
    gateway = LaunchedGateway(LaunchSpec(command, wiring="none", own_port=False), host="127.0.0.1", port=echo_port)
    reaped.append(gateway)
    with gateway:
        deadline = time.monotonic() + 10
        while gateway.exit_code() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        gone = gateway.gone()
    assert gone is not None
    assert gone.startswith(f"the gateway ({command}) exited with code 1 during the run; its last words: ")
    assert gone.endswith(f"{HINT} (all of it: gateway-output.log)")


# ---------------------------------------------------------------------- an exec: adapter


@pytest.mark.parametrize("command", ["{python} -m conformance.adapter", "python -m conformance.adapter"])
def test_an_adapter_started_with_python_runs_the_kits_interpreter(
    command: str, other_python: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.setenv("PATH", f"{other_python}:/usr/bin:/bin")
    target = ExecTarget.start(command, call_timeout_s=30)
    try:
        assert "engine.build_send_request" in target.operations()
        assert target.description.endswith(f"(exec:{sys.executable} -m conformance.adapter)")
    finally:
        target.close()


def test_an_adapter_that_dies_on_a_missing_module_says_which_interpreter_ran() -> None:
    command = '{python} -c "import no_such_module_of_the_adapter"'
    with pytest.raises(TargetError) as info:
        ExecTarget.start(command, call_timeout_s=5).close()
    text = str(info.value)
    assert text.startswith(
        f"exec:{sys.executable} -c 'import no_such_module_of_the_adapter': the adapter exited with 1 before "
        f"answering hello{HINT}; its stderr ends:\n"
    )
    assert text.endswith("ModuleNotFoundError: No module named 'no_such_module_of_the_adapter'")
