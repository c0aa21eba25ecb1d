"""``run --jobs``: how many worker processes judge invariants at once (light: the command line parses it)."""

from __future__ import annotations

import argparse
import os

AUTO = "auto"
# The default of --jobs when it is not given (as PYTEST_XDIST_AUTO_NUM_WORKERS is xdist's): CI can pin it.
JOBS_ENV = "CASCADE_CONFORMANCE_JOBS"
_SERIAL_KINDS = ("http", "exec")  # a foreign gateway may not take concurrent examples


def parse_jobs(text: str) -> str:
    """``--jobs``' value: ``auto`` or a whole number from 1."""
    if text == AUTO:
        return text
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of workers from 1, or auto; got {text!r}")
    return str(int(text))


def jobs_for(given: str | None, target_kind: str) -> int:
    """How many workers: ``given`` (a whole number, or ``auto``), else :data:`JOBS_ENV`'s value, else ``auto``
    in process and 1 for ``http://`` and ``exec:`` targets; ``auto`` is two per CPU (the properties wait on
    sockets, polls and a gateway's wait limit much of their time: on 2 CPUs the embedded reference's catalogue
    took 85.6 s serially, 47.7 s with 2 workers and 39.5 s with 4)."""
    if given is None:
        from_env = os.environ.get(JOBS_ENV, "").strip()
        if from_env:
            try:
                given = parse_jobs(from_env)
            except argparse.ArgumentTypeError as exc:
                raise ValueError(f"{JOBS_ENV}: {exc}") from None
        else:
            given = "1" if target_kind in _SERIAL_KINDS else AUTO
    return 2 * max(1, os.cpu_count() or 1) if given == AUTO else int(given)
