"""The example database: failing examples kept between runs, per target (``--example-db DIR``).

A run against a target keeps each invariant's failing cases (the minimal counterexamples its report saves
as case files) under a folder of that target's own; the next run against the same target replays them before
anything else, so a failure already known shows in seconds. A case that passes again is dropped when the
property passes afresh. Another target's entries are never read: each target has its folder, named by a
digest of the command-line words that reach it (``--target`` and its options), with those words beside the
cases in ``target.txt``. A kept CI cache of ``DIR`` carries the database from one CI run to the next.

Under the ``thorough`` profile (randomized), Hypothesis's own database lives in the target's folder too.
"""

from __future__ import annotations

import hashlib
import shlex
import shutil
from pathlib import Path

from conformance.cases import CaseFile, CaseFileError, read_case, write_case
from conformance.report import distinct_failures
from conformance.runner import Result, Status

_KEPT = (Status.FAIL, Status.ERROR)
_FIXED = (Status.PASS, Status.PARTIAL)


class ExampleDatabase:
    """The failing examples kept in ``directory`` for the target reached by ``target_words``."""

    def __init__(self, directory: Path, target_words: tuple[str, ...]) -> None:
        key = "\0".join(target_words) or "reference"
        self.folder = directory / hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
        self._target_words = target_words

    @property
    def hypothesis_folder(self) -> Path:
        """Where Hypothesis keeps its own database for this target (randomized runs only)."""
        return self.folder / "hypothesis"

    def cases(self, invariant: str) -> list[CaseFile]:
        """The kept failing cases of ``invariant``, oldest first; a file that is not a readable case file of
        that invariant (written by another kit version, or by hand) is dropped, never replayed."""
        kept: list[CaseFile] = []
        for path in sorted(self._invariant_folder(invariant).glob("*.json")):
            try:
                case = read_case(path)
            except CaseFileError:
                path.unlink()
                continue
            if case.invariant == invariant:
                kept.append(case)
            else:
                path.unlink()
        return kept

    def record(self, result: Result) -> None:
        """Keep what ``result`` says: its failures' cases replace the invariant's kept ones; a pass drops
        them (the failure is fixed); a verdict that judged nothing leaves them as they were."""
        folder = self._invariant_folder(result.invariant.id)
        if result.status in _FIXED:
            shutil.rmtree(folder, ignore_errors=True)
            return
        if result.status not in _KEPT:
            return
        failures = [f for f in distinct_failures(result) if f.case is not None]
        if not failures:
            return
        shutil.rmtree(folder, ignore_errors=True)
        for number, failure in enumerate(failures, start=1):
            assert failure.case is not None
            item = CaseFile(result.invariant.id, failure.case, message=failure.message, target_args=self._target_words)
            write_case(folder / f"{number:03d}.json", item)
        (self.folder / "target.txt").write_text(shlex.join(self._target_words) or "reference", encoding="utf-8")

    def _invariant_folder(self, invariant: str) -> Path:
        return self.folder / invariant.lower()
