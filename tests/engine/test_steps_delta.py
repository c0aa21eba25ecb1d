"""additional_steps (field 9): the bridge's mapping and the D3 delta (seed 001; engine.md section 6; OFF-5).

The seed's ``test/cascade-native-history-delta.test.js`` arms are here at the steps level: a history
with 3 mapped steps whose newest round holds 1. Counts are taken from encoded
SendUserCascadeMessage requests, field 9.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.steps_delta import (
    BRIDGE_STEP_TYPES,
    STEP_STATUS_DONE,
    TOOL_KINDS,
    AdditionalStepsPlan,
    additional_steps_for,
    build_additional_steps,
    delta_start_for,
    file_uri,
    last_assistant_index,
    map_tool_history,
    rejected_resume_sends,
)
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex
from fakels.proto.exa.language_server_pb import language_server_pb2 as ls

Msg = dict[str, object]


def call(call_id: str, name: str, args: object) -> Msg:
    arguments = args if isinstance(args, str) else json.dumps(args)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def tool_round(calls: Sequence[tuple[str, str, object, object]], text: str = "") -> list[Msg]:
    """One assistant turn with tool calls and its results: (id, tool name, args, result or None)."""
    messages: list[Msg] = [
        {"role": "assistant", "content": text, "tool_calls": [call(i, n, a) for i, n, a, _ in calls]}
    ]
    messages += [{"role": "tool", "tool_call_id": i, "content": r} for i, _, _, r in calls if r is not None]
    return messages


def three_rounds() -> list[Msg]:
    """The seed's shape: 3 mapped steps in the history, the newest round holds 1."""
    return [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "fix the build"},
        *tool_round([("c1", "Bash", {"command": "make"}, "error: x")]),
        *tool_round([("c2", "Read", {"file_path": "/src/x.c"}, "int x;")]),
        *tool_round([("c3", "Bash", {"command": "make"}, "ok")]),
    ]


def field9_count(steps: Sequence[cortex.CortexTrajectoryStep]) -> int:
    """How many additional_steps an encoded Send request carries (decoded from the wire bytes)."""
    wire = ls.SendUserCascadeMessageRequest(cascade_id="c", additional_steps=list(steps)).SerializeToString()
    return len(ls.SendUserCascadeMessageRequest.FromString(wire).additional_steps)


# ------------------------------------------------------------------------------------ the seed's arms (D3)


@pytest.mark.invariant("OFF-5")
def test_control_a_fresh_cascade_sends_the_full_mapped_history() -> None:
    messages = three_rounds()
    plan = AdditionalStepsPlan(build_additional_steps(messages), delta_start_for(messages))
    plan.opened(resumed=False)
    assert field9_count(plan.for_send()) == 3


@pytest.mark.invariant("OFF-5")
def test_control_an_ordinary_reuse_sends_only_the_newest_round() -> None:
    messages = three_rounds()
    full = build_additional_steps(messages)
    plan = AdditionalStepsPlan(full, delta_start_for(messages))
    plan.opened(resumed=True)
    sent = plan.for_send()
    assert field9_count(sent) == 1  # baseline: 3
    assert sent == [full[2]]
    assert sent[0].run_command.combined_output.full == "ok"


@pytest.mark.invariant("OFF-5")
def test_a_rejected_resume_re_sends_the_full_history_on_the_fresh_restart() -> None:
    messages = three_rounds()
    plan = AdditionalStepsPlan(build_additional_steps(messages), delta_start_for(messages))
    plan.opened(resumed=True)
    first = plan.for_send()
    plan.restarted_fresh()  # the LS rejected the resume; the client starts a fresh cascade
    second = plan.for_send()
    assert (field9_count(first), field9_count(second)) == (1, 3)  # baseline: 3, then 3
    assert rejected_resume_sends(plan.full_steps, plan.delta_start) == (first, second)


@pytest.mark.invariant("OFF-5")
def test_without_a_delta_index_the_full_list_is_always_sent() -> None:
    plan = AdditionalStepsPlan(build_additional_steps(three_rounds()), delta_start=None)
    plan.opened(resumed=True)
    assert field9_count(plan.for_send()) == 3


def test_a_panel_missing_restart_at_open_also_sends_the_full_list() -> None:
    # Q6.2: every fresh StartCascade clears the resumed flag, not only the expired-resume one
    plan = AdditionalStepsPlan(build_additional_steps(three_rounds()), delta_start=2)
    plan.opened(resumed=True)
    plan.restarted_fresh()
    assert len(plan.for_send()) == 3


@pytest.mark.parametrize(
    ("delta_start", "sent"), [(2, 1), (0, 3), (3, 0), (9, 0), (-1, 3), (2.0, 3), (True, 3), ("1", 3)]
)
def test_only_an_integer_delta_start_above_0_cuts_the_list(delta_start: object, sent: int) -> None:
    # Q6.3: clamped to the length (nothing is sent past the end); anything else sends the full list
    assert len(additional_steps_for(["a", "b", "c"], delta_start, resumed=True)) == sent
    assert len(additional_steps_for(["a", "b", "c"], delta_start, resumed=False)) == 3


def test_the_delta_start_is_the_step_count_before_the_last_assistant() -> None:
    messages = three_rounds()
    assert last_assistant_index(messages) == 6
    assert delta_start_for(messages) == 2
    # the last assistant answered without tools: the delta is empty
    answered: list[Msg] = [*messages, {"role": "assistant", "content": "done"}, {"role": "user", "content": "thanks"}]
    assert delta_start_for(answered) == len(build_additional_steps(answered)) == 3
    assert additional_steps_for(build_additional_steps(answered), delta_start_for(answered), resumed=True) == []
    # no assistant at all
    assert last_assistant_index([{"role": "user", "content": "hi"}]) == 0
    assert delta_start_for([{"role": "user", "content": "hi"}]) == 0


# ------------------------------------------------------------------------------------ the bridge's mapping


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


# ------------------------------------------------------------------------------------ OFF-5

_MAPPED = ["Bash", "Read", "Glob", "Grep", "list_dir", "WebSearch", "shell_command"]
_UNMAPPED = ["apply_patch", "TodoWrite", "update_plan"]
_ROUND = st.lists(
    st.tuples(st.sampled_from(_MAPPED + _UNMAPPED), st.one_of(st.none(), st.text(max_size=8))), min_size=0, max_size=3
)


def _history(rounds: list[list[tuple[str, str | None]]], answered: bool) -> list[Msg]:
    messages: list[Msg] = [{"role": "user", "content": "task"}]
    for r, calls in enumerate(rounds):
        messages += tool_round(
            [(f"r{r}c{c}", name, {"command": "x", "path": "/p"}, out) for c, (name, out) in enumerate(calls)]
        )
    if answered:
        messages += [{"role": "assistant", "content": "done"}, {"role": "user", "content": "next"}]
    return messages


def _wire(steps: Sequence[cortex.CortexTrajectoryStep]) -> list[bytes]:
    return [step.SerializeToString() for step in steps]


@pytest.mark.invariant("OFF-5")
@given(rounds=st.lists(_ROUND, min_size=1, max_size=5), answered=st.booleans())
def test_off5_fresh_gets_everything_a_resume_the_newest_round_a_rejected_resume_both(
    rounds: list[list[tuple[str, str | None]]], answered: bool
) -> None:
    messages = _history(rounds, answered)
    full = build_additional_steps(messages)
    delta_start = delta_start_for(messages)
    mapped_per_round = [sum(name in TOOL_KINDS for name, _ in calls) for calls in rounds]
    assert len(full) == sum(mapped_per_round)
    # fresh: the whole mapped history
    assert _wire(additional_steps_for(full, delta_start, resumed=False)) == _wire(full)
    # ordinary resume: exactly the newest round (the steps built from the last assistant turn on)
    newest = build_additional_steps(messages[last_assistant_index(messages) :])
    resumed = additional_steps_for(full, delta_start, resumed=True)
    assert _wire(resumed) == _wire(newest if delta_start > 0 else full)
    if not answered and delta_start > 0:
        assert len(resumed) == mapped_per_round[-1]
    assert delta_start + len(newest) == len(full)
    # a rejected resume: the delta first, then the full history on the fresh restart
    first, second = rejected_resume_sends(full, delta_start)
    assert (_wire(first), _wire(second)) == (_wire(resumed), _wire(full))


@pytest.mark.invariant("OFF-5")
@given(rounds=st.lists(_ROUND, min_size=1, max_size=4))
def test_off5_the_delta_is_a_pure_function_of_the_request(rounds: list[list[tuple[str, str | None]]]) -> None:
    messages = _history(rounds, answered=False)
    copy: list[Mapping[str, object]] = json.loads(json.dumps(messages))
    assert delta_start_for(copy) == delta_start_for(messages)
    assert _wire(build_additional_steps(copy)) == _wire(build_additional_steps(messages))
