"""How the HTTP target tells a read the gateway does not serve from a broken answer (issue 44), through
a real loopback server answering canned responses: 404, 405 and 501, and a 200 page that is no JSON
and does not claim to be (a catch-all route), decline the read; a 200 that claims JSON and does not
parse, or a 500, is a broken answer. A store whose entries its owner cannot read back by id is no
store the kit can judge; one that only declines ``input_items`` is judged through the wire
(tests/conformance/test_foreign_input_items.py runs that end to end)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from conformance.errors import PreconditionNotMet, TargetError
from conformance.targets import HttpOptions, HttpTarget
from conformance.targets._http_store import HttpStore, not_served
from conformance.targets._scope import Caller, CallerScope
from tests.conformance.targets.targets_support import Canned, canned_server

JSON = [("Content-Type", "application/json")]
HTML = [("Content-Type", "text/html; charset=utf-8")]
PAGE = b"<!doctype html><html><body>console</body></html>"
STORED = (200, JSON, b'{"id": "resp_1", "output": []}')


@pytest.mark.parametrize(
    ("canned", "declined"),
    [
        ((404, JSON, b'{"error": {"message": "Not found"}}'), True),
        ((405, [("Allow", "POST")], b""), True),
        ((501, JSON, b'{"error": {"message": "not implemented"}}'), True),
        ((200, HTML, PAGE), True),  # a catch-all route's page
        ((200, [], b"console"), True),  # no content type, no JSON
        ((200, JSON, b'{"data": [], "has_more": fa'), False),  # claims JSON, cut short: broken
        ((200, [("Content-Type", "application/vnd.api+json")], b"<html>"), False),
        ((200, JSON, b'{"data": [], "has_more": false}'), False),
        ((500, HTML, PAGE), False),
    ],
)
def test_a_read_is_declined_by_404_405_501_or_a_page_that_is_no_json(canned: Canned, declined: bool) -> None:
    with canned_server({("GET", "/read"): canned}) as (url, _received):
        target = HttpTarget(url, HttpOptions())
        try:
            answer = target._send("GET", "/read", Caller("k1", None))
        finally:
            target.close()
    assert not_served(answer) is declined


class _ScenarioSink:
    """The wired LS a put loads its answer into; these gateways are canned, so nothing reads it."""

    def reset(self) -> None:
        pass

    def load_scenario(self, document: dict[str, object]) -> None:
        pass


@contextmanager
def _store(answers: dict[tuple[str, str], Canned]) -> Iterator[HttpStore]:
    """A store (callers k1, k2; model m) over a loopback gateway answering ``answers``."""
    with canned_server(answers) as (url, _received):
        target = HttpTarget(url, HttpOptions())
        sink = _ScenarioSink()
        try:
            yield HttpStore(
                target._send,
                callers=[Caller("k1", None), Caller("k2", None)],
                model="m",
                limits={"max_messages": 400, "max_entry_bytes": 32 * 1024 * 1024},
                ls=lambda: sink,  # type: ignore[arg-type, return-value]
                describe=lambda what: f"the gateway: {what}",
                scope=CallerScope("none"),
            )
        finally:
            target.close()


@pytest.mark.parametrize(
    ("canned", "said"),
    [
        ((405, [("Allow", "POST")], b""), "answered 405"),
        ((501, JSON, b'{"error": {"message": "not implemented"}}'), "answered 501 (not implemented)"),
        ((200, HTML, PAGE), "answered 200 with a body that is not JSON (text/html; charset=utf-8: '<!doctype html>"),
    ],
)
def test_a_store_whose_owner_cannot_read_an_entry_back_by_id_is_no_store_to_judge(canned: Canned, said: str) -> None:
    answers = {("POST", "/v1/responses"): STORED, ("GET", "/v1/responses/resp_1"): canned}
    with _store(answers) as store, pytest.raises(PreconditionNotMet) as info:
        store.put([{"role": "user", "content": "keep me"}], 0, {"text": "t"})
    assert info.value.reason.startswith("the gateway serves no stored responses: GET /v1/responses/resp_1 " + said)
    assert "the STORE properties read what a store kept and served back there" in info.value.reason


def test_input_items_claiming_json_that_does_not_parse_are_an_error_not_a_declined_read() -> None:
    answers = {
        ("GET", "/v1/responses/cut/input_items?limit=100&order=asc"): (200, JSON, b'{"data": [{"id": "a"'),
        ("GET", "/v1/responses/cut"): STORED,
    }
    with _store(answers) as store, pytest.raises(TargetError) as info:
        store.get("cut", 0)
    assert str(info.value) == 'the gateway: GET /v1/responses/cut/input_items answered 200: {"data": [{"id": "a"'
