"""The docs' tables derived from the catalogue, the properties and the HTTP options say what the code says:
the operations and HTTP-options tables of docs/adapters.md and every family's table in docs/invariants.md (print them
afresh with ``python -m tests.support.docs_tables``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.catalogue import FAMILIES
from conformance.options import docs_table
from tests.support.docs_tables import family_table, operations_table

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_the_adapters_page_has_the_operations_table_of_every_invariant() -> None:
    page = (DOCS / "adapters.md").read_text(encoding="utf-8")
    table = operations_table()
    assert table in page, f"docs/adapters.md: replace its operations table with\n{table}"


def test_the_adapters_page_has_the_table_of_every_http_option_with_its_one_help_text() -> None:
    page = (DOCS / "adapters.md").read_text(encoding="utf-8")
    table = docs_table()
    assert table in page, f"docs/adapters.md: replace its table of HTTP options with\n{table}"


@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_invariants_page_states_every_invariant_of_the_family(family: str) -> None:
    page = (DOCS / "invariants.md").read_text(encoding="utf-8")
    assert f"\n## {family}\n" in page, f"docs/invariants.md has no section '## {family}'"
    section = page.split(f"\n## {family}\n", 1)[1].split("\n## ", 1)[0]
    table = family_table(family)
    assert table in section, f"docs/invariants.md, section {family}: replace its table with\n{table}"
