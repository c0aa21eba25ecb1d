"""``cascade-mutations verify``: apply each named mutation in a disposable copy of the committed
tree, run only the spec's tests, and check that they catch it (or that a documented survivor
survives).

Verdicts are only given on trustworthy evidence: a clean tree, a green baseline with exactly the
declared pass count, every test run under every mutation, no setup or teardown errors and no skips
(a test that errors or skips under a mutation did not catch it), code imported from the copy and
no files changed behind the runner's back. Otherwise the run stops with exit 2. Static checks
(``static_check`` marker) are never run: they would fail on any edit to an anchored line.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from mutations.spec import STATIC_CHECK_MARKER, Mutation, Spec, static_problems

EXIT_OK, EXIT_MISBEHAVED, EXIT_NO_VERDICT = 0, 1, 2
_SNAPSHOT_SKIP = {".git", "__pycache__", ".hypothesis", ".pytest_cache", ".mypy_cache", ".ruff_cache"}


class NoVerdict(Exception):
    """The evidence is not trustworthy; no mutation may be called caught or survived."""


@dataclass(frozen=True)
class TestRun:
    exitstatus: int
    collected: int
    outcomes: dict[str, str]
    collect_errors: list[str]
    modules: dict[str, str | None]
    phase_errors: list[str] = field(default_factory=list)

    def with_outcome(self, outcome: str) -> list[str]:
        return sorted(n for n, o in self.outcomes.items() if o == outcome)

    @property
    def evidence(self) -> set[str]:
        """The tests whose outcome counts: xfail/xpass are documented gaps, not evidence."""
        return {n for n, o in self.outcomes.items() if o not in ("xfailed", "xpassed")}

    @property
    def errors(self) -> list[str]:
        """Tests with an error in setup or teardown, whatever their call phase did: an error is not a
        failure, even next to one (pytest reports a failed call with a broken teardown as both)."""
        return sorted({n for n, o in self.outcomes.items() if o.startswith("error")} | set(self.phase_errors))


@dataclass(frozen=True)
class Verdict:
    spec: Spec
    mutation: Mutation
    caught: bool
    failing: list[str]
    behaved: bool
    why: str = ""


@dataclass
class Outcome:
    verdicts: list[Verdict] = field(default_factory=list)

    @property
    def misbehaved(self) -> list[Verdict]:
        return [v for v in self.verdicts if not v.behaved]


def verify(
    specs: list[Spec],
    root: Path,
    known_invariants: set[str],
    *,
    keep_going: bool = False,
    timeout_s: float = 900.0,
    say: Callable[[str], None] = print,
) -> Outcome:
    """Run every mutation of every spec; raises NoVerdict when the evidence cannot be trusted."""
    _refuse_dirty(root)
    problems = [f"{s.path.name}: {p}" for s in specs for p in static_problems(s, root, known_invariants)]
    if problems:
        raise NoVerdict("the specs have static problems:\n  " + "\n  ".join(problems))
    outcome = Outcome()
    with _disposable_copy(root) as copy:
        for spec in specs:
            if not _verify_spec(spec, copy, outcome, keep_going, timeout_s, say) and not keep_going:
                break
    return outcome


def _verify_spec(
    spec: Spec, copy: Path, outcome: Outcome, keep_going: bool, timeout_s: float, say: Callable[[str], None]
) -> bool:
    say(f"{spec.path.name} ({spec.family}): baseline {' '.join(spec.tests)}")
    before = _snapshot(copy)
    baseline = _run_tests(spec, copy, timeout_s)
    _check_baseline(spec, baseline, copy)
    if _snapshot(copy) != before:
        raise NoVerdict(f"{spec.path.name}: the baseline run changed files in the copy; the tests have side effects")
    say(f"  baseline {len(baseline.with_outcome('passed'))} passed (spec expects {spec.expect_baseline_pass})")
    for mutation in spec.mutations:
        verdict = _verify_mutation(spec, mutation, copy, baseline, timeout_s)
        outcome.verdicts.append(verdict)
        say(_verdict_line(verdict))
        if _snapshot(copy) != before:
            raise NoVerdict(f"{mutation.name}: files in the copy changed after the mutation was restored")
        if not verdict.behaved and not keep_going:
            return False
    return True


def _verify_mutation(spec: Spec, mutation: Mutation, copy: Path, baseline: TestRun, timeout_s: float) -> Verdict:
    target = copy / mutation.file
    original = target.read_bytes()
    anchor = mutation.anchor.encode("utf-8")
    hits = original.count(anchor)
    if hits != 1:
        raise NoVerdict(f"{mutation.name}: the anchor occurs {hits} times in {mutation.file} (must be once)")
    try:
        target.write_bytes(original.replace(anchor, mutation.replacement.encode("utf-8"), 1))
        run = _run_tests(spec, copy, timeout_s)
    finally:
        target.write_bytes(original)
    if run.collect_errors or run.errors:
        raise NoVerdict(
            f"{mutation.name}: the mutated run had collection or setup errors (or errors in teardown), so it "
            f"proves nothing; an error is not a catch: {(run.collect_errors + run.errors)[:4]}"
        )
    if run.with_outcome("skipped"):
        raise NoVerdict(
            f"{mutation.name}: the mutated run skipped {run.with_outcome('skipped')[:4]}; a skip is not a catch"
        )
    if run.exitstatus not in (0, 1):
        raise NoVerdict(
            f"{mutation.name}: pytest ended the mutated run with exit {run.exitstatus} (interrupted, internal or "
            "usage error), so the outcomes are incomplete"
        )
    if run.evidence != baseline.evidence:
        missing = sorted(baseline.evidence - run.evidence)[:4]
        raise NoVerdict(f"{mutation.name}: the mutated run did not run the same tests (missing: {missing})")
    failing = run.with_outcome("failed")
    caught = bool(failing)
    why = ""
    behaved = caught == mutation.expect_caught
    if behaved and caught and mutation.expect_failing:
        named = [f for f in failing if any(f.startswith(prefix) for prefix in mutation.expect_failing)]
        if not named:
            behaved = False
            why = f"caught, but by none of the expected tests {list(mutation.expect_failing)}"
    if not behaved and not why:
        why = f"expected {'CAUGHT' if mutation.expect_caught else 'SURVIVED'}, got {'CAUGHT' if caught else 'SURVIVED'}"
    return Verdict(spec=spec, mutation=mutation, caught=caught, failing=failing, behaved=behaved, why=why)


def _verdict_line(v: Verdict) -> str:
    mark = " " if v.behaved else "✗"
    word = f"CAUGHT {len(v.failing)}" if v.caught else "SURVIVED"
    lines = [f"{mark} {word:<10} {v.mutation.name}  [{', '.join(v.mutation.invariants)}]"]
    lines += [f"      ↳ {name}" for name in v.failing[:4]]
    if len(v.failing) > 4:
        lines.append(f"      ↳ ... and {len(v.failing) - 4} more")
    if v.why:
        lines.append(f"      ! {v.why}")
    return "\n".join(lines)


# ---------------------------------------------------------------------- evidence


def _check_baseline(spec: Spec, run: TestRun, copy: Path) -> None:
    name = spec.path.name
    if run.collect_errors or run.errors or run.with_outcome("failed") or run.exitstatus != 0:
        bad = (run.collect_errors + run.errors + run.with_outcome("failed"))[:6]
        raise NoVerdict(
            f"{name}: the baseline is red (pytest exit {run.exitstatus}); every verdict would be meaningless: {bad}"
        )
    if run.with_outcome("skipped"):
        raise NoVerdict(f"{name}: the baseline skipped tests {run.with_outcome('skipped')[:4]}; a skip is not evidence")
    passed = len(run.with_outcome("passed"))
    if passed != spec.expect_baseline_pass:
        raise NoVerdict(
            f"{name}: the baseline passed {passed} tests but the spec expects {spec.expect_baseline_pass}; "
            "the suite changed or the spec is stale: update expect_baseline_pass after checking why"
        )
    for module, path in run.modules.items():
        if not (copy / module).is_dir():
            continue  # not part of the tree under test (e.g. the kit's own pytest plugin)
        if path is not None and not Path(path).resolve().is_relative_to(copy.resolve()):
            raise NoVerdict(
                f"{name}: the tests imported {module} from {path}, not from the copy; mutations would not be seen"
            )


def pytest_command(tests: tuple[str, ...], *options: str) -> list[str]:
    """The pytest command line of every run over a spec's selection: its tests, never the static
    checks (see :data:`mutations.spec.STATIC_CHECK_MARKER`), plus ``options``."""
    return [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-m",
        f"not {STATIC_CHECK_MARKER}",
        *options,
        *tests,
    ]


def _run_tests(spec: Spec, copy: Path, timeout_s: float) -> TestRun:
    with tempfile.TemporaryDirectory(prefix="cascade-mutations-summary-") as tmp:
        summary = Path(tmp) / "summary.json"
        env = hermetic_env(copy, Path(tmp), CASCADE_MUTATION_SUMMARY=str(summary))
        command = pytest_command(spec.tests, "-p", "mutations._summary_plugin", "-p", "mutations._netdeny_plugin")
        try:
            done = subprocess.run(
                command, cwd=copy, env=env, capture_output=True, text=True, timeout=timeout_s, check=False
            )
        except subprocess.TimeoutExpired:
            raise NoVerdict(
                f"{spec.path.name}: the test run exceeded {timeout_s:.0f} s; raise --timeout or fix the hang"
            ) from None
        if not summary.is_file():
            tail = (done.stdout + done.stderr)[-2000:]
            raise NoVerdict(f"{spec.path.name}: pytest wrote no summary (exit {done.returncode}); output ends:\n{tail}")
        data = json.loads(summary.read_text(encoding="utf-8"))
    if "CASCADE-MUTATIONS-NETWORK-DENIED" in done.stdout + done.stderr:
        raise NoVerdict(f"{spec.path.name}: a test tried to reach the network beyond loopback")
    return TestRun(
        exitstatus=data["exitstatus"],
        collected=data["collected"],
        outcomes=data["outcomes"],
        collect_errors=data["collect_errors"],
        modules=data["modules"],
        phase_errors=data.get("errors", []),
    )


def hermetic_env(copy: Path, tmp: Path, **extra: str) -> dict[str, str]:
    """The environment of a test run: imports from ``copy`` only, no user settings, and ``extra``."""
    return {
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"]),
        "HOME": str(tmp / "home-that-does-not-exist"),
        "TMPDIR": str(tmp),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TZ": "UTC",
        "NO_COLOR": "1",
        "PYTHONPATH": str(copy),
        "PYTHONDONTWRITEBYTECODE": "1",
        "HYPOTHESIS_PROFILE": "ci",
        "GRPC_VERBOSITY": "NONE",
        **extra,
    }


def _refuse_dirty(root: Path) -> None:
    try:
        status = subprocess.run(
            ["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise NoVerdict(f"{root} is not a git checkout the runner can read: {exc}") from exc
    if status.strip():
        listed = "\n  ".join(status.strip().splitlines()[:10])
        raise NoVerdict(
            "the tree has uncommitted changes; mutations run against the committed tree, so commit or stash "
            f"first:\n  {listed}"
        )


@contextmanager
def _disposable_copy(root: Path) -> Iterator[Path]:
    tmp = Path(tempfile.mkdtemp(prefix="cascade-mutations-"))
    copy = tmp / "repo"
    try:
        subprocess.run(
            ["git", "clone", "--quiet", "--local", "--no-hardlinks", str(root), str(copy)],
            capture_output=True,
            text=True,
            check=True,
        )
        yield copy
    except subprocess.CalledProcessError as exc:
        raise NoVerdict(f"could not make a disposable copy of {root}: {exc.stderr.strip()}") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _snapshot(tree: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(tree.rglob("*")):
        rel = path.relative_to(tree)
        if _SNAPSHOT_SKIP.intersection(rel.parts) or not path.is_file():
            continue
        digest.update(str(rel).encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()
