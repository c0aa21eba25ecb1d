"""The committed generated modules are exactly what the pinned grpcio-tools makes from the .proto files."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakels.proto.generate import REPO_ROOT, generate, proto_files

# Compares files, runs nothing of fakels: never evidence that a mutation was caught.
pytestmark = pytest.mark.static_check


def test_committed_modules_match_a_fresh_generation(tmp_path: Path) -> None:
    generated = generate(tmp_path)
    assert generated, "protoc produced nothing"
    stale = [str(rel) for rel in generated if (REPO_ROOT / rel).read_bytes() != (tmp_path / rel).read_bytes()]
    assert not stale, f"regenerate with `python -m fakels.proto.generate`; out of date: {stale}"


def test_every_committed_module_has_a_proto_source(tmp_path: Path) -> None:
    generated = {str(rel) for rel in generate(tmp_path)}
    committed = {
        str(p.relative_to(REPO_ROOT))
        for p in (REPO_ROOT / "fakels" / "proto").rglob("*_pb2*.py*")
        if "__pycache__" not in p.parts
    }
    assert committed == generated, f"orphans: {sorted(committed - generated)}; missing: {sorted(generated - committed)}"
    assert len(proto_files()) == 4
