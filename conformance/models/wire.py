"""WIRE: the kit's own model of the protocol, written from ``../shared/reference/wire.md``'s tables.

This is the one place field numbers appear outside the ``.proto`` files, on purpose: the tables
below are wire.md's, typed in independently, so that a wrong ``.proto`` (or a decoder built on one)
disagrees with them. Each builder turns drawn values into the pairs a hand-rolled client writes
(:mod:`conformance.wire_bytes`) and the field-named JSON a decoder must produce.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

Pairs = list[tuple[int, Any]]
Request = tuple[Pairs, dict[str, Any]]

# codeium_common_pb.Metadata as the client builds it (wire.md section 2.1): number -> name.
METADATA_FIELDS: tuple[tuple[int, str], ...] = (
    (1, "ide_name"),
    (2, "extension_version"),
    (3, "api_key"),
    (4, "locale"),
    (5, "os"),
    (7, "ide_version"),
    (8, "hardware"),
    (9, "request_id"),
    (10, "session_id"),
    (12, "extension_name"),
    (21, "user_jwt"),
)
PLANNER_MODES = {1: "CONVERSATIONAL_PLANNER_MODE_DEFAULT", 3: "CONVERSATIONAL_PLANNER_MODE_NO_TOOL"}
MAX_OUTPUT_TOKENS = 32768
TRAJECTORY_SOURCE_CASCADE_CLIENT = (1, "CORTEX_TRAJECTORY_SOURCE_CASCADE_CLIENT")
TRAJECTORY_TYPE_USER_MAINLINE = (1, "CORTEX_TRAJECTORY_TYPE_USER_MAINLINE")

# Statuses a clean rejection of garbage may carry (wire.md section 5).
CLEAN_REJECTIONS = frozenset(
    {"INVALID_ARGUMENT", "UNIMPLEMENTED", "UNAUTHENTICATED", "NOT_FOUND", "FAILED_PRECONDITION", "RESOURCE_EXHAUSTED"}
)
# What real clients classify as an expired cascade (wire.md section 4).
EXPIRED_PATTERNS = (
    r"not_found.*(cascade|trajectory)",
    r"(cascade|trajectory).*not[ _-]?found",
    r"expired.*cascade",
    r"unknown.*cascade",
)
RUNNING, IDLE = 2, 1  # CortexTrajectoryStatus values GetCascadeTrajectory answers
# Numbers protobuf reserves for itself; an "unknown field" never uses them.
RESERVED_NUMBERS = range(19000, 20000)


def metadata(values: Mapping[str, Any]) -> Request:
    """Metadata with the given fields (names of :data:`METADATA_FIELDS`), in table order."""
    present = [(n, name) for n, name in METADATA_FIELDS if name in values]
    return [(n, values[name]) for n, name in present], {name: values[name] for _, name in present}


def send_request(
    cascade_id: str,
    prompt: str,
    meta: Mapping[str, Any],
    mode: int,
    uid: str,
    images: Sequence[tuple[bytes, str]],
) -> Request:
    """SendUserCascadeMessageRequest, fields 1, 2, 3, 5, 6 in the client's order (section 2.3)."""
    meta_pairs, meta_json = metadata(meta)
    planner_pairs: Pairs = [(2, [(4, mode)]), (35, uid), (34, uid), (6, MAX_OUTPUT_TOKENS)]
    pairs: Pairs = [(1, cascade_id), (2, [(1, prompt)]), (3, meta_pairs), (5, [(1, planner_pairs), (7, [(1, 1)])])]
    pairs += [(6, [(1, base64.b64encode(data).decode()), (2, mime)]) for data, mime in images]
    expected: dict[str, Any] = {
        "cascade_id": cascade_id,
        "items": [{"text": prompt}],
        "metadata": meta_json,
        "cascade_config": {
            "planner_config": {
                "conversational": {"planner_mode": PLANNER_MODES[mode]},
                "requested_model_uid": uid,
                "plan_model_uid": uid,
                "max_output_tokens": MAX_OUTPUT_TOKENS,
            },
            "brain_config": {"enabled": True},
        },
    }
    if images:
        expected["images"] = [{"base64_data": base64.b64encode(d).decode(), "mime_type": m} for d, m in images]
    return pairs, expected


def with_mistyped_planner_field(pairs: Pairs) -> tuple[Pairs, dict[str, Any]]:
    """Real clients write a LEN value {1: 1, 2: ""} at planner field 11, an optional bool in the LS
    schema: a decoder must keep it as an unknown field at ``cascade_config.planner_config``."""
    planner = dict(pairs)[5][0][1]
    planner.append((11, [(1, 1), (2, "")]))
    return pairs, {"path": "cascade_config.planner_config", "number": 11, "wire_type": "len"}


def offset_request(cascade_id: str, offset: int, offset_name: str) -> Request:
    """Steps / generator-metadata requests: field 2 is omitted when the offset is 0."""
    pairs: Pairs = [(1, cascade_id)] + ([(2, offset)] if offset else [])
    return pairs, {"cascade_id": cascade_id, **({offset_name: offset} if offset else {})}


def with_metadata(meta: Mapping[str, Any], extra: Sequence[tuple[int, str, Any, Any]]) -> Request:
    """Metadata at field 1, then ``(number, name, wire value, decoded value)`` fields."""
    meta_pairs, meta_json = metadata(meta)
    return (
        [(1, meta_pairs), *[(n, wire) for n, _, wire, _ in extra]],
        {"metadata": meta_json, **{name: decoded for _, name, _, decoded in extra}},
    )


def start_cascade(meta: Mapping[str, Any]) -> Request:
    source, trajectory = TRAJECTORY_SOURCE_CASCADE_CLIENT, TRAJECTORY_TYPE_USER_MAINLINE
    return with_metadata(meta, ((4, "source", source[0], source[1]), (5, "trajectory_type", *trajectory)))


def single_string(name: str, value: str) -> Request:
    """A request whose only field is string field 1 (GetCascadeTrajectory, AddTrackedWorkspace)."""
    return [(1, value)], {name: value}
