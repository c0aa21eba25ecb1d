"""GET / DELETE /v1/responses/{id} and GET /v1/responses/{id}/input_items through the whole gateway in process:
exact bodies, per-caller scope, and the paging parameters at their limits."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from fakels.server import FakeLSThread
from tests.engine.http.chat_exact_support import CSRF, play
from tests.engine.http.responses_exact_support import KEY_B, MODEL, gateway_client, headers, post, response_defaults
from tests.support.fake_ls import StartFakeLs

HINT = (
    "Stored responses are retained for a limited time and only for the caller that created them; a response "
    "created with store:false is never stored."
)
ITEMS: list[dict[str, Any]] = [
    {"type": "message", "id": "m1", "role": "user", "content": "one"},
    {"type": "message", "id": "m2", "role": "assistant", "content": "two"},
    {"type": "message", "id": "m3", "role": "user", "content": "three"},
]


@pytest.fixture
def fake(start_fake_ls: StartFakeLs) -> FakeLSThread:
    return start_fake_ls(csrf_token=CSRF)


@pytest.fixture
def client(fake: FakeLSThread) -> Iterator[TestClient]:
    with gateway_client(fake) as (_, test_client):
        yield test_client


def _error(message: str, param: str | None, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


def _not_found(response_id: str) -> dict[str, Any]:
    return _error(f"Response with id '{response_id}' not found. {HINT}", "response_id", "response_not_found")


def _stored(fake: FakeLSThread, client: TestClient) -> tuple[str, list[str]]:
    """A stored turn of three input messages and the answer: its id and its item ids in order."""
    play(fake, {"chunks": [{"text": "four"}]})
    body = post(client, {"model": MODEL, "input": ITEMS}).json()
    return body["id"], ["m1", "m2", "m3", body["output"][0]["id"]]


def _page(client: TestClient, response_id: str, query: str = "") -> Any:
    return client.get(f"/v1/responses/{response_id}/input_items{query}", headers=headers())


# ---------------------------------------------------------------------------------------------- GET


def test_retrieve_serves_the_stored_answer_with_the_stored_model_and_time(
    fake: FakeLSThread, client: TestClient
) -> None:
    play(fake, {"chunks": [{"text": "Hello"}]})
    created = post(
        client, {"model": MODEL, "input": "q", "instructions": "I", "temperature": 0.3, "metadata": {"k": "v"}}
    ).json()
    got = client.get(f"/v1/responses/{created['id']}", headers=headers())
    assert got.status_code == 200
    # what only the request knew (instructions, sampling, metadata) is not kept
    expected = {
        **created,
        "instructions": None,
        "temperature": None,
        "metadata": {},
        "usage": None,
    }
    assert got.json() == expected


def test_retrieve_keeps_the_announced_time_when_the_write_lands_seconds_later(
    fake: FakeLSThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The time a client was told is the time it reads back, even when the store's write lands in a later
    second (the store's clock jumps 5 s on every read here, so a write-time stamp would show)."""
    ticks = itertools.count(1_700_000_000, 5)
    with gateway_client(fake) as (gateway, client):
        assert gateway.store is not None
        monkeypatch.setattr(gateway.store, "_clock", lambda: float(next(ticks)))
        play(fake, {"chunks": [{"text": "Hello"}]})
        created = post(client, {"model": MODEL, "input": "q"}).json()
        got = client.get(f"/v1/responses/{created['id']}", headers=headers()).json()
    assert created["created_at"] == 1_700_000_000
    assert got["created_at"] == created["created_at"]


def test_retrieve_is_a_404_for_an_unknown_id_and_for_another_caller(fake: FakeLSThread, client: TestClient) -> None:
    response_id, _ = _stored(fake, client)
    for key, wanted in ((KEY_B, response_id), (None, "resp_unknown")):
        got = client.get(f"/v1/responses/{wanted}", headers=headers() if key is None else headers(key))
        assert (got.status_code, got.json()) == (404, _not_found(wanted))


def test_with_the_store_off_every_id_route_is_a_404(fake: FakeLSThread) -> None:
    with gateway_client(fake, store="off") as (_, client):
        for method, path in (
            ("GET", "/v1/responses/r1"),
            ("DELETE", "/v1/responses/r1"),
            ("GET", "/v1/responses/r1/input_items"),
        ):
            got = client.request(method, path, headers=headers())
            assert (got.status_code, got.json()) == (404, _not_found("r1")), (method, path)


# ------------------------------------------------------------------------------------------- DELETE


def test_delete_removes_the_callers_response_once(fake: FakeLSThread, client: TestClient) -> None:
    response_id, _ = _stored(fake, client)
    foreign = client.delete(f"/v1/responses/{response_id}", headers=headers(KEY_B))
    assert (foreign.status_code, foreign.json()) == (404, _not_found(response_id))
    deleted = client.delete(f"/v1/responses/{response_id}", headers=headers())
    assert (deleted.status_code, deleted.json()) == (200, {"id": response_id, "object": "response", "deleted": True})
    again = client.delete(f"/v1/responses/{response_id}", headers=headers())
    assert (again.status_code, again.json()) == (404, _not_found(response_id))
    assert client.get(f"/v1/responses/{response_id}", headers=headers()).status_code == 404


def test_delete_from_a_web_page_is_refused_and_deletes_nothing(fake: FakeLSThread, client: TestClient) -> None:
    response_id, _ = _stored(fake, client)
    refused = client.delete(f"/v1/responses/{response_id}", headers=headers(Origin="http://evil.example"))
    message = "requests carrying an Origin header (a web page) are refused"
    assert (refused.status_code, refused.json()) == (403, _error(message, None, "cross_origin"))
    assert client.get(f"/v1/responses/{response_id}", headers=headers()).status_code == 200


# -------------------------------------------------------------------------------------- input_items


def test_input_items_are_the_stored_items_verbatim_oldest_first(fake: FakeLSThread, client: TestClient) -> None:
    response_id, ids = _stored(fake, client)
    page = _page(client, response_id).json()
    assert [item["id"] for item in page["data"]] == ids
    assert page["data"][0] == {
        "type": "message",
        "id": "m1",
        "role": "user",
        "content": [{"type": "input_text", "text": "one"}],
    }
    assert {key: page[key] for key in ("object", "first_id", "last_id", "has_more")} == {
        "object": "list",
        "first_id": "m1",
        "last_id": ids[-1],
        "has_more": False,
    }
    assert _page(client, response_id, "?order=asc").json() == page


@pytest.mark.parametrize(
    ("query", "expected", "has_more"),
    [
        ("?order=desc", [3, 2, 1, 0], False),
        ("?limit=1", [0], True),
        ("?limit=3", [0, 1, 2], True),
        ("?limit=4", [0, 1, 2, 3], False),
        ("?limit=100", [0, 1, 2, 3], False),
        ("?after=m1", [1, 2, 3], False),
        ("?after=m1&limit=2", [1, 2], True),
        ("?order=desc&after=m3&limit=1", [1], True),
        ("?order=desc&after=m2", [0], False),
        ("?after=LAST", [], False),
    ],
)
def test_input_items_page_by_order_limit_and_after(
    fake: FakeLSThread, client: TestClient, query: str, expected: list[int], has_more: bool
) -> None:
    response_id, ids = _stored(fake, client)
    page = _page(client, response_id, query.replace("LAST", ids[-1])).json()
    want = [ids[index] for index in expected]
    assert [item["id"] for item in page["data"]] == want
    assert (page["first_id"], page["last_id"], page["has_more"]) == (
        want[0] if want else None,
        want[-1] if want else None,
        has_more,
    )


LIMIT = "'limit' must be an integer from 1 to 100"


@pytest.mark.parametrize(
    ("query", "message", "param"),
    [
        ("?order=newest", "'order' must be 'asc' or 'desc'", "order"),
        ("?limit=0", LIMIT, "limit"),
        ("?limit=101", LIMIT, "limit"),
        ("?limit=-1", LIMIT, "limit"),
        ("?limit=two", LIMIT, "limit"),
        ("?limit=", LIMIT, "limit"),
        ("?after=nope", "'after' names no item of response RID", "after"),
    ],
)
def test_input_items_refuse_bad_paging_parameters(
    fake: FakeLSThread, client: TestClient, query: str, message: str, param: str
) -> None:
    response_id, _ = _stored(fake, client)
    got = _page(client, response_id, query)
    assert (got.status_code, got.json()) == (400, _error(message.replace("RID", response_id), param))


def test_input_items_of_another_callers_response_are_a_404(fake: FakeLSThread, client: TestClient) -> None:
    response_id, _ = _stored(fake, client)
    got = client.get(f"/v1/responses/{response_id}/input_items", headers=headers(KEY_B))
    assert (got.status_code, got.json()) == (404, _not_found(response_id))


def test_retrieve_serves_the_stored_status_and_incomplete_reason(fake: FakeLSThread) -> None:
    with gateway_client(fake) as (gateway, client):
        assert gateway.store is not None
        answer = {"type": "message", "id": "a1", "role": "assistant", "content": "cut"}
        stored = [ITEMS[0], answer]
        assert gateway.store.put(
            "resp_x", stored, "caller-a", model="m-1", status="incomplete", incomplete_reason="max_output_tokens"
        ).stored
        body = client.get("/v1/responses/resp_x", headers=headers()).json()
        created_at = body["created_at"]
        assert isinstance(created_at, int)
        assert body == response_defaults(
            id="resp_x",
            created_at=created_at,
            status="incomplete",
            incomplete_details={"reason": "max_output_tokens"},
            model="m-1",
            output=[
                {
                    "type": "message",
                    "id": "a1",
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "cut", "annotations": []}],
                }
            ],
            store=True,
        )
