"""The conformance share: which named engine mutations the product itself catches.

A spec's tests include unit tests that see the engine from inside; users only have
``cascade-conformance run`` pointed at their gateway. So each mutation of ``engine/`` is also put
into a disposable copy on its own and judged by ``python -m conformance.cli run --only <its
invariants>`` against the embedded reference (``--no-shrink``: the verdict, not the smallest case).
It is caught when one of its invariants is judged ``fail``; an ``error`` (the reference crashed or
hung) is red too, but it is not an invariant's verdict, so it does not count.

A mutation the suite cannot catch must say why in ``conformance_blind`` (what a black box cannot
see); one documented blind that the suite now catches is stale. Either mismatch misbehaves, as a
survivor does in the spec's own verdicts. The verdicts come from the kit's own report (its
``junit.xml``) of a run over the committed reference, after a baseline run of every invariant
involved has passed on the unmutated copy.
"""

from __future__ import annotations

import sys
import tempfile
import threading
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

from mutations._parallel import run_child
from mutations._tree import NoVerdict, applied, hermetic_env
from mutations.spec import Mutation, Spec

ENGINE_DIR = "engine/"
FAIL = "fail"
_GREEN = ("pass", "partial")


@dataclass(frozen=True)
class ConformanceBaseline:
    """The unmutated reference judged on every invariant an engine mutation names."""

    verdicts: dict[str, str]


@dataclass(frozen=True)
class ConformanceVerdict:
    spec: Spec
    mutation: Mutation
    verdicts: dict[str, str]
    """Invariant -> the kit's verdict on the mutated reference (``pass``, ``fail``, ``error``, ...)."""
    behaved: bool
    why: str = ""

    @property
    def caught(self) -> bool:
        return FAIL in self.verdicts.values()


def engine_mutations(specs: list[Spec]) -> list[tuple[Spec, Mutation]]:
    """Every named mutation of the reference engine, in spec order."""
    return [(spec, m) for spec in specs for m in spec.mutations if m.file.startswith(ENGINE_DIR)]


def involved_invariants(pairs: list[tuple[Spec, Mutation]]) -> tuple[str, ...]:
    return tuple(sorted({inv for _spec, m in pairs for inv in m.invariants}))


def run_baseline(
    invariants: tuple[str, ...], copy: Path, cancel: threading.Event, *, timeout_s: float
) -> ConformanceBaseline:
    verdicts = _judged(invariants, copy, timeout_s, cancel, what="the conformance baseline")
    red = {inv: v for inv, v in verdicts.items() if v not in _GREEN}
    if red:
        raise NoVerdict(
            f"the conformance baseline is red on the unmutated reference ({red}); no mutation's share can be judged"
        )
    return ConformanceBaseline(verdicts)


def run_mutation(
    spec: Spec, mutation: Mutation, copy: Path, cancel: threading.Event, *, timeout_s: float
) -> ConformanceVerdict:
    with applied(mutation, copy):
        verdicts = _judged(mutation.invariants, copy, timeout_s, cancel, what=mutation.name)
    return judge(spec, mutation, verdicts)


def judge(spec: Spec, mutation: Mutation, verdicts: dict[str, str]) -> ConformanceVerdict:
    failed = [inv for inv, v in verdicts.items() if v == FAIL]
    if failed and mutation.conformance_blind:
        why = (
            f"stale conformance_blind: cascade-conformance run now fails {', '.join(failed)}; drop conformance_blind "
            f"from {mutation.name} in {spec.path.name}"
        )
        return ConformanceVerdict(spec, mutation, verdicts, behaved=False, why=why)
    if not failed and not mutation.conformance_blind:
        judged = ", ".join(f"{inv} {v}" for inv, v in verdicts.items())
        why = (
            f"cascade-conformance run --only {','.join(mutation.invariants)} does not catch it ({judged}): extend "
            "the property or its strategy until it fails, or say in conformance_blind why a black box cannot see it"
        )
        return ConformanceVerdict(spec, mutation, verdicts, behaved=False, why=why)
    return ConformanceVerdict(spec, mutation, verdicts, behaved=True)


def verdict_line(v: ConformanceVerdict) -> str:
    mark = " " if v.behaved else "✗"
    word = "CAUGHT" if v.caught else "BLIND" if v.mutation.conformance_blind else "MISSED"
    judged = ", ".join(f"{inv} {verdict}" for inv, verdict in v.verdicts.items())
    line = f"{mark} {word:<10} {v.mutation.name}  [{judged}]"
    return line + (f"\n      ! {v.why}" if v.why else "")


def share_line(verdicts: list[ConformanceVerdict]) -> str:
    caught = sum(1 for v in verdicts if v.caught)
    share = 100.0 * caught / len(verdicts) if verdicts else 0.0
    blind = sum(1 for v in verdicts if not v.caught and v.mutation.conformance_blind)
    return (
        f"conformance share: {caught} of {len(verdicts)} engine mutation(s) caught by cascade-conformance run "
        f"({share:.0f} %); {blind} documented as blind to a black box"
    )


def _judged(
    invariants: tuple[str, ...], copy: Path, timeout_s: float, cancel: threading.Event, *, what: str
) -> dict[str, str]:
    """The kit's verdict per invariant from its own report of ``conformance.cli run`` in ``copy``."""
    with tempfile.TemporaryDirectory(prefix="cascade-mutations-conformance-") as tmp:
        report, log = Path(tmp) / "report", Path(tmp) / "run.log"
        command = [
            sys.executable,
            "-m",
            "conformance.cli",
            "run",
            "--only",
            ",".join(invariants),
            "--report",
            str(report),
            "--no-shrink",
        ]
        returncode = run_child(command, copy, hermetic_env(copy, Path(tmp)), timeout_s, cancel, log)
        output = log.read_text(encoding="utf-8", errors="replace")
        if returncode is None:
            raise NoVerdict(f"{what}: cascade-conformance run exceeded {timeout_s:.0f} s; raise --timeout")
        if returncode not in (0, 1):
            raise NoVerdict(
                f"{what}: cascade-conformance run ended with exit {returncode}; output ends:\n{output[-2000:]}"
            )
        verdicts = _junit_verdicts(report / "junit.xml", what)
    if sorted(verdicts) != sorted(invariants):
        raise NoVerdict(f"{what}: cascade-conformance run judged {sorted(verdicts)}, not {sorted(invariants)}")
    return {inv: verdicts[inv] for inv in invariants}


def _junit_verdicts(path: Path, what: str) -> dict[str, str]:
    try:
        suite = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError) as exc:
        raise NoVerdict(f"{what}: cascade-conformance run left no readable junit.xml ({exc})") from exc
    verdicts: dict[str, str] = {}
    for case in suite.iter("testcase"):
        # The status word, never the display line ("fail (2 distinct failures)", "pass (partial: ...)").
        status = case.find("properties/property[@name='status']")
        if status is None or not case.get("name"):
            raise NoVerdict(f"{what}: a test case in junit.xml has no name or status")
        verdicts[str(case.get("name"))] = str(status.get("value"))
    return verdicts
