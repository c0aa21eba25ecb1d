"""Scenario documents: the round trip ``parse_scenario(scenario_to_document(s)) == s`` as a property
(overrides, faults, every turn flag, TTL or none, user status), the defaults of the smallest
documents, and the exact error texts of parse_scenario and load_scenario."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from conformance.strategies.scenarios import turns
from fakels.scenario import (
    Chunk,
    NativeStep,
    ResponseOverride,
    Scenario,
    ScenarioError,
    Turn,
    load_scenario,
    parse_scenario,
    scenario_to_document,
)

USER_STATUSES: tuple[dict[str, Any], ...] = (
    {"user_status": {"pro": True, "name": "fakels user"}},
    {"user_status": {"pro": False, "name": "Ünïcode user"}},
    {},
)


@st.composite
def documented_scenarios(draw: st.DrawFn) -> Scenario:
    """Every field a scenario document can carry, overrides included."""
    return Scenario(
        turns=tuple(draw(st.lists(turns(max_chunks=4, with_overrides=True), max_size=3))),
        cascade_ttl_s=draw(st.one_of(st.none(), st.sampled_from((0.5, 1.0, 30.0, 31_536_000.0)))),
        require_panel=draw(st.booleans()),
        user_status=draw(st.sampled_from(USER_STATUSES)),
    )


@given(documented_scenarios())
@example(Scenario(turns=(Turn(chunks=(Chunk(text="a", delay_s=1.0), Chunk(text="b", delay_s=0.5))),)))
@example(Scenario(cascade_ttl_s=None, user_status={"user_status": {"name": "x"}}))
@example(
    Scenario(
        turns=(
            Turn(
                chunks=(),
                records=(),
                user_input_step=False,
                lose_panel_after=True,
                min_running_polls=3,
                overrides=(
                    ResponseOverride(rpc="GetCascadeTrajectory", call=2, error_code="UNAVAILABLE"),
                    ResponseOverride(rpc="GetCascadeTrajectorySteps", payload_hex="ff"),
                ),
            ),
        )
    )
)
def test_document_round_trip_is_lossless(scenario: Scenario) -> None:
    document = json.loads(json.dumps(scenario_to_document(scenario)))
    assert parse_scenario(document) == scenario


def test_the_empty_document_is_the_default_scenario() -> None:
    assert parse_scenario({}) == Scenario()
    assert parse_scenario({"turns": [{}]}) == Scenario(turns=(Turn(),))


def test_every_document_key_reaches_the_scenario() -> None:
    document = {
        "user_status": {"user_status": {"pro": False, "name": "someone"}},
        "turns": [
            {
                "user_input_step": False,
                "lose_panel_after": True,
                "min_running_polls": 4,
                "overrides": [{"rpc": "GetCascadeTrajectory", "call": 1, "error_code": "INTERNAL"}],
                "chunks": [{"native": {"kind": "view_file"}}],
            }
        ],
    }
    assert parse_scenario(document) == Scenario(
        turns=(
            Turn(
                chunks=(Chunk(native=NativeStep(kind="view_file", body={})),),
                user_input_step=False,
                lose_panel_after=True,
                min_running_polls=4,
                overrides=(ResponseOverride(rpc="GetCascadeTrajectory", call=1, error_code="INTERNAL"),),
            ),
        ),
        user_status={"user_status": {"pro": False, "name": "someone"}},
    )


def test_the_document_of_a_scenario_without_ttl_has_no_ttl_key() -> None:
    document = scenario_to_document(Scenario(turns=(Turn(chunks=(Chunk(text="x", delay_s=1.0),)),)))
    assert "cascade_ttl_s" not in document
    # A delay of exactly 1.0 is not a default: it stays in the document.
    assert (document["turns"][0]["chunks"][0]["text"], document["turns"][0]["chunks"][0]["delay_s"]) == ("x", 1.0)


# ------------------------------------------------------------------ error texts


def test_errors_are_sorted_by_place_joined_by_lines_with_the_default_source() -> None:
    # jsonschema reports "turns" first (schema order); the message sorts by place.
    with pytest.raises(ScenarioError) as info:
        parse_scenario({"turns": "nope", "cascade_ttl_s": 0})
    assert str(info.value) == (
        "scenario: 2 problem(s) in the scenario:\n"
        "  at cascade_ttl_s: 0 is less than or equal to the minimum of 0\n"
        "  at turns: 'nope' is not of type 'array'"
    )


def test_at_most_ten_problems_are_listed() -> None:
    with pytest.raises(ScenarioError) as info:
        parse_scenario({"turns": [{"bogus": i} for i in range(12)]}, source="big.json")
    lines = str(info.value).split("\n")
    assert lines[0] == "big.json: 12 problem(s) in the scenario:"
    assert lines[1:] == [
        f"  at turns/{i}: Additional properties are not allowed ('bogus' was unexpected)" for i in range(10)
    ]


def test_a_bad_native_body_after_a_plain_chunk_is_found() -> None:
    document = {"turns": [{"chunks": [{"text": "a"}, {"native": {"kind": "run_command", "body": {"nope": 1}}}]}]}
    with pytest.raises(ScenarioError) as info:
        parse_scenario(document, source="n.json")
    assert str(info.value).startswith(
        'n.json: at turns/0/chunks/1/native/body: Message type "exa.cortex_pb.CortexStepRunCommand" has no field '
        'named "nope"'
    )


def test_load_scenario_errors_start_with_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "absent.json"
    with pytest.raises(ScenarioError) as info:
        load_scenario(missing)
    assert str(info.value) == f"cannot read scenario file {missing}: No such file or directory"

    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario(broken)
    assert str(info.value) == (
        f"{broken}: not valid JSON: Expecting property name enclosed in double quotes at line 1, column 2"
    )

    invalid = tmp_path / "invalid.yaml"
    invalid.write_text("cascade_ttl_s: 0\n", encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario(invalid)
    assert str(info.value) == (
        f"{invalid}: 1 problem(s) in the scenario:\n  at cascade_ttl_s: 0 is less than or equal to the minimum of 0"
    )

    native = tmp_path / "native.json"
    native.write_text(json.dumps({"turns": [{"chunks": [{"native": {"kind": "find", "body": {"x": 1}}}]}]}))
    with pytest.raises(ScenarioError) as info:
        load_scenario(native)
    assert str(info.value).startswith(f"{native}: at turns/0/chunks/0/native/body: ")


def test_a_non_finite_top_level_document_names_the_top_level() -> None:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(float("nan"), source="nan.json")
    assert str(info.value) == "nan.json: at <top level>: NaN is not a finite number (scenario numbers must be finite)"
