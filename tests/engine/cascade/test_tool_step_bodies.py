"""The step bodies the bridge writes, and how the tool history is read (engine.md 6.A), decoded from the wire.

The per-tool mappings are in ``test_tool_step_mappings.py``. Here: read_url_content (whose document
URL rides as a field outside the kit's proto subset), the body writer rules that no mapping reaches
today but :func:`engine.cascade.tool_steps.build_step` implements (exit-code range, stderr, instructions,
chunk presence, document text precedence), the type value table, ``file_uri``, and how
:func:`engine.cascade.tool_steps.map_tool_history` pairs calls with their results.
"""

from __future__ import annotations

import pytest

from engine.cascade.steps_delta import AdditionalStepsPlan, additional_steps_for, delta_start_for, last_assistant_index
from engine.cascade.tool_steps import (
    BRIDGE_STEP_TYPES,
    STEP_STATUS_DONE,
    Args,
    build_additional_steps,
    build_step,
    file_uri,
    map_tool_history,
)
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from tests.engine.cascade.step_wire_support import (
    DONE,
    Decoded,
    decoded_history,
    decoded_step,
    expected,
    on_the_wire,
    one_call,
)
from tests.engine.cascade.tool_history_support import Msg, call, tool_round

KB_URL = {"path": "additional_steps[0].read_url_content.web_document", "number": 3, "wire_type": "len"}


def fetched(name: str, args: object, result: object = None) -> tuple[Decoded, list[Decoded]]:
    """One call's decoded step and the unknown fields of the Send that carries it."""
    [step], unknown = on_the_wire(build_additional_steps(tool_round([("f1", name, args, result)])))
    return dict(step), unknown


def kb_url(url: str) -> list[Decoded]:
    return [{**KB_URL, "value": {"hex": url.encode("utf-8").hex()}}]


# ------------------------------------------------------------------------------------ read_url_content (WebFetch)


def test_web_fetch_writes_the_url_and_a_document_with_the_page_text_and_the_url() -> None:
    url = "https://exemple.fr/été?q=😀&x=1"
    step, unknown = fetched("WebFetch", {"url": url}, "Titre — page\n😀")
    assert step == expected("read_url_content", {"url": url, "web_document": {"text": "Titre — page\n😀"}})
    # KnowledgeBaseItem.url (3), outside the kit's subset, as the LS sees it: one length-delimited field
    assert unknown == kb_url(url)


@pytest.mark.parametrize(
    ("args", "url"),
    [
        ({"url": "https://a/", "uri": "https://b/", "link": "https://c/"}, "https://a/"),
        ({"url": "", "uri": "https://b/", "link": "https://c/"}, "https://b/"),
        ({"uri": "", "link": "https://c/"}, "https://c/"),
    ],
)
def test_web_fetch_takes_url_then_uri_then_link(args: dict[str, object], url: str) -> None:
    step, unknown = fetched("WebFetch", args, "t")
    assert step == expected("read_url_content", {"url": url, "web_document": {"text": "t"}})
    assert unknown == kb_url(url)


def test_web_fetch_without_a_result_still_carries_the_document_url() -> None:
    step, unknown = fetched("WebFetch", {"url": "https://e.x/"})
    assert step == expected("read_url_content", {"url": "https://e.x/", "web_document": {}})
    assert unknown == kb_url("https://e.x/")


@pytest.mark.parametrize(
    ("args", "result", "body"),
    [
        ({}, "page", {"web_document": {"text": "page"}}),
        ({"url": 5, "uri": "https://b/"}, "page", {"web_document": {"text": "page"}}),  # non-string: no fallback
        ({}, None, None),
        ({}, "", None),  # every document field is written only when non-empty: no body at all
        ({"url": ""}, "", None),
    ],
)
def test_web_fetch_without_a_url(args: object, result: object, body: Decoded | None) -> None:
    step, unknown = fetched("WebFetch", args, result)
    assert step == expected("read_url_content", body)
    assert unknown == []


@pytest.mark.parametrize("size", [1, 127, 128, 300, 16383, 16384, 70000])
def test_the_document_url_length_prefix_at_the_varint_boundaries(size: int) -> None:
    url = "https://x/" + "é" * ((size - 10) // 2) + "a" * ((size - 10) % 2) if size > 10 else "h" * size
    assert len(url.encode("utf-8")) == size
    step, unknown = fetched("WebFetch", {"url": url})
    assert step == expected("read_url_content", {"url": url, "web_document": {}})
    assert unknown == kb_url(url)


def test_the_document_text_is_text_then_content_then_summary_and_the_url_falls_back_to_resolved_url() -> None:
    def body(args: dict[str, object]) -> tuple[Decoded, list[Decoded]]:
        [got], unknown = on_the_wire([build_step("read_url_content", args)])
        return dict(got), unknown

    assert body({"text": "T", "content": "C", "summary": "S"}) == (
        expected("read_url_content", {"web_document": {"text": "T", "summary": "S"}}),
        [],
    )
    assert body({"text": "", "content": "C"})[0] == expected("read_url_content", {"web_document": {"text": "C"}})
    assert body({"content": 1, "summary": "S"})[0] == expected("read_url_content", {"web_document": {"summary": "S"}})
    assert body({"summary": "S"})[0] == expected("read_url_content", {"web_document": {"text": "S", "summary": "S"}})
    # resolved_url only names the document; the step's own url field comes from url alone
    got, unknown = body({"resolved_url": "https://r/"})
    assert (got, unknown) == (expected("read_url_content", {"web_document": {}}), kb_url("https://r/"))
    got, unknown = body({"url": "https://u/", "resolved_url": "https://r/"})
    assert (got, unknown) == (
        expected("read_url_content", {"url": "https://u/", "web_document": {}}),
        kb_url("https://u/"),
    )
    # a lone surrogate is passed through as its raw bytes, as the bridge's writer gets it
    got, unknown = body({"resolved_url": "a\ud800"})
    assert unknown == [{**KB_URL, "value": {"hex": "61eda080"}}]


# ------------------------------------------------------------------------------------ build_step: type and status


def test_the_type_value_of_each_kind_is_its_oneof_number() -> None:
    # wire.md section 6, item 1: CASCADE_STEP of the bridge
    assert dict(BRIDGE_STEP_TYPES) == {
        "view_file": 14,
        "list_directory": 15,
        "write_to_file": 23,
        "run_command": 28,
        "propose_code": 32,
        "find": 34,
        "read_url_content": 40,
        "grep_search": 13,
        "grep_search_v2": 105,
        "search_web": 42,
    }
    assert cortex.CortexStepStatus.Name(STEP_STATUS_DONE) == DONE


@pytest.mark.parametrize(
    ("kind", "body"),
    [
        ("view_file", None),
        ("run_command", None),
        ("grep_search_v2", None),
        ("find", None),
        ("list_directory", None),
        ("write_to_file", None),
        ("propose_code", {"action_spec": {"command": {"is_edit": True}}}),  # is_edit is always written
        ("search_web", None),
        ("read_url_content", None),
    ],
)
def test_a_step_with_nothing_to_write_has_only_type_and_status(kind: str, body: Decoded | None) -> None:
    step = build_step(kind, {})
    assert (step.type, step.status) == (BRIDGE_STEP_TYPES[kind], STEP_STATUS_DONE)
    assert decoded_step(step) == expected(kind, body)


@pytest.mark.parametrize(
    ("kind", "field"),
    [("view_file", "content"), ("grep_search_v2", "raw_output"), ("find", "raw_output"), ("search_web", "summary")],
)
def test_an_empty_result_string_is_written_but_a_non_string_is_not(kind: str, field: str) -> None:
    assert decoded_step(build_step(kind, {field: ""})) == expected(kind, {})
    assert decoded_step(build_step(kind, {field: 0})) == expected(kind, None)
    assert decoded_step(build_step(kind, {field: "é"})) == expected(kind, {field: "é"})


@pytest.mark.parametrize(
    ("kind", "args", "written"),
    [
        ("view_file", {"content": "a\ud800b"}, {"content": "a\ufffdb"}),  # text_if_string
        ("grep_search_v2", {"pattern": "\udc00x"}, {"pattern": "\ufffdx"}),  # text
        ("list_directory", {"children": ["ok", "b\ud800"]}, {"children": ["ok", "b\ufffd"]}),  # strings
        ("view_file", {"content": "\ud83d\ude00"}, {"content": "\U0001f600"}),  # a pair is one character
    ],
    ids=["text-if-string", "text", "repeated", "surrogate-pair"],
)
def test_a_lone_surrogate_is_written_as_u_fffd_as_node_encodes_it(kind: str, args: Args, written: Decoded) -> None:
    assert decoded_step(build_step(kind, args)) == expected(kind, written)


# ------------------------------------------------------------------------------------ build_step: run_command


@pytest.mark.parametrize(
    ("exit_code", "written"),
    [
        (0, True),
        (1, True),
        (-1, True),
        (2**31 - 1, True),
        (-(2**31), True),
        (2**31, False),
        (-(2**31) - 1, False),
        (True, False),
        (False, False),
        (1.0, False),
        ("0", False),
        (None, False),
    ],
)
def test_the_exit_code_is_written_only_as_an_int32(exit_code: object, written: bool) -> None:
    got = decoded_step(build_step("run_command", {"exit_code": exit_code}))
    assert got == expected("run_command", {"exit_code": exit_code} if written else None)


def test_run_command_stdout_stderr_and_the_combined_output() -> None:
    args: dict[str, object] = {"stdout": "out ü", "stderr": "err 😀", "full_output": "all", "blocking": "yes"}
    assert decoded_step(build_step("run_command", args)) == expected(
        "run_command", {"stdout": "out ü", "stderr": "err 😀", "combined_output": {"full": "all"}, "blocking": True}
    )
    # empty strings are written (the body is present); the output message is present even when empty
    assert decoded_step(build_step("run_command", {"stderr": ""})) == expected("run_command", {})
    assert decoded_step(build_step("run_command", {"stdout": ""})) == expected("run_command", {})
    assert decoded_step(build_step("run_command", {"full_output": ""})) == expected(
        "run_command", {"combined_output": {}}
    )
    assert decoded_step(build_step("run_command", {"stdout": 1, "stderr": None, "full_output": 2, "blocking": 0})) == (
        expected("run_command", None)
    )


# ------------------------------------------------------------------------------------ build_step: propose_code


def test_propose_code_instruction_goes_to_the_command_and_the_step() -> None:
    got = decoded_step(build_step("propose_code", {"instruction": "Renomme «x» 😀", "target_file_uri": "file:///f"}))
    assert got == expected(
        "propose_code",
        {
            "action_spec": {
                "command": {"instruction": "Renomme «x» 😀", "is_edit": True, "file": {"absolute_uri": "file:///f"}}
            },
            "code_instruction": "Renomme «x» 😀",
        },
    )
    bare = {"action_spec": {"command": {"is_edit": True}}}
    empties: list[dict[str, object]] = [
        {"instruction": ""},
        {"instruction": 5},
        {"target_file_uri": ""},
        {"target_file_uri": 7},
    ]
    for args in empties:
        assert decoded_step(build_step("propose_code", args)) == expected("propose_code", bare)


def test_propose_code_writes_a_chunk_only_when_it_has_a_string_or_allow_multiple() -> None:
    chunks: list[object] = [
        {"target": "a", "replacement": "b", "allow_multiple": True},
        {"target": "", "replacement": None},  # an empty string is written
        {"replacement": ""},
        {"allow_multiple": 1},
        {"target": 1, "replacement": ["x"], "allow_multiple": 0},  # nothing to write: skipped
        {},
        "not an object",
        None,
        {"target": None, "replacement": "r"},
        {"target": 5, "replacement": "s"},  # a non-string beside a string is written as ""
    ]
    got = decoded_step(build_step("propose_code", {"replacement_chunks": chunks}))
    command = {
        "is_edit": True,
        "replacement_chunks": [
            {"target_content": "a", "replacement_content": "b", "allow_multiple": True},
            {},
            {},
            {"allow_multiple": True},
            {"replacement_content": "r"},
            {"replacement_content": "s"},
        ],
    }
    assert got == expected("propose_code", {"action_spec": {"command": command}})
    not_a_list = decoded_step(build_step("propose_code", {"replacement_chunks": {"target": "a"}}))
    assert not_a_list == expected("propose_code", {"action_spec": {"command": {"is_edit": True}}})


# ------------------------------------------------------------------------------------ build_step: lists


def test_repeated_strings_are_string_converted_and_need_a_non_empty_array() -> None:
    listing = build_step("list_directory", {"children": ["a", 1, None, False, "ü"], "directory_path_uri": "file:///d"})
    assert decoded_step(listing) == expected(
        "list_directory", {"directory_path_uri": "file:///d", "children": ["a", "1", "null", "false", "ü"]}
    )
    assert decoded_step(build_step("list_directory", {"children": "a\nb"})) == expected("list_directory", None)
    assert decoded_step(build_step("list_directory", {"children": []})) == expected("list_directory", None)
    assert decoded_step(build_step("write_to_file", {"code_content": [""]})) == expected(
        "write_to_file", {"code_content": [""]}
    )
    assert decoded_step(build_step("write_to_file", {"file_created": True})) == expected(
        "write_to_file", {"file_created": True}
    )


# ------------------------------------------------------------------------------------ file_uri


@pytest.mark.parametrize(
    ("path", "uri"),
    [
        ("/home/zoë/a b.py", "file:///home/zoë/a b.py"),
        ("/a\\b", "file:///a/b"),  # backslashes become slashes for POSIX paths too
        ("C:\\Users\\Zoë\\x.txt", "file://C:/Users/Zoë/x.txt"),
        ("c:/x", "file://c:/x"),
        ("z:\\", "file://z:/"),
        ("file://C:\\keep\\as is", "file://C:\\keep\\as is"),
        ("file:///x", "file:///x"),
        ("C:", "C:"),
        ("C:x", "C:x"),
        ("CC:/x", "CC:/x"),
        ("1:/x", "1:/x"),
        ("é:/x", "é:/x"),
        ("\\\\server\\share", "\\\\server\\share"),
        (" /lead", " /lead"),
        ("a/C:/x", "a/C:/x"),
        ("rel\\p", "rel\\p"),
        ("", ""),
        (None, ""),
        (5, ""),
        (["/a"], ""),
    ],
)
def test_file_uri(path: object, uri: str) -> None:
    assert file_uri(path) == uri


# ------------------------------------------------------------------------------------ pairing calls and results


def _history(calls: list[Msg], *results: Msg) -> list[Msg]:
    return [{"role": "assistant", "content": None, "tool_calls": calls}, *results]


def _result(call_id: object, content: object, role: str = "tool") -> Msg:
    return {"role": role, "tool_call_id": call_id, "content": content}


def _content_of(history: list[Msg]) -> list[str | None]:
    return [step.get("view_file", {}).get("content") for step in decoded_history(history)]


def test_results_pair_with_calls_by_id_as_js_map_keys() -> None:
    calls: list[Msg] = [
        {"id": 7, "function": {"name": "Read", "arguments": "{}"}},
        {"id": "7", "function": {"name": "Read", "arguments": "{}"}},
        {"id": 0, "function": {"name": "Read", "arguments": "{}"}},
        {"id": True, "function": {"name": "Read", "arguments": "{}"}},
        {"id": ["x"], "function": {"name": "Read", "arguments": "{}"}},
        {"function": {"name": "Read", "arguments": "{}"}},
    ]
    history = _history(
        calls,
        _result(7.0, "number"),  # the same JS number as 7
        _result("7", "string"),
        _result(0, "zero"),  # a falsy id is never indexed
        _result(True, "bool"),  # true is not the key 1
        _result(None, "none"),
    )
    assert _content_of(history) == ["number", "string", None, None, None, None]


def test_the_last_result_for_an_id_wins_and_only_tool_messages_count() -> None:
    history = _history(
        [call("a", "Read", {}), call("a", "Read", {"path": "/p"}), call("b", "Read", {})],
        _result("a", "first"),
        _result("a", "second"),
        _result("b", "from a user message", role="user"),
        {"role": "tool", "content": "no id"},
    )
    assert _content_of(history) == ["second", "second", None]
    # a result given before the call is still laid over it
    early: list[Msg] = [_result("r", "early"), *_history([call("r", "Read", {})])]
    assert _content_of(early) == ["early"]


@pytest.mark.parametrize(
    ("content", "text"),
    [
        ("plain ü", "plain ü"),
        ("", ""),
        ([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "a\nb"),
        ([{"text": 1}, "raw", {"type": "image_url"}, {"text": "ok"}, None], "ok"),
        ([], ""),
        ({"é": "ü", "n": [1.5, None]}, '{"é":"ü","n":[1.5,null]}'),
        (5, "5"),
        (False, "false"),
        (None, '""'),  # JSON.stringify of the '' fallback
        (b"bytes", ""),  # a value JSON cannot express (undefined) reads as no text, still a result
    ],
)
def test_a_result_of_any_shape_becomes_text(content: object, text: str) -> None:
    [step] = decoded_history(_history([call("c", "Read", {})], _result("c", content)))
    assert step == expected("view_file", {"content": text} if text else {})


def test_only_assistant_tool_call_arrays_with_named_functions_are_mapped() -> None:
    history: list[Msg] = [
        {"role": "user", "tool_calls": [call("u", "Bash", {"command": "user"})]},
        {"role": "assistant", "tool_calls": {"0": call("d", "Bash", {"command": "dict"})}},
        {"role": "assistant", "content": "no calls"},
        {
            "role": "assistant",
            "tool_calls": [
                "not a call",
                {"id": "n", "function": "Bash"},
                {"id": "m", "function": {"name": 5}},
                {"id": "l", "function": {"name": ["Bash"]}},  # not a string: never looked up
                {"id": "x", "function": {"arguments": '{"command": "nameless"}'}},
                {"id": "o", "function": {"name": "Bash", "arguments": {"command": "an object, not JSON text"}}},
                {"id": "p", "function": {"name": "Bash", "arguments": "null"}},
                {"id": "q", "function": {"name": "Bash", "arguments": '{"command":' * 3000 + "1" + "}" * 3000}},
                call("k", "Bash", {"command": "kept"}),
            ],
        },
    ]
    mapped = map_tool_history(history)
    assert [(m.message_index, m.tool_call_id, m.tool_name, m.kind) for m in mapped] == [
        (3, "o", "Bash", "run_command"),
        (3, "p", "Bash", "run_command"),
        (3, "q", "Bash", "run_command"),
        (3, "k", "Bash", "run_command"),
    ]
    assert [decoded_step(m.step) for m in mapped] == [
        expected("run_command", {"blocking": True}),
        expected("run_command", {"blocking": True}),
        expected("run_command", {"blocking": True}),
        expected("run_command", {"command_line": "kept", "blocking": True}),
    ]


def test_steps_follow_message_order_then_call_order() -> None:
    history: list[Msg] = [
        {"role": "system", "content": "s"},
        *tool_round([("1", "Glob", {"pattern": "a"}, "r1"), ("2", "WebSearch", {"query": "b"}, "r2")]),
        {"role": "user", "content": "go on"},
        *tool_round([("3", "Write", {"file_path": "/w", "content": "c"}, "r3")]),
    ]
    assert [(m.message_index, m.tool_call_id) for m in map_tool_history(history)] == [(1, "1"), (1, "2"), (5, "3")]
    assert decoded_history(history) == [
        expected("find", {"pattern": "a", "raw_output": "r1"}),
        expected("search_web", {"query": "b", "summary": "r2"}),
        expected("write_to_file", {"target_file_uri": "file:///w", "code_content": ["c"]}),
    ]
    assert one_call("Glob", {"pattern": "a"}, "r1") == decoded_history(history)[0]


# ------------------------------------------------------------------------------------ the delta's edges (steps_delta)


def test_the_last_assistant_may_be_the_last_message_or_the_first() -> None:
    user: Msg = {"role": "user", "content": "u"}
    assistant: Msg = {"role": "assistant", "content": "a"}
    assert last_assistant_index([user, assistant]) == 1
    assert last_assistant_index([assistant, user, user]) == 0
    assert last_assistant_index([]) == 0
    assert delta_start_for([]) == 0
    # the newest round is the last assistant's: here the final message itself
    history = [*tool_round([("1", "Read", {"path": "/a"}, "a")]), *_history([call("2", "Read", {"path": "/b"})])]
    assert delta_start_for(history) == 1
    assert [s.view_file.absolute_path_uri for s in additional_steps_for(build_additional_steps(history), 1, True)] == [
        "file:///b"
    ]


def test_a_fresh_restart_leaves_the_plan_not_resumed() -> None:
    plan = AdditionalStepsPlan(build_additional_steps(tool_round([("1", "Read", {}, "x")])), delta_start=1)
    plan.opened(resumed=True)
    assert plan.resumed_trajectory is True
    plan.restarted_fresh()
    assert plan.resumed_trajectory is False  # a bool, as the dataclass declares
