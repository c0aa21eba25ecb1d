"""``pip install cascade-conformance`` is fakels alone; the engine, the suite and the tests are
extras. Proved in interpreters where an extra's modules cannot be imported
(tests/support/without_extras.py): fakels plays a whole turn, and every entry point whose extra is
missing says in one line what to install, never a traceback."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

from fakels.distribution import DISTRIBUTION, EXTRA_MODULES, extra_problem, missing_modules

ROOT = Path(__file__).resolve().parents[1]
WITHOUT = [sys.executable, str(ROOT / "tests" / "support" / "without_extras.py")]


def _run(
    extra: str, module: str, *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*WITHOUT, extra, module, *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )


def test_fakels_plays_a_turn_with_no_extra_installed() -> None:
    done = _run("all", "fakels.cli", "demo")
    assert done.returncode == 0, done.stderr
    assert "OK: the turn completed with the predicted answer" in done.stdout
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("extra", "module", "args", "command"),
    [
        ("engine", "engine._entry", ["serve", "--ls-address", "127.0.0.1:1"], "cascade-engine"),
        ("conformance", "conformance._entry", ["run"], "cascade-conformance"),
        ("test", "mutations._entry", ["check"], "cascade-mutations"),
    ],
    ids=["cascade-engine", "cascade-conformance", "cascade-mutations"],
)
def test_an_entry_point_without_its_extra_says_what_to_install(
    extra: str, module: str, args: list[str], command: str
) -> None:
    done = _run(extra, module, *args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    missing = ", ".join(EXTRA_MODULES[extra])
    assert done.stderr == (
        f"{command}: needs the '{extra}' extra, which is not installed (missing: {missing}); "
        f"install it with: pip install '{DISTRIBUTION}[{extra}]'\n"
    )


def test_the_pytest_plugin_stays_out_of_the_way_without_the_suites_extra(tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text("def test_users_own() -> None:\n    assert 2 + 2 == 4\n")
    # Autoload off: the venv's other plugins (Hypothesis's) would import what the block hides. The
    # kit's plugin is loaded at start-up as its entry point would load it.
    env = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    plain = ["pytest", "-p", "conformance.pytest_plugin", "-p", "no:cacheprovider", "-q", str(tmp_path)]
    done = _run("conformance", *plain, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"^1 passed", done.stdout, re.MULTILINE), done.stdout

    done = _run("conformance", *plain, "--cascade-target", "reference", cwd=tmp_path, env=env)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "--cascade-target: needs the 'conformance' extra" in done.stderr
    assert f"pip install '{DISTRIBUTION}[conformance]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_this_environment_has_every_extra() -> None:
    assert {extra: missing_modules(extra) for extra in EXTRA_MODULES} == {extra: [] for extra in EXTRA_MODULES}
    assert extra_problem("conformance", "x") is None


def _requirement_names(extras: dict[str, list[str]], extra: str) -> set[str]:
    names: set[str] = set()
    for requirement in extras[extra]:
        name, _, rest = re.split(r"[\s<>=!~;]", requirement, maxsplit=1)[0].partition("[")
        if name == DISTRIBUTION:  # cascade-conformance[engine]: the other extra's requirements
            for inner in rest.rstrip("]").split(","):
                names |= _requirement_names(extras, inner)
        else:
            names.add(name.lower().replace("_", "-"))
    return names


@pytest.mark.static_check
@pytest.mark.parametrize("extra", sorted(EXTRA_MODULES))
def test_each_extras_modules_are_the_ones_its_requirements_install(extra: str) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = _requirement_names(project["optional-dependencies"], extra)
    owners = packages_distributions()
    provided = {dist.lower().replace("_", "-") for module in EXTRA_MODULES[extra] for dist in owners[module]}
    assert provided == wanted


@pytest.mark.static_check
def test_every_console_script_but_fakels_checks_its_extra_first() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["scripts"] == {
        "fakels": "fakels.cli:main",
        "cascade-engine": "engine._entry:main",
        "cascade-conformance": "conformance._entry:main",
        "cascade-mutations": "mutations._entry:main",
    }
    assert "dependencies" in project
    assert not {name for name in project["dependencies"] if re.match(r"(?i)pillow|pypdf|hypothesis|starlette", name)}


def test_loading_the_pytest_plugin_imports_none_of_the_suite() -> None:
    """pytest loads the plugin in every session of the environment: a session without
    --cascade-target must not pay for Hypothesis, the properties or the targets."""
    probe = (
        "import sys, conformance.pytest_plugin\n"
        "heavy = ('hypothesis', 'conformance.properties', 'conformance.runner', 'grpc', 'fakels')\n"
        "print(sorted(m for m in sys.modules if any(m == h or m.startswith(h + '.') for h in heavy)))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", f"imported at load time: {done.stdout.strip()}"


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["replay", "--help"], ["run", "--profile", "x"]])
def test_the_command_line_answers_help_and_usage_errors_without_importing_the_suite(argv: list[str]) -> None:
    """`cascade-conformance --help` and a usage error answer at once: the console script imports what
    parsing needs, never Hypothesis, grpc, the engine, the properties or the targets."""
    probe = (
        "import sys\n"
        "from conformance._entry import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('hypothesis', 'grpc', 'jsonschema', 'engine', 'openai', 'httpx', 'PIL', 'fakels.server',\n"
        "         'conformance.runner', 'conformance.properties', 'conformance.targets', 'conformance.report')\n"
        "found = sorted(m for m in sys.modules if any(m == h or m.startswith(h + '.') for h in heavy))\n"
        "print(found, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    imported = done.stderr.strip().splitlines()[-1]
    assert imported == "[]", f"imported before the command ran: {imported}"
