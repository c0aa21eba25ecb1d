"""The caller's tool history as Cascade steps: the native bridge's mapping (engine.md section 6.A).

With the native tool bridge on, the caller's earlier tool calls and their results are replayed to
the planner as already-executed CortexTrajectorySteps in SendUserCascadeMessage field 9
(``additional_steps``). :func:`build_additional_steps` maps OpenAI-style history to those steps
the way the bridge does: each assistant ``tool_calls[]`` entry whose tool name has a Cascade kind
(:data:`TOOL_KINDS`) becomes one step, its arguments translated to the kind's body and the
matching ``role: tool`` result laid over the body's result field. How much of the list one send
carries is :mod:`engine.cascade.steps_delta`'s decision.

Step type values. The bridge writes each step's ``type`` (field 1) as the **oneof field number**
of its body, not as the CortexStepType value the LS schema assigns (wire.md section 6, item 1): a
run_command body goes out as type 28 (COMMAND_STATUS in the schema; RUN_COMMAND is 21), view_file
as 14 (USER_INPUT), and so on. Real clients send exactly that, so the engine does too
(:data:`BRIDGE_STEP_TYPES`, read from the descriptor); an LS (or the fake) must identify a step by
the oneof body present. Every step carries status DONE.

Byte order. The steps are protobuf messages; Python serialises fields in field-number order and
omits empty proto3 strings, where the bridge writes its own field order and an explicit empty
``content``/``raw_output``/... when the tool result is an empty string. The decoded steps are the
same.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, cast

from google.protobuf.message import Message as Message_

from engine.js import (
    js_get,
    js_json_parse,
    js_or,
    js_string,
    js_stringify,
    js_to_number,
    js_to_well_formed,
    js_trim,
    js_truthy,
)
from fakels.proto.exa.codeium_common_pb import codeium_common_pb2 as common
from fakels.proto.exa.cortex_pb import cortex_pb2 as cortex

Message = Mapping[str, object]
Args = dict[str, object]

_STEP_BODIES = cortex.CortexTrajectoryStep.DESCRIPTOR.fields_by_name
#: The ``type`` value the bridge writes per kind: the oneof field number (wire.md section 6, item 1).
BRIDGE_STEP_TYPES: Final[Mapping[str, int]] = {
    kind: _STEP_BODIES[kind].number
    for kind in (
        "view_file",
        "list_directory",
        "write_to_file",
        "run_command",
        "propose_code",
        "find",
        "read_url_content",
        "grep_search",
        "grep_search_v2",
        "search_web",
    )
}
#: CortexStepStatus DONE: the step ran and its result is observed.
STEP_STATUS_DONE: Final = cortex.CortexStepStatus.CORTEX_STEP_STATUS_DONE

# ------------------------------------------------------------------------------------ coercions


def _s(value: object) -> str:
    """``value || ''`` for a string-typed body field; non-strings are not written."""
    return value if isinstance(value, str) else ""


def _first_str(*values: object) -> str:
    """``a || b || ... || ''`` where only string values can be written."""
    for value in values:
        if js_truthy(value):
            return value if isinstance(value, str) else ""
    return ""


def _number_or_0(value: object) -> float:
    """``Number(value) || 0``."""
    number = js_to_number(value)
    return 0.0 if math.isnan(number) else number


def _varint_value(value: object) -> int:
    """What the bridge's varint writer puts on the wire for a uint32 field, as the LS decodes it.

    ``Number(value)`` truncated toward zero, modulo 2**32 (a negative number is written as a 64-bit
    two's complement varint); NaN gives 0. Infinity, on which the JS writer throws, gives 0 here.
    """
    number = js_to_number(value)
    if not math.isfinite(number):
        return 0
    return int(number) % 2**32


def file_uri(path: object) -> str:
    """The bridge's ``buildFileUri``: absolute paths (POSIX or drive letter) get ``file://``."""
    if not isinstance(path, str) or not path:
        return ""
    if path.startswith("file://"):
        return path
    if re.match(r"[a-zA-Z]:[\\/]", path) or path.startswith("/"):
        return "file://" + path.replace("\\", "/")
    return path


# ------------------------------------------------------------------------------------ argument translators


def _read(args: Args) -> Args:
    return {
        "absolute_path_uri": file_uri(js_or(args.get("file_path"), args.get("path"), args.get("absolute_path"), "")),
        "offset": _number_or_0(args.get("offset")),
        "limit": _number_or_0(args.get("limit")),
    }


def _bash(args: Args) -> Args:
    command = js_or(args.get("command"), args.get("shell_command"), "")
    return {"command_line": js_string(command), "cwd": _s(args.get("cwd")), "blocking": True}


def _run_command(args: Args) -> Args:
    return {
        "command_line": _first_str(args.get("command_line"), args.get("command")),
        "cwd": _first_str(args.get("cwd")),
        "blocking": True,
    }


def _codex_shell(args: Args) -> Args:
    return {
        "command_line": _first_str(args.get("command"), args.get("command_line")),
        "cwd": _first_str(args.get("workdir"), args.get("cwd")),
        "blocking": True,
    }


def _glob(args: Args) -> Args:
    return {
        "pattern": _first_str(args.get("pattern")),
        "search_directory": _first_str(args.get("path"), args.get("cwd")),
    }


def _grep(args: Args) -> Args:
    context = args.get("-C")
    return {
        "pattern": _first_str(args.get("pattern")),
        "path": _first_str(args.get("path")),
        "glob": _first_str(args.get("glob")),
        "output_mode": _first_str(args.get("output_mode"), "files_with_matches"),
        "case_insensitive": js_truthy(args.get("-i")),
        "multiline": js_truthy(args.get("multiline")),
        "type": _first_str(args.get("type")),
        "head_limit": _number_or_0(args.get("head_limit")),
        "lines_after": _number_or_0(args.get("-A")),
        "lines_before": _number_or_0(args.get("-B")),
        "lines_both": _number_or_0(context if context is not None else args.get("context")),
    }


def _write(args: Args) -> Args:
    content = js_or(args.get("content"), "")
    lines: object
    if isinstance(content, str):
        lines = [content]
    elif isinstance(content, list):
        lines = content
    else:
        lines = [js_string(content)]
    return {"target_file_uri": file_uri(js_or(args.get("file_path"), args.get("path"), "")), "code_content": lines}


def _list_dir(args: Args) -> Args:
    return {"directory_path_uri": file_uri(js_or(args.get("path"), args.get("directory_path"), args.get("cwd"), ""))}


def _edit(args: Args) -> Args:
    def chunk(source: object) -> Args:
        old, new = js_get(source, "old_string"), js_get(source, "new_string")
        return {
            "target": old if isinstance(old, str) else "",
            "replacement": new if isinstance(new, str) else "",
            "allow_multiple": js_truthy(js_get(source, "replace_all")),
        }

    edits = args.get("edits")
    chunks = [chunk(edit) for edit in edits] if isinstance(edits, list) else [chunk(args)]
    return {
        "target_file_uri": file_uri(js_or(args.get("file_path"), args.get("path"), "")),
        "replacement_chunks": chunks,
        "instruction": "",
    }


def _web_search(args: Args) -> Args:
    domains = args.get("domains")
    domain = domains[0] if isinstance(domains, list) and domains else js_or(args.get("domain"), "")
    return {"query": _first_str(args.get("query"), args.get("q")), "domain": domain if isinstance(domain, str) else ""}


def _web_fetch(args: Args) -> Args:
    return {"url": _first_str(args.get("url"), args.get("uri"), args.get("link"))}


def _identity(args: Args) -> Args:
    return dict(args)


@dataclass(frozen=True)
class ToolKind:
    kind: str
    forward: Callable[[Args], Args]


#: Caller tool name → Cascade kind and argument translator (the bridge's TOOL_MAP).
TOOL_KINDS: Final[Mapping[str, ToolKind]] = {
    # Claude Code
    "Read": ToolKind("view_file", _read),
    "Bash": ToolKind("run_command", _bash),
    "Glob": ToolKind("find", _glob),
    "Grep": ToolKind("grep_search_v2", _grep),
    "Write": ToolKind("write_to_file", _write),
    "Edit": ToolKind("propose_code", _edit),
    "MultiEdit": ToolKind("propose_code", _edit),
    "WebSearch": ToolKind("search_web", _web_search),
    "ToolSearch": ToolKind("search_web", _web_search),
    "WebFetch": ToolKind("read_url_content", _web_fetch),
    # Codex CLI and cascade vocabulary
    "view_file": ToolKind("view_file", _identity),
    "run_command": ToolKind("run_command", _run_command),
    "grep_v2": ToolKind("grep_search_v2", _identity),
    "grep_search": ToolKind("grep_search_v2", _identity),
    "grep_search_v2": ToolKind("grep_search_v2", _identity),
    "find": ToolKind("find", _identity),
    "list_dir": ToolKind("list_directory", _list_dir),
    "list_directory": ToolKind("list_directory", _list_dir),
    "write_to_file": ToolKind("write_to_file", _identity),
    "shell_command": ToolKind("run_command", _codex_shell),
    "web_search": ToolKind("search_web", _web_search),
    # common synonyms
    "read_file": ToolKind("view_file", _read),
    "shell": ToolKind("run_command", _bash),
}


# ------------------------------------------------------------------------------------ step bodies


def _length_delimited(field_number: int, payload: bytes) -> bytes:
    out = bytearray()
    for number in ((field_number << 3) | 2, len(payload)):
        while True:
            byte = number & 0x7F
            number >>= 7
            out.append(byte | (0x80 if number else 0))
            if not number:
                break
    return bytes(out) + payload


class _Body:
    """Fills one step body and notes whether the bridge's writer would emit any byte for it.

    The bridge drops an empty embedded message entirely (no oneof at all), while it writes an
    explicitly empty string (``typeof v === 'string'`` fields) as a present field. Protobuf cannot
    tell those apart by size, so presence is tracked here. String fields take strings only: the JS
    writer throws on other values, which are left out instead.
    """

    def __init__(self, message: Message_) -> None:
        self.message = message
        self.written = False

    def _set(self, name: str, value: object) -> None:
        # writeStringField encodes UTF-8 the way Node does: a lone surrogate becomes U+FFFD.
        setattr(self.message, name, js_to_well_formed(value) if isinstance(value, str) else value)
        self.written = True

    def text(self, name: str, value: object) -> None:
        """``if (v) writeStringField(...)``."""
        if isinstance(value, str) and value:
            self._set(name, value)

    def text_if_string(self, name: str, value: object) -> None:
        """``if (typeof v === 'string') writeStringField(...)``: an empty string is written too."""
        if isinstance(value, str):
            self._set(name, value)

    def varint(self, name: str, value: object) -> None:
        """``if (v) writeVarintField(...)``."""
        if js_truthy(value):
            self._set(name, _varint_value(value))

    def flag(self, name: str, value: object) -> None:
        """``if (v) writeBoolField(..., true)``."""
        if js_truthy(value):
            self._set(name, True)

    def strings(self, name: str, values: object) -> None:
        """A repeated string field: ``String(item)`` for each item of an array."""
        if isinstance(values, list) and values:
            getattr(self.message, name).extend(js_to_well_formed(js_string(item)) for item in values)
            self.written = True


def _fill_view_file(body: _Body, args: Args) -> None:
    body.text("absolute_path_uri", args.get("absolute_path_uri"))
    body.varint("offset", args.get("offset"))
    body.varint("limit", args.get("limit"))
    body.text_if_string("content", args.get("content"))


def _fill_run_command(body: _Body, args: Args) -> None:
    message = cast(cortex.CortexStepRunCommand, body.message)
    body.text("command_line", args.get("command_line"))
    body.text("cwd", args.get("cwd"))
    body.flag("blocking", args.get("blocking"))
    body.text_if_string("stdout", args.get("stdout"))
    body.text_if_string("stderr", args.get("stderr"))
    exit_code = args.get("exit_code")
    if isinstance(exit_code, int) and not isinstance(exit_code, bool) and -(2**31) <= exit_code < 2**31:
        body._set("exit_code", exit_code)
    full = args.get("full_output")
    if isinstance(full, str):
        message.combined_output.full = full  # RunCommandOutput {full}: never an empty message
        body.written = True


def _fill_grep_v2(body: _Body, args: Args) -> None:
    for name in ("pattern", "path", "glob", "output_mode"):
        body.text(name, args.get(name))
    body.flag("case_insensitive", args.get("case_insensitive"))
    body.flag("multiline", args.get("multiline"))
    body.text("type", args.get("type"))
    for name in ("head_limit", "lines_after", "lines_before", "lines_both"):
        body.varint(name, args.get(name))
    body.text_if_string("raw_output", args.get("raw_output"))


def _fill_find(body: _Body, args: Args) -> None:
    body.text("search_directory", args.get("search_directory"))
    body.text("pattern", args.get("pattern"))
    body.text_if_string("raw_output", args.get("raw_output"))


def _fill_list_directory(body: _Body, args: Args) -> None:
    body.text("directory_path_uri", args.get("directory_path_uri"))
    body.strings("children", args.get("children"))


def _fill_write_to_file(body: _Body, args: Args) -> None:
    body.text("target_file_uri", args.get("target_file_uri"))
    body.strings("code_content", args.get("code_content"))
    body.flag("file_created", args.get("file_created"))


def _fill_propose_code(body: _Body, args: Args) -> None:
    message = cast(cortex.CortexStepProposeCode, body.message)
    command = message.action_spec.command
    instruction = args.get("instruction")
    if isinstance(instruction, str) and instruction:
        command.instruction = instruction
        message.code_instruction = instruction
    command.is_edit = True  # always written, so the body is never empty
    chunks = args.get("replacement_chunks")
    if isinstance(chunks, list):
        for chunk in chunks:
            target, replacement = js_get(chunk, "target"), js_get(chunk, "replacement")
            if not (
                isinstance(target, str) or isinstance(replacement, str) or js_truthy(js_get(chunk, "allow_multiple"))
            ):
                continue  # an empty chunk message is not written
            command.replacement_chunks.add(
                target_content=_s(target),
                replacement_content=_s(replacement),
                allow_multiple=js_truthy(js_get(chunk, "allow_multiple")),
            )
    target_file = args.get("target_file_uri")
    if isinstance(target_file, str) and target_file:
        command.file.absolute_uri = target_file
    body.written = True


def _fill_search_web(body: _Body, args: Args) -> None:
    body.text("query", args.get("query"))
    body.text("domain", args.get("domain"))
    body.text_if_string("summary", args.get("summary"))


def _fill_read_url_content(body: _Body, args: Args) -> None:
    message = cast(cortex.CortexStepReadUrlContent, body.message)
    body.text("url", args.get("url"))
    document = common.KnowledgeBaseItem(
        text=_first_str(args.get("text"), args.get("content"), args.get("summary")),
        summary=_first_str(args.get("summary")),
    )
    # KnowledgeBaseItem url (3) is outside the kit's proto subset: written as a known-number unknown field.
    doc_url = _first_str(args.get("url"), args.get("resolved_url"))
    if doc_url:
        document.MergeFromString(_length_delimited(3, doc_url.encode("utf-8", "surrogatepass")))
    if document.ByteSize():  # every KnowledgeBaseItem field is written only when non-empty
        message.web_document.CopyFrom(document)
        body.written = True


_BODIES: Final[Mapping[str, tuple[Callable[[], Message_], Callable[[_Body, Args], None]]]] = {
    "view_file": (cortex.CortexStepViewFile, _fill_view_file),
    "run_command": (cortex.CortexStepRunCommand, _fill_run_command),
    "grep_search_v2": (cortex.CortexStepGrepSearchV2, _fill_grep_v2),
    "find": (cortex.CortexStepFind, _fill_find),
    "list_directory": (cortex.CortexStepListDirectory, _fill_list_directory),
    "write_to_file": (cortex.CortexStepWriteToFile, _fill_write_to_file),
    "propose_code": (cortex.CortexStepProposeCode, _fill_propose_code),
    "search_web": (cortex.CortexStepSearchWeb, _fill_search_web),
    "read_url_content": (cortex.CortexStepReadUrlContent, _fill_read_url_content),
}


def build_step(kind: str, args: Args) -> cortex.CortexTrajectoryStep:
    """One "already executed" step: bridge type value, status DONE, and the kind's body.

    A body the bridge would write as no bytes at all leaves the oneof unset (the step then carries
    only its type and status), as the bridge's empty-message rule does.
    """
    step = cortex.CortexTrajectoryStep(
        type=cast(cortex.CortexStepType, BRIDGE_STEP_TYPES[kind]),
        status=STEP_STATUS_DONE,
    )
    new_message, fill = _BODIES[kind]
    body = _Body(new_message())
    fill(body, args)
    if body.written:
        target = getattr(step, kind)
        target.SetInParent()
        target.MergeFrom(body.message)
    return step


def _overlay(kind: str, args: Args, observation: str) -> None:
    """Lay the caller's tool result over the body's result field."""
    if kind == "view_file":
        args["content"] = observation
    elif kind == "run_command":
        args["full_output"] = observation
        args["stdout"] = observation
        args["exit_code"] = 0
    elif kind in ("grep_search_v2", "find"):
        args["raw_output"] = observation
    elif kind == "list_directory":
        args["children"] = [js_trim(line) for line in re.split(r"\r?\n", observation) if js_trim(line)]
    elif kind == "search_web":
        args["summary"] = observation
    elif kind == "read_url_content":
        args["content"] = observation


def _tool_result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(text for part in content if isinstance(text := js_get(part, "text"), str))
    rendered = js_stringify("" if content is None else content)
    return rendered if rendered is not None else ""


def _is_map_key(value: object) -> bool:
    """A tool-call id usable as the bridge's Map key (booleans excluded: ``true`` is not ``1`` in JS)."""
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def _parse_arguments(arguments: object) -> Args:
    """The bridge's ``safeJsonParse``: a JSON object, else ``{}``."""
    if not isinstance(arguments, str) or not arguments:
        return {}
    try:
        value = js_json_parse(arguments)
    except (ValueError, RecursionError):
        return {}
    return dict(value) if isinstance(value, dict) else {}


@dataclass(frozen=True)
class MappedCall:
    """One tool call of the history as the bridge maps it (for logs and tests)."""

    message_index: int
    tool_call_id: object
    tool_name: str
    kind: str
    step: cortex.CortexTrajectoryStep


def map_tool_history(messages: Sequence[Message]) -> list[MappedCall]:
    """Every mapped tool call of ``messages`` in order, with its step (see :func:`build_additional_steps`)."""
    results: dict[object, str] = {}
    for message in messages:
        call_id = message.get("tool_call_id")
        if message.get("role") == "tool" and js_truthy(call_id) and _is_map_key(call_id):
            results[call_id] = _tool_result_text(message.get("content"))
    mapped: list[MappedCall] = []
    for index, message in enumerate(messages):
        tool_calls = message.get("tool_calls")
        if message.get("role") != "assistant" or not isinstance(tool_calls, list):
            continue
        for call in tool_calls:
            if not isinstance(call, Mapping):
                continue
            function = call.get("function")
            name = js_get(function, "name")
            tool = TOOL_KINDS.get(name) if isinstance(name, str) else None
            if tool is None or not isinstance(name, str):
                continue
            args = tool.forward(_parse_arguments(js_get(function, "arguments")))
            call_id = call.get("id")
            observation = results.get(call_id) if _is_map_key(call_id) else None
            if observation is not None:
                _overlay(tool.kind, args, observation)
            mapped.append(MappedCall(index, call_id, name, tool.kind, build_step(tool.kind, args)))
    return mapped


def build_additional_steps(messages: Sequence[Message]) -> list[cortex.CortexTrajectoryStep]:
    """The caller's tool history as additional steps (the bridge's ``buildAdditionalStepsFromHistory``).

    Tool results are indexed by ``tool_call_id`` (array content: its text parts joined with
    ``\\n``; other content: its JSON). Then each assistant ``tool_calls[]`` entry, in message
    order, whose function name is in :data:`TOOL_KINDS` becomes one step; its arguments (a JSON
    object string, anything else counts as ``{}``) are translated, and the result, when there is
    one, fills the kind's result field: view_file content; run_command combined output, stdout
    and exit code 0; grep/find raw output; list_directory children (one per non-blank line);
    search_web summary; read_url_content document text. Unmapped tools are skipped.
    """
    return [call.step for call in map_tool_history(messages)]
