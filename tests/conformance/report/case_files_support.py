"""Helpers for the tests of the kit's own files (known-failures lists, case files)."""

from __future__ import annotations

import locale
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def ascii_process_locale() -> Iterator[None]:
    """The process's character type locale as the plain ``C`` locale (ASCII), as on a machine whose
    locale is not UTF-8, restored afterwards. Files the kit reads and writes are UTF-8 regardless."""
    previous = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    try:
        yield
    finally:
        locale.setlocale(locale.LC_CTYPE, previous)
