"""Regenerate the Python modules for the Cascade ``.proto`` files.

The generated ``*_pb2.py`` / ``*_pb2.pyi`` / ``*_pb2_grpc.py`` files are committed so that
``pip install`` needs nothing beyond PyPI wheels; ``tests/test_proto_generation.py`` proves that
regenerating them with the pinned grpcio-tools reproduces the committed bytes.

Run ``python -m fakels.proto.generate`` from the repository root after editing a ``.proto``.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from importlib import resources
from pathlib import Path

PROTO_PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PROTO_PACKAGE_DIR.parent.parent
SERVICE_PROTO = Path("fakels/proto/exa/language_server_pb/language_server.proto")


def proto_files() -> list[Path]:
    """Every ``.proto`` file of the kit, relative to the repository root, sorted."""
    return sorted(p.relative_to(REPO_ROOT) for p in PROTO_PACKAGE_DIR.rglob("*.proto"))


def generate(out_dir: Path) -> list[Path]:
    """Run protoc (from grpcio-tools) over every ``.proto`` file into ``out_dir``.

    Returns the generated files relative to ``out_dir``.
    """
    from grpc_tools import protoc  # dev dependency: only needed when regenerating

    include = resources.files("grpc_tools") / "_proto"
    args = [
        "grpc_tools.protoc",
        f"--proto_path={REPO_ROOT}",
        f"--proto_path={include}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        *(str(p) for p in proto_files()),
    ]
    # Service stubs only for the file that declares the service.
    service_args = [
        "grpc_tools.protoc",
        f"--proto_path={REPO_ROOT}",
        f"--proto_path={include}",
        f"--grpc_python_out={out_dir}",
        str(SERVICE_PROTO),
    ]
    for call in (args, service_args):
        code = protoc.main(call)
        if code != 0:
            raise RuntimeError(f"protoc failed with exit code {code}: {' '.join(call)}")
    return sorted(p.relative_to(out_dir) for p in out_dir.rglob("*_pb2*.py*"))


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        for rel in generate(out):
            target = REPO_ROOT / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(out / rel, target)
            print(f"wrote {rel}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
