"""The disposable copies' common ground: the error that withholds every verdict, the hermetic
environment of a run in a copy, a copy's snapshot, and a mutation applied for the length of a run."""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mutations.spec import Mutation

_SNAPSHOT_SKIP = {".git", "__pycache__", ".hypothesis", ".pytest_cache", ".mypy_cache", ".ruff_cache"}


class NoVerdict(Exception):
    """The evidence is not trustworthy; no mutation may be called caught or survived."""


@contextmanager
def applied(mutation: Mutation, copy: Path) -> Iterator[None]:
    """``mutation`` written into ``copy`` for the length of the block, the file restored after."""
    target = copy / mutation.file
    original = target.read_bytes()
    anchor = mutation.anchor.encode("utf-8")
    hits = original.count(anchor)
    if hits != 1:
        raise NoVerdict(f"{mutation.name}: the anchor occurs {hits} times in {mutation.file} (must be once)")
    try:
        target.write_bytes(original.replace(anchor, mutation.replacement.encode("utf-8"), 1))
        yield
    finally:
        target.write_bytes(original)


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


def snapshot(tree: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(tree.rglob("*")):
        rel = path.relative_to(tree)
        if _SNAPSHOT_SKIP.intersection(rel.parts) or not path.is_file():
            continue
        digest.update(str(rel).encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()
