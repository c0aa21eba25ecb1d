"""``cascade-conformance list`` and ``operations``: the catalogue, what each property needs and which
kinds of target can check it; the adapter protocol's operations."""

from __future__ import annotations

import json
import textwrap

from conformance.catalogue import CATALOGUE, FAMILIES
from conformance.operations import HTTP_TARGET_OPERATIONS, OPERATIONS, PROTOCOL_VERSION, capability_schema
from conformance.properties import Property, properties

# The HTTP target offers gateway.ledger only where the gateway serves the ledger.
_LEDGER_OPTION = "--ledger-path"


def list_catalogue(width: int = 100) -> None:
    """Every invariant by family: its statement, then what its property needs and which targets can
    check it (or ``not yet implemented``), wrapped at ``width``."""
    registered = properties()
    indent = " " * 11
    for family in FAMILIES.values():
        print(f"{family.id}: {family.title} (docs/invariants.md#{family.id.lower()})")
        for inv_id, inv in CATALOGUE.items():
            if inv.family != family.id:
                continue
            prop = registered.get(inv_id)
            details = [f"needs: {prop.needs_text()}", target_kinds(prop)] if prop else ["not yet implemented"]
            for text, first in ((inv.statement, f"  {inv_id:<8} "), *((d, indent) for d in details)):
                print(wrap(text, width, first, indent))
    print(
        f"{len(CATALOGUE)} invariants: {len(registered)} implemented, "
        f"{len(CATALOGUE) - len(registered)} not yet implemented"
    )


def target_kinds(prop: Property) -> str:
    """Which kinds of target can check ``prop``: in-process and adapter targets can implement every
    operation; a black-box HTTP target, what :func:`over_http` says."""
    checkable, note = over_http(prop)
    http = ("http" if checkable else "not over http") + (f" ({note})" if note else "")
    return f"checkable on: python, exec, {http}"


def over_http(prop: Property) -> tuple[bool, str]:
    """Whether a black-box HTTP target can check ``prop``, and with what or why not: ``(True, "")``,
    ``(True, "with --native-bridge")``, ``(False, "needs ls.serve")`` (an operation no HTTP target
    offers), ``(False, "history-image counters not observable")`` (:class:`OverHttp`'s ``hidden``)."""
    missing = prop.missing(HTTP_TARGET_OPERATIONS)
    if missing:
        return False, f"needs {', '.join(need.replace('|', ' or ') for need in missing)}"
    if prop.over_http.hidden is not None:
        return False, f"{prop.over_http.hidden} not observable"
    ledger = [_LEDGER_OPTION] if any("gateway.ledger" in need for need in prop.needs) else []
    given = [*ledger, *([prop.over_http.given] if prop.over_http.given is not None else [])]
    return True, f"with {' and '.join(given)}" if given else ""


def wrap(text: str, width: int, first: str, rest: str) -> str:
    """Wrap at spaces only: a statement is never cut inside a word (nor at a hyphen)."""
    return textwrap.fill(
        text,
        width,
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,
        break_on_hyphens=False,
    )


def list_operations(as_json: bool) -> None:
    """The adapter protocol's operations, one line each; with ``as_json``, their JSON Schemas."""
    if as_json:
        document = {
            "protocol": PROTOCOL_VERSION,
            "operations": {
                name: {
                    "summary": op.summary,
                    "params": op.params,
                    "result": op.result,
                    "optional": list(op.optional),
                    "capabilities": capability_schema(op),
                }
                for name, op in OPERATIONS.items()
            },
        }
        print(json.dumps(document, indent=2))
        return
    for name, op in OPERATIONS.items():
        print(f"{name:<22} {op.summary}")
