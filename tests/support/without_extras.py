"""Run a module as ``python -m`` would, in an interpreter where the extras' modules are missing.

    python tests/support/without_extras.py EXTRA MODULE [ARGS...]

Every module :data:`fakels.distribution.EXTRA_MODULES` lists for EXTRA (or for every extra, with
``all``) fails to import, as in an environment where ``pip install cascade-conformance`` ran
without that extra: the tests prove what works there and what says what to install.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import runpy
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

_DISTRIBUTION = Path(__file__).resolve().parents[2] / "fakels" / "distribution.py"


class _Missing(importlib.abc.MetaPathFinder):
    def __init__(self, names: set[str]) -> None:
        self._names = names

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname.partition(".")[0] in self._names:
            raise ModuleNotFoundError(f"No module named {fullname!r} (blocked by without_extras)", name=fullname)
        return None


def main() -> None:
    # Read from the file, not imported: importing fakels would import grpc, which imports grpc_tools
    # when it is there, before the block is in place.
    extra_modules: dict[str, tuple[str, ...]] = runpy.run_path(str(_DISTRIBUTION))["EXTRA_MODULES"]
    extra, module, *args = sys.argv[1:]
    names = {m for mods in extra_modules.values() for m in mods} if extra == "all" else set(extra_modules[extra])
    already = sorted(n for n in names if n in sys.modules)
    if already:
        raise SystemExit(f"without_extras: {', '.join(already)} imported before the block")
    sys.meta_path.insert(0, _Missing(names))
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
