"""The kit's OFF model (conformance/models/off.py), parse side and tool-history side: the metadata
responses the kit encodes for OFF-1 and what parsing them must give (seed 001 D5), and the native
bridge's tool mapping OFF-5 judges field 9 with (seed 001 D3)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conformance import wire_bytes as wb
from conformance.models.journal import META, SEND, START
from conformance.models.off import (
    UNMAPPED_TOOLS,
    _numbers,
    _numbers_by_name,
    call_id,
    encode_metadata_response,
    expected_usage,
    newest_round,
    step_id,
)
from engine.cascade.tool_steps import build_additional_steps
from fakels.decoder import message_to_dict
from fakels.rpcs import RPCS
from tests.conformance.models.model_off_support import step, tool_call

# Field numbers written out from the proto (GetCascadeTrajectoryGeneratorMetadataResponse.generator_metadata = 1,
# CortexStepGeneratorMetadata.chat_model = 1, ChatModelMetadata.usage = 4 / model_uid = 15,
# ModelUsageStats input 2, output 3, cache_write 4, cache_read 5).
RECORDS, CHAT_MODEL, USAGE, MODEL_UID = 1, 1, 4, 15
INPUT, OUTPUT, CACHE_WRITE, CACHE_READ = 2, 3, 4, 5


def _usage(i: int, o: int, w: int, r: int) -> dict[str, int]:
    return {"input_tokens": i, "output_tokens": o, "cache_write_tokens": w, "cache_read_tokens": r}


# ---------------------------------------------------------------------------- OFF-1: encoding


@pytest.mark.parametrize(
    ("record", "chat_model"),
    [
        pytest.param(
            {"shape": "usage", "usage": _usage(7, 0, 0, 3), "explicit_zeros": False, "model_uid": "m"},
            [(USAGE, [(INPUT, 7), (CACHE_READ, 3)]), (MODEL_UID, "m")],
            id="usage-zeros-left-out",
        ),
        pytest.param(
            {"shape": "usage", "usage": _usage(7, 0, 0, 3), "explicit_zeros": True, "model_uid": ""},
            [(USAGE, [(INPUT, 7), (OUTPUT, 0), (CACHE_WRITE, 0), (CACHE_READ, 3)])],
            id="usage-zeros-written",
        ),
        pytest.param(
            {"shape": "usage", "usage": _usage(0, 4, 5, 0), "explicit_zeros": False},
            [(USAGE, [(OUTPUT, 4), (CACHE_WRITE, 5)])],
            id="usage-without-uid-key",
        ),
        pytest.param(
            {"shape": "zero_usage", "model_uid": "MODEL_PRIVATE_2"},
            [(USAGE, [(INPUT, 0), (OUTPUT, 0), (CACHE_WRITE, 0), (CACHE_READ, 0)]), (MODEL_UID, "MODEL_PRIVATE_2")],
            id="zero-usage-block",
        ),
        pytest.param(
            {"shape": "no_usage", "model_uid": "claude-sonnet-4-6"}, [(MODEL_UID, "claude-sonnet-4-6")], id="uid-only"
        ),
        pytest.param({"shape": "no_usage", "model_uid": ""}, [], id="empty-chat-model"),
    ],
)
def test_a_record_is_encoded_with_the_proto_field_numbers(record: dict[str, Any], chat_model: wb.Fields) -> None:
    assert encode_metadata_response([record]) == wb.message([(RECORDS, [(CHAT_MODEL, chat_model)])])


def test_an_empty_record_has_no_chat_model_and_records_keep_their_order() -> None:
    records: list[dict[str, Any]] = [
        {"shape": "empty"},
        {"shape": "no_usage", "model_uid": "a"},
        {"shape": "usage", "usage": _usage(1, 2, 3, 4), "explicit_zeros": False, "model_uid": "b"},
    ]
    expected = wb.message(
        [
            (RECORDS, []),
            (RECORDS, [(CHAT_MODEL, [(MODEL_UID, "a")])]),
            (
                RECORDS,
                [
                    (
                        CHAT_MODEL,
                        [(USAGE, [(INPUT, 1), (OUTPUT, 2), (CACHE_WRITE, 3), (CACHE_READ, 4)]), (MODEL_UID, "b")],
                    )
                ],
            ),
        ]
    )
    assert encode_metadata_response(records) == expected
    assert encode_metadata_response([]) == b""


def test_the_real_proto_reads_the_kit_encoding_back() -> None:
    records: list[dict[str, Any]] = [
        {"shape": "usage", "usage": _usage(10, 20, 0, 5), "explicit_zeros": True, "model_uid": "m"},
        {"shape": "empty"},
    ]
    parsed = RPCS[META].response_type.FromString(encode_metadata_response(records))
    assert message_to_dict(parsed) == {
        "generator_metadata": [
            {
                "chat_model": {
                    "usage": {"input_tokens": 10, "output_tokens": 20, "cache_read_tokens": 5},
                    "model_uid": "m",
                }
            },
            {},
        ]
    }


# ---------------------------------------------------------------------------- OFF-1: what parsing must give


def test_no_record_at_all_parses_as_null() -> None:
    assert expected_usage([]) is None


@pytest.mark.parametrize(
    ("records", "expected"),
    [
        pytest.param(
            [{"shape": "no_usage", "model_uid": "m"}, {"shape": "empty"}],
            _usage(0, 0, 0, 0) | {"entry_count": 2, "has_usage": False},
            id="usage-less-records-still-count",
        ),
        pytest.param(
            [{"shape": "zero_usage"}, {"shape": "usage", "usage": _usage(0, 0, 0, 0), "explicit_zeros": True}],
            _usage(0, 0, 0, 0) | {"entry_count": 2, "has_usage": False},
            id="all-zero-figures-are-no-usage",
        ),
        pytest.param(
            [{"shape": "usage", "usage": _usage(0, 0, 0, 5), "explicit_zeros": False}],
            _usage(0, 0, 0, 5) | {"entry_count": 1, "has_usage": True},
            id="one-non-zero-figure-is-usage",
        ),
        pytest.param(
            [
                {"shape": "usage", "usage": _usage(7, 0, 0, 3), "explicit_zeros": False},
                {"shape": "no_usage"},
                {"shape": "zero_usage"},
                {"shape": "empty"},
                {"shape": "usage", "usage": _usage(1, 2, 3, 4), "explicit_zeros": True},
            ],
            _usage(8, 2, 3, 7) | {"entry_count": 5, "has_usage": True},
            id="sums-over-usage-records-count-over-all",
        ),
    ],
)
def test_parsing_counts_every_record_and_sums_the_figures_of_those_with_usage(
    records: list[dict[str, Any]], expected: dict[str, Any]
) -> None:
    assert expected_usage(records) == expected


# ---------------------------------------------------------------------------- the RPC names the model reads


def test_the_field_numbers_the_kit_writes_come_from_the_proto_descriptors() -> None:
    response = RPCS[META].response_type.DESCRIPTOR
    record = response.fields_by_name["generator_metadata"].message_type
    assert _numbers(response, "generator_metadata") == [RECORDS]
    assert _numbers(record, "chat_model", "usage", "cache_read_tokens") == [CHAT_MODEL, USAGE, CACHE_READ]
    assert _numbers(record, "chat_model", "model_uid") == [CHAT_MODEL, MODEL_UID]
    step_fields = _numbers_by_name(RPCS[SEND].request_type.DESCRIPTOR, "additional_steps")
    assert (step_fields["run_command"], step_fields["view_file"], step_fields["grep_search_v2"]) == (28, 14, 105)


def test_the_model_reads_the_fakes_own_rpc_names() -> None:
    assert RPCS[META].request_type.DESCRIPTOR.name == "GetCascadeTrajectoryGeneratorMetadataRequest"
    assert RPCS[SEND].request_type.DESCRIPTOR.name == "SendUserCascadeMessageRequest"
    assert RPCS[START].request_type.DESCRIPTOR.name == "StartCascadeRequest"


# ---------------------------------------------------------------------------- OFF-5: the native bridge


MAPPED_CALLS = [
    ("Bash", {"command": "ls -la"}, "run_command:ls -la"),
    ("shell_command", {"command": "echo hi"}, "run_command:echo hi"),
    ("Read", {"file_path": "/w/a.py"}, "view_file:file:///w/a.py"),
    ("list_dir", {"path": "/w"}, "list_directory:file:///w"),
    ("Glob", {"pattern": "**/*.py"}, "find:**/*.py"),
    ("Grep", {"pattern": "TODO"}, "grep_search_v2:TODO"),
    ("WebSearch", {"query": "weather"}, "search_web:weather"),
    ("WebFetch", {"url": "https://example.test/x"}, "read_url_content:https://example.test/x"),
]


@pytest.mark.parametrize(("name", "arguments", "expected"), MAPPED_CALLS)
def test_a_mapped_call_is_its_body_kind_and_marker(name: str, arguments: dict[str, str], expected: str) -> None:
    assert call_id(tool_call(name, json.dumps(arguments))) == expected


@pytest.mark.parametrize(("name", "arguments", "expected"), MAPPED_CALLS)
def test_the_reference_bridge_sends_the_step_the_model_expects(
    name: str, arguments: dict[str, str], expected: str
) -> None:
    steps = build_additional_steps(
        [{"role": "assistant", "content": None, "tool_calls": [tool_call(name, json.dumps(arguments))]}]
    )
    assert [step_id(message_to_dict(s)) for s in steps] == [expected]


@pytest.mark.parametrize("name", UNMAPPED_TOOLS)
def test_a_tool_the_bridge_does_not_map_expects_no_step(name: str) -> None:
    assert call_id(tool_call(name, '{"input": "x"}')) is None
    assert (
        build_additional_steps(
            [{"role": "assistant", "content": None, "tool_calls": [tool_call(name, '{"input": "x"}')]}]
        )
        == []
    )


@pytest.mark.parametrize(
    ("sent", "expected"),
    [
        pytest.param(
            step("run_command", {"command_line": "ls", "cwd": "/w", "blocking": True}), "run_command:ls", id="run"
        ),
        pytest.param(step("view_file", {"absolute_path_uri": "file:///w/a"}), "view_file:file:///w/a", id="view"),
        pytest.param(step("list_directory", {"directory_path_uri": "file:///w"}), "list_directory:file:///w", id="ls"),
        pytest.param(step("find", {"pattern": "*.md", "search_directory": "/w"}), "find:*.md", id="find"),
        pytest.param(step("grep_search_v2", {"pattern": "x", "path": "/w"}), "grep_search_v2:x", id="grep"),
        pytest.param(step("search_web", {"query": "q", "domain": "d"}), "search_web:q", id="web"),
        pytest.param(step("read_url_content", {"url": "https://e.test"}), "read_url_content:https://e.test", id="url"),
        pytest.param(step("run_command", {"cwd": "/w"}), "run_command:", id="empty-marker-left-out"),
        pytest.param(step("finish", {}), "?:finish", id="unmapped-body"),
        pytest.param(
            {"type": 5, "status": "DONE", "metadata": {}, "custom_tool": {}}, "?:custom_tool,metadata", id="sorted-keys"
        ),
    ],
)
def test_a_sent_step_is_identified_by_its_body_and_marker(sent: dict[str, Any], expected: str) -> None:
    assert step_id(sent) == expected


def test_the_newest_round_is_the_mapped_calls_of_the_turns_own_assistant_messages() -> None:
    added: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": "call_x", "content": "done"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                tool_call("Bash", '{"command": "make"}'),
                tool_call("TodoWrite", '{"todos": []}'),
                tool_call("Read", '{"file_path": "/w/b"}'),
            ],
        },
        {"role": "user", "content": "and then?", "tool_calls": [tool_call("Bash", '{"command": "not mine"}')]},
        {"role": "assistant", "content": "no tools this time"},
        {"role": "assistant", "content": None, "tool_calls": [tool_call("Glob", '{"pattern": "*"}')]},
    ]
    assert newest_round(added) == ["run_command:make", "view_file:file:///w/b", "find:*"]
    assert newest_round([{"role": "user", "content": "hi"}]) == []
