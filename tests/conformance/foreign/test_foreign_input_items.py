"""A gateway that does not serve ``GET /v1/responses/{id}/input_items`` is judged through the wire,
however it declines them (docs/adapters.md, "The operations an HTTP target implements"): a 404 (no
such route), a 405 (method not allowed), a 501 (not implemented), or a 200 page that is no JSON (a
catch-all route). foreigngw declines them as ``FGW_INPUT_ITEMS`` says, and each row runs the real
command line against it: STORE-1 is judged from the Send the gateway replays (a pass), STORE-2 is not
checkable because call ids are not in a prompt, and nothing is an ``error``.

Before issue 44 a 501 there made the target take the gateway for a broken one: every STORE example an
``error`` (the row for 501 fails with that defect re-introduced in ``conformance/targets/_http_store.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance.foreign.test_foreign_verdicts import FULL, NC, P, run

_ONLY = "STORE-1,STORE-2"


@pytest.mark.parametrize("declined", ["404", "405", "501", "page"])
def test_a_gateway_declining_input_items_is_judged_through_the_wire(
    declined: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, verdicts, out = run(tmp_path, capsys, _ONLY, f"FGW_INPUT_ITEMS={declined}", shrink=False, examples=4)
    assert verdicts == {"STORE-1": P, "STORE-2": NC} == {k: FULL["STORE"][k] for k in verdicts}, out
    assert "the ids of stored calls: not observable in the conversation the gateway replays" in out, out
    assert "error" not in verdicts.values(), out
    assert code == 0, out
