"""The response cache: its key (engine.md 4.A "Key") and its store (4.A "Store")."""

from __future__ import annotations

import copy
import hashlib
import threading
from typing import Any

import pytest

from engine.chat.cache import (
    DEFAULT_MAX_BYTES,
    CachedAnswer,
    ResponseCache,
    binary_placeholder,
    cache_key,
    normalize_request,
    parse_byte_size,
)
from engine.js import js_stringify

# base64 of b"hello": sha256(b"hello") starts 2cf24dba5fb0a30e26e83b2ac5b9e29e
HELLO_B64 = "aGVsbG8="
HELLO_PLACEHOLDER = "[base64:image/png:sha256=2cf24dba5fb0a30e26e83b2ac5b9e29e:bytes=5]"


def _body(**extra: Any) -> dict[str, Any]:
    return {"model": "claude-sonnet-4-6", "messages": [{"role": "user", "content": "hi"}], **extra}


def _answer(text: str = "hello", thinking: str = "", model: str = "claude-sonnet-4-6") -> CachedAnswer:
    return CachedAnswer(text=text, thinking=thinking, usage={"total_tokens": 3}, finish_reason="stop", model=model)


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# ------------------------------------------------------------------------------------ normalize and key


def test_the_normalised_body_lists_every_knob_in_the_mirrors_order_missing_ones_null() -> None:
    normalized = normalize_request({"model": "m", "messages": []})
    assert list(normalized) == [
        "model",
        "messages",
        "tools",
        "tool_choice",
        "response_format",
        "reasoning_effort",
        "thinking",
        "stream_options",
        "temperature",
        "top_p",
        "top_k",
        "max_tokens",
        "stop",
        "seed",
        "frequency_penalty",
        "presence_penalty",
        "logit_bias",
        "n",
    ]
    assert [value for key, value in normalized.items() if key not in ("model", "messages")] == [None] * 16


def test_the_key_is_the_sha256_of_caller_nul_and_the_js_serialisation() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "é"}], "temperature": 0.5, "stream": True}
    serialized = (
        '{"model":"m","messages":[{"role":"user","content":"é"}],"tools":null,"tool_choice":null,'
        '"response_format":null,"reasoning_effort":null,"thinking":null,"stream_options":null,"temperature":0.5,'
        '"top_p":null,"top_k":null,"max_tokens":null,"stop":null,"seed":null,"frequency_penalty":null,'
        '"presence_penalty":null,"logit_bias":null,"n":null}'
    )
    assert js_stringify(normalize_request(body)) == serialized
    assert cache_key("caller-1", body) == hashlib.sha256(("caller-1\0" + serialized).encode()).hexdigest()


def test_stream_is_not_in_the_key() -> None:
    assert cache_key("c", _body(stream=True)) == cache_key("c", _body(stream=False)) == cache_key("c", _body())


@pytest.mark.invariant("SCOPE-1")
def test_the_key_differs_per_caller() -> None:
    assert cache_key("caller-a", _body()) != cache_key("caller-b", _body())


@pytest.mark.invariant("SCOPE-2")
def test_a_knob_that_changes_the_answer_changes_the_key() -> None:
    assert cache_key("c", _body(temperature=0)) != cache_key("c", _body(temperature=1))
    assert cache_key("c", _body(temperature=0)) != cache_key("c", _body())


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"max_completion_tokens": 100}, 100),
        ({"max_tokens": 100}, 100),
        ({"max_completion_tokens": 100, "max_tokens": 7}, 100),
        ({"max_completion_tokens": "100", "max_tokens": 7}, 7),  # Number.isFinite refuses a string
        ({"max_completion_tokens": None, "max_tokens": 7}, 7),
        ({"max_completion_tokens": True, "max_tokens": 7}, 7),
        ({"max_completion_tokens": 12.5}, 12.5),
        ({}, None),
    ],
)
def test_max_tokens_is_max_completion_tokens_when_finite(body: dict[str, Any], expected: object) -> None:
    assert normalize_request(_body(**body))["max_tokens"] == expected


def test_max_completion_tokens_and_max_tokens_share_a_key() -> None:
    assert cache_key("c", _body(max_completion_tokens=64)) == cache_key("c", _body(max_tokens=64))


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"reasoning_effort": "high"}, "high"),
        ({"reasoning": {"effort": "low"}}, "low"),
        ({"reasoning_effort": "high", "reasoning": {"effort": "low"}}, "high"),
        ({"reasoning_effort": None, "reasoning": {"effort": "low"}}, "low"),
        ({"reasoning_effort": "", "reasoning": {"effort": "low"}}, ""),  # ?? only skips null
        ({"reasoning": "low"}, None),
    ],
)
@pytest.mark.invariant("SCOPE-2")
def test_reasoning_effort_falls_back_to_reasoning_effort_field(body: dict[str, Any], expected: object) -> None:
    assert normalize_request(_body(**body))["reasoning_effort"] == expected


def test_object_knobs_are_key_sorted_at_every_depth() -> None:
    tools_a = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    tools_b = [{"function": {"parameters": {"properties": {}, "type": "object"}, "name": "f"}, "type": "function"}]
    format_a = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"b": 1, "a": 2}}}
    format_b = {"json_schema": {"schema": {"a": 2, "b": 1}, "name": "x"}, "type": "json_schema"}
    assert cache_key("c", _body(tools=tools_a, response_format=format_a)) == cache_key(
        "c", _body(tools=tools_b, response_format=format_b)
    )
    assert list(normalize_request(_body(tools=tools_b))["tools"][0]["function"]) == ["name", "parameters"]


def test_arrays_in_knobs_keep_their_order() -> None:
    assert cache_key("c", _body(stop=["a", "b"])) != cache_key("c", _body(stop=["b", "a"]))


def test_messages_are_not_key_sorted() -> None:
    # The mirror serialises messages as given: the same message with its keys in another order is another key.
    sorted_message = {"content": "hi", "role": "user"}
    assert cache_key("c", _body(messages=[sorted_message])) != cache_key("c", _body())
    assert list(normalize_request(_body())["messages"][0]) == ["role", "content"]


def test_the_binary_placeholder_format() -> None:
    assert binary_placeholder("image/png", HELLO_B64) == HELLO_PLACEHOLDER
    assert binary_placeholder("image/png", "") == ("[base64:image/png:sha256=e3b0c44298fc1c149afbf4c8996fb924:bytes=0]")


@pytest.mark.parametrize("data", ["aGVsbG8", "aGVs\nbG8=", " aGVsbG8= ", "aGVs bG8=", "aGVsbG8=="])
def test_base64_is_decoded_leniently(data: str) -> None:
    assert binary_placeholder("image/png", data) == HELLO_PLACEHOLDER


def test_url_safe_base64_is_decoded() -> None:
    # b"\xfb\xff" is "+/8=" in standard base64 and "-_8" in URL-safe form
    assert binary_placeholder("x", "-_8") == binary_placeholder("x", "+/8=")
    assert binary_placeholder("x", "-_8").endswith(":bytes=2]")


def _image_url_message(url: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": url}}],
    }


@pytest.mark.invariant("SCOPE-2")
def test_a_data_image_url_is_replaced_by_its_placeholder() -> None:
    body = _body(messages=[_image_url_message(f"data:image/png;base64,{HELLO_B64}")])
    part = normalize_request(body)["messages"][0]["content"][1]
    assert part == {"type": "image_url", "image_url": {"url": HELLO_PLACEHOLDER}}


def test_data_url_parameters_and_case_are_handled() -> None:
    body = _body(messages=[_image_url_message(f"DATA:image/png;name=cat.png;BASE64,{HELLO_B64}")])
    assert normalize_request(body)["messages"][0]["content"][1]["image_url"]["url"] == HELLO_PLACEHOLDER


def test_a_string_image_url_is_replaced_too() -> None:
    body = _body(
        messages=[
            {"role": "user", "content": [{"type": "input_image", "image_url": f"data:image/png;base64,{HELLO_B64}"}]}
        ]
    )
    assert normalize_request(body)["messages"][0]["content"][0]["image_url"] == HELLO_PLACEHOLDER


@pytest.mark.parametrize(
    "url", ["https://example.com/cat.png", "data:image/svg+xml,<svg/>", "data:text/plain;charset=x,hi"]
)
def test_urls_that_are_not_base64_data_are_kept(url: str) -> None:
    body = _body(messages=[_image_url_message(url)])
    assert normalize_request(body)["messages"][0]["content"][1]["image_url"]["url"] == url


def test_a_base64_image_source_is_replaced_and_its_siblings_kept() -> None:
    source = {"type": "base64", "media_type": "image/jpeg", "data": HELLO_B64}
    part = {"type": "image", "source": source, "cache_control": {"type": "ephemeral"}}
    normalized = normalize_request(_body(messages=[{"role": "user", "content": [part]}]))
    assert normalized["messages"][0]["content"][0] == {
        "type": "image",
        "source": {
            "type": "base64",
            "media_type": "image/jpeg",
            "data": "[base64:image/jpeg:sha256=2cf24dba5fb0a30e26e83b2ac5b9e29e:bytes=5]",
        },
        "cache_control": {"type": "ephemeral"},
    }


def test_a_url_image_source_is_kept() -> None:
    part = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}
    assert normalize_request(_body(messages=[{"role": "user", "content": [part]}]))["messages"][0]["content"][0] == part


def test_file_data_is_replaced() -> None:
    part = {"type": "file", "file": {"filename": "a.pdf", "file_data": f"data:application/pdf;base64,{HELLO_B64}"}}
    normalized = normalize_request(_body(messages=[{"role": "user", "content": [part]}]))
    assert normalized["messages"][0]["content"][0]["file"] == {
        "filename": "a.pdf",
        "file_data": "[base64:application/pdf:sha256=2cf24dba5fb0a30e26e83b2ac5b9e29e:bytes=5]",
    }


def test_binary_nested_in_a_tool_result_is_replaced() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": HELLO_B64}}
    message = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [image]}]}
    normalized = normalize_request(_body(messages=[message]))
    assert normalized["messages"][0]["content"][0]["content"][0]["source"]["data"] == HELLO_PLACEHOLDER


def test_the_same_image_in_another_base64_spelling_shares_a_key() -> None:
    wrapped = _body(messages=[_image_url_message("data:image/png;base64,aGVs\nbG8=")])
    plain = _body(messages=[_image_url_message(f"data:image/png;base64,{HELLO_B64}")])
    other = _body(messages=[_image_url_message("data:image/png;base64,aGVsbG9v")])
    assert cache_key("c", wrapped) == cache_key("c", plain) != cache_key("c", other)


def test_normalising_leaves_the_request_untouched() -> None:
    body = _body(
        messages=[_image_url_message(f"data:image/png;base64,{HELLO_B64}")],
        tools=[{"type": "function", "function": {"name": "f"}}],
    )
    before = copy.deepcopy(body)
    normalize_request(body)
    assert body == before


# ------------------------------------------------------------------------------------ store


def test_a_put_answer_is_got_back() -> None:
    cache = ResponseCache()
    assert cache.get("k") is None
    assert cache.put("k", _answer())
    assert cache.get("k") == _answer()
    assert cache.stats() == {
        "entries": 1,
        "bytes": _answer().size(),
        "hits": 1,
        "misses": 1,
        "sets": 1,
        "skips": 0,
        "evictions": 0,
    }


def test_the_size_is_the_utf8_of_the_js_serialised_answer() -> None:
    answer = CachedAnswer(text="é", thinking="", usage={"n": 1}, finish_reason="stop", model="m")
    assert answer.size() == len(b'{"text":"\xc3\xa9","thinking":"","usage":{"n":1},"finish_reason":"stop","model":"m"}')


@pytest.mark.parametrize(("age", "hit"), [(299.999, True), (300.0, True), (300.001, False)])
def test_an_entry_lives_for_the_ttl(age: float, hit: bool) -> None:
    clock = _Clock()
    cache = ResponseCache(clock=clock)
    cache.put("k", _answer())
    clock.now += age
    assert (cache.get("k") is not None) is hit
    assert cache.stats()["entries"] == (1 if hit else 0)
    assert cache.stats()["evictions"] == 0


def test_a_read_refreshes_the_lru_position_not_the_age() -> None:
    clock = _Clock()
    cache = ResponseCache(clock=clock, ttl_s=10)
    cache.put("k", _answer())
    clock.now += 6
    assert cache.get("k") is not None
    clock.now += 6
    assert cache.get("k") is None
    assert cache.stats()["misses"] == 1


def test_a_put_again_restarts_the_age() -> None:
    clock = _Clock()
    cache = ResponseCache(clock=clock, ttl_s=10)
    cache.put("k", _answer("one"))
    clock.now += 6
    cache.put("k", _answer("two"))
    clock.now += 6
    assert cache.get("k") == _answer("two")
    assert cache.stats()["entries"] == 1


@pytest.mark.parametrize(("puts", "kept"), [(2, ["k0", "k1"]), (3, ["k0", "k1", "k2"]), (4, ["k1", "k2", "k3"])])
def test_the_entry_cap_evicts_the_oldest(puts: int, kept: list[str]) -> None:
    cache = ResponseCache(max_entries=3)
    for n in range(puts):
        assert cache.put(f"k{n}", _answer(f"answer {n}"))
    assert [key for key in ("k0", "k1", "k2", "k3") if cache.get(key) is not None] == kept
    assert cache.stats()["evictions"] == puts - len(kept)


def test_eviction_follows_lru_order() -> None:
    cache = ResponseCache(max_entries=3)
    for key in ("a", "b", "c"):
        cache.put(key, _answer(key))
    assert cache.get("a") is not None  # "b" is now the least recently used
    cache.put("d", _answer("d"))
    assert cache.get("b") is None
    assert all(cache.get(key) is not None for key in ("a", "c", "d"))


@pytest.mark.parametrize(("delta", "accepted"), [(-1, True), (0, True), (1, False)])
def test_an_answer_up_to_the_byte_cap_is_kept(delta: int, accepted: bool) -> None:
    answer = _answer("x" * 100)
    cache = ResponseCache(max_bytes=answer.size() - delta)
    assert cache.put("k", answer) is accepted
    assert cache.stats()["skips"] == (0 if accepted else 1)
    assert cache.stats()["bytes"] == (answer.size() if accepted else 0)
    assert (cache.get("k") is not None) is accepted


@pytest.mark.parametrize(("delta", "evicted"), [(-1, 0), (0, 0), (1, 1)])
def test_the_byte_cap_evicts_the_oldest(delta: int, evicted: int) -> None:
    first, second = _answer("a" * 50), _answer("b" * 50)
    cache = ResponseCache(max_bytes=first.size() + second.size() - delta)
    cache.put("first", first)
    cache.put("second", second)
    assert cache.stats()["evictions"] == evicted
    assert (cache.get("first") is None) is bool(evicted)
    assert cache.get("second") == second


def test_expired_entries_go_before_live_ones_are_evicted() -> None:
    clock = _Clock()
    cache = ResponseCache(clock=clock, ttl_s=10, max_entries=2)
    cache.put("old", _answer("old"))
    clock.now += 5
    cache.put("live", _answer("live"))
    clock.now += 6
    cache.put("new", _answer("new"))
    assert cache.get("live") is not None
    assert cache.stats()["evictions"] == 0


def test_answers_without_text_and_thinking_are_skipped() -> None:
    cache = ResponseCache()
    assert not cache.put("empty", _answer(text="", thinking=""))
    assert cache.put("thinking", _answer(text="", thinking="pondered"))
    assert cache.put("text", _answer(text="said"))
    assert cache.stats()["skips"] == 1
    assert cache.stats()["sets"] == 2
    assert cache.get("empty") is None


def test_a_disabled_cache_stores_and_counts_nothing() -> None:
    cache = ResponseCache(enabled=False)
    assert not cache.put("k", _answer())
    assert cache.get("k") is None
    assert cache.stats() == dict.fromkeys(("entries", "bytes", "hits", "misses", "sets", "skips", "evictions"), 0)


def test_clear_drops_entries_and_keeps_counters() -> None:
    cache = ResponseCache()
    cache.put("k", _answer())
    cache.get("k")
    cache.clear()
    assert cache.get("k") is None
    assert cache.stats() == {"entries": 0, "bytes": 0, "hits": 1, "misses": 1, "sets": 1, "skips": 0, "evictions": 0}


@pytest.mark.parametrize(
    "kwargs", [{"ttl_s": 0}, {"ttl_s": -1}, {"ttl_s": float("nan")}, {"max_entries": 0}, {"max_bytes": 0}]
)
def test_nonsense_limits_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="must be"):
        ResponseCache(**kwargs)


def test_concurrent_use_keeps_the_books_straight() -> None:
    cache = ResponseCache(max_entries=50)
    gets_per_thread = 400

    def work(worker: int) -> None:
        for n in range(gets_per_thread):
            key = f"k{(worker * 7 + n) % 80}"
            if cache.get(key) is None:
                cache.put(key, _answer(key))

    threads = [threading.Thread(target=work, args=(worker,)) for worker in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stats = cache.stats()
    assert stats["hits"] + stats["misses"] == 8 * gets_per_thread
    assert stats["sets"] == stats["misses"]
    assert stats["entries"] == 50
    assert stats["bytes"] == sum(_answer(f"k{n}").size() for n in range(80) if cache.get(f"k{n}") is not None)


# ------------------------------------------------------------------------------------ environment


@pytest.mark.parametrize(
    ("env", "enabled"),
    [
        ({}, True),
        ({"RESPONSE_CACHE_ENABLED": "1"}, True),
        ({"RESPONSE_CACHE_ENABLED": "0"}, False),
        ({"RESPONSE_CACHE_ENABLED": "false"}, False),
        ({"RESPONSE_CACHE_ENABLED": " OFF "}, False),
        ({"RESPONSE_CACHE_ENABLED": "No"}, False),
        ({"RESPONSE_CACHE_ENABLED": ""}, True),
        ({"WINDSURFAPI_RESPONSE_CACHE": "off"}, False),
        ({"RESPONSE_CACHE_ENABLED": "1", "WINDSURFAPI_RESPONSE_CACHE": "0"}, True),
        ({"RESPONSE_CACHE_ENABLED": "0", "WINDSURFAPI_RESPONSE_CACHE": "1"}, False),
    ],
)
def test_the_enable_switch(env: dict[str, str], enabled: bool) -> None:
    assert ResponseCache.from_env(env).enabled is enabled


@pytest.mark.parametrize(
    ("env", "max_bytes"),
    [
        ({}, DEFAULT_MAX_BYTES),
        ({"RESPONSE_CACHE_MAX_BYTES": "4096"}, 4096),
        ({"WINDSURFAPI_RESPONSE_CACHE_MAX_BYTES": "2kb"}, 2048),
        ({"RESPONSE_CACHE_MAX_BYTES": "1m", "WINDSURFAPI_RESPONSE_CACHE_MAX_BYTES": "2m"}, 1024**2),
        ({"RESPONSE_CACHE_MAX_BYTES": "lots", "WINDSURFAPI_RESPONSE_CACHE_MAX_BYTES": "2m"}, DEFAULT_MAX_BYTES),
    ],
)
def test_the_byte_cap_from_the_environment(env: dict[str, str], max_bytes: int) -> None:
    assert ResponseCache.from_env(env).max_bytes == max_bytes


def test_from_env_passes_other_settings_on() -> None:
    clock = _Clock()
    cache = ResponseCache.from_env({}, ttl_s=5, clock=clock)
    cache.put("k", _answer())
    clock.now += 6
    assert cache.get("k") is None


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("512", 512),
        ("512b", 512),
        ("1k", 1024),
        ("1KB", 1024),
        ("1kib", 1024),
        ("0.5k", 512),
        ("1.5mb", 1536 * 1024),
        (" 16 MiB ", 16 * 1024**2),
        ("2g", 2 * 1024**3),
        ("1gib", 1024**3),
        ("1.", 1),
        (".5kb", 512),
        ("1.0009k", 1024),
    ],
)
def test_byte_sizes(text: str, size: int) -> None:
    assert parse_byte_size(text) == size


@pytest.mark.parametrize("text", ["", "lots", "-1", "0", "0.4", "1tb", "1 k b", "1e3", "k", "1,000"])
def test_invalid_byte_sizes(text: str) -> None:
    assert parse_byte_size(text) is None


# ------------------------------------------------------------------------------------ every knob, decoding, limits

_KNOB_VALUES: dict[str, Any] = {
    "tools": [{"type": "function", "function": {"name": "f"}}],
    "tool_choice": "required",
    "response_format": {"type": "json_object"},
    "reasoning_effort": "medium",
    "thinking": {"budget_tokens": 1024, "type": "enabled"},
    "stream_options": {"include_usage": True},
    "temperature": 0.7,
    "top_p": 0.9,
    "top_k": 40,
    "max_tokens": 256,
    "stop": ["END"],
    "seed": 42,
    "frequency_penalty": 0.5,
    "presence_penalty": -0.5,
    "logit_bias": {"50256": -100},
    "n": 2,
}


@pytest.mark.parametrize(("knob", "value"), list(_KNOB_VALUES.items()))
@pytest.mark.invariant("SCOPE-2")
def test_each_knob_is_taken_from_its_own_request_field(knob: str, value: object) -> None:
    normalized = normalize_request(_body(**{knob: value}))
    assert normalized[knob] == value
    assert [name for name, got in normalized.items() if got is not None] == ["model", "messages", knob]
    assert cache_key("c", _body(**{knob: value})) != cache_key("c", _body())


def test_knob_keys_sort_by_utf16_code_units_like_js() -> None:
    # JS sorts "\U0001f600" (surrogates D83D DE00) before "\uff61"; code point order would put it last.
    normalized = normalize_request(_body(logit_bias={"\uff61": 1, "\U0001f600": 2, "a": 3}))
    assert list(normalized["logit_bias"]) == ["a", "\U0001f600", "\uff61"]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        # goldens from Node: Buffer.from(data, "base64") and the first 32 hex of its sha256
        ("aGVs", "[base64:x:sha256=d6a81f224bbf2f7c22baddbd5d40730e:bytes=3]"),  # "hel"
        ("aGVsb", "[base64:x:sha256=d6a81f224bbf2f7c22baddbd5d40730e:bytes=3]"),  # lone trailing letter dropped
        ("aGVsbG", "[base64:x:sha256=0ebdc3317b75839f643387d783535adc:bytes=4]"),  # "hell", two letters short
        ("aGVsbG8hIQ", "[base64:x:sha256=5831fcd681f6a42b9fafd7b3befb9205:bytes=7]"),  # "hello!!" unpadded
        ("aGVsbG8hISEh", "[base64:x:sha256=10b0337941cb0652fb9135e5d0dfb7c0:bytes=9]"),  # "hello!!!!"
    ],
)
def test_unpadded_base64_of_every_length_decodes_like_node(data: str, expected: str) -> None:
    assert binary_placeholder("x", data) == expected


@pytest.mark.parametrize("media_type", [None, 5, ["image/png"]])
def test_a_base64_image_source_without_a_string_media_type_gets_an_empty_mime(media_type: object) -> None:
    source: dict[str, Any] = {"type": "base64", "data": HELLO_B64}
    if media_type is not None:
        source["media_type"] = media_type
    part = {"type": "image", "source": source}
    normalized = normalize_request(_body(messages=[{"role": "user", "content": [part]}]))
    assert normalized["messages"][0]["content"][0]["source"]["data"] == (
        "[base64::sha256=2cf24dba5fb0a30e26e83b2ac5b9e29e:bytes=5]"
    )


def test_the_smallest_limits_are_allowed() -> None:
    clock = _Clock()
    cache = ResponseCache(ttl_s=0.5, max_entries=1, clock=clock)
    assert cache.put("a", _answer("a"))
    assert cache.put("b", _answer("b"))
    assert cache.get("a") is None
    assert cache.get("b") == _answer("b")
    clock.now += 0.6
    assert cache.get("b") is None
    tiny = ResponseCache(max_bytes=1, ttl_s=1)
    assert not tiny.put("k", _answer("x"))
    assert tiny.stats()["skips"] == 1


def test_skips_and_evictions_are_counted_each_time() -> None:
    cache = ResponseCache(max_entries=1, max_bytes=_answer("x" * 10).size())
    assert not cache.put("e1", _answer(text=""))
    assert not cache.put("e2", _answer(text=""))
    assert not cache.put("big1", _answer("x" * 11))
    assert not cache.put("big2", _answer("x" * 11))
    for key in ("k1", "k2", "k3"):
        assert cache.put(key, _answer(key))
    assert cache.stats() == {
        "entries": 1,
        "bytes": _answer("k3").size(),
        "hits": 0,
        "misses": 0,
        "sets": 3,
        "skips": 4,
        "evictions": 2,
    }
