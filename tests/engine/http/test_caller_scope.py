"""Callers within one API key (engine/http/caller_scope.py): a per-user signal in the body (``user``,
``safety_identifier``, ``prompt_cache_key``, ``metadata.conversation_id`` / ``session_id``) or, on a
bodyless request, in ``X-Response-User`` or ``?user=`` narrows the key's caller, so the store, the cache
and the pool never cross end users; a blank signal is no signal."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from engine.http.caller_scope import body_signal, narrowed
from engine.http.front import Caller
from engine.http.gateway import ServedGateway
from fakels.server import FakeLSThread
from tests.engine.http.conftest import KEY_A, KEY_B, MODEL, play, sends

AUTH_A = {"Authorization": f"Bearer {KEY_A}"}


@pytest.mark.parametrize(
    ("body", "signal"),
    [
        ({"user": "alice"}, "alice"),
        ({"safety_identifier": "alice"}, "alice"),
        ({"prompt_cache_key": "alice"}, "alice"),
        ({"metadata": {"conversation_id": "c-1"}}, "c-1"),
        ({"metadata": {"session_id": "s-1"}}, "s-1"),
        ({"user": "alice", "prompt_cache_key": "other"}, "alice"),  # the first field named wins
        ({"user": "", "safety_identifier": "bob"}, "bob"),  # a blank one is no signal
        ({"user": "  \t"}, None),
        ({"user": 7}, None),
        ({"metadata": {"conversation_id": ""}}, None),
        ({"metadata": "c-1"}, None),
        ({}, None),
        ([], None),
    ],
)
@pytest.mark.invariant("SCOPE-1")
def test_the_body_signal_is_the_first_non_blank_string(body: Any, signal: str | None) -> None:
    assert body_signal(body) == signal


def test_a_signal_narrows_the_caller_and_none_leaves_it() -> None:
    key = Caller("key-1", scoped=True)
    assert narrowed(key, None) is key
    alice, bob = narrowed(key, "alice"), narrowed(key, "bob")
    assert alice.id.startswith("key-1/user-")
    assert "alice" not in alice.id  # the signal itself is never kept
    assert alice != bob
    assert narrowed(key, "alice") == alice
    assert narrowed(Caller("anonymous", scoped=False), "alice").scoped  # an end user of its own: cached


def _create(served: ServedGateway, body: dict[str, Any], key: str = KEY_A) -> str:
    answer = httpx.post(
        served.url + "/v1/responses",
        json={"model": MODEL, "input": "keep", **body},
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    return str(answer.json()["id"])


def _read(served: ServedGateway, entry: str, *, path: str = "", key: str = KEY_A, **sent: Any) -> int:
    headers = {"Authorization": f"Bearer {key}", **sent.pop("headers", {})}
    return httpx.get(served.url + f"/v1/responses/{entry}{path}", headers=headers, timeout=30, **sent).status_code


def test_an_entry_is_read_only_by_its_end_user_named_in_a_header_or_the_query(
    fake: FakeLSThread, served: ServedGateway
) -> None:
    play(fake, {"chunks": [{"text": "mine"}]})
    entry = _create(served, {"user": "alice"})
    for path in ("", "/input_items"):
        assert _read(served, entry, path=path, headers={"X-Response-User": "alice"}) == 200
        assert _read(served, entry, path=path, params={"user": "alice"}) == 200
        assert _read(served, entry, path=path) == 404  # the key alone is another caller
        assert _read(served, entry, path=path, headers={"X-Response-User": "bob"}) == 404
        assert _read(served, entry, path=path, params={"user": "bob"}) == 404
        assert _read(served, entry, path=path, key=KEY_B, headers={"X-Response-User": "alice"}) == 404
    bob = httpx.delete(served.url + f"/v1/responses/{entry}", headers={**AUTH_A, "X-Response-User": "bob"}, timeout=30)
    assert bob.status_code == 404
    alice = httpx.delete(served.url + f"/v1/responses/{entry}", params={"user": "alice"}, headers=AUTH_A, timeout=30)
    assert alice.status_code == 200


@pytest.mark.invariant("SCOPE-4")
def test_chaining_needs_the_same_end_user(fake: FakeLSThread, served: ServedGateway) -> None:
    play(fake, {"chunks": [{"text": "first"}]}, {"chunks": [{"text": "second"}]})
    entry = _create(served, {"metadata": {"conversation_id": "c-1"}})
    stolen = httpx.post(
        served.url + "/v1/responses",
        json={"model": MODEL, "input": "go on", "previous_response_id": entry, "user": "mallory"},
        headers=AUTH_A,
        timeout=30,
    )
    assert stolen.status_code == 404
    assert len(sends(fake)) == 1
    _create(served, {"previous_response_id": entry, "metadata": {"conversation_id": "c-1"}})
    assert len(sends(fake)) == 2


@pytest.mark.parametrize("blank", ["", "   "])
@pytest.mark.invariant("SCOPE-1")
def test_a_blank_user_is_the_key_alone(fake: FakeLSThread, served: ServedGateway, blank: str) -> None:
    play(fake, {"chunks": [{"text": "shared"}]})
    entry = _create(served, {"user": blank})
    assert _read(served, entry) == 200
    assert _read(served, entry, headers={"X-Response-User": "alice"}) == 404


def _chat(fake: FakeLSThread, served: ServedGateway, user: str | None) -> int:
    """One chat request as ``user``; how many turns reached the LS so far."""
    body: dict[str, Any] = {"model": MODEL, "messages": [{"role": "user", "content": "same question"}]}
    if user is not None:
        body["user"] = user
    answer = httpx.post(served.url + "/v1/chat/completions", json=body, headers=AUTH_A, timeout=30)
    assert answer.status_code == 200, answer.text
    return len(sends(fake))


@pytest.mark.invariant("SCOPE-1")
def test_the_cache_never_answers_another_end_user_of_the_key(fake: FakeLSThread, served: ServedGateway) -> None:
    play(fake, *[{"chunks": [{"text": f"answer {n}"}]} for n in range(3)])
    assert _chat(fake, served, "alice") == 1
    assert _chat(fake, served, "alice") == 1  # a hit for the same end user
    assert _chat(fake, served, "bob") == 2  # never alice's answer
    assert _chat(fake, served, None) == 3  # nor the key's own
