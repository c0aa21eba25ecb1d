"""The docs' tables that are derived from the catalogue and the registered properties, rendered here
so tests can hold the pages to them (``docs/invariants.md``, the operations table of
``docs/adapters.md``). Regenerate a page's tables with ``python -m tests.support.docs_tables``."""

from __future__ import annotations

import re
from itertools import groupby

from conformance.catalogue import CATALOGUE, FAMILIES
from conformance.listing import over_http as http_support
from conformance.operations import HTTP_TARGET_OPERATIONS
from conformance.properties import Property, properties


def over_http(prop: Property) -> str:
    """Whether a black-box HTTP target can check ``prop``, and with what (``cascade-conformance list``'s
    words, options in backticks): ``no`` when it needs operations the needs column names."""
    checkable, note = http_support(prop)
    note = re.sub(r"(--[a-z][a-z-]*)", r"`\1`", note)
    if checkable:
        return f"yes, {note}" if note else "yes"
    return "no" if prop.missing(HTTP_TARGET_OPERATIONS) else f"no ({note})"


def _needs(prop: Property | None) -> str:
    if prop is None:
        return "not yet implemented"
    return ", ".join(f"`{need}`".replace("|", "` or `") for need in sorted(prop.needs))


def _over_http(prop: Property | None) -> str:
    return "—" if prop is None else over_http(prop)


def operations_table() -> str:
    """Invariants grouped by the operations their properties need (catalogue order), with whether a
    black-box HTTP target can check them."""
    registered = properties()
    rows = ["| invariants | operations their properties need | over HTTP |", "|---|---|---|"]
    keyed = [(inv_id, _needs(registered.get(inv_id)), _over_http(registered.get(inv_id))) for inv_id in CATALOGUE]
    for (_, needs, http), group in groupby(keyed, key=lambda row: (row[0].split("-")[0], row[1], row[2])):
        rows.append(f"| {_ids([inv_id for inv_id, _, _ in group])} | {needs} | {http} |")
    return "\n".join(rows)


def _ids(ids: list[str]) -> str:
    """``IMG-1..5`` for a run of consecutive numbers of one family, else the IDs one by one."""
    family = ids[0].split("-")[0]
    numbers = [int(i.split("-")[1]) for i in ids]
    if len(ids) > 2 and numbers == list(range(numbers[0], numbers[0] + len(ids))):
        return f"{family}-{numbers[0]}..{numbers[-1]}"
    return ", ".join(ids)


def family_table(family: str) -> str:
    registered = properties()
    rows = ["| ID | statement | needs | over HTTP |", "|---|---|---|---|"]
    for inv_id, inv in CATALOGUE.items():
        if inv.family == family:
            prop = registered.get(inv_id)
            statement = inv.statement.replace("|", "\\|")
            rows.append(f"| {inv_id} | {statement} | {_needs(prop)} | {_over_http(prop)} |")
    return "\n".join(rows)


def page() -> str:
    """docs/invariants.md's generated parts, in order: one heading and table per family."""
    return "\n\n".join(f"## {family}\n\n{family_table(family)}" for family in FAMILIES)


if __name__ == "__main__":  # print the tables to paste into the pages
    print(operations_table(), end="\n\n")
    for family in FAMILIES:
        print(f"## {family}\n\n{family_table(family)}\n")
