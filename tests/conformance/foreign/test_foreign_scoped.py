"""foreigngw's ``scoped`` personality, a public gateway at its defaults: cache, stored responses and
cascade reuse only for a caller with a per-user signal (a body's ``user``, ``safety_identifier``,
``prompt_cache_key`` or ``metadata`` ids; on a bodyless request the header or query parameter
``FGW_READ_SCOPE`` names), and an anonymous caller gets none of them and never sees another's."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from fakels.scenario import Usage
from fakels.server import FakeLSThread
from tests.conformance.foreign.test_foreign_gateway import (
    KEY_A,
    MODEL,
    ROOT,
    TOKEN,
    Gateway,
    launch,
    script,
    sends,
    text_turn,
)
from tests.support.fake_ls import StartFakeLs


@pytest.fixture(scope="module")
def fake(start_module_fake_ls: StartFakeLs) -> FakeLSThread:
    return start_module_fake_ls(csrf_token=TOKEN)


@pytest.fixture(scope="module")
def scoped(fake: FakeLSThread, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    gateway = launch(fake, tmp_path_factory.mktemp("fgw"), FGW_PERSONALITY="scoped", FGW_API_KEYS=KEY_A)
    yield gateway
    assert gateway.stop() == 0, gateway.log()


def _ask(gateway: Gateway, question: str, **scope: Any) -> dict[str, Any]:
    answer = gateway.chat({"messages": [{"role": "user", "content": question}], **scope})
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


@pytest.mark.parametrize(
    "scope",
    [
        {"user": "alice"},
        {"safety_identifier": "alice"},
        {"prompt_cache_key": "alice"},
        {"metadata": {"conversation_id": "c-1"}},
        {"metadata": {"session_id": "s-1"}},
    ],
)
def test_a_caller_with_a_signal_gets_the_cache(fake: FakeLSThread, scoped: Gateway, scope: dict[str, Any]) -> None:
    script(fake, text_turn("one"), text_turn("two"))
    question = f"cached for {scope}?"
    assert _ask(scoped, question, **scope)["choices"][0]["message"]["content"] == "one"
    assert _ask(scoped, question, **scope)["choices"][0]["message"]["content"] == "one"
    assert len(sends(fake)) == 1


@pytest.mark.parametrize("scope", [{}, {"user": ""}, {"user": "  "}, {"metadata": {"conversation_id": ""}}])
def test_an_anonymous_caller_gets_no_cache(fake: FakeLSThread, scoped: Gateway, scope: dict[str, Any]) -> None:
    script(fake, text_turn("one"), text_turn("two"))
    assert _ask(scoped, "anyone?", **scope)["choices"][0]["message"]["content"] == "one"
    assert _ask(scoped, "anyone?", **scope)["choices"][0]["message"]["content"] == "two"
    assert len(sends(fake)) == 2


def test_another_end_user_of_the_key_never_gets_a_cached_answer(fake: FakeLSThread, scoped: Gateway) -> None:
    script(fake, text_turn("for alice"), text_turn("for bob"))
    assert _ask(scoped, "whose?", user="alice")["choices"][0]["message"]["content"] == "for alice"
    assert _ask(scoped, "whose?", user="bob")["choices"][0]["message"]["content"] == "for bob"


def _store(gateway: Gateway, **scope: Any) -> str:
    answer = gateway.post("/v1/responses", {"model": MODEL, "input": "keep this", **scope})
    assert answer.status_code == 200, answer.text
    return str(answer.json()["id"])


def _read(gateway: Gateway, path: str, **headers: str) -> int:
    return gateway.client.get(path, headers={"Authorization": f"Bearer {KEY_A}", **headers}).status_code


def test_a_stored_response_is_read_only_by_its_end_user_in_the_read_header(fake: FakeLSThread, scoped: Gateway) -> None:
    script(fake, text_turn("stored"))
    entry = _store(scoped, user="alice")
    assert _read(scoped, f"/v1/responses/{entry}", **{"X-Response-User": "alice"}) == 200
    assert _read(scoped, f"/v1/responses/{entry}") == 404  # anonymous
    assert _read(scoped, f"/v1/responses/{entry}", **{"X-Response-User": "bob"}) == 404
    assert _read(scoped, f"/v1/responses/{entry}?user=alice") == 404  # not where this gateway reads it
    gone = scoped.client.delete(
        f"/v1/responses/{entry}", headers={"Authorization": f"Bearer {KEY_A}", "X-Response-User": "alice"}
    )
    assert gone.status_code == 200


def test_an_anonymous_callers_turn_is_never_stored_nor_chained(fake: FakeLSThread, scoped: Gateway) -> None:
    script(fake, text_turn("not kept"))
    entry = _store(scoped)
    assert _read(scoped, f"/v1/responses/{entry}") == 404
    chained = scoped.post("/v1/responses", {"model": MODEL, "input": "go on", "previous_response_id": entry})
    assert chained.status_code == 404
    assert len(sends(fake)) == 1


def test_reads_scoped_by_a_query_parameter(fake: FakeLSThread, tmp_path_factory: pytest.TempPathFactory) -> None:
    gateway = launch(
        fake, tmp_path_factory.mktemp("fgw"), FGW_PERSONALITY="scoped", FGW_API_KEYS=KEY_A, FGW_READ_SCOPE="query:uid"
    )
    try:
        script(fake, text_turn("stored"))
        entry = _store(gateway, prompt_cache_key="alice")
        assert _read(gateway, f"/v1/responses/{entry}?uid=alice") == 200
        assert _read(gateway, f"/v1/responses/{entry}?uid=bob") == 404
        assert _read(gateway, f"/v1/responses/{entry}", **{"X-Response-User": "alice"}) == 404
    finally:
        assert gateway.stop() == 0, gateway.log()


def test_a_cache_hit_without_usage_is_a_defect_switch(
    fake: FakeLSThread, tmp_path_factory: pytest.TempPathFactory
) -> None:
    gateway = launch(
        fake,
        tmp_path_factory.mktemp("fgw"),
        FGW_PERSONALITY="scoped",
        FGW_API_KEYS=KEY_A,
        FGW_DEFECTS="cache-hit-without-usage",
    )
    try:
        script(fake, text_turn("one", records=(Usage(input_tokens=11, output_tokens=7),)))
        first = _ask(gateway, "usage?", user="alice")["usage"]
        again = _ask(gateway, "usage?", user="alice")["usage"]
        assert first["total_tokens"] == 18
        assert again["total_tokens"] == 0  # the hit's usage is lost: ACC-2's defect
    finally:
        assert gateway.stop() == 0, gateway.log()


@pytest.mark.parametrize("value", ["cookie:sid", "header:", "query"])
def test_a_bad_read_scope_is_one_line_and_exit_2(value: str) -> None:
    env = {**os.environ, "FGW_PORT": "0", "FGW_READ_SCOPE": value}
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.foreigngw"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert done.stderr == f"foreigngw: FGW_READ_SCOPE must be header:NAME or query:NAME, got {value!r}\n"
