"""The kit's model of the protocol (conformance/models/wire.py): wire.md's field tables typed in by
hand, and the statuses, expiry texts and enum values WIRE-3/WIRE-4 judge with.

Expected pairs and JSON below are copied from ``../shared/reference/wire.md`` (sections 2.1-2.9, 4,
5); a second check decodes the model's pairs with the fake's decoder (the kit's ``.proto``), so the
tables and the schema are held against each other."""

from __future__ import annotations

import re
from typing import Any

import pytest

from conformance import wire_bytes as wb
from conformance.models import wire as model
from fakels.decoder import decode
from fakels.proto.exa.cortex_pb import cortex_pb2
from fakels.rpcs import RPCS

FULL_META: dict[str, Any] = {
    "user_jwt": "jwt",
    "extension_name": "windsurf",
    "session_id": "5f0c",
    "request_id": 281474976710655,
    "hardware": "arm64",
    "ide_version": "2.0.67",
    "os": "macos",
    "locale": "en",
    "api_key": "key-1",
    "extension_version": "2.0.67",
    "ide_name": "windsurf",
}
# wire.md section 2.1, in table order.
FULL_META_PAIRS = [
    (1, "windsurf"),
    (2, "2.0.67"),
    (3, "key-1"),
    (4, "en"),
    (5, "macos"),
    (7, "2.0.67"),
    (8, "arm64"),
    (9, 281474976710655),
    (10, "5f0c"),
    (12, "windsurf"),
    (21, "jwt"),
]
SHORT_META = {"api_key": "k", "ide_name": "windsurf"}
SHORT_META_PAIRS = [(1, "windsurf"), (3, "k")]


def _decoded(method: str, pairs: list[tuple[int, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    result = decode(RPCS[method].request_type, wb.message(pairs))
    return result.fields, [u.to_json() for u in result.unknown]


# ---------------------------------------------------------------------------- Metadata (2.1)


def test_metadata_fields_go_out_in_table_order_with_their_numbers() -> None:
    pairs, expected = model.metadata(FULL_META)
    assert pairs == FULL_META_PAIRS
    assert expected == FULL_META
    assert list(expected) == list(reversed(FULL_META))  # table order, not the order given


def test_metadata_carries_only_the_fields_given_and_known() -> None:
    pairs, expected = model.metadata({"session_id": "s", "request_id": 7, "disable_telemetry": True})
    assert pairs == [(9, 7), (10, "s")]
    assert expected == {"request_id": 7, "session_id": "s"}
    assert model.metadata({}) == ([], {})


def test_metadata_numbers_are_the_schemas() -> None:
    pairs, expected = model.metadata(FULL_META)
    assert _decoded("Heartbeat", [(1, pairs)]) == ({"metadata": expected}, [])


# ---------------------------------------------------------------------------- SendUserCascadeMessage (2.3, 2.4)


def _planner(mode: int, uid: str) -> list[tuple[int, Any]]:
    # Order on the wire: 2, 35, 34, 6 (no model enum, no tool config).
    return [(2, [(4, mode)]), (35, uid), (34, uid), (6, 32768)]


def test_a_send_is_fields_1_2_3_5_in_the_clients_order() -> None:
    pairs, expected = model.send_request("casc-1", "What is 2+2?", SHORT_META, 3, "claude-sonnet-4-6", [])
    assert pairs == [
        (1, "casc-1"),
        (2, [(1, "What is 2+2?")]),
        (3, SHORT_META_PAIRS),
        (5, [(1, _planner(3, "claude-sonnet-4-6")), (7, [(1, 1)])]),
    ]
    assert expected == {
        "cascade_id": "casc-1",
        "items": [{"text": "What is 2+2?"}],
        "metadata": {"ide_name": "windsurf", "api_key": "k"},
        "cascade_config": {
            "planner_config": {
                "conversational": {"planner_mode": "CONVERSATIONAL_PLANNER_MODE_NO_TOOL"},
                "requested_model_uid": "claude-sonnet-4-6",
                "plan_model_uid": "claude-sonnet-4-6",
                "max_output_tokens": 32768,
            },
            "brain_config": {"enabled": True},
        },
    }
    assert "images" not in expected


def test_default_planner_mode_is_value_1() -> None:
    pairs, expected = model.send_request("c", "p", {}, 1, "MODEL_PRIVATE_2", [])
    assert dict(pairs)[5] == [(1, _planner(1, "MODEL_PRIVATE_2")), (7, [(1, 1)])]
    conversational = expected["cascade_config"]["planner_config"]["conversational"]
    assert conversational == {"planner_mode": "CONVERSATIONAL_PLANNER_MODE_DEFAULT"}


def test_each_image_is_one_field_6_with_base64_data_and_mime_type() -> None:
    images = [(b"\x89PNG", "image/png"), (b"\xff\xd8\xff", "image/jpeg")]
    pairs, expected = model.send_request("c", "look", {}, 1, "u", images)
    assert pairs[4:] == [(6, [(1, "iVBORw=="), (2, "image/png")]), (6, [(1, "/9j/"), (2, "image/jpeg")])]
    assert expected["images"] == [
        {"base64_data": "iVBORw==", "mime_type": "image/png"},
        {"base64_data": "/9j/", "mime_type": "image/jpeg"},
    ]


@pytest.mark.parametrize("mode", [1, 3])
def test_a_send_decodes_to_what_the_model_expects(mode: int) -> None:
    images = [(bytes(range(40)), "image/jpeg")]
    pairs, expected = model.send_request("c", "héllo 🌍", FULL_META, mode, "claude-opus-4-8-high", images)
    assert _decoded("SendUserCascadeMessage", pairs) == (expected, [])


def test_the_mistyped_planner_field_11_is_appended_to_the_planner_config() -> None:
    pairs, _ = model.send_request("c", "p", {}, 3, "u", [])
    same, unknown = model.with_mistyped_planner_field(pairs)
    assert same is pairs
    assert dict(pairs)[5][0] == (1, [*_planner(3, "u"), (11, [(1, 1), (2, "")])])
    assert unknown == {"path": "cascade_config.planner_config", "number": 11, "wire_type": "len"}


def test_the_mistyped_planner_field_is_what_the_schema_reports_as_unknown() -> None:
    pairs, expected = model.send_request("c", "p", SHORT_META, 3, "u", [])
    _, unknown = model.with_mistyped_planner_field(pairs)
    fields, reported = _decoded("SendUserCascadeMessage", pairs)
    assert fields == expected
    assert [{k: u[k] for k in ("path", "number", "wire_type")} for u in reported] == [unknown]


# ---------------------------------------------------------------------------- offsets (2.7, 2.8)


@pytest.mark.parametrize(
    ("method", "name"),
    [
        ("GetCascadeTrajectorySteps", "step_offset"),
        ("GetCascadeTrajectoryGeneratorMetadata", "generator_metadata_offset"),
    ],
)
def test_an_offset_of_zero_is_omitted_and_any_other_is_field_2(method: str, name: str) -> None:
    assert model.offset_request("c", 0, name) == ([(1, "c")], {"cascade_id": "c"})
    assert model.offset_request("c", 1, name) == ([(1, "c"), (2, 1)], {"cascade_id": "c", name: 1})
    pairs, expected = model.offset_request("c", 2**32 - 1, name)
    assert pairs == [(1, "c"), (2, 4294967295)]
    assert _decoded(method, pairs) == (expected, [])


# ---------------------------------------------------------------------------- metadata-first requests (2.2, 2.9)


def test_extra_fields_follow_the_metadata_with_wire_and_decoded_values_kept_apart() -> None:
    extra = ((4, "source", 1, "SOURCE_NAME"), (9, "note", "raw", "decoded"))
    pairs, expected = model.with_metadata(SHORT_META, extra)
    assert pairs == [(1, SHORT_META_PAIRS), (4, 1), (9, "raw")]
    assert expected == {
        "metadata": {"ide_name": "windsurf", "api_key": "k"},
        "source": "SOURCE_NAME",
        "note": "decoded",
    }
    assert model.with_metadata({}, ()) == ([(1, [])], {"metadata": {}})


def test_start_cascade_is_source_cascade_client_and_type_user_mainline() -> None:
    pairs, expected = model.start_cascade(SHORT_META)
    assert pairs == [(1, SHORT_META_PAIRS), (4, 1), (5, 1)]
    assert expected == {
        "metadata": {"ide_name": "windsurf", "api_key": "k"},
        "source": "CORTEX_TRAJECTORY_SOURCE_CASCADE_CLIENT",
        "trajectory_type": "CORTEX_TRAJECTORY_TYPE_USER_MAINLINE",
    }
    assert _decoded("StartCascade", pairs) == (expected, [])


@pytest.mark.parametrize(
    ("method", "name"), [("GetCascadeTrajectory", "cascade_id"), ("AddTrackedWorkspace", "workspace")]
)
def test_a_single_string_request_is_field_1(method: str, name: str) -> None:
    pairs, expected = model.single_string(name, "/home/user/project")
    assert (pairs, expected) == ([(1, "/home/user/project")], {name: "/home/user/project"})
    assert _decoded(method, pairs) == (expected, [])


# ---------------------------------------------------------------------------- what WIRE-3/WIRE-4 judge with


@pytest.mark.parametrize(
    "status",
    ["INVALID_ARGUMENT", "UNIMPLEMENTED", "UNAUTHENTICATED", "NOT_FOUND", "FAILED_PRECONDITION", "RESOURCE_EXHAUSTED"],
)
def test_a_rejection_with_a_client_error_status_is_clean(status: str) -> None:
    assert status in model.CLEAN_REJECTIONS


@pytest.mark.parametrize("status", ["INTERNAL", "UNKNOWN", "DATA_LOSS", "UNAVAILABLE", "CANCELLED", "OK"])
def test_a_server_fault_status_is_not_a_clean_rejection(status: str) -> None:
    assert status not in model.CLEAN_REJECTIONS


def _classified_expired(text: str) -> bool:
    return any(re.search(p, text, re.IGNORECASE) for p in model.EXPIRED_PATTERNS)


@pytest.mark.parametrize(
    "text",
    [
        "not_found: cascade trajectory has been expired by ttl",  # the repository's fake (section 4)
        "NOT_FOUND: no such trajectory",  # not_found before the noun
        "cascade not found",  # the noun before not found (section 5's second run)
        "Trajectory abc not-found",
        "cascade xyz notfound",
        "expired by ttl: cascade 12",
        "Unknown Cascade id 12",
    ],
)
def test_texts_real_clients_classify_as_an_expired_cascade(text: str) -> None:
    assert _classified_expired(text)


@pytest.mark.parametrize(
    "text",
    ["panel state not found", "untrusted workspace", "internal error", "cascade is busy", "not found", "expired"],
)
def test_other_texts_are_not_an_expired_cascade(text: str) -> None:
    assert not _classified_expired(text)


def test_run_statuses_are_the_schemas_idle_and_running() -> None:
    assert model.IDLE == cortex_pb2.CASCADE_RUN_STATUS_IDLE == 1
    assert model.RUNNING == cortex_pb2.CASCADE_RUN_STATUS_RUNNING == 2


@pytest.mark.parametrize(("number", "reserved"), [(18999, False), (19000, True), (19999, True), (20000, False)])
def test_protobufs_own_numbers_are_19000_to_19999(number: int, reserved: bool) -> None:
    assert (number in model.RESERVED_NUMBERS) is reserved
