"""foreigngw (tests/support/foreigngw), a second gateway written apart from the reference engine, run as
a process in front of an in-process fakels: refusals, the cool-down, its prompt framing, history images
(checked against the kit's IMG model), markup tool calls, structured output, the response store
(checked against the kit's STORE model), the lean personality and the defect switches."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from conformance.fixtures.images import image_block, png_b64, png_index
from conformance.models import img
from conformance.models.store import ARGUMENTS_TRUNCATION_JSON, NOTICE, TRUNCATION_MARKER, token, trace
from conformance.targets._launch import free_port
from fakels.scenario import Chunk, Fault, ResponseOverride, Scenario, ToolCall, Turn, Usage
from fakels.server import FakeLSThread
from tests.support.fake_ls import StartFakeLs
from tests.support.foreigngw import store as fgw_store
from tests.support.foreigngw.prompt import PLACEHOLDER as FGW_PLACEHOLDER

ROOT = Path(__file__).resolve().parents[3]
TOKEN = "foreigngw-test-csrf"
KEY_A, KEY_B = "key-a", "key-b"
MODEL = "claude-sonnet-4-6"
SEND = "SendUserCascadeMessage"
META = "GetCascadeTrajectoryGeneratorMetadata"
WARM_UP = ["InitializeCascadePanelState", "AddTrackedWorkspace", "UpdateWorkspaceTrust", "Heartbeat"]
EMPTY = "The last user message has empty content; send text with images"
NOT_IMPLEMENTED = {
    "error": {
        "message": "native tool bridge not implemented",
        "type": "not_implemented",
        "code": "native_tool_bridge_not_implemented",
    }
}
LIMITS = {
    "FGW_STORE_MAX_MESSAGES": "5",
    "FGW_STORE_MAX_ENTRY_BYTES": "3000",
    "CASCADE_MAX_HISTORY_IMAGES": "2",
    "CASCADE_MAX_HISTORY_BYTES": "3000",
}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "The weather.", "parameters": {}}}]
SCHEMA = {"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "object", "required": ["a"]}}}


@dataclass
class Gateway:
    proc: subprocess.Popen[str]
    url: str
    log_path: Path
    client: httpx.Client

    def _headers(self, key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}

    def post(self, path: str, body: Any, key: str = KEY_A) -> httpx.Response:
        return self.client.post(path, json=body, headers=self._headers(key))

    def chat(self, body: Any, key: str = KEY_A) -> httpx.Response:
        return self.post("/v1/chat/completions", {"model": MODEL, **body}, key)

    def get(self, path: str, key: str = KEY_A) -> httpx.Response:
        return self.client.get(path, headers=self._headers(key))

    def delete(self, path: str, key: str = KEY_A) -> httpx.Response:
        return self.client.delete(path, headers=self._headers(key))

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8")

    def stop(self) -> int:
        self.client.close()
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=10)
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        return code


def _env(fake: FakeLSThread, folder: Path, **extra: str) -> dict[str, str]:
    base = {
        "FGW_LS_ADDRESS": fake.address,
        "FGW_CSRF_TOKEN": TOKEN,
        "FGW_API_KEYS": f"{KEY_A},{KEY_B}",
        "FGW_DATA_DIR": str(folder),
        "FGW_SKIP_DOTENV": "1",
        "CASCADE_POLL_INTERVAL_MS": "2",
        "FGW_COOLDOWN_S": "0.5",
    }
    return {**os.environ, **base, **extra}


def launch(fake: FakeLSThread, folder: Path, **extra: str) -> Gateway:
    port = free_port()
    log_path = folder / f"foreigngw-{port}.log"
    with log_path.open("w", encoding="utf-8") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.foreigngw"],
            cwd=ROOT,
            env=_env(fake, folder, FGW_PORT=str(port), **extra),
            stdout=subprocess.PIPE,
            stderr=sink,
            text=True,
        )
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 20)
    line = proc.stdout.readline() if ready else ""
    assert line == f"foreigngw: listening on http://127.0.0.1:{port}\n", log_path.read_text(encoding="utf-8")
    url = f"http://127.0.0.1:{port}"
    return Gateway(proc, url, log_path, httpx.Client(base_url=url, timeout=20))


@pytest.fixture(scope="module")
def fake(start_module_fake_ls: StartFakeLs) -> FakeLSThread:
    return start_module_fake_ls(csrf_token=TOKEN)


def running_gateway(fake: FakeLSThread, factory: pytest.TempPathFactory, **extra: str) -> Iterator[Gateway]:
    """A foreigngw with ``extra`` settings for a fixture's lifetime, stopped cleanly at its end."""
    gateway = launch(fake, factory.mktemp("fgw"), **extra)
    yield gateway
    assert gateway.stop() == 0, gateway.log()


@pytest.fixture(scope="module")
def full(fake: FakeLSThread, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    yield from running_gateway(fake, tmp_path_factory, **LIMITS)


@pytest.fixture(scope="module")
def lean(fake: FakeLSThread, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    yield from running_gateway(fake, tmp_path_factory, FGW_PERSONALITY="lean")


@pytest.fixture(scope="module")
def defective(fake: FakeLSThread, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    defects = "history-image-placeholder,no-schema-validation,splice-arguments,silent-count-drop"
    yield from running_gateway(fake, tmp_path_factory, FGW_DEFECTS=defects, **LIMITS)


def script(fake: FakeLSThread, *turns: Turn) -> None:
    """A clean journal and fresh LS state playing ``turns`` (then generated turns)."""
    fake.reset()
    fake.load_scenario(Scenario(turns=turns))


def text_turn(text: str, **kwargs: Any) -> Turn:
    return Turn(chunks=(Chunk(text=text),), **kwargs)


def user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}


def assistant(content: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": content}


def sends(fake: FakeLSThread) -> list[dict[str, Any]]:
    return fake.journal.requests(SEND)


def send_text(request: dict[str, Any]) -> str:
    return str(request["items"][0]["text"])


def field6(request: dict[str, Any]) -> list[str]:
    return [f"img{png_index(i['base64_data'])}" for i in request.get("images", [])]


def planner_mode(request: dict[str, Any]) -> str:
    return str(request["cascade_config"]["planner_config"]["conversational"]["planner_mode"])


def events(answer: httpx.Response) -> list[str]:
    return [line[len("data: ") :] for line in answer.text.split("\n") if line.startswith("data: ")]


# ---------------------------------------------------------------------------- process, auth, refusals


@pytest.mark.parametrize(
    ("extra", "word"),
    [({"FGW_PORT": "1", "FGW_DEFECTS": "splice-arguments,bogus"}, "bogus"), ({"FGW_PERSONALITY": "lean"}, "FGW_PORT")],
)
def test_bad_settings_exit_2_with_one_line(
    fake: FakeLSThread, tmp_path: Path, extra: dict[str, str], word: str
) -> None:
    env = {k: v for k, v in _env(fake, tmp_path, **extra).items() if k != "FGW_PORT" or "FGW_PORT" in extra}
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.foreigngw"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert word in line


def test_warm_up_once_then_a_clean_stop(fake: FakeLSThread, tmp_path: Path) -> None:
    script(fake)
    gateway = launch(fake, tmp_path)
    try:
        for word in ("one", "two"):
            assert gateway.chat({"messages": [user(f"warm {word}")]}).status_code == 200
        methods = fake.journal.methods()
        assert methods[:5] == [*WARM_UP, "StartCascade"]
        assert [m for m in methods if m in WARM_UP] == WARM_UP
        headers = fake.journal.last(SEND).headers
        assert headers["x-codeium-csrf-token"].startswith("<redacted: matches")
    finally:
        assert gateway.stop() == 0


def test_models_and_keys(full: Gateway) -> None:
    listing = full.get("/v1/models")
    assert listing.status_code == 200
    assert {"id": MODEL, "object": "model"}.items() <= listing.json()["data"][0].items()
    wrong = full.get("/v1/models", key="key-c")
    assert wrong.status_code == 401
    assert set(wrong.json()["error"]) == {"message", "type", "code"}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"seed": 1, "n": 2}, "Unsupported sampling parameter(s): seed, n"),
        ({"top_logprobs": 2, "logit_bias": {}}, "Unsupported sampling parameter(s): logit_bias, top_logprobs"),
        ({"logprobs": False}, "Unsupported sampling parameter(s): logprobs"),
    ],
)
def test_unsupported_sampling_parameters_are_refused(
    full: Gateway, fake: FakeLSThread, extra: dict[str, Any], message: str
) -> None:
    script(fake)
    answer = full.chat({"messages": [user("refuse me")], **extra})
    assert (answer.status_code, answer.json()["error"]["message"]) == (400, message)
    assert fake.journal.entries() == []


@pytest.mark.parametrize(
    "content",
    ["", "   ", [image_block(png_b64(1, 1), "image_url")], [{"type": "text", "text": " "}]],
)
def test_an_empty_last_user_message_is_refused(full: Gateway, fake: FakeLSThread, content: Any) -> None:
    script(fake)
    answer = full.chat({"messages": [user("earlier"), assistant("ok"), user(content)]})
    assert (answer.status_code, answer.json()["error"]["message"]) == (400, EMPTY)
    assert fake.journal.entries() == []


# ---------------------------------------------------------------------------- the LS flow


def test_the_send_of_a_fresh_cascade_is_framed_its_own_way(full: Gateway, fake: FakeLSThread) -> None:
    script(fake, text_turn("framed"))
    messages = [{"role": "system", "content": "Be terse."}, user("q <b>1</b>"), assistant("a1"), user("q2")]
    answer = full.chat({"messages": messages})
    assert answer.json()["choices"][0]["message"]["content"] == "framed"
    (request,) = sends(fake)
    assert send_text(request) == (
        "You are FGW, a helpful coding assistant.\nIdentity: foreigngw/1.0 (model: claude-sonnet-4-6)\n"
        "Be terse.\n\nUser: q <b>1</b>\n\nAssistant: a1\n\nUser: q2"
    )
    assert planner_mode(request) == img.PLANNER_NO_TOOL
    assert request["cascade_config"]["planner_config"]["requested_model_uid"] == MODEL


def test_a_pooled_conversation_resumes_with_the_new_turn_only(full: Gateway, fake: FakeLSThread) -> None:
    script(
        fake,
        text_turn("first answer", records=(Usage(input_tokens=11, output_tokens=7), None)),
        text_turn("second answer", records=(Usage(input_tokens=3, output_tokens=2, cache_read_tokens=1),)),
    )
    first = full.chat({"messages": [user("pool question")]})
    assert first.json()["usage"]["prompt_tokens"] == 11
    second = full.chat({"messages": [user("pool question"), assistant("first answer"), user("pool follow-up")]})
    figures = {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}  # prompt: input 3 + cache read 1
    assert second.json()["usage"] == {**figures, "prompt_tokens_details": {"cached_tokens": 1}}
    assert [send_text(r) for r in sends(fake)][1] == "pool follow-up"
    assert fake.journal.methods().count("StartCascade") == 1
    offsets = [r.get("generator_metadata_offset", 0) for r in fake.journal.requests(META)]
    assert offsets == [0, 2]  # the record without usage counts too
    assert fake.journal.requests("GetCascadeTrajectorySteps")[-1]["step_offset"] == 2


def test_a_rejected_resume_recovers_with_the_full_history_and_no_cool_down(full: Gateway, fake: FakeLSThread) -> None:
    script(fake, text_turn("one", expire_after=True), text_turn("two"))
    full.chat({"messages": [user("expiring q1")]})
    answer = full.chat({"messages": [user("expiring q1"), assistant("one"), user("expiring q2")]})
    assert answer.json()["choices"][0]["message"]["content"] == "two"
    assert [e.status for e in fake.journal.entries(SEND)] == ["OK", "NOT_FOUND", "OK"]
    assert send_text(sends(fake)[-1]).endswith("User: expiring q1\n\nAssistant: one\n\nUser: expiring q2")
    assert full.chat({"messages": [user("right after the recovery")]}).status_code == 200


def test_the_ls_rate_limit_cools_the_gateway_down_and_other_failures_do_not(full: Gateway, fake: FakeLSThread) -> None:
    script(fake, Turn(fault=Fault(kind="error")))
    failed = full.chat({"messages": [user("cool q0")]})
    assert (failed.status_code, failed.json()["error"]["type"]) == (502, "upstream_error")
    limited = ResponseOverride(rpc="GetCascadeTrajectorySteps", error_code="RESOURCE_EXHAUSTED")
    script(fake, Turn(chunks=(Chunk(text="never"),), overrides=(limited,)))
    failed = full.chat({"messages": [user("cool q1")]})
    assert (failed.status_code, failed.json()["error"]["type"]) == (429, "rate_limit_error")
    for answer in (full.chat({"messages": [user("cool q2")]}), full.post("/v1/responses", {"model": MODEL})):
        assert answer.status_code == 429
        assert "retry-after" not in answer.headers
        body = answer.json()
        wait_ms = body["error"].pop("retry_after_ms")
        assert isinstance(wait_ms, int)
        assert 0 < wait_ms <= 500
        assert body == {
            "error": {"message": "account cooling down", "type": "rate_limit_error", "code": "rate_limited"}
        }
    assert full.get("/v1/models").status_code == 200
    time.sleep(wait_ms / 1000 + 0.05)
    recovered = full.chat({"messages": [user("cool q3")]})
    assert recovered.status_code == 200, recovered.text


def test_a_repeated_request_is_replayed_from_the_cache(full: Gateway, fake: FakeLSThread) -> None:
    script(fake, text_turn("cached answer"))
    body = {"messages": [user("cache me")]}
    first = full.chat(body)
    seen = len(fake.journal)
    replay = full.chat({**body, "stream": True})
    assert len(fake.journal) == seen
    assert "cached answer" in "".join(events(replay))
    assert events(replay)[-1] == "[DONE]"
    assert first.json()["choices"][0]["message"]["content"] == "cached answer"


# ---------------------------------------------------------------------------- history images


def _picture_case() -> list[dict[str, Any]]:
    look = [{"type": "text", "text": "look"}, image_block(png_b64(1, 2), "image_url")]
    return [user(look), assistant("a cat"), user("what colour?")]


def test_a_history_image_rides_field_6_with_its_marker(full: Gateway, fake: FakeLSThread) -> None:
    script(fake)
    full.chat({"messages": _picture_case()})
    mine = [{"type": "text", "text": "and this?"}, image_block(png_b64(2, 3), "image")]
    full.chat({"messages": [*_picture_case()[:2], user("go on"), assistant("fine"), user(mine)]})
    first, second = sends(fake)
    assert field6(first) == ["img1"]
    assert planner_mode(first) == img.PLANNER_DEFAULT
    assert "User: look" + img.MARKER.format(n=1) + "\n\n" in send_text(first)
    assert field6(second) == ["img2", "img1"]  # the current turn first
    assert "User: look" + img.MARKER.format(n=2) in send_text(second)
    assert send_text(second).endswith("User: and this?")


def test_tools_keep_history_images_as_placeholders(full: Gateway, fake: FakeLSThread) -> None:
    script(fake)
    full.chat({"messages": [*_picture_case()[:2], user("tools now")], "tools": TOOLS})
    (request,) = sends(fake)
    assert "images" not in request
    assert planner_mode(request) == img.PLANNER_NO_TOOL
    assert "User: look" + FGW_PLACEHOLDER in send_text(request)
    assert '<fgw_call name="NAME">' in send_text(request)
    assert "- get_weather: The weather." in send_text(request)


def test_history_images_follow_the_kits_model(full: Gateway, fake: FakeLSThread) -> None:
    def turn(text: str, *indices: int) -> list[dict[str, Any]]:
        return [{"type": "text", "text": text}, *(image_block(png_b64(i, i), "image_url") for i in indices)]

    messages = [
        user(turn("oldest", 11)),
        assistant("x" * 2900),
        user(turn("second", 12, 13)),
        assistant("ok"),
        user(turn("third", 14)),
        assistant("fine"),
        user("model check"),
    ]
    env = {k: LIMITS[k] for k in ("CASCADE_MAX_HISTORY_IMAGES", "CASCADE_MAX_HISTORY_BYTES")}
    expected = img.model({"messages": messages, "env": env, "tool_preamble": "", "native_mode": False})
    script(fake)
    full.chat({"messages": messages})
    (request,) = sends(fake)
    assert field6(request) == expected.field6 == ["img12", "img14"]
    assert expected.first_included == 2
    assert "oldest" not in send_text(request)
    assert "User: second" + img.MARKER.format(n=1) + FGW_PLACEHOLDER in send_text(request)
    assert "User: third" + img.MARKER.format(n=2) in send_text(request)


# ---------------------------------------------------------------------------- tool markup, structured output


def test_markup_becomes_tool_calls_and_ls_proposals_are_ignored(full: Gateway, fake: FakeLSThread) -> None:
    markup = 'Checking.<fgw_call name="get_weather">{"city": "Paris"}</fgw_call>'
    proposal = Chunk(tool_call=ToolCall(id="ls-1", name="ls_tool", arguments_json="{}"))
    script(fake, Turn(chunks=(Chunk(text=markup), proposal)), Turn(chunks=(Chunk(text=markup), proposal)))
    answer = full.chat({"messages": [user("weather?")], "tools": TOOLS}).json()["choices"][0]
    assert answer["finish_reason"] == "tool_calls"
    assert answer["message"]["content"] == "Checking."
    (call,) = answer["message"]["tool_calls"]
    assert call["id"].startswith("call_")
    assert call["function"] == {"name": "get_weather", "arguments": '{"city": "Paris"}'}
    streamed = [
        json.loads(e)
        for e in events(full.chat({"messages": [user("weather 2?")], "tools": TOOLS, "stream": True}))[:-1]
    ]
    deltas = [c["choices"][0] for c in streamed if c["choices"]]
    assert "".join(d["delta"].get("content") or "" for d in deltas) == "Checking."
    assert [d["delta"]["tool_calls"][0]["function"]["name"] for d in deltas if "tool_calls" in d["delta"]] == [
        "get_weather"
    ]
    assert deltas[-1]["finish_reason"] == "tool_calls"


def test_a_non_conforming_answer_is_one_typed_error(full: Gateway, fake: FakeLSThread) -> None:
    script(fake, text_turn("not json"), text_turn('{"b": 1}'), text_turn('{"a": 1}'))
    body = {"messages": [user("give json")], "response_format": SCHEMA}
    failed = full.chat(body)
    assert failed.status_code == 502
    error = failed.json()["error"]
    assert (error["type"], error["code"]) == ("invalid_response", "STRUCTURED_OUTPUT_NOT_CONFORMING")
    streamed = full.chat({**body, "stream": True})
    assert streamed.status_code == 200
    (only,) = events(streamed)  # no [DONE]
    assert json.loads(only)["error"]["code"] == "STRUCTURED_OUTPUT_NOT_CONFORMING"
    conforming = full.chat(body)  # not cached, not cooling down
    assert conforming.status_code == 200
    assert conforming.json()["choices"][0]["message"]["content"] == '{"a": 1}'


# ---------------------------------------------------------------------------- /v1/responses and the store


def test_a_stored_response_is_the_owners_only(full: Gateway, fake: FakeLSThread) -> None:
    script(fake, text_turn("stored answer"))
    posted = full.post("/v1/responses", {"model": MODEL, "input": "store this"}).json()
    assert posted["output"][0]["content"][0]["text"] == "stored answer"
    path = f"/v1/responses/{posted['id']}"
    assert full.get(path).json() == posted
    foreign = full.get(path, KEY_B)
    assert (foreign.status_code, foreign.json()["error"]["message"]) == (404, "Response not found")
    items = full.get(path + "/input_items")  # not served, for the owner too
    generic = {"error": {"message": "Not found", "type": "invalid_request_error", "code": None}}
    assert (items.status_code, items.json()) == (404, generic)
    assert full.delete(path, KEY_B).status_code == 404
    assert full.delete(path).json() == {"id": posted["id"], "object": "response.deleted", "deleted": True}
    assert full.get(path).status_code == 404
    assert full.post("/v1/responses", {"model": MODEL, "input": "s", "stream": True}).status_code == 400


def _items(roles: str, *, parts: bool = False) -> list[dict[str, Any]]:
    """Messages with the kit's tokens (``s`` system, ``d`` developer, ``u`` user, ``a`` assistant)."""
    names = {"s": "system", "d": "developer", "u": "user", "a": "assistant"}
    items = []
    for index, role in enumerate(roles):
        text = f"{token(index)} {names[role]} {index}"
        kind = "output_text" if role == "a" else "input_text"
        items.append({"role": names[role], "content": [{"type": kind, "text": text}] if parts else text})
    return items


def _chained_history(gateway: Gateway, fake: FakeLSThread, items: list[dict[str, Any]]) -> str:
    """Store ``items`` (plus the answer), continue from it, and return the replayed Send text."""
    script(fake, text_turn("noted"), text_turn("continued"))
    first = gateway.post("/v1/responses", {"model": MODEL, "input": items}).json()
    gateway.post("/v1/responses", {"model": MODEL, "input": "and next?", "previous_response_id": first["id"]})
    return send_text(sends(fake)[-1])


def test_the_count_cap_leaves_one_notice_at_the_seam(full: Gateway, fake: FakeLSThread) -> None:
    history = _chained_history(full, fake, _items("uauauau"))  # 7 items + the answer, cap 5: 3 dropped
    seam = history.split("\n\n", 1)[1].removeprefix("Assistant: ")
    assert seam.startswith("[... 3 earlier message(s) dropped by the response store to stay within")
    found = NOTICE.match(seam)
    assert found is not None
    assert found.group(1) == "3"
    assert seam[found.end() :].startswith(f"{token(3)} assistant 3\n\nUser: {token(4)} user 4")
    assert "dropped 3 message(s) to fit RESPONSE_STORE_MAX_MESSAGES" in full.log()


def _call_items(arguments: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": f"{token(0)} run it"},
        {"type": "function_call", "call_id": "c1", "name": "write", "arguments": arguments},
        {"type": "function_call_output", "call_id": "c1", "output": "done"},
        {"role": "user", "content": f"{token(3)} and now?"},
    ]


def test_the_byte_budget_replaces_json_arguments_whole(full: Gateway, fake: FakeLSThread) -> None:
    history = _chained_history(full, fake, _call_items(json.dumps({"text": "y" * 4000})))
    assert f"Assistant called write({ARGUMENTS_TRUNCATION_JSON})\n" in history


@pytest.mark.parametrize(
    ("cap", "items"),
    [
        (4, _items("uauauauau")),
        (4, _items("suauaua")),
        (3, _items("sdua")),
        (1, _items("uau")),
        (3, _items("uauaua", parts=True)),
        (3, _items("suauau", parts=True)),
    ],
)
def test_count_trimming_matches_the_kits_store_model(cap: int, items: list[dict[str, Any]]) -> None:
    kept, dropped = fgw_store.trim_count(items, cap, notice=True)
    traced = trace(kept, items)
    assert traced.problems == []
    assert len(kept) == cap
    assert dropped == len(items) - cap
    (notice,) = traced.notices
    (seam,) = traced.seams()
    assert notice.count == dropped
    assert notice.position == (seam if seam < cap - 1 or seam == 0 else seam - 1)
    if len(kept) > 1:
        assert kept[-1] == items[-1]


# ---------------------------------------------------------------------------- lean


def test_lean_has_no_tool_bridge(lean: Gateway, fake: FakeLSThread) -> None:
    script(fake)
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    refused = [
        lean.chat({"messages": [user("tools?")], "tools": TOOLS}),
        lean.chat({"messages": [user("q"), {"role": "assistant", "content": None, "tool_calls": [call]}, user("r")]}),
        lean.chat({"messages": [user("q"), {"role": "tool", "tool_call_id": "c1", "content": "x"}, user("r")]}),
        lean.post(
            "/v1/responses",
            {"model": MODEL, "input": [{"type": "function_call_output", "call_id": "c1", "output": "x"}, user("r")]},
        ),
    ]
    assert [(a.status_code, a.json()) for a in refused] == [(501, NOT_IMPLEMENTED)] * 4
    assert fake.journal.entries() == []


def test_lean_plays_every_request_fresh_and_estimates_usage(lean: Gateway, fake: FakeLSThread) -> None:
    script(fake, text_turn("lean one"), text_turn("lean two"), text_turn("lean three"))
    lean.chat({"messages": [user("lean q1")]})
    second = lean.chat({"messages": [user("lean q1"), assistant("lean one"), user("lean q2")]}).json()
    lean.chat({"messages": [user("lean q1"), assistant("lean one"), user("lean q2")]})
    assert second["usage"]["prompt_tokens"] > 0
    assert second["usage"]["completion_tokens"] > 0
    methods = fake.journal.methods()
    assert META not in methods
    assert methods.count("StartCascade") == methods.count(SEND) == 3
    assert send_text(sends(fake)[1]).endswith("User: lean q1\n\nAssistant: lean one\n\nUser: lean q2")
    posted = lean.post("/v1/responses", {"model": MODEL, "input": "not kept"}).json()
    gone = lean.get(f"/v1/responses/{posted['id']}")
    assert (gone.status_code, gone.json()["error"]["message"]) == (404, "Not found")


# ---------------------------------------------------------------------------- defect switches


def test_defects_switch_the_seed_behaviours_back_on(defective: Gateway, fake: FakeLSThread) -> None:
    script(fake)
    defective.chat({"messages": _picture_case()})
    (request,) = sends(fake)
    assert "images" not in request
    assert "User: look" + FGW_PLACEHOLDER in send_text(request)
    script(fake, text_turn("not json"))
    unchecked = defective.chat({"messages": [user("json please")], "response_format": SCHEMA})
    assert unchecked.json()["choices"][0]["message"]["content"] == "not json"
    spliced = _chained_history(defective, fake, _call_items(json.dumps({"text": "y" * 4000})))
    assert 'Assistant called write({"text": "yyy' in spliced
    assert TRUNCATION_MARKER in spliced
    silent = _chained_history(defective, fake, _items("uauauau"))
    assert silent.split("\n\n", 1)[1].startswith(f"Assistant: {token(3)} assistant 3\n\nUser: {token(4)} user 4")
    assert "dropped" not in silent
