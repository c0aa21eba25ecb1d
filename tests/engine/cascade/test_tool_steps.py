"""The native bridge's mapping of OpenAI-style tool history to Cascade steps (engine.md section 6.A)."""

from __future__ import annotations

import pytest

from engine.cascade.tool_steps import (
    BRIDGE_STEP_TYPES,
    STEP_STATUS_DONE,
    TOOL_KINDS,
    build_additional_steps,
    file_uri,
    map_tool_history,
)
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from tests.engine.cascade.tool_history_support import Msg, call, three_rounds, tool_round


def only_step(messages: list[Msg]) -> cortex.CortexTrajectoryStep:
    steps = build_additional_steps(messages)
    assert len(steps) == 1
    return steps[0]


def test_a_bash_result_becomes_a_run_command_step_with_the_bridges_type_28() -> None:
    step = only_step(tool_round([("c1", "Bash", {"command": "ls -la", "cwd": "/w"}, "a\nb")]))
    # what real clients send: the oneof number 28 (COMMAND_STATUS in the schema, RUN_COMMAND is 21)
    assert (step.type, step.status, step.WhichOneof("step")) == (28, STEP_STATUS_DONE, "run_command")
    body = step.run_command
    assert (body.command_line, body.cwd, body.blocking) == ("ls -la", "/w", True)
    assert (body.stdout, body.combined_output.full) == ("a\nb", "a\nb")
    assert body.HasField("exit_code")
    assert body.exit_code == 0


def test_every_kind_carries_the_oneof_number_as_its_type() -> None:
    history = tool_round(
        [
            ("r", "Read", {"file_path": "/a/b.py", "offset": "5", "limit": 20}, "body"),
            ("g", "Glob", {"pattern": "*.py", "path": "/a"}, "x.py"),
            ("p", "Grep", {"pattern": "TODO", "-i": True, "-C": 2, "head_limit": 3, "glob": "*.c"}, "hit"),
            ("l", "list_dir", {"path": "/a"}, " one \r\n\n two\n"),
            ("w", "Write", {"file_path": "C:\\x\\y.txt", "content": "hello"}, "written"),
            ("e", "Edit", {"file_path": "/a/b.py", "old_string": "x", "new_string": "y", "replace_all": True}, "ok"),
            ("s", "WebSearch", {"query": "q", "domains": ["example.com"]}, "summary"),
            ("f", "WebFetch", {"url": "https://e.x/"}, "page text"),
            ("x", "shell_command", {"command": "pwd", "workdir": "/w"}, "/w"),
        ]
    )
    steps = build_additional_steps(history)
    kinds = [step.WhichOneof("step") for step in steps]
    assert kinds == [
        "view_file",
        "find",
        "grep_search_v2",
        "list_directory",
        "write_to_file",
        "propose_code",
        "search_web",
        "read_url_content",
        "run_command",
    ]
    assert [step.type for step in steps] == [BRIDGE_STEP_TYPES[kind] for kind in kinds if kind is not None]
    view, find, grep, listing, write, edit, search, fetch, shell = steps
    assert (view.view_file.absolute_path_uri, view.view_file.offset, view.view_file.limit) == ("file:///a/b.py", 5, 20)
    assert view.view_file.content == "body"
    assert (find.find.pattern, find.find.search_directory, find.find.raw_output) == ("*.py", "/a", "x.py")
    g = grep.grep_search_v2
    assert (g.pattern, g.case_insensitive, g.lines_both, g.head_limit, g.glob) == ("TODO", True, 2, 3, "*.c")
    assert (g.output_mode, g.raw_output) == ("files_with_matches", "hit")
    assert list(listing.list_directory.children) == ["one", "two"]
    assert listing.list_directory.directory_path_uri == "file:///a"
    assert (write.write_to_file.target_file_uri, list(write.write_to_file.code_content)) == (
        "file://C:/x/y.txt",
        ["hello"],
    )
    command = edit.propose_code.action_spec.command
    assert (command.is_edit, command.file.absolute_uri) == (True, "file:///a/b.py")
    assert [(c.target_content, c.replacement_content, c.allow_multiple) for c in command.replacement_chunks] == [
        ("x", "y", True)
    ]
    assert (search.search_web.query, search.search_web.domain, search.search_web.summary) == (
        "q",
        "example.com",
        "summary",
    )
    assert (fetch.read_url_content.url, fetch.read_url_content.web_document.text) == ("https://e.x/", "page text")
    # KnowledgeBaseItem.url (3) is outside the kit's proto subset; it still rides the wire
    assert b"\x1a\x0chttps://e.x/" in fetch.read_url_content.web_document.SerializeToString()
    assert (shell.run_command.command_line, shell.run_command.cwd) == ("pwd", "/w")


def test_multi_edit_collapses_into_one_propose_code_step() -> None:
    args = {
        "file_path": "/f",
        "edits": [{"old_string": "a", "new_string": "b"}, {"old_string": "c", "new_string": "d"}],
    }
    step = only_step(tool_round([("m", "MultiEdit", args, "ok")]))
    chunks = step.propose_code.action_spec.command.replacement_chunks
    assert [(c.target_content, c.replacement_content) for c in chunks] == [("a", "b"), ("c", "d")]


def test_unmapped_tools_are_skipped_and_calls_without_results_carry_no_result() -> None:
    history = tool_round([("a", "apply_patch", {"input": "*** Begin"}, "ok"), ("b", "Bash", {"command": "ls"}, None)])
    step = only_step(history)
    assert step.run_command.command_line == "ls"
    assert not step.run_command.HasField("exit_code")
    assert not step.run_command.HasField("combined_output")


def test_tool_results_are_indexed_by_call_id_whatever_their_shape() -> None:
    parts = [{"type": "text", "text": "line 1"}, {"type": "image_url", "image_url": {"url": "x"}}, {"text": "line 2"}]
    history: list[Msg] = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("p", "Read", {"path": "/p"}), call("q", "Read", {})],
        },
        {"role": "tool", "tool_call_id": "p", "content": parts},
        {"role": "tool", "tool_call_id": "q", "content": {"b": 1, "a": [1.0]}},
    ]
    first, second = build_additional_steps(history)
    assert first.view_file.content == "line 1\nline 2"  # text parts only; images in tool results never travel
    assert second.view_file.content == '{"b":1,"a":[1]}'  # JSON.stringify, insertion order


def test_arguments_that_are_not_a_json_object_count_as_empty() -> None:
    for arguments in ("{oops", "[1, 2]", '"text"', "", '{"command": NaN}'):
        step = only_step(tool_round([("c", "Bash", arguments, "out")]))
        assert step.run_command.command_line == ""
        assert step.run_command.stdout == "out"


def test_an_empty_body_is_not_written_but_an_empty_result_is() -> None:
    # the bridge's writer drops an empty embedded message, and writes an empty result string
    bare = only_step(tool_round([("f", "find", {}, None)]))
    assert (bare.type, bare.status, bare.WhichOneof("step")) == (34, STEP_STATUS_DONE, None)
    empty_result = only_step(tool_round([("v", "view_file", {}, "")]))
    assert empty_result.WhichOneof("step") == "view_file"
    assert empty_result.view_file.content == ""


def test_numeric_arguments_are_coerced_as_the_bridge_writes_them() -> None:
    step = only_step(tool_round([("g", "grep_v2", {"pattern": "p", "head_limit": "12", "lines_after": 2.9}, None)]))
    assert (step.grep_search_v2.head_limit, step.grep_search_v2.lines_after) == (12, 2)
    odd = only_step(tool_round([("g", "grep_v2", {"head_limit": -1, "lines_before": "x"}, None)]))
    assert (odd.grep_search_v2.head_limit, odd.grep_search_v2.lines_before) == (2**32 - 1, 0)
    assert odd.WhichOneof("step") == "grep_search_v2"


def test_identity_mapped_tools_pass_their_arguments_through() -> None:
    step = only_step(tool_round([("v", "view_file", {"absolute_path_uri": "file:///z", "limit": 9}, "zz")]))
    assert (step.view_file.absolute_path_uri, step.view_file.limit, step.view_file.content) == ("file:///z", 9, "zz")


def test_map_tool_history_reports_each_call() -> None:
    mapped = map_tool_history(three_rounds())
    assert [(m.message_index, m.tool_call_id, m.tool_name, m.kind) for m in mapped] == [
        (2, "c1", "Bash", "run_command"),
        (4, "c2", "Read", "view_file"),
        (6, "c3", "Bash", "run_command"),
    ]


@pytest.mark.parametrize(
    ("path", "uri"),
    [("/a/b", "file:///a/b"), ("file:///x", "file:///x"), ("C:\\d\\e", "file://C:/d/e"), ("rel/p", "rel/p"), ("", "")],
)
def test_file_uri(path: str, uri: str) -> None:
    assert file_uri(path) == uri


def test_the_tool_table_maps_to_known_kinds() -> None:
    assert {tool.kind for tool in TOOL_KINDS.values()} <= set(BRIDGE_STEP_TYPES)
    assert TOOL_KINDS["Bash"].kind == "run_command"
