"""Scripted cascades: what the fake language server answers, turn by turn.

A scenario is a list of turns. The n-th ``SendUserCascadeMessage`` the server accepts plays the
n-th turn (across cascades, so a gateway that restarts a cascade after an expiry simply gets
the next turn). When the script runs out, turns are generated deterministically from the
prompt by :func:`default_turn`, so end-to-end tests can predict the answer.

Scenarios are built in Python (``Scenario(turns=(Turn(chunks=(Chunk(text="hi"),)),))``) or
loaded from a JSON or YAML file checked against ``scenario.schema.json``
(:func:`load_scenario`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import jsonschema
import yaml
from google.protobuf import json_format

from fakels.steps import native_body

FaultKind = Literal["expired", "panel_lost", "untrusted", "error"]


class ScenarioError(ValueError):
    """A scenario file or object is invalid; the message says where and how to fix it."""


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments_json: str = "{}"


@dataclass(frozen=True)
class NativeStep:
    """A native tool step: ``kind`` is the oneof field name of CortexTrajectoryStep."""

    kind: str
    body: Mapping[str, Any] = field(default_factory=dict)
    step_type: int | None = None
    status: int | None = None


@dataclass(frozen=True)
class Chunk:
    """One unit revealed per poll: text and thinking grow the planner step append-only."""

    text: str = ""
    thinking: str = ""
    tool_call: ToolCall | None = None
    native: NativeStep | None = None
    error: str | None = None
    delay_s: float = 0.0


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0


@dataclass(frozen=True)
class Fault:
    """A rejected Send. ``expired`` also expires the cascade, ``panel_lost`` drops panel state
    until the next InitializeCascadePanelState, ``untrusted`` drops workspace trust until the
    next UpdateWorkspaceTrust; ``error`` only fails this Send."""

    kind: FaultKind
    message: str | None = None


@dataclass(frozen=True)
class ResponseOverride:
    """Replace the ``call``-th answer (0-based, counted within the turn) of ``rpc`` with raw
    bytes, an error status, or a failure at the HTTP level (an HTTP error status in place of a gRPC
    answer, or the answer's frame cut mid-message): a deliberately malformed response."""

    rpc: str
    call: int = 0
    payload_hex: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    http_status: int | None = None
    cut_frame: bool = False


@dataclass(frozen=True)
class Turn:
    chunks: tuple[Chunk, ...] = ()
    # Generator-metadata records appended when the turn completes; None = a record without usage.
    records: tuple[Usage | None, ...] = (Usage(),)
    user_input_step: bool = True
    modified_response: str | None = None
    fault: Fault | None = None
    # After this turn the cascade expires: its polls still answer, the next Send gets the expired error.
    expire_after: bool = False
    lose_panel_after: bool = False
    overrides: tuple[ResponseOverride, ...] = ()
    min_running_polls: int = 1


@dataclass(frozen=True)
class Scenario:
    turns: tuple[Turn, ...] = ()
    cascade_ttl_s: float | None = None
    require_panel: bool = False
    user_status: Mapping[str, Any] = field(
        default_factory=lambda: {"user_status": {"pro": True, "name": "fakels user"}}
    )

    def turn(self, index: int, prompt: str, image_count: int) -> Turn:
        if index < len(self.turns):
            return self.turns[index]
        return default_turn(prompt, image_count)


def default_answer(prompt: str, image_count: int = 0) -> str:
    """The answer a generated turn gives: a pure function of the prompt text and image count."""
    digest = hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:12]
    return f"fakels answer {digest}: {len(prompt)} chars, {image_count} images."


def default_turn(prompt: str, image_count: int = 0) -> Turn:
    answer = default_answer(prompt, image_count)
    third = max(1, len(answer) // 3)
    parts = [answer[:third], answer[third : 2 * third], answer[2 * third :]]
    chunks = [Chunk(thinking=f"Reading {len(prompt)} chars.")]
    chunks.extend(Chunk(text=part) for part in parts)
    usage = Usage(input_tokens=max(1, len(prompt) // 4), output_tokens=max(1, len(answer) // 4))
    return Turn(chunks=tuple(chunks), records=(usage,))


# ------------------------------------------------------------------ loading


def scenario_schema() -> dict[str, Any]:
    text = resources.files("fakels").joinpath("scenario.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def load_scenario(path: Path) -> Scenario:
    """Read a scenario from a ``.json``, ``.yaml`` or ``.yml`` file, validated against the schema."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"cannot read scenario file {path}: {exc.strerror or exc}") from exc
    return parse_scenario(_parse_document(text, path.suffix.lower(), str(path)), source=str(path))


def _parse_document(text: str, suffix: str, source: str) -> Any:
    if suffix in (".yaml", ".yml"):
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ScenarioError(f"{source}: not valid YAML: {exc}") from exc
    if suffix == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ScenarioError(
                f"{source}: not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
            ) from exc
    raise ScenarioError(f"{source}: unknown scenario format {suffix!r}; use a .json, .yaml or .yml file")


def parse_scenario(document: Any, *, source: str = "scenario") -> Scenario:
    """Validate a decoded JSON/YAML document and build the Scenario it describes."""
    _check_finite(document, source)
    validator = jsonschema.Draft202012Validator(scenario_schema())
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"{source}: {len(errors)} problem(s) in the scenario:"]
        for err in errors[:10]:
            where = "/".join(str(p) for p in err.absolute_path) or "<top level>"
            lines.append(f"  at {where}: {err.message}")
        raise ScenarioError("\n".join(lines))
    scenario = _build(document)
    _check_native_bodies(scenario, source)
    return scenario


def _check_finite(value: Any, source: str, path: tuple[str | int, ...] = ()) -> None:
    """NaN and Infinity parse as JSON numbers in Python and pass ``minimum``/``maximum`` checks
    (NaN compares false to everything), so every number is checked to be finite first."""
    if isinstance(value, float) and not math.isfinite(value):
        where = "/".join(str(p) for p in path) or "<top level>"
        raise ScenarioError(
            f"{source}: at {where}: {json.dumps(value)} is not a finite number (scenario numbers must be finite)"
        )
    if isinstance(value, Mapping):
        for key, item in value.items():
            _check_finite(item, source, (*path, str(key)))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _check_finite(item, source, (*path, index))


def _check_native_bodies(scenario: Scenario, source: str) -> None:
    for t, turn in enumerate(scenario.turns):
        for c, chunk in enumerate(turn.chunks):
            if chunk.native is None:
                continue
            try:
                native_body(chunk.native.kind, chunk.native.body)
            except json_format.ParseError as exc:
                raise ScenarioError(f"{source}: at turns/{t}/chunks/{c}/native/body: {exc}") from exc


def _build(doc: Mapping[str, Any]) -> Scenario:
    kwargs: dict[str, Any] = {"turns": tuple(_build_turn(t) for t in doc.get("turns", []))}
    for key in ("cascade_ttl_s", "require_panel", "user_status"):
        if key in doc:
            kwargs[key] = doc[key]
    return Scenario(**kwargs)


def _build_turn(doc: Mapping[str, Any]) -> Turn:
    kwargs: dict[str, Any] = {"chunks": tuple(_build_chunk(c) for c in doc.get("chunks", []))}
    if "records" in doc:
        kwargs["records"] = tuple(None if r is None else Usage(**r) for r in doc["records"])
    if "fault" in doc:
        kwargs["fault"] = Fault(**doc["fault"])
    if "overrides" in doc:
        kwargs["overrides"] = tuple(ResponseOverride(**o) for o in doc["overrides"])
    for key in ("user_input_step", "modified_response", "expire_after", "lose_panel_after", "min_running_polls"):
        if key in doc:
            kwargs[key] = doc[key]
    return Turn(**kwargs)


def _build_chunk(doc: Mapping[str, Any]) -> Chunk:
    kwargs: dict[str, Any] = {k: doc[k] for k in ("text", "thinking", "error", "delay_s") if k in doc}
    if "tool_call" in doc:
        kwargs["tool_call"] = ToolCall(**doc["tool_call"])
    if "native" in doc:
        native = dict(doc["native"])
        kwargs["native"] = NativeStep(
            kind=native["kind"],
            body=native.get("body", {}),
            step_type=native.get("type"),
            status=native.get("status"),
        )
    return Chunk(**kwargs)


def scenario_to_document(scenario: Scenario) -> dict[str, Any]:
    """The JSON document that :func:`parse_scenario` turns back into ``scenario``."""
    doc = asdict(scenario)
    for turn in doc["turns"]:
        for chunk in turn["chunks"]:
            for key in [k for k, v in chunk.items() if v is None or v == "" or (k == "delay_s" and v == 0.0)]:
                del chunk[key]
            if "native" in chunk:
                native = chunk["native"]
                native["type"] = native.pop("step_type")
                for key in [k for k, v in native.items() if v is None]:
                    del native[key]
        for key in [k for k, v in turn.items() if v is None]:
            del turn[key]
        turn["overrides"] = [
            {k: v for k, v in o.items() if v is not None and v is not False} for o in turn["overrides"]
        ]
        if "fault" in turn:
            turn["fault"] = {k: v for k, v in turn["fault"].items() if v is not None}
    if doc["cascade_ttl_s"] is None:
        del doc["cascade_ttl_s"]
    doc["user_status"] = dict(doc["user_status"])
    normalised: dict[str, Any] = json.loads(json.dumps(doc))
    return normalised
