"""Scenario files: schema validation with clear errors, JSON and YAML, a lossless round trip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakels.scenario import (
    Chunk,
    Fault,
    NativeStep,
    Scenario,
    ScenarioError,
    ToolCall,
    Turn,
    Usage,
    default_answer,
    default_turn,
    load_scenario,
    parse_scenario,
    scenario_to_document,
)

FULL = Scenario(
    turns=(
        Turn(
            chunks=(
                Chunk(thinking="hmm"),
                Chunk(text="Hello ", delay_s=0.25),
                Chunk(text="wörld 🌍"),
                Chunk(tool_call=ToolCall(id="call_1", name="get_weather", arguments_json='{"city": "Oslo"}')),
                Chunk(native=NativeStep(kind="run_command", body={"commandLine": "ls -la"}, step_type=21, status=1)),
                Chunk(error="model overloaded"),
            ),
            records=(Usage(input_tokens=10, output_tokens=3), None),
            modified_response="Hello wörld 🌍!",
            expire_after=True,
        ),
        Turn(fault=Fault(kind="panel_lost")),
    ),
    cascade_ttl_s=30.0,
    require_panel=True,
)


def test_document_round_trip_is_lossless() -> None:
    document = scenario_to_document(FULL)
    assert parse_scenario(json.loads(json.dumps(document))) == FULL


@pytest.mark.parametrize("suffix", [".json", ".yaml", ".yml"])
def test_files_load_in_every_format(tmp_path: Path, suffix: str) -> None:
    import yaml

    document = scenario_to_document(FULL)
    path = tmp_path / f"scenario{suffix}"
    path.write_text(json.dumps(document) if suffix == ".json" else yaml.safe_dump(document), encoding="utf-8")
    assert load_scenario(path) == FULL


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ({"turns": [{"chunks": [{}]}]}, "at turns/0/chunks/0: {} should be non-empty"),
        ({"turns": [{"bogus": 1}]}, "at turns/0: Additional properties are not allowed ('bogus' was unexpected)"),
        ({"turns": [{"records": [{"input_tokens": -1}]}]}, "at turns/0/records/0"),
        ({"turns": [{"fault": {"kind": "meteor"}}]}, "at turns/0/fault/kind: 'meteor' is not one of"),
        ({"cascade_ttl_s": 0}, "at cascade_ttl_s"),
        ({"turns": [{"overrides": [{"rpc": "GetCascadeTrajectory"}]}]}, "at turns/0/overrides/0"),
        (
            {"turns": [{"chunks": [{"native": {"kind": "run_command", "body": {"nope": 1}}}]}]},
            "at turns/0/chunks/0/native/body",
        ),
        ([], "at <top level>: [] is not of type 'object'"),
    ],
)
def test_invalid_documents_name_the_place_and_the_problem(document: object, expected: str) -> None:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(document, source="s.json")
    assert expected in str(info.value)
    assert str(info.value).startswith("s.json:")


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("bad.json", "{", "not valid JSON"),
        ("bad.yaml", "turns: [", "not valid YAML"),
        ("scenario.toml", "x = 1", "unknown scenario format '.toml'"),
    ],
)
def test_unreadable_files_are_clear_errors(tmp_path: Path, name: str, text: str, expected: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ScenarioError, match=expected):
        load_scenario(path)


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="cannot read scenario file"):
        load_scenario(tmp_path / "absent.json")


def test_default_turn_is_a_pure_function_of_the_prompt() -> None:
    turn = default_turn("two plus two?", 2)
    assert turn == default_turn("two plus two?", 2)
    assert "".join(c.text for c in turn.chunks) == default_answer("two plus two?", 2)
    assert default_answer("a") != default_answer("b")
    assert Scenario().turn(0, "x", 0) == default_turn("x", 0)
    assert FULL.turn(1, "x", 0) is FULL.turns[1]
    assert FULL.turn(2, "x", 0) == default_turn("x", 0)


@pytest.mark.parametrize("spelling", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize(
    ("template", "where"),
    [
        ('{"turns": [{"chunks": [{"text": "a", "delay_s": %s}]}]}', "turns/0/chunks/0/delay_s"),
        ('{"cascade_ttl_s": %s}', "cascade_ttl_s"),
        ('{"turns": [{"records": [{"input_tokens": %s}]}]}', "turns/0/records/0/input_tokens"),
    ],
)
def test_non_finite_numbers_are_refused_with_their_place(spelling: str, template: str, where: str) -> None:
    """Python's json reads NaN and Infinity, and NaN passes minimum/maximum checks: refused first."""
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(json.loads(template % spelling), source="s.json")
    assert (
        str(caught.value) == f"s.json: at {where}: {spelling} is not a finite number (scenario numbers must be finite)"
    )


@pytest.mark.parametrize(("delay", "ok"), [(3599.5, True), (3600, True), (3600.5, False)])
def test_delay_is_at_most_an_hour(delay: float, ok: bool) -> None:
    document = {"turns": [{"chunks": [{"text": "a", "delay_s": delay}]}]}
    if ok:
        assert parse_scenario(document).turns[0].chunks[0].delay_s == delay
    else:
        with pytest.raises(ScenarioError, match="greater than the maximum of 3600"):
            parse_scenario(document)


@pytest.mark.parametrize(("ttl", "ok"), [(31_535_999, True), (31_536_000, True), (31_536_001, False)])
def test_cascade_ttl_is_at_most_a_year(ttl: int, ok: bool) -> None:
    if ok:
        assert parse_scenario({"cascade_ttl_s": ttl}).cascade_ttl_s == ttl
    else:
        with pytest.raises(ScenarioError, match="greater than the maximum of 31536000"):
            parse_scenario({"cascade_ttl_s": ttl})
