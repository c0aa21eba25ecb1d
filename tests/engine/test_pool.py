"""The conversation pool: fingerprints (JS serialisation), check-out/check-in rules, TTL and LRU."""

from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from engine.pool import (
    INHERIT,
    META_STRIP_MAX_CHARS,
    ConversationPool,
    Expected,
    FingerprintOptions,
    PoolEntry,
    canonical_content_block,
    fingerprint_after,
    fingerprint_before,
    js_to_fixed_1,
    js_trim,
    normalize_system_prompt_for_hash,
    project_message,
    short_digest,
    stable_stringify,
    strip_meta_tags,
    system_digest,
    tool_context_digest,
)
from fakels.clock import ManualClock

Msg = Mapping[str, object]


def user(content: object) -> dict[str, object]:
    return {"role": "user", "content": content}


def assistant(content: object, tool_calls: object = None) -> dict[str, object]:
    message: dict[str, object] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return message


def system(content: object) -> dict[str, object]:
    return {"role": "system", "content": content}


def call(call_id: str, name: str, arguments: object) -> dict[str, object]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


# ------------------------------------------------------------------------------------ JS serialisation


def test_stable_stringify_sorts_keys_by_utf16_code_units() -> None:
    # U+1F600 is D83D DE00 in UTF-16, below U+E000: JS puts it first, Python's str order would not
    value = {"\ue000": 1, "\U0001f600": 2, "b": 3, "B": 4, "10": 5, "2": 6}
    assert stable_stringify(value) == '{"10":5,"2":6,"B":4,"b":3,"\U0001f600":2,"\ue000":1}'


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1.0, "1"),
        (-0.0, "0"),
        (1e21, "1e+21"),
        (1e-7, "1e-7"),
        (0.000001, "0.000001"),
        (2**64, "18446744073709552000"),
        (2**53 + 1, "9007199254740992"),
        (math.nan, "null"),
        (math.inf, "null"),
        (10**400, "null"),
        ("é\u2028\x7f", '"é\u2028\x7f"'),
        ('\x01\n"\\', '"\\u0001\\n\\"\\\\"'),
        ("\ud800x", '"\\ud800x"'),
        ("\ud83d\ude00", '"\U0001f600"'),  # a surrogate pair held as two code points is one character in JS
        ((1, [None, True]), "[1,[null,true]]"),
    ],
)
def test_stable_stringify_prints_values_as_json_stringify(value: object, expected: str) -> None:
    assert stable_stringify(value) == expected


def test_stable_stringify_rejects_what_json_cannot_hold() -> None:
    with pytest.raises(TypeError):
        stable_stringify(b"bytes")


def test_digests_hash_the_utf8_of_the_js_string() -> None:
    assert short_digest("abc", 16) == hashlib.sha256(b"abc").hexdigest()[:16]
    assert short_digest(None) == hashlib.sha256(b"").hexdigest()[:16]
    # a lone surrogate is U+FFFD in Node's UTF-8
    assert short_digest("a\udc00") == hashlib.sha256("a\ufffd".encode()).hexdigest()[:16]


def test_a_fingerprint_is_the_sha256_of_the_documented_payload() -> None:
    payload = (
        '{"caller":"","model":"","route":"chat","sys":"","tools":"",'
        '"turns":[{"content":[{"text":"hi","type":"text"}],"role":"user"}],"v":2}'
    )
    assert fingerprint_after([user("hi")]) == hashlib.sha256(payload.encode()).hexdigest()


# ------------------------------------------------------------------------------------ text rules


def test_meta_tags_are_stripped_and_blank_runs_tidied() -> None:
    text = "<system-reminder>cwd /x\ntodo</system-reminder>  \n\n\n\nhello <command-name a='1'>/foo</command-name>"
    assert strip_meta_tags(text) == "hello"
    assert strip_meta_tags("a  \t\nb\n\n\n\nc") == "a\nb\n\nc"


def test_unknown_tags_stay_and_are_audited(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="engine.pool"):
        assert strip_meta_tags("<todo>x</todo><todo>y</todo><b-c>z</b-c>") == "<todo>x</todo><todo>y</todo><b-c>z</b-c>"
    assert caplog.messages == ["[META_TAG_AUDIT] Unknown XML tags in user message: todo, b-c"]


def test_meta_stripping_is_capped() -> None:
    long_text = "<summary>s</summary>" + "x" * META_STRIP_MAX_CHARS
    assert strip_meta_tags(long_text) == long_text  # hashed verbatim above the cap
    assert strip_meta_tags(long_text[:META_STRIP_MAX_CHARS]) == "x" * (META_STRIP_MAX_CHARS - 20)


def test_js_trim_uses_the_ecmascript_whitespace_set() -> None:
    assert js_trim("\ufeff\u3000 a \u2029") == "a"
    assert js_trim("\x1ca\x85") == "\x1ca\x85"  # Python's str.strip would remove these


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("at 2024-05-06T07:08:09.123+02:00 ok", "at <ts> ok"),
        ("Today's date is 2024-05-06.", "Today's date is <date>."),
        ("released 2024-05-06, 20240506", "released <date>, 20240506"),
        ("id 123E4567-e89b-12d3-a456-426614174000", "id <uuid>"),
        ("env:\n  - Working directory: /home/me/p\ncwd\uff1aC:\\x",
         "env:\n  - Working directory: <cwd>\ncwd\uff1a <cwd>"),
        ("Current time: 10:11\nTime : now", "Current time: <time>\nTime : <time>"),
        ("Session ID: abc\nsession_id: d", "Session ID: <sessionid>\nsession_id: <sessionid>"),
        ("at 1712345678 and 1712345678123, not 1612345678 or 1712345678.5",
         "at <epoch> and <epoch>, not 1612345678 or 1712345678.5"),
        ("Status:\nM a.py\n?? b\n\nRecent commits:\nabc1234 fix\n",
         "Status:\n<git-status>\n\nRecent commits:\n<recent-commits>\n"),
        ("see abc1234f, 'abc1234f', deadbeef and 1234567", "see <gitsha>, 'abc1234f', deadbeef and 1234567"),
        ("line\u2028cwd: /x", "line\u2028cwd: <cwd>"),  # U+2028 ends a line for a JS ^
        ("\u0661\u0662\u0663\u0664-\u0661\u0662-\u0661\u0662", "\u0661\u0662\u0663\u0664-\u0661\u0662-\u0661\u0662"),
    ],
)  # fmt: skip
def test_system_normalisation_rules(text: str, expected: str) -> None:
    assert normalize_system_prompt_for_hash(text) == expected


# ------------------------------------------------------------------------------------ projection


def test_image_blocks_are_digested_by_their_data() -> None:
    data_url = {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}}
    assert canonical_content_block(data_url) == {
        "type": "image",
        "meta": "image/png;base64",
        "hash": short_digest("QUJD"),
    }
    source = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QUJD"}}
    assert canonical_content_block(source) == {"type": "image", "meta": "image/png", "hash": short_digest("QUJD")}
    assert canonical_content_block({"type": "image_url", "image_url": {"url": "https://x/y.png"}}) == {
        "type": "image",
        "url": "https://x/y.png",
    }
    assert canonical_content_block({"type": "image", "source": {"file_id": "f1"}}) == {"type": "image", "file_id": "f1"}
    assert canonical_content_block({"type": "input_image"}) == {"type": "image", "unhashable": True}
    assert canonical_content_block({"type": "file", "file": {"file_data": "x"}}) == {"type": "file", "unhashable": True}
    assert canonical_content_block({"type": "Document", "file_id": "d"}) == {"type": "file", "file_id": "d"}
    assert canonical_content_block({"type": "thinking", "b": 1, "a": 2}) == {
        "type": "thinking",
        "json": '{"a":2,"b":1,"type":"thinking"}',
    }


def test_the_assistant_projection_keeps_collapsed_text_and_a_tool_call_digest() -> None:
    openai = assistant(" Let me   look.\n", [call("c1", "Read", '{"path":"a","offset":1.0}')])
    anthropic = assistant(
        [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "name": "Read", "input": {"offset": 1, "path": "a"}},
        ]
    )
    assert project_message(openai) == project_message(anthropic)
    assert project_message(openai) == {
        "role": "assistant",
        "text": "Let me look.",
        "tool_calls": [{"name": "Read", "args": '{"offset":1,"path":"a"}'}],
    }
    broken = project_message(assistant("", [call("c2", "Bash", "{not json")]))
    assert broken["tool_calls"] == [{"name": "Bash", "args": "{not json"}]


def test_tool_messages_project_to_tool_results() -> None:
    assert project_message({"role": "tool", "tool_call_id": 5, "content": "ok"}) == {
        "role": "tool_result",
        "tool_call_id": "",
        "content": [{"type": "text", "text": "ok"}],
    }


# ------------------------------------------------------------------------------------ fingerprints


def test_the_next_request_finds_the_entry_the_turn_checked_in() -> None:
    turn1 = [system("You are helpful."), user("hi")]
    after1 = fingerprint_after([*turn1, assistant("hello")], "m", "caller")
    turn2 = [*turn1, assistant("hello"), user("and now?")]
    assert fingerprint_before(turn2, "m", "caller") == after1
    # a tool loop: the newest stable turn is the tool result
    turn3: list[Msg] = [
        *turn2,
        assistant("", [call("c1", "Bash", '{"command":"ls"}')]),
        {"role": "tool", "tool_call_id": "c1", "content": "a"},
    ]
    after2 = fingerprint_after([*turn2, assistant("", [call("c1", "Bash", '{"command": "ls"}')])], "m", "caller")
    assert fingerprint_before(turn3, "m", "caller") == after2


def test_no_prior_turn_means_no_fingerprint() -> None:
    assert fingerprint_before([user("hi")]) is None
    assert fingerprint_before([system("s"), assistant("a")]) is None
    assert fingerprint_before([]) is None
    assert fingerprint_after([]) is None
    assert fingerprint_before([system("s"), user("hi")]) is not None  # only a system message before it


def test_drift_that_does_not_change_the_conversation_keeps_the_fingerprint() -> None:
    base = [system("Today's date is 2024-01-01.\ncwd: /a"), user("look"), assistant("ok"), user("next")]
    drifted = [
        system("Today's date is 2024-02-02.\ncwd: /b"),
        user("<system-reminder>todo: 3</system-reminder>look"),
        assistant("  ok "),
        user("other"),
    ]
    assert fingerprint_before(base) == fingerprint_before(drifted)
    assert fingerprint_before([system("You are terse."), *base[1:]]) != fingerprint_before(base)


def test_the_key_covers_caller_model_route_system_and_media() -> None:
    convo = [
        user(
            [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]
        )
    ]
    convo += [assistant("a cat"), user("colour?")]
    fp = fingerprint_before(convo, "m", "c")
    assert fp != fingerprint_before(convo, "m", "d")
    assert fp != fingerprint_before(convo, "n", "c")
    assert fp != fingerprint_before(convo, "m", "c", FingerprintOptions(route="responses"))
    other_image = [
        user(
            [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,BBBB"}}]
        )
    ]
    assert fp != fingerprint_before([*other_image, *convo[1:]], "m", "c")
    with_system = [system("S"), *convo]
    assert fingerprint_before(with_system, "m", "c") != fp
    assert fingerprint_before(with_system, "m", "c", FingerprintOptions(hash_system=False)) == fp


def test_unhashable_media_in_a_prior_turn_disables_reuse() -> None:
    convo = [user([{"type": "input_image"}]), assistant("?"), user("again")]
    assert fingerprint_before(convo) is None
    assert fingerprint_after(convo) is None
    assert fingerprint_before([*convo[1:]]) is not None


def test_emulated_tools_are_part_of_the_key_in_any_order() -> None:
    tools = [
        {"type": "function", "function": {"name": "Read", "description": "read", "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": "bash", "description": "run"}},
    ]
    convo = [user("hi"), assistant("ok"), user("more")]
    emulated = FingerprintOptions(emulate_tools=True, tools=tools, tool_preamble="P")
    reordered = FingerprintOptions(emulate_tools=True, tools=list(reversed(tools)), tool_preamble="P")
    assert tool_context_digest(emulated) == tool_context_digest(reordered)
    assert fingerprint_before(convo, options=emulated) == fingerprint_before(convo, options=reordered)
    assert fingerprint_before(convo, options=emulated) != fingerprint_before(convo)
    changed = FingerprintOptions(emulate_tools=True, tools=tools, tool_preamble="Q")
    assert tool_context_digest(changed) != tool_context_digest(emulated)
    assert tool_context_digest(FingerprintOptions(tools=tools)) == ""


def test_system_digest_normalises_only_text_blocks() -> None:
    assert system_digest([user("x")]) == ""
    one = system_digest([system([{"type": "text", "text": "date 2024-01-01"}])])
    two = system_digest([system([{"type": "text", "text": "date 2025-12-31"}])])
    assert one == two
    assert len(one) == 32
    assert system_digest([system("x")], hash_system=False) == ""


# ------------------------------------------------------------------------------------ the pool


def entry(cascade_id: str = "c1", **fields: object) -> PoolEntry:
    return PoolEntry(cascade_id, session_id="s", api_key="k1", ls_address="127.0.0.1:1", **fields)  # type: ignore[arg-type]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(10_000.0)


@pytest.fixture
def pool(clock: ManualClock) -> ConversationPool:
    return ConversationPool(ttl_s=1800, max_entries=500, clock=clock.now)


def test_a_hit_removes_the_entry(pool: ConversationPool) -> None:
    pool.checkin("fp", entry(step_offset=3, generator_offset=2))
    got = pool.checkout("fp")
    assert got is not None
    assert (got.cascade_id, got.step_offset, got.generator_offset) == ("c1", 3, 2)
    assert pool.checkout("fp") is None
    assert pool.checkout(None) is None
    assert pool.checkout("") is None
    stats = pool.stats()
    assert (stats.hits, stats.misses, stats.stores, stats.size) == (1, 3, 1, 0)
    assert stats.hit_rate == "25.0"


def test_a_caller_mismatch_misses_without_deleting(pool: ConversationPool) -> None:
    pool.checkin("fp", entry(), caller_key="alice")
    assert pool.checkout("fp", caller_key="bob") is None
    assert "fp" in pool
    assert pool.checkout("fp", caller_key="alice") is not None


def test_an_empty_caller_key_on_either_side_is_not_compared(pool: ConversationPool) -> None:
    pool.checkin("fp", entry(), caller_key="alice")
    assert pool.checkout("fp") is not None
    pool.checkin("fp", entry())
    assert pool.checkout("fp", caller_key="bob") is not None


def test_expiry_is_strictly_after_the_ttl(pool: ConversationPool, clock: ManualClock) -> None:
    pool.checkin("fp", entry())
    clock.advance(1800)
    assert pool.checkout("fp") is not None
    pool.checkin("fp", entry())
    clock.advance(1800.5)
    assert pool.checkout("fp") is None
    assert "fp" not in pool
    assert pool.stats().expired == 1


def test_an_expired_entry_of_another_caller_is_left_alone(pool: ConversationPool, clock: ManualClock) -> None:
    pool.checkin("fp", entry(), caller_key="alice")
    clock.advance(4000)
    assert pool.checkout("fp", caller_key="bob") is None
    assert "fp" in pool  # the caller check comes first
    assert pool.checkout("fp", caller_key="alice") is None
    assert "fp" not in pool


@pytest.mark.parametrize(
    ("expected", "hit"),
    [
        (Expected(api_key="k1", ls_address="127.0.0.1:1", ls_generation=4), True),
        (Expected(api_key="k2"), False),
        (Expected(ls_address="127.0.0.1:2"), False),
        (Expected(ls_generation=5), False),
        (Expected(), True),
        (Expected(api_key="", ls_address="", ls_generation=None), True),
    ],
)
def test_an_owner_mismatch_misses_and_keeps_the_entry(pool: ConversationPool, expected: Expected, hit: bool) -> None:
    pool.checkin("fp", entry(ls_generation=4))
    assert (pool.checkout("fp", expected=expected) is not None) is hit
    assert ("fp" in pool) is not hit


def test_a_stored_entry_without_a_generation_matches_any(pool: ConversationPool) -> None:
    pool.checkin("fp", entry(ls_generation=None))
    assert pool.checkout("fp", expected=Expected(ls_generation=9)) is not None


def test_checkin_normalises_offsets_and_times(pool: ConversationPool, clock: ManualClock) -> None:
    pool.checkin("fp", entry(step_offset=math.nan, generator_offset=math.inf, created_at=None))
    stored = pool.peek("fp")
    assert stored is not None
    assert (stored.step_offset, stored.generator_offset) == (0, None)
    assert (stored.created_at, stored.last_access) == (10_000.0, 10_000.0)
    clock.advance(5)
    pool.checkin("fp", stored)
    again = pool.peek("fp")
    assert again is not None
    assert (again.created_at, again.last_access) == (10_000.0, 10_005.0)
    pool.checkin("fp", entry(generator_offset=0))
    kept = pool.peek("fp")
    assert kept is not None
    assert kept.generator_offset == 0  # a known 0 is a real start


def test_the_caller_key_argument_wins_over_the_entry(pool: ConversationPool) -> None:
    pool.checkin("a", entry(caller_key="old"), caller_key="new")
    pool.checkin("b", entry(caller_key="old"))
    assert [pool.peek(fp).caller_key for fp in ("a", "b")] == ["new", "old"]  # type: ignore[union-attr]


def test_one_checkin_under_several_fingerprints(pool: ConversationPool) -> None:
    pool.checkin(["fp-original", "", "fp-fallback"], entry())
    stats = pool.stats()
    assert (stats.size, stats.stores, stats.alias_writes) == (2, 1, 1)
    assert pool.checkout("fp-original") is not None
    assert pool.checkout("fp-fallback") is not None


def test_nothing_to_store_is_not_a_store(pool: ConversationPool) -> None:
    pool.checkin(None, entry())
    pool.checkin([], entry())
    pool.checkin("fp", None)
    assert pool.stats().stores == 0


def test_ttl_hints_set_inherit_and_clear(pool: ConversationPool, clock: ManualClock) -> None:
    pool.checkin("long", entry(), ttl_hint_s=5400)
    clock.advance(3000)
    long_entry = pool.checkout("long")
    assert long_entry is not None
    assert long_entry.ttl_hint_s == 5400
    pool.checkin("inherit", long_entry)  # INHERIT keeps the 90 min window
    pool.checkin("cleared", long_entry, ttl_hint_s=None)
    pool.checkin("zero", long_entry, ttl_hint_s=0)
    pool.checkin("nan", long_entry, ttl_hint_s=math.nan)
    clock.advance(3000)
    assert pool.checkout("inherit") is not None
    assert [pool.checkout(fp) for fp in ("cleared", "zero", "nan")] == [None, None, None]
    assert INHERIT is not None


def test_lru_eviction_drops_the_least_recently_checked_in(clock: ManualClock) -> None:
    pool = ConversationPool(max_entries=3, clock=clock.now)
    for fp in ("a", "b", "c"):
        pool.checkin(fp, entry(fp))
        clock.advance(1)
    pool.checkin("a", entry("a"))  # refreshed: b is now the oldest
    clock.advance(1)
    pool.checkin("d", entry("d"))
    assert [fp for fp in "abcd" if fp in pool] == ["a", "c", "d"]
    assert pool.stats().evictions == 1


def test_expired_entries_go_before_anything_is_evicted(clock: ManualClock) -> None:
    pool = ConversationPool(ttl_s=60, max_entries=2, clock=clock.now)
    pool.checkin("keep", entry(), ttl_hint_s=600)
    clock.advance(1)
    pool.checkin("stale", entry())
    clock.advance(100)
    pool.checkin("new", entry())
    assert [fp in pool for fp in ("keep", "stale", "new")] == [True, False, True]
    assert (pool.stats().expired, pool.stats().evictions) == (1, 0)


def test_sweep_drops_expired_entries(pool: ConversationPool, clock: ManualClock) -> None:
    pool.checkin("a", entry())
    pool.checkin("b", entry(), ttl_hint_s=7200)
    clock.advance(2000)
    assert pool.sweep() == 1
    assert [fp in pool for fp in "ab"] == [False, True]


def test_invalidate_for_drops_every_slot_of_the_cascades_that_went_away(pool: ConversationPool) -> None:
    pool.checkin(["a1", "a2"], PoolEntry("cA", api_key="k1", ls_address="ls:1", ls_generation=1))
    pool.checkin("alias", PoolEntry("cA", api_key="k9", ls_address="ls:9"))  # same cascade, other owner fields
    pool.checkin("b", PoolEntry("cB", api_key="k2", ls_address="ls:1", ls_generation=2))
    pool.checkin("c", PoolEntry("cC", api_key="k3", ls_address="ls:1", ls_generation=None))
    pool.checkin("d", PoolEntry("cD", api_key="k4", ls_address="ls:2"))
    assert pool.invalidate_for(ls_address="ls:1", ls_generation=1) == 4  # a1, a2, alias, c (generation unknown)
    assert sorted(fp for fp in ("a1", "a2", "alias", "b", "c", "d") if fp in pool) == ["b", "d"]
    assert pool.invalidate_for(api_key="k4") == 1
    assert pool.invalidate_for() == 0
    assert len(pool) == 1


def test_hit_rate_formats_like_to_fixed() -> None:
    assert js_to_fixed_1(0.25) == "0.3"  # JS rounds the tie up; Python's format would give 0.2
    assert js_to_fixed_1(1 / 3 * 100) == "33.3"
    assert js_to_fixed_1(100.0) == "100.0"
    assert ConversationPool(clock=ManualClock().now).stats().hit_rate == "0.0"


def test_clear_empties_the_pool(pool: ConversationPool) -> None:
    pool.checkin(["a", "b"], entry())
    assert pool.clear() == 2
    assert len(pool) == 0


def test_ten_thousand_entries_stay_fast(clock: ManualClock) -> None:
    small = ConversationPool(max_entries=500, clock=clock.now)
    big = ConversationPool(max_entries=20_000, clock=clock.now)
    started = time.perf_counter()
    for index in range(10_000):
        clock.advance(0.01)
        for target in (small, big):
            target.checkin(f"fp{index}", entry(f"c{index}"))
    for index in range(0, 10_000, 3):
        big.checkout(f"fp{index}")
    elapsed = time.perf_counter() - started
    assert len(small) == 500
    assert small.stats().evictions == 9_500
    assert len(big) == 10_000 - len(range(0, 10_000, 3))
    assert elapsed < 3.0, f"{elapsed:.2f}s for 20,000 check-ins"


def test_many_expired_entries_are_pruned_without_a_full_scan_per_checkin(clock: ManualClock) -> None:
    pool = ConversationPool(ttl_s=10, max_entries=100_000, clock=clock.now)
    started = time.perf_counter()
    for index in range(10_000):
        clock.advance(0.002)
        pool.checkin(f"fp{index}", entry(f"c{index}"))
    assert len(pool) == 5_000  # one entry per 2 ms, 10 s window
    assert time.perf_counter() - started < 3.0


# ------------------------------------------------------------------------------------ state machine

_FPS = st.sampled_from([f"fp{i}" for i in range(6)])
_CALLERS = st.sampled_from(["", "alice", "bob"])
_HINTS = st.sampled_from([INHERIT, None, 0, 30.0, 400.0])
_MAX = 4
_TTL = 100.0


class PoolModel(RuleBasedStateMachine):
    """The pool against a plain reference: every operation as the documented rules state it.

    Reference semantics: a check-in prunes every expired entry, then evicts by last access (ties:
    the most recent check-in is the newest); checkout applies caller, expiry, owner checks in order.
    """

    def __init__(self) -> None:
        super().__init__()
        self.clock = ManualClock(0.0)
        self.pool = ConversationPool(ttl_s=_TTL, max_entries=_MAX, clock=self.clock.now)
        self.model: dict[str, tuple[PoolEntry, int]] = {}  # fp -> (stored entry, check-in sequence)
        self.seq = 0
        self.counts = {"hits": 0, "misses": 0, "stores": 0, "evictions": 0, "expired": 0}

    def _ttl(self, stored: PoolEntry) -> float:
        return stored.ttl_hint_s if stored.ttl_hint_s else _TTL

    def _expired(self, stored: PoolEntry) -> bool:
        return self.clock.now() - stored.last_access > self._ttl(stored)

    @rule(
        fps=st.lists(_FPS, min_size=1, max_size=2, unique=True),
        cascade=st.integers(0, 3),
        api_key=st.sampled_from(["k1", "k2"]),
        caller=_CALLERS,
        hint=_HINTS,
        generator=st.sampled_from([None, 0, 3, math.nan]),
    )
    def checkin(self, fps: list[str], cascade: int, api_key: str, caller: str, hint: object, generator: object) -> None:
        now = self.clock.now()
        incoming = PoolEntry(f"c{cascade}", api_key=api_key, generator_offset=generator, ttl_hint_s=120.0)  # type: ignore[arg-type]
        self.pool.checkin(fps, incoming, caller_key=caller, ttl_hint_s=hint)  # type: ignore[arg-type]
        if hint is INHERIT:
            resolved: float | None = 120.0
        elif isinstance(hint, float) and hint > 0:
            resolved = hint
        else:
            resolved = None
        stored = PoolEntry(
            f"c{cascade}",
            api_key=api_key,
            generator_offset=generator if generator is None or not math.isnan(generator) else None,  # type: ignore[arg-type]
            caller_key=caller,
            created_at=now,
            last_access=now,
            ttl_hint_s=resolved,
        )
        for fp in fps:
            self.seq += 1
            self.model[fp] = (stored, self.seq)
        self.counts["stores"] += 1
        for fp in [fp for fp, (e, _) in self.model.items() if self._expired(e)]:
            del self.model[fp]
            self.counts["expired"] += 1
        while len(self.model) > _MAX:
            oldest = min(self.model, key=lambda fp: (self.model[fp][0].last_access, self.model[fp][1]))
            del self.model[oldest]
            self.counts["evictions"] += 1

    @rule(fp=_FPS, caller=_CALLERS, api_key=st.sampled_from(["", "k1", "k2"]))
    def checkout(self, fp: str, caller: str, api_key: str) -> None:
        got = self.pool.checkout(fp, caller_key=caller, expected=Expected(api_key=api_key))
        held = self.model.get(fp)
        want: PoolEntry | None = None
        if held is not None:
            stored = held[0]
            if stored.caller_key and caller and stored.caller_key != caller:
                pass
            elif self._expired(stored):
                del self.model[fp]
                self.counts["expired"] += 1
            elif not (api_key and stored.api_key != api_key):
                del self.model[fp]
                want = stored
        self.counts["hits" if want is not None else "misses"] += 1
        if want is None:
            assert got is None
        else:
            assert got is not None
            assert (got.cascade_id, got.api_key, got.caller_key, got.last_access) == (
                want.cascade_id,
                want.api_key,
                want.caller_key,
                want.last_access,
            )
            assert got.generator_offset == want.generator_offset
            assert got.generator_offset is None or got.generator_offset in (0, 3)  # unknown never becomes 0

    @rule(seconds=st.sampled_from([0.5, 30.0, 101.0, 500.0]))
    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)

    @precondition(lambda self: bool(self.model))
    @rule(api_key=st.sampled_from(["k1", "k2"]))
    def invalidate(self, api_key: str) -> None:
        doomed_ids = {e.cascade_id for e, _ in self.model.values() if e.api_key == api_key}
        doomed = [fp for fp, (e, _) in self.model.items() if e.api_key == api_key or e.cascade_id in doomed_ids]
        assert self.pool.invalidate_for(api_key=api_key) == len(doomed)
        for fp in doomed:
            del self.model[fp]

    @invariant()
    def same_contents_and_counters(self) -> None:
        assert {fp for fp in (f"fp{i}" for i in range(6)) if fp in self.pool} == set(self.model)
        stats = self.pool.stats()
        assert stats.size == len(self.model) <= _MAX
        assert {k: getattr(stats, k) for k in self.counts} == self.counts


@pytest.mark.invariant("OFF-3")
def test_the_pool_follows_its_rules_over_random_operation_sequences() -> None:
    run_state_machine_as_test(PoolModel, settings=settings(max_examples=60, stateful_step_count=30, deadline=None))


@given(text=st.text(max_size=40))
def test_fingerprints_are_a_pure_function_of_the_request(text: str) -> None:
    convo: list[Msg] = [system(f"S {text}"), user(text), assistant(text), user("next")]
    assert fingerprint_before(convo) == fingerprint_before([dict(m) for m in convo])
    assert fingerprint_after(convo) == fingerprint_after(list(convo))
