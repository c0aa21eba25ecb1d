"""The response store's limits seen over HTTP (seed 003): the count cap leaves a notice that
input_items shows and GET never serves as model output, tool-call JSON is never spliced, and the
limits as ``cascade-engine serve`` options (bad values, ``--store sqlite:PATH`` across a restart)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from engine.cli import main as cli_main
from engine.http.gateway import ServedGateway
from engine.store import StoreLimits
from engine.store.trim import ARGUMENTS_TRUNCATION_JSON, NOTICE_PATTERN
from fakels.server import FakeLSThread
from tests.engine.http.conftest import CSRF, KEY_A, MODEL, play, sends, serve, start_serve

ENGINE = [sys.executable, "-m", "engine.cli", "serve"]
TOOLS: Any = [{"type": "function", "name": "write_file", "parameters": {"type": "object"}}]
MESSAGES_NOTICE = "earlier message(s) dropped by the response store to stay within RESPONSE_STORE_MAX_MESSAGES"


def _items(served: ServedGateway, response_id: str) -> list[dict[str, Any]]:
    response = httpx.get(
        served.url + f"/v1/responses/{response_id}/input_items", headers={"Authorization": f"Bearer {KEY_A}"}
    )
    assert response.status_code == 200, response.text
    data: list[dict[str, Any]] = response.json()["data"]
    return data


def _text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [])


@pytest.fixture
def capped(fake: FakeLSThread) -> Iterator[ServedGateway]:
    served = serve(fake, store_limits=StoreLimits(max_messages=5, max_bytes=256 * 1024, entry_bytes=64 * 1024))
    yield served
    served.stop()


def _client(served: ServedGateway) -> openai.OpenAI:
    return openai.OpenAI(base_url=served.url + "/v1", api_key=KEY_A, max_retries=0, timeout=30)


def test_the_count_cap_leaves_a_notice_at_the_seam_and_get_serves_the_plain_answer(
    fake: FakeLSThread, capped: ServedGateway
) -> None:
    play(fake, {"chunks": [{"text": "the answer"}]})
    turns = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn-{i}"} for i in range(9)]
    answer = _client(capped).responses.create(model=MODEL, input=turns)  # type: ignore[arg-type]
    items = _items(capped, answer.id)
    assert len(items) == 5  # 9 input items + 1 output item, capped at 5
    assert _text(items[0]).startswith(f"[... 5 {MESSAGES_NOTICE} ...]\n\n")
    assert _text(items[0]).endswith("turn-5")
    assert [_text(item) for item in items[1:]] == ["turn-6", "turn-7", "turn-8", "the answer"]
    assert _client(capped).responses.retrieve(answer.id).output_text == "the answer"


def test_a_notice_on_the_answer_itself_is_stripped_by_get_and_reaches_the_next_turn(
    fake: FakeLSThread, capped: ServedGateway
) -> None:
    """The byte stage keeps only the answer and puts its notice on it: GET serves the plain answer,
    input_items shows the notice, and a chained turn tells the upstream that turns were dropped."""
    play(fake, {"chunks": [{"text": "short answer"}]}, {"chunks": [{"text": "next"}]})
    client = _client(capped)
    first = client.responses.create(model=MODEL, input="x" * 70_000)
    items = _items(capped, first.id)
    assert len(items) == 1
    assert NOTICE_PATTERN.match(_text(items[0]))
    assert _text(items[0]).endswith("short answer")
    retrieved = client.responses.retrieve(first.id)
    assert retrieved.output_text == "short answer"
    second = client.responses.create(model=MODEL, input="and then?", previous_response_id=first.id)
    assert second.output_text == "next"
    assert "earlier message(s) dropped by the response store" in sends(fake)[1].request["items"][0]["text"]


def _assert_whole(kept: dict[str, Any], original: str) -> None:
    assert kept["arguments"] in (original, ARGUMENTS_TRUNCATION_JSON), kept["arguments"][:200]
    json.loads(kept["arguments"])


def test_a_big_function_call_input_item_is_never_spliced(fake: FakeLSThread, capped: ServedGateway) -> None:
    """The byte stage drops whole items from the oldest: a 200 KB call before the answer goes whole,
    and the drop is recorded at the front of what was kept."""
    play(fake, {"chunks": [{"text": "written"}]})
    arguments = json.dumps({"path": "/tmp/a", "content": "x" * 200_000})
    call = {"type": "function_call", "call_id": "call_big", "name": "write_file", "arguments": arguments}
    result = {"type": "function_call_output", "call_id": "call_big", "output": "ok"}
    answer = _client(capped).responses.create(
        model=MODEL,
        input=[{"role": "user", "content": "write it"}, call, result],  # type: ignore[list-item]
        tools=TOOLS,
    )
    assert json.loads(sends(fake)[0].request["items"][0]["text"].split("<tool_call>")[1].split("</tool_call>")[0])[
        "arguments"
    ] == json.loads(arguments)  # the upstream got the call whole
    items = _items(capped, answer.id)
    for kept in (item for item in items if item["type"] == "function_call"):
        _assert_whole(kept, arguments)
    if len(items) < 4:
        assert NOTICE_PATTERN.match(_text(items[0])), items[0]
    assert _text(items[-1]) == "written"


def test_a_big_function_call_answer_is_compacted_whole_and_still_pairs(
    fake: FakeLSThread, capped: ServedGateway
) -> None:
    arguments = json.dumps({"path": "/tmp/a", "content": "x" * 200_000})
    play(fake, {"chunks": [{"tool_call": {"id": "call_big", "name": "write_file", "arguments_json": arguments}}]})
    client = _client(capped)
    answer = client.responses.create(model=MODEL, input="write it", tools=TOOLS)
    assert [(i.type, getattr(i, "arguments", None)) for i in answer.output] == [("function_call", arguments)]
    items = _items(capped, answer.id)
    assert items[-1]["type"] == "function_call"
    assert (items[-1]["call_id"], items[-1]["name"]) == ("call_big", "write_file")
    assert items[-1]["arguments"] == ARGUMENTS_TRUNCATION_JSON
    (served_call,) = client.responses.retrieve(answer.id).output
    assert served_call.type == "function_call"
    assert (served_call.call_id, served_call.name) == ("call_big", "write_file")
    _assert_whole(served_call.model_dump(), arguments)


# ----------------------------------------------------------------------------------------- CLI


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--store-max-bytes", "nonsense"], "--store-max-bytes 'nonsense': expected a byte size"),
        (["--store-max-entry-bytes", "12 parsecs"], "--store-max-entry-bytes '12 parsecs': expected a byte size"),
        (["--store-min-tenant-bytes", "0"], "--store-min-tenant-bytes '0': expected a size of at least 1 byte"),
        (["--store", "redis://x"], "--store 'redis://x': expected memory, sqlite:PATH or off"),
        (["--store", "sqlite:"], "--store 'sqlite:': expected memory, sqlite:PATH or off"),
        (["--store-max-messages", "0"], "--store-max-messages 0: expected a positive integer"),
        (["--store-max-entries", "-1"], "--store-max-entries -1: expected a positive integer"),
        (["--store-ttl-s", "0"], "--store-ttl-s 0.0: expected a positive number of seconds"),
        (["--store-max-age-s", "inf"], "--store-max-age-s inf: expected a positive number of seconds"),
    ],
)
def test_bad_store_options_exit_2_naming_the_option(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main(["serve", "--port", "0", "--ls-address", "127.0.0.1:1", *args]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"cascade-engine serve: {message}"), captured.err
    assert captured.err.count("\n") == 1
    assert captured.out == ""


def test_the_installed_command_refuses_a_nonsense_size_with_exit_2() -> None:
    done = subprocess.run(
        [*ENGINE, "--port", "0", "--ls-address", "127.0.0.1:1", "--store-max-bytes", "nonsense"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "--store-max-bytes 'nonsense'" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_store_that_cannot_be_opened_is_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = f"sqlite:{tmp_path / 'missing-dir' / 'store.db'}"
    assert cli_main(["serve", "--port", "0", "--ls-address", "127.0.0.1:1", "--store", spec]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"cascade-engine: cannot open the response store {spec!r}: "), err
    assert "Traceback" not in err


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err.decode(errors="replace")


def test_a_sqlite_store_survives_a_restart(fake: FakeLSThread, tmp_path: Path) -> None:
    args = ["--port", "0", "--ls-address", fake.address, "--csrf-token", CSRF, "--api-key", f"{KEY_A}=caller-a"]
    args += ["--store", f"sqlite:{tmp_path / 'responses.db'}", "--poll-interval-s", "0.01"]
    play(fake, {"chunks": [{"text": "durable answer"}]})
    procs: list[subprocess.Popen[bytes]] = []
    try:
        proc, url = start_serve(args)
        procs.append(proc)
        client = openai.OpenAI(base_url=url + "/v1", api_key=KEY_A, max_retries=0, timeout=30)
        created = client.responses.create(model=MODEL, input="remember me")
        _stop(proc)

        proc, url = start_serve(args)
        procs.append(proc)
        client = openai.OpenAI(base_url=url + "/v1", api_key=KEY_A, max_retries=0, timeout=30)
        again = client.responses.retrieve(created.id)
        assert again.output_text == "durable answer"
        assert [item.model_dump() for item in again.output] == [item.model_dump() for item in created.output]
        items = client.responses.input_items.list(created.id).data
        assert [item.type for item in items] == ["message", "message"]
        _stop(proc)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
