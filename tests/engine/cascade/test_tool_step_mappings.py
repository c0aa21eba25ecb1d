"""Each caller tool the native bridge maps, pinned field by field as the LS decodes its step (engine.md 6.A).

One OpenAI-style tool call (and its ``role: tool`` result, when given) goes through
:func:`engine.cascade.tool_steps.build_additional_steps`; the step is encoded in a real
SendUserCascadeMessageRequest and decoded by the fake LS's decoder. The whole decoded dict is
compared, so a field the mapping sets with the wrong value, forgets, or adds is caught. The type
value is the oneof number of the body (wire.md section 6, item 1), status is DONE.

Proto3 note: empty strings and zero numbers are not on the wire, so a body field the bridge writes
as ``""`` or ``0`` decodes as absent; only the body's own presence shows it was written.
"""

from __future__ import annotations

import pytest

from engine.cascade.tool_steps import TOOL_KINDS
from tests.engine.cascade.step_wire_support import Decoded, decoded_history, expected, one_call
from tests.engine.cascade.tool_history_support import tool_round

PATH = "/srv/projet/naïve 项目 😀.py"
URI = "file://" + PATH

# ------------------------------------------------------------------------------------ the table itself


def test_every_tool_name_the_engine_maps_and_its_kind() -> None:
    # module-level tables are never mutated by mutmut: pinned here entry by entry
    assert {name: tool.kind for name, tool in TOOL_KINDS.items()} == {
        "Read": "view_file",
        "Bash": "run_command",
        "Glob": "find",
        "Grep": "grep_search_v2",
        "Write": "write_to_file",
        "Edit": "propose_code",
        "MultiEdit": "propose_code",
        "WebSearch": "search_web",
        "ToolSearch": "search_web",
        "WebFetch": "read_url_content",
        "view_file": "view_file",
        "run_command": "run_command",
        "grep_v2": "grep_search_v2",
        "grep_search": "grep_search_v2",
        "grep_search_v2": "grep_search_v2",
        "find": "find",
        "list_dir": "list_directory",
        "list_directory": "list_directory",
        "write_to_file": "write_to_file",
        "shell_command": "run_command",
        "web_search": "search_web",
        "read_file": "view_file",
        "shell": "run_command",
    }


@pytest.mark.parametrize("name", ["bash", "READ", "apply_patch", "TodoWrite", "grep_search_v3", " Bash", ""])
def test_names_are_matched_exactly_and_others_are_not_mapped(name: str) -> None:
    assert decoded_history(tool_round([("c", name, {"command": "ls", "file_path": "/a"}, "out")])) == []


# ------------------------------------------------------------------------------------ view_file

VIEW_CASES: list[tuple[str, object, object, Decoded | None]] = [
    (
        "Read",
        {"file_path": PATH, "offset": 10, "limit": 50},
        "línea 1\n😀 ok\n",
        {"absolute_path_uri": URI, "offset": 10, "limit": 50, "content": "línea 1\n😀 ok\n"},
    ),
    (
        "read_file",
        {"file_path": PATH, "offset": 10, "limit": 50},
        "x",
        {"absolute_path_uri": URI, "offset": 10, "limit": 50, "content": "x"},
    ),
    # file_path, then path, then absolute_path; an empty string falls through
    ("Read", {"file_path": "/a", "path": "/b", "absolute_path": "/c"}, None, {"absolute_path_uri": "file:///a"}),
    ("Read", {"file_path": "", "path": "/b", "absolute_path": "/c"}, None, {"absolute_path_uri": "file:///b"}),
    ("Read", {"path": "", "absolute_path": "/c"}, None, {"absolute_path_uri": "file:///c"}),
    ("Read", {"absolute_path": "D:\\w\\a.py"}, None, {"absolute_path_uri": "file://D:/w/a.py"}),
    ("Read", {"file_path": "src/rel.py"}, None, {"absolute_path_uri": "src/rel.py"}),
    ("Read", {"file_path": "file:///already"}, None, {"absolute_path_uri": "file:///already"}),
    # a truthy non-string path wins the `||` chain and writes nothing (no fallback to path)
    ("Read", {"file_path": 7, "path": "/b"}, None, None),
    ("Read", {"file_path": ["/a"], "path": "/b"}, None, None),
    # Number(v) || 0, then the uint32 varint the bridge writes: truncated, two's complement, mod 2**32
    ("Read", {"offset": "12", "limit": " 40 "}, None, {"offset": 12, "limit": 40}),
    ("Read", {"offset": 2.9, "limit": -1}, None, {"offset": 2, "limit": 2**32 - 1}),
    ("Read", {"offset": -2.5, "limit": True}, None, {"offset": 2**32 - 2, "limit": 1}),
    ("Read", {"offset": 2**32 - 1, "limit": 2**32 + 5}, None, {"offset": 2**32 - 1, "limit": 5}),
    # written but zero on the wire: the body is present and empty
    ("Read", {"offset": 2**32}, None, {}),
    ("Read", {"offset": 0.5}, None, {}),
    # NaN and 0 write nothing at all: no body
    ("Read", {"offset": "ten", "limit": [1, 2]}, None, None),
    ("Read", {"offset": 0, "limit": "", "file_path": ""}, None, None),
    ("Read", {"offset": None, "limit": False}, None, None),
    ("Read", '{"offset": 1e400}', None, {}),  # Infinity (the JS writer throws on it) is written as 0 here
    ("Read", {"limit": [7]}, None, {"limit": 7}),
    # the result is the content; an empty result is still written (the body is present)
    ("Read", {}, "", {}),
    ("Read", {}, None, None),
    # identity: the cascade vocabulary passes through, uint32 coercions included
    (
        "view_file",
        {"absolute_path_uri": "file:///z/ü", "offset": "3", "limit": 9.7, "file_path": "/ignored"},
        "zz",
        {"absolute_path_uri": "file:///z/ü", "offset": 3, "limit": 9, "content": "zz"},
    ),
    ("view_file", {"absolute_path_uri": "/no/scheme/added"}, None, {"absolute_path_uri": "/no/scheme/added"}),
    ("view_file", {"absolute_path_uri": 5, "offset": "0"}, None, {}),  # "0" is truthy in JS: written as 0
    ("view_file", {"absolute_path_uri": "", "content": "from args"}, None, {"content": "from args"}),
    ("view_file", {"content": "from args"}, "from result", {"content": "from result"}),
    ("view_file", {"content": 5}, None, None),
]


@pytest.mark.parametrize(("name", "args", "result", "body"), VIEW_CASES)
def test_view_file_mapping(name: str, args: object, result: object, body: Decoded | None) -> None:
    assert one_call(name, args, result) == expected("view_file", body)


# ------------------------------------------------------------------------------------ run_command


def _ran(body: Decoded, output: str | None) -> Decoded:
    """A run_command body with a result laid over: combined output, stdout (when not empty) and exit code 0."""
    if output is None:
        return body
    out = {**body, "exit_code": 0, "combined_output": {"full": output} if output else {}}
    if output:
        out["stdout"] = output
    return out


RUN_CASES: list[tuple[str, object, str | None, Decoded | None]] = [
    (
        "Bash",
        {"command": "grep -rn 'ñandú' . | head -5", "cwd": "/home/zoë"},
        "a.txt:1:ñandú\n",
        {"command_line": "grep -rn 'ñandú' . | head -5", "cwd": "/home/zoë", "blocking": True},
    ),
    ("shell", {"command": "ls", "cwd": "/w"}, "x", {"command_line": "ls", "cwd": "/w", "blocking": True}),
    ("Bash", {"shell_command": "pwd"}, None, {"command_line": "pwd", "blocking": True}),
    ("Bash", {"command": "", "shell_command": "pwd"}, None, {"command_line": "pwd", "blocking": True}),
    ("Bash", {"command": "ls", "shell_command": "pwd"}, None, {"command_line": "ls", "blocking": True}),
    # String(command): a truthy non-string is rendered, not dropped
    ("Bash", {"command": 42}, None, {"command_line": "42", "blocking": True}),
    ("Bash", {"command": ["ls", "-la"]}, None, {"command_line": "ls,-la", "blocking": True}),
    ("Bash", {"command": True}, None, {"command_line": "true", "blocking": True}),
    ("Bash", {"command": {"x": 1}}, None, {"command_line": "[object Object]", "blocking": True}),
    # cwd must be a string
    ("Bash", {"command": "ls", "cwd": 5}, None, {"command_line": "ls", "blocking": True}),
    ("Bash", {"command": "ls", "cwd": ""}, None, {"command_line": "ls", "blocking": True}),
    ("Bash", {}, None, {"blocking": True}),  # blocking is always written: the body is never empty
    ("Bash", "not json", "out", {"blocking": True}),
    # the result: full output and stdout, exit code 0; an empty result keeps exit_code and an empty output message
    ("Bash", {"command": "true"}, "", {"command_line": "true", "blocking": True}),
    ("Bash", {"command": "printf 'é\\r\\n'"}, "é\r\n", {"command_line": "printf 'é\\r\\n'", "blocking": True}),
    # cascade vocabulary: command_line first, then command; a truthy non-string stops the chain
    (
        "run_command",
        {"command_line": "make -j2", "command": "make", "cwd": "/src"},
        "ok",
        {"command_line": "make -j2", "cwd": "/src", "blocking": True},
    ),
    ("run_command", {"command_line": "", "command": "make"}, None, {"command_line": "make", "blocking": True}),
    ("run_command", {"command_line": 5, "command": "make"}, None, {"blocking": True}),
    ("run_command", {"command": 42, "cwd": 7}, None, {"blocking": True}),
    ("run_command", {"cwd": ""}, None, {"blocking": True}),
    # Codex shell_command: command first, then command_line; workdir first, then cwd
    (
        "shell_command",
        {"command": "pwd", "command_line": "ls", "workdir": "/w", "cwd": "/c"},
        "/w",
        {"command_line": "pwd", "cwd": "/w", "blocking": True},
    ),
    ("shell_command", {"command_line": "ls", "cwd": "/c"}, None, {"command_line": "ls", "cwd": "/c", "blocking": True}),
    (
        "shell_command",
        {"command": "", "command_line": "ls", "workdir": "", "cwd": "/c"},
        None,
        {"command_line": "ls", "cwd": "/c", "blocking": True},
    ),
    ("shell_command", {"command": ["bash", "-lc", "ls"], "workdir": 3, "cwd": "/c"}, None, {"blocking": True}),
]


@pytest.mark.parametrize(("name", "args", "result", "body"), RUN_CASES)
def test_run_command_mapping(name: str, args: object, result: str | None, body: Decoded) -> None:
    assert one_call(name, args, result) == expected("run_command", _ran(body, result))


# ------------------------------------------------------------------------------------ find

FIND_CASES: list[tuple[str, object, object, Decoded | None]] = [
    (
        "Glob",
        {"pattern": "**/*.tsx", "path": "/repo/ü"},
        "a.tsx\nb.tsx",
        {"pattern": "**/*.tsx", "search_directory": "/repo/ü", "raw_output": "a.tsx\nb.tsx"},
    ),
    ("Glob", {"pattern": "*.py", "cwd": "/c"}, None, {"pattern": "*.py", "search_directory": "/c"}),
    ("Glob", {"pattern": "*.py", "path": "", "cwd": "/c"}, None, {"pattern": "*.py", "search_directory": "/c"}),
    ("Glob", {"pattern": "*.py", "path": "/p", "cwd": "/c"}, None, {"pattern": "*.py", "search_directory": "/p"}),
    ("Glob", {"pattern": ["*.py"], "path": 1, "cwd": "/c"}, None, None),  # non-strings: nothing, no fallback
    ("Glob", {"path": "relative/dir"}, None, {"search_directory": "relative/dir"}),  # no file:// for find
    ("Glob", {}, "", {}),
    ("Glob", {}, None, None),
    (
        "find",
        {"pattern": "*.md", "search_directory": "/d", "path": "/ignored"},
        "r",
        {"pattern": "*.md", "search_directory": "/d", "raw_output": "r"},
    ),
    ("find", {"pattern": 3, "search_directory": ""}, None, None),
    ("find", {"raw_output": "from args"}, None, {"raw_output": "from args"}),
]


@pytest.mark.parametrize(("name", "args", "result", "body"), FIND_CASES)
def test_find_mapping(name: str, args: object, result: object, body: Decoded | None) -> None:
    assert one_call(name, args, result) == expected("find", body)


# ------------------------------------------------------------------------------------ grep_search_v2

GREP_ALL = {
    "pattern": "fn\\s+naïve",
    "path": "/src",
    "glob": "*.rs",
    "output_mode": "content",
    "-i": True,
    "multiline": True,
    "type": "rust",
    "head_limit": 30,
    "-A": 2,
    "-B": 3,
    "-C": 4,
}

GREP_CASES: list[tuple[str, object, object, Decoded | None]] = [
    (
        "Grep",
        GREP_ALL,
        "src/a.rs:3:fn naïve()",
        {
            "pattern": "fn\\s+naïve",
            "path": "/src",
            "glob": "*.rs",
            "output_mode": "content",
            "case_insensitive": True,
            "multiline": True,
            "type": "rust",
            "head_limit": 30,
            "lines_after": 2,
            "lines_before": 3,
            "lines_both": 4,
            "raw_output": "src/a.rs:3:fn naïve()",
        },
    ),
    # output_mode defaults to files_with_matches (also for an empty or non-string one)
    ("Grep", {"pattern": "x"}, None, {"pattern": "x", "output_mode": "files_with_matches"}),
    ("Grep", {}, None, {"output_mode": "files_with_matches"}),
    ("Grep", {"output_mode": ""}, None, {"output_mode": "files_with_matches"}),
    ("Grep", {"output_mode": 5}, None, None),  # a truthy non-string: "" and no default, so nothing is written
    # -C wins over context whenever it is present, even as 0; null counts as absent
    ("Grep", {"-C": 0, "context": 5}, None, {"output_mode": "files_with_matches"}),
    ("Grep", {"-C": None, "context": 5}, None, {"output_mode": "files_with_matches", "lines_both": 5}),
    ("Grep", {"context": "6"}, None, {"output_mode": "files_with_matches", "lines_both": 6}),
    ("Grep", {"-C": 7, "context": 5}, None, {"output_mode": "files_with_matches", "lines_both": 7}),
    # flags are JS truthiness; numbers Number(v) || 0 then uint32
    ("Grep", {"-i": "false", "multiline": 0}, None, {"output_mode": "files_with_matches", "case_insensitive": True}),
    ("Grep", {"-i": 0, "multiline": "yes"}, None, {"output_mode": "files_with_matches", "multiline": True}),
    ("Grep", {"-i": "", "multiline": []}, None, {"output_mode": "files_with_matches", "multiline": True}),
    (
        "Grep",
        {"head_limit": "12", "-A": 2.9, "-B": -1, "-C": "x"},
        None,
        {"output_mode": "files_with_matches", "head_limit": 12, "lines_after": 2, "lines_before": 2**32 - 1},
    ),
    # keys other than the short flags are not read by the Claude Code mapping
    (
        "Grep",
        {"case_insensitive": True, "lines_after": 3, "i": True, "A": 1},
        None,
        {"output_mode": "files_with_matches"},
    ),
    ("Grep", {"pattern": 9, "path": ["/a"], "glob": True, "type": 1}, None, {"output_mode": "files_with_matches"}),
    ("Grep", {}, "", {"output_mode": "files_with_matches"}),
    # identity (grep_v2, grep_search, grep_search_v2): cascade names pass through, no default output mode
    (
        "grep_search_v2",
        {
            "pattern": "p",
            "path": "/p",
            "glob": "*.c",
            "output_mode": "count",
            "case_insensitive": 1,
            "multiline": "y",
            "type": "c",
            "head_limit": "4",
            "lines_after": 5,
            "lines_before": 6,
            "lines_both": 7,
            "-i": False,
        },
        "3",
        {
            "pattern": "p",
            "path": "/p",
            "glob": "*.c",
            "output_mode": "count",
            "case_insensitive": True,
            "multiline": True,
            "type": "c",
            "head_limit": 4,
            "lines_after": 5,
            "lines_before": 6,
            "lines_both": 7,
            "raw_output": "3",
        },
    ),
    ("grep_v2", {"pattern": "p", "-i": True, "-C": 3}, None, {"pattern": "p"}),
    ("grep_search", {"pattern": "p", "output_mode": ""}, "", {"pattern": "p"}),
    ("grep_search", {}, None, None),
    ("grep_v2", {"case_insensitive": 0, "head_limit": 0, "raw_output": 1, "path": ""}, None, None),
    ("grep_v2", {"lines_both": "abc"}, None, {}),  # truthy, so written: NaN as 0, the body is present
    ("grep_search_v2", {"raw_output": "from args"}, None, {"raw_output": "from args"}),
]


@pytest.mark.parametrize(("name", "args", "result", "body"), GREP_CASES)
def test_grep_mapping(name: str, args: object, result: object, body: Decoded | None) -> None:
    assert one_call(name, args, result) == expected("grep_search_v2", body)


# ------------------------------------------------------------------------------------ list_directory

LIST_CASES: list[tuple[str, object, object, Decoded | None]] = [
    (
        "list_dir",
        {"path": "/home/zoë"},
        "  docs/ \r\nREADME.md\n\n\t\n 😀.txt\u3000\n",
        {"directory_path_uri": "file:///home/zoë", "children": ["docs/", "README.md", "😀.txt"]},
    ),
    ("list_directory", {"directory_path": "/d"}, "a\nb", {"directory_path_uri": "file:///d", "children": ["a", "b"]}),
    # path, then directory_path, then cwd; empty strings fall through; relative paths stay relative
    ("list_dir", {"path": "/p", "directory_path": "/d", "cwd": "/c"}, None, {"directory_path_uri": "file:///p"}),
    ("list_dir", {"path": "", "directory_path": "", "cwd": "/c"}, None, {"directory_path_uri": "file:///c"}),
    ("list_dir", {"directory_path": "E:/x"}, None, {"directory_path_uri": "file://E:/x"}),
    ("list_dir", {"path": "sub"}, None, {"directory_path_uri": "sub"}),
    ("list_dir", {"path": 1, "cwd": "/c"}, None, None),
    # one child per line (\n or \r\n), trimmed, blank lines dropped; a lone \r does not split
    ("list_dir", {}, "a\r\rb\n c \r\n", {"children": ["a\r\rb", "c"]}),
    ("list_dir", {}, "x", {"children": ["x"]}),
    # a result with no non-blank line writes no children, so the body is empty and dropped
    ("list_dir", {}, " \n\r\n\t", None),
    ("list_dir", {}, "", None),
    ("list_directory", {"directory_path_uri": "file:///given"}, None, None),  # not an identity mapping
]


@pytest.mark.parametrize(("name", "args", "result", "body"), LIST_CASES)
def test_list_directory_mapping(name: str, args: object, result: object, body: Decoded | None) -> None:
    assert one_call(name, args, result) == expected("list_directory", body)


# ------------------------------------------------------------------------------------ write_to_file

WRITE_CASES: list[tuple[str, object, object, Decoded | None]] = [
    (
        "Write",
        {"file_path": PATH, "content": "línea 1\n😀\n"},
        "File created",  # a write result is not laid over the step
        {"target_file_uri": URI, "code_content": ["línea 1\n😀\n"]},
    ),
    (
        "Write",
        {"path": "C:\\proj\\a.txt", "content": "x"},
        None,
        {"target_file_uri": "file://C:/proj/a.txt", "code_content": ["x"]},
    ),
    (
        "Write",
        {"file_path": "/f", "path": "/p", "content": "x"},
        None,
        {"target_file_uri": "file:///f", "code_content": ["x"]},
    ),
    ("Write", {"file_path": "", "path": "/p"}, None, {"target_file_uri": "file:///p", "code_content": [""]}),
    # content: a string is one item, an array is taken as it is (String() of each item), anything else is String()ed
    ("Write", {"content": ["a", 1, None, True, 2.5]}, None, {"code_content": ["a", "1", "null", "true", "2.5"]}),
    ("Write", {"content": {"k": "v"}}, None, {"code_content": ["[object Object]"]}),
    ("Write", {"content": 42}, None, {"code_content": ["42"]}),
    ("Write", {"content": True}, None, {"code_content": ["true"]}),
    # a falsy content (missing, "", 0, null, false) is one empty item: written, so the body is present
    ("Write", {}, None, {"code_content": [""]}),
    ("Write", {"content": ""}, None, {"code_content": [""]}),
    ("Write", {"content": 0}, None, {"code_content": [""]}),
    ("Write", {"content": None}, None, {"code_content": [""]}),
    ("Write", {"content": False}, None, {"code_content": [""]}),
    ("Write", {"content": []}, None, None),  # an empty array writes no item
    ("Write", {"content": [], "file_path": 3}, None, None),
    # identity: cascade names, file_created flag; code_content must be an array
    (
        "write_to_file",
        {"target_file_uri": "file:///t/ü", "code_content": ["a", 2], "file_created": 1, "file_path": "/ignored"},
        "ok",
        {"target_file_uri": "file:///t/ü", "code_content": ["a", "2"], "file_created": True},
    ),
    ("write_to_file", {"code_content": "a string", "file_created": 0}, None, None),
    ("write_to_file", {"file_created": "no"}, None, {"file_created": True}),
]


@pytest.mark.parametrize(("name", "args", "result", "body"), WRITE_CASES)
def test_write_to_file_mapping(name: str, args: object, result: object, body: Decoded | None) -> None:
    assert one_call(name, args, result) == expected("write_to_file", body)


# ------------------------------------------------------------------------------------ propose_code


def _proposal(chunks: list[Decoded], uri: str | None = None) -> Decoded:
    """A propose_code body: is_edit always, the file when there is one, no instruction (the bridge sends '')."""
    command: Decoded = {"is_edit": True}
    if chunks:
        command["replacement_chunks"] = chunks
    if uri is not None:
        command["file"] = {"absolute_uri": uri}
    return {"action_spec": {"command": command}}


EDIT_CASES: list[tuple[str, object, Decoded]] = [
    (
        "Edit",
        {"file_path": PATH, "old_string": "naïve = 1", "new_string": "naïve = 2 # 😀", "replace_all": True},
        _proposal(
            [{"target_content": "naïve = 1", "replacement_content": "naïve = 2 # 😀", "allow_multiple": True}], URI
        ),
    ),
    # missing or non-string old/new: written as empty strings (absent once decoded); replace_all is truthiness
    ("Edit", {"path": "/p", "old_string": "a"}, _proposal([{"target_content": "a"}], "file:///p")),
    (
        "Edit",
        {"new_string": "b", "replace_all": "false"},
        _proposal([{"replacement_content": "b", "allow_multiple": True}]),
    ),
    ("Edit", {"old_string": 1, "new_string": ["b"], "replace_all": 0}, _proposal([{}])),
    ("Edit", {}, _proposal([{}])),
    ("Edit", {"file_path": "", "path": "rel.py"}, _proposal([{}], "rel.py")),
    ("Edit", {"file_path": 9, "path": "/p"}, _proposal([{}])),
    ("Edit", "[1]", _proposal([{}])),
    # edits[]: one chunk per entry, in order, and the top-level strings are then ignored
    (
        "MultiEdit",
        {
            "file_path": "/f",
            "old_string": "top",
            "edits": [
                {"old_string": "a", "new_string": "b"},
                {"old_string": "c", "new_string": "", "replace_all": True},
                "not an object",
                {"old_string": None, "new_string": "d"},
            ],
        },
        _proposal(
            [
                {"target_content": "a", "replacement_content": "b"},
                {"target_content": "c", "allow_multiple": True},
                {},
                {"replacement_content": "d"},
            ],
            "file:///f",
        ),
    ),
    ("MultiEdit", {"file_path": "/f", "edits": []}, _proposal([], "file:///f")),
    # edits that is not an array: the top-level strings make the one chunk
    (
        "MultiEdit",
        {"edits": {"old_string": "x"}, "old_string": "a", "new_string": "b"},
        _proposal([{"target_content": "a", "replacement_content": "b"}]),
    ),
    ("Edit", {"edits": "x", "old_string": "a"}, _proposal([{"target_content": "a"}])),
]


@pytest.mark.parametrize(("name", "args", "body"), EDIT_CASES)
@pytest.mark.parametrize("result", [None, "The file has been updated."])
def test_propose_code_mapping(name: str, args: object, body: Decoded, result: object) -> None:
    # an edit's result is not laid over the step: the same body with or without one
    assert one_call(name, args, result) == expected("propose_code", body)


# ------------------------------------------------------------------------------------ search_web

SEARCH_CASES: list[tuple[str, object, object, Decoded | None]] = [
    (
        "WebSearch",
        {"query": "café «protobuf» 😀", "domains": ["exemple.fr", "b.org"]},
        "1. Résumé…",
        {"query": "café «protobuf» 😀", "domain": "exemple.fr", "summary": "1. Résumé…"},
    ),
    ("ToolSearch", {"query": "q", "domain": "d.io"}, None, {"query": "q", "domain": "d.io"}),
    ("web_search", {"q": "only q"}, None, {"query": "only q"}),
    ("WebSearch", {"query": "", "q": "fallback"}, None, {"query": "fallback"}),
    ("WebSearch", {"query": "first", "q": "second"}, None, {"query": "first"}),
    ("WebSearch", {"query": 5, "q": "second"}, None, None),
    # domains[0] when domains is a non-empty array (a non-string first item writes nothing), else domain
    ("WebSearch", {"domains": [], "domain": "d.io"}, None, {"domain": "d.io"}),
    ("WebSearch", {"domains": [5, "b.org"], "domain": "d.io"}, None, None),
    ("WebSearch", {"domains": "a.com", "domain": "d.io"}, None, {"domain": "d.io"}),
    ("WebSearch", {"domains": ["", "b.org"], "domain": "d.io"}, None, None),
    ("WebSearch", {"domain": 3}, None, None),
    ("WebSearch", {}, "", {}),  # an empty summary is written
    ("WebSearch", {}, None, None),
]


@pytest.mark.parametrize(("name", "args", "result", "body"), SEARCH_CASES)
def test_search_web_mapping(name: str, args: object, result: object, body: Decoded | None) -> None:
    assert one_call(name, args, result) == expected("search_web", body)
