"""The catalogue is the one source of truth for all invariants of the design, implemented or not,
and names select from it in any case."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conformance.catalogue import CATALOGUE, FAMILIES, SelectionError, resolve
from conformance.properties import properties
from conformance.runner import select
from tests.support.registry import without_family

DESIGN = Path(__file__).resolve().parents[3] / "shared" / "design.md"


def test_the_catalogue_holds_every_invariant_of_the_design_in_family_order() -> None:
    counts = {family: sum(1 for inv in CATALOGUE.values() if inv.family == family) for family in FAMILIES}
    assert counts == {
        "WIRE": 4,
        "IMG": 8,
        "OFF": 5,
        "SO": 4,
        "ACC": 4,
        "STORE": 8,
        "ATT": 7,
        "TURN": 5,
        "SCOPE": 4,
        "REQ": 2,
    }
    assert len(CATALOGUE) == 51
    assert list(CATALOGUE) == [f"{family}-{n}" for family in FAMILIES for n in range(1, counts[family] + 1)]
    for inv_id, inv in CATALOGUE.items():
        assert inv.id == inv_id
        # An invariant from a defect the public gateways fixed names it (ACC-4 joined a seed's family).
        fixed = re.fullmatch(r"gateway-fixes\.md P\d+", inv.source) is not None
        if FAMILIES[inv.family].source == "gateway-fixes.md" or inv_id == "ACC-4":
            assert fixed, inv_id
        else:
            assert inv.source == FAMILIES[inv.family].source, inv_id
        assert inv.statement == " ".join(inv.statement.split()), f"{inv_id}: stray whitespace"


def _design_catalogue() -> dict[str, tuple[str, str]]:
    text = DESIGN.read_text(encoding="utf-8")
    section = text[text.index("## 4. Invariant catalogue") : text.index("## 5.")]
    found: dict[str, tuple[str, str]] = {}
    source, current = "", ""
    for line in section.splitlines():
        if heading := re.match(r"\*\*[A-Z]+ — .*\*\* \[(.*)\]$", line):
            source, current = heading.group(1), ""
        elif fixes := re.match(r"\*\*Beyond the seeds.*\*\* \[reference/(gateway-fixes\.md), .*\]$", line):
            source, current = fixes.group(1), ""
        elif item := re.match(r"- ([A-Z]+-\d+) \((P\d+)\) (.*)", line):  # one of the gateway fixes: it names its defect
            current = item.group(1)
            found[current] = (item.group(3), f"{source} {item.group(2)}")
        elif item := re.match(r"- ([A-Z]+-\d+) (.*)", line):
            current = item.group(1)
            found[current] = (item.group(2), source)
        elif line.startswith("  ") and current:
            statement, seed = found[current]
            found[current] = (f"{statement} {line.strip()}", seed)
        else:
            current = ""
    return found


@pytest.mark.skipif(not DESIGN.is_file(), reason="the design document lives beside the repository, not in it")
def test_statements_and_seeds_are_the_design_word_for_word() -> None:
    assert {i: (inv.statement, inv.source) for i, inv in CATALOGUE.items()} == _design_catalogue()


@pytest.mark.parametrize(
    ("name", "ids"),
    [
        ("img-3", ["IMG-3"]),
        ("Wire", ["WIRE-1", "WIRE-2", "WIRE-3", "WIRE-4"]),
        (" so ", ["SO-1", "SO-2", "SO-3", "SO-4"]),
        ("acc-2", ["ACC-2"]),
    ],
)
def test_names_resolve_in_any_case(name: str, ids: list[str]) -> None:
    assert resolve(name) == ids


def test_select_accepts_any_case_and_keeps_catalogue_order() -> None:
    chosen = [prop.invariant.id for prop in select(["off-2", "Wire-1", "wire-1", "IMG-3"])]
    assert chosen == ["WIRE-1", "IMG-3", "OFF-2"]
    assert [p.invariant.id for p in select(None)] == list(properties())


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "att",
            "ATT has no property yet: not yet implemented in this kit; implemented: WIRE, IMG, OFF, SO, ACC, STORE",
        ),
        ("Att-3", "ATT-3 has no property yet: not yet implemented in this kit; implemented: WIRE, IMG, OFF"),
        (
            "nope",
            "'nope' is neither an invariant ID nor a family (families: WIRE, IMG, OFF, SO, ACC, STORE, ATT, TURN, "
            "SCOPE, REQ)",
        ),
        ("wire-9", "'wire-9' is neither an invariant ID nor a family (WIRE has WIRE-1..WIRE-4; families: WIRE, IMG,"),
    ],
)
def test_names_without_a_property_or_outside_the_catalogue_are_one_line(
    name: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    without_family(monkeypatch, "ATT")
    with pytest.raises(SelectionError) as raised:
        select(["WIRE-1", name])
    assert str(raised.value).startswith(message)
    assert "\n" not in str(raised.value)
