"""Opening a target from its ``--target`` string, the checks every target kind shares, and the
in-process ``python:`` kind."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import conformance.targets as targets
from conformance.errors import PreconditionNotMet, TargetError, TargetSpecError, excerpt
from conformance.targets import REFERENCE_TARGET, PythonTarget, _http, _http_options, _launch, load_target
from conformance.targets._base import DeclaredOperations, check_capabilities, check_params, check_result, observed
from tests.conformance.targets.targets_support import Decoder, DecoderWithCaps

SUPPORT = "tests.conformance.targets.targets_support"


def usage(text: str) -> str:
    return (
        f"{text!r} is not a target. Use python:PACKAGE.MODULE:FACTORY (an in-process object), "
        "exec:COMMAND (an adapter speaking JSON lines), http://127.0.0.1:PORT (a gateway over HTTP), "
        "or reference (the kit's own reference, the default)"
    )


# ---------------------------------------------------------------------- load_target


@pytest.mark.parametrize("spec", ["python", "python:", "python:   ", "exec:", "exec:  ", "ftp:thing", "nothing"])
def test_a_spec_that_names_no_target_is_a_usage_error(spec: str) -> None:
    with pytest.raises(TargetSpecError) as info:
        load_target(spec)
    assert str(info.value) == usage(spec)


def test_no_spec_opens_the_reference() -> None:
    assert REFERENCE_TARGET == "python:conformance.targets.reference:make_target"
    target = load_target(None)
    try:
        assert target.description == REFERENCE_TARGET
        assert target.kind == "python"
        assert "gateway.chat" in target.operations()
    finally:
        target.close()


@pytest.mark.parametrize("spec", [f"python:{SUPPORT}:decoder", f"exec:definitely-not-run {SUPPORT}"])
def test_http_options_with_another_kind_are_a_usage_error(spec: str) -> None:
    with pytest.raises(TargetSpecError) as info:
        load_target(spec, http=_http_options.HttpOptions())
    assert str(info.value) == (f"{spec!r}: the HTTP target options (--launch, --api-key, ...) apply only to http://")


def test_https_with_http_options_reaches_the_http_kind() -> None:
    with pytest.raises(TargetSpecError, match=r"https is not supported"):
        load_target("https://127.0.0.1:1", http=_http_options.HttpOptions())
    with pytest.raises(TargetSpecError, match=r"https is not supported"):
        load_target("https://127.0.0.1:1")


def test_the_http_names_load_on_first_use() -> None:
    assert targets.HttpOptions is _http_options.HttpOptions
    assert targets.HttpTarget is _http.HttpTarget
    assert targets.http_options is _http_options.http_options
    assert targets.LaunchSpec is _launch.LaunchSpec
    assert targets.LaunchedGateway is _launch.LaunchedGateway
    with pytest.raises(AttributeError) as info:
        _ = targets.NoSuchName
    assert str(info.value) == "module 'conformance.targets' has no attribute 'NoSuchName'"


# ---------------------------------------------------------------------- python:


@pytest.mark.parametrize(
    ("rest", "message"),
    [
        ("nomodule", "python:'nomodule': expected python:PACKAGE.MODULE:FACTORY"),
        (":factory", "python:':factory': expected python:PACKAGE.MODULE:FACTORY"),
        (f"{SUPPORT}:", f"python:'{SUPPORT}:': expected python:PACKAGE.MODULE:FACTORY"),
        (
            "no_such_pkg_xyz:f",
            "python:no_such_pkg_xyz:f: cannot import no_such_pkg_xyz: No module named 'no_such_pkg_xyz'",
        ),
        (f"{SUPPORT}:missing", f"python:{SUPPORT}:missing: {SUPPORT} has no callable missing"),
        (f"{SUPPORT}:decoder:extra", f"python:{SUPPORT}:decoder:extra: {SUPPORT} has no callable decoder:extra"),
        (f"{SUPPORT}:NOT_A_FACTORY", f"python:{SUPPORT}:NOT_A_FACTORY: {SUPPORT} has no callable NOT_A_FACTORY"),
        (
            f"{SUPPORT}:decoder_with_bad_capabilities_attribute",
            f"python:{SUPPORT}:decoder_with_bad_capabilities_attribute: 'capabilities' must be a method "
            "capabilities(op) -> dict",
        ),
    ],
)
def test_python_specs_that_cannot_be_opened_say_why(rest: str, message: str) -> None:
    with pytest.raises(TargetSpecError) as info:
        load_target(f"python:{rest}")
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("factory", "raised"),
    [
        ("factory_that_crashes", "factory_that_crashes() raised RuntimeError: the gateway's config file is missing"),
        ("factory_raising_two_arguments", "factory_raising_two_arguments() raised ValueError: ('bad port', 70000)"),
        ("decoder_whose_capabilities_crash", "capabilities('ls.decode_request') raised KeyError: 'methods'"),
    ],
)
def test_a_python_target_whose_own_code_crashes_while_opening_is_a_target_error(factory: str, raised: str) -> None:
    """The implementation's fault, not a usage error: its exception, named, with where it was raised."""
    with pytest.raises(TargetError) as info:
        load_target(f"python:{SUPPORT}:{factory}")
    assert not isinstance(info.value, TargetSpecError)
    first, *frames = str(info.value).splitlines()
    assert first == f"python:{SUPPORT}:{factory}: {raised}"
    assert any("targets_support.py" in line for line in frames), frames
    assert raised.split(" raised ", 1)[1] not in frames, "the exception is said once, in the first line"
    assert isinstance(info.value.__cause__, Exception)


def test_a_python_factory_that_says_why_it_cannot_start_is_heard_as_it_said_it() -> None:
    with pytest.raises(TargetError) as info:
        load_target(f"python:{SUPPORT}:factory_that_cannot_start")
    assert str(info.value) == "the gateway did not answer on 127.0.0.1:9"


def test_capabilities_that_are_not_a_mapping_are_named() -> None:
    with pytest.raises(TargetSpecError) as info:
        load_target(f"python:{SUPPORT}:decoder_whose_capabilities_are_a_list")
    assert str(info.value) == (
        f"python:{SUPPORT}:decoder_whose_capabilities_are_a_list: capabilities('ls.decode_request') returned list, "
        "not a dict (or None)"
    )


def test_a_python_module_that_crashes_while_imported_is_a_target_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "crashes_at_import.py").write_text('raise RuntimeError("no config")\n', encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(TargetError) as info:
        load_target("python:crashes_at_import:make")
    assert not isinstance(info.value, TargetSpecError)
    first, *frames = str(info.value).splitlines()
    assert first == "python:crashes_at_import:make: importing crashes_at_import raised RuntimeError: no config"
    assert any("crashes_at_import.py" in line for line in frames), frames


def test_a_python_target_implements_the_methods_it_has_and_returns_checked_results() -> None:
    target = load_target(f"python:{SUPPORT}:decoder")
    assert isinstance(target, PythonTarget)
    assert target.description == f"python:{SUPPORT}:decoder"
    assert target.kind == "python"
    assert target.operations() == frozenset({"ls.decode_request"})
    assert target.capabilities("ls.decode_request") == {}
    assert target.call("ls.decode_request", method="M", raw_b64="AA==") == {"fields": {"a": 1}, "unknown": []}
    target.close()
    implementation = Decoder()
    PythonTarget(implementation, "t").close()
    assert implementation.closed == 1


def test_a_python_target_without_close_closes_quietly() -> None:
    class Bare:
        def ls_stop(self) -> dict[str, Any]:
            return {}

    target = PythonTarget(Bare(), "bare")
    assert target.call("ls.stop") == {}
    target.close()


def test_declared_capabilities_are_checked_and_kept() -> None:
    target = load_target(f"python:{SUPPORT}:decoder_declaring_methods")
    assert target.capabilities("ls.decode_request") == {"methods": ["Heartbeat"]}
    assert load_target(f"python:{SUPPORT}:decoder_declaring_nothing").capabilities("ls.decode_request") == {}
    with pytest.raises(TargetSpecError) as info:
        PythonTarget(DecoderWithCaps(caps={"methods": 3}), "python:t")
    assert str(info.value) == (
        "python:t: bad capabilities for ls.decode_request at methods: 3 is not of type 'array' "
        "(capabilities ls.decode_request knows: methods)"
    )


def test_a_python_call_outside_the_protocol_is_refused() -> None:
    implementation = Decoder()
    target = PythonTarget(implementation, "t")
    with pytest.raises(TargetError) as info:
        target.call("ls.stop")
    assert str(info.value) == "t does not implement ls.stop"
    with pytest.raises(jsonschema.ValidationError):
        target.call("ls.decode_request", method="M")
    assert implementation.calls == []


def test_a_crashing_implementation_is_a_target_error_with_its_traceback() -> None:
    target = PythonTarget(Decoder(ValueError("boom")), "t")
    with pytest.raises(TargetError) as info:
        target.call("ls.decode_request", method="M", raw_b64="")
    header, traceback_line, *shown = str(info.value).splitlines()
    assert header == "t: ls.decode_request raised ValueError: boom"
    assert traceback_line == "Traceback (most recent call last):"
    assert re.fullmatch(r'  File ".*", line \d+, in ls_decode_request', shown[0]), shown
    assert not any("ValueError" in line for line in shown), "the exception is said once, in the header"
    assert not any("_python.py" in line for line in shown), "the kit's own frame is not the implementation's"
    assert isinstance(info.value.__cause__, ValueError)


def test_a_deep_crash_shows_the_last_three_frames_of_its_traceback() -> None:
    def deep(depth: int) -> None:
        if depth == 0:
            raise KeyError("deep")
        deep(depth - 1)

    class Deep:
        def ls_decode_request(self, method: str, raw_b64: str) -> None:
            deep(8)

    target = PythonTarget(Deep(), "t")
    with pytest.raises(TargetError) as info:
        target.call("ls.decode_request", method="M", raw_b64="")
    assert isinstance(info.value.__cause__, KeyError)
    header, traceback_line, *shown = str(info.value).splitlines()
    assert header == "t: ls.decode_request raised KeyError: 'deep'"
    assert traceback_line == "Traceback (most recent call last):"
    files = [line for line in shown if line.startswith("  File ")]
    assert len(files) == 3, shown
    assert all(line.endswith(", in deep") for line in files), shown
    assert shown[-1].strip() == 'raise KeyError("deep")'


def test_a_python_target_judges_the_optional_fields_it_declares_it_observes() -> None:
    class Store:
        def store_put(self, messages: Any, caller: int, answer: Any) -> dict[str, Any]:
            return {"id": "r", "appended": [], "warnings": []}

        def capabilities(self, op: str) -> dict[str, Any]:
            return {"observes": ["warnings"]}

    put = {"messages": [], "caller": 0, "answer": {"text": "x"}}
    assert PythonTarget(Store(), "t").call("store.put", **put) == {"id": "r", "appended": [], "warnings": []}


def test_a_result_outside_the_schema_is_a_target_error() -> None:
    target = PythonTarget(Decoder({"fields": {}}), "t")
    with pytest.raises(TargetError, match=r"^t: ls\.decode_request returned a result outside its schema"):
        target.call("ls.decode_request", method="M", raw_b64="")


# ---------------------------------------------------------------------- shared checks


def test_errors_carry_their_reason() -> None:
    error = PreconditionNotMet("why not")
    assert error.reason == "why not"
    assert str(error) == "why not"
    assert issubclass(TargetSpecError, ValueError)


def test_declared_operations_answer_copies_and_need_a_description() -> None:
    shared = DeclaredOperations()
    shared._caps = {"ls.decode_request": {"methods": ["A"]}}
    assert shared.operations() == frozenset()
    copy = shared.capabilities("ls.decode_request")
    assert copy == {"methods": ["A"]}
    copy["extra"] = 1  # type: ignore[index]
    assert shared.capabilities("ls.decode_request") == {"methods": ["A"]}
    assert shared.capabilities("ls.stop") == {}
    with pytest.raises(NotImplementedError):
        _ = shared.description


def test_params_are_checked_against_the_operation_schema() -> None:
    check_params("ls.journal", {"since": 0})
    with pytest.raises(jsonschema.ValidationError, match=r"-1 is less than the minimum of 0"):
        check_params("ls.journal", {"since": -1})


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        (
            {"no.such": {}},
            "who: declares capabilities for 'no.such', which is no operation (see `cascade-conformance operations`)",
        ),
        ({"ls.stop": {}}, "who: declares capabilities for ls.stop, which it does not implement"),
        (
            {"ls.decode_request": {"methods": ["a", 3]}},
            "who: bad capabilities for ls.decode_request at methods/1: 3 is not of type 'string' "
            "(capabilities ls.decode_request knows: methods)",
        ),
        (
            {"ls.decode_request": {"other": 1}},
            "who: bad capabilities for ls.decode_request: Additional properties are not allowed ('other' was "
            "unexpected) (capabilities ls.decode_request knows: methods)",
        ),
        (
            {"ls.journal": {"x": 1}},
            "who: bad capabilities for ls.journal: Additional properties are not allowed ('x' was unexpected) "
            "(capabilities ls.journal knows: none)",
        ),
        (
            {"store.put": {"observes": ["nope"]}},
            "who: bad capabilities for store.put at observes/0: 'nope' is not one of ['warnings'] "
            "(capabilities store.put knows: observes)",
        ),
    ],
)
def test_bad_capability_declarations_are_usage_errors(declared: dict[str, Any], message: str) -> None:
    implemented = frozenset({"ls.decode_request", "ls.journal", "store.put"})
    with pytest.raises(TargetSpecError) as info:
        check_capabilities("who", implemented, declared)
    assert str(info.value) == message


def test_good_capability_declarations_are_kept_per_operation() -> None:
    declared = {"store.put": {"observes": ["warnings"]}, "ls.journal": {}}
    checked = check_capabilities("who", frozenset({"store.put", "ls.journal"}), declared)
    assert checked == {"store.put": {"observes": ["warnings"]}, "ls.journal": {}}
    assert observed(checked["store.put"]) == frozenset({"warnings"})
    assert observed({}) == frozenset()


def test_a_result_schema_error_names_where_and_the_optional_fields() -> None:
    with pytest.raises(TargetError) as info:
        check_result("store.put", {"id": "r", "appended": [], "warnings": []}, "who")
    assert str(info.value) == (
        "who: store.put returned a result outside its schema at <result>: {'id': 'r', 'appended': [], "
        "'warnings': []} is not valid under any of the given schemas (optional fields of store.put: warnings; "
        "this target declares it observes: none; declare them in the capability 'observes' or leave them out)\n"
        'the answer was: {"id": "r", "appended": [], "warnings": []}'
    )
    result = {"id": "r", "appended": [], "warnings": ["w"]}
    assert check_result("store.put", result, "who", frozenset({"warnings"})) is result


def test_a_result_schema_error_without_optional_fields_has_no_hint() -> None:
    with pytest.raises(TargetError) as info:
        check_result("ls.serve", {"address": 1, "csrf_token": "t"}, "who")
    assert str(info.value) == (
        "who: ls.serve returned a result outside its schema at address: 1 is not of type 'string'\n"
        'the answer was: {"address": 1, "csrf_token": "t"}'
    )


def test_a_big_wrong_answer_is_shown_shortened() -> None:
    answer = {"address": 1, "csrf_token": ["a" * 80] * 20}
    with pytest.raises(TargetError) as info:
        check_result("ls.serve", answer, "who")
    shown = str(info.value).split("the answer was: ", 1)[1]
    assert len(excerpt(answer)["csrf_token"]) == 20
    full = '{"address": 1, "csrf_token": [' + ", ".join(['"' + "a" * 80 + '"'] * 20) + "]}"
    assert shown == full[:600] + f"... ({len(full)} characters)"
    small = {"address": 1, "csrf_token": "x" * 540}
    with pytest.raises(TargetError) as info:
        check_result("ls.serve", small, "who")
    shown = str(info.value).split("the answer was: ", 1)[1]
    assert re.fullmatch(r'\{"address": 1, "csrf_token": "x{40}\.\.\. \(540 characters\)"\}', shown)


@pytest.mark.parametrize(
    ("value", "shortened"),
    [
        ("a" * 80, "a" * 80),
        ("b" * 81, "b" * 40 + "... (81 characters)"),
        ({"k": "c" * 81, "n": 1}, {"k": "c" * 40 + "... (81 characters)", "n": 1}),
        (list(range(20)), list(range(20))),
        (list(range(21)), [*range(20), "... (21 items)"]),
        ([["d" * 81]], [["d" * 40 + "... (81 characters)"]]),
        (None, None),
    ],
)
def test_excerpt_shortens_long_strings_and_lists(value: Any, shortened: Any) -> None:
    assert excerpt(value) == shortened


def sized(length: int) -> dict[str, Any]:
    """A wrong ls.serve result whose JSON is exactly ``length`` characters (no string shortened)."""
    result: dict[str, Any] = {"address": 1, "csrf_token": "t", "pad": []}
    while len(json.dumps(result)) + 4 + 60 < length:
        result["pad"].append("p" * 60)
    result["pad"].append("")
    result["pad"][-1] = "q" * (length - len(json.dumps(result)))
    assert len(json.dumps(result)) == length
    return result


@pytest.mark.parametrize(("length", "cut"), [(600, False), (601, True)])
def test_an_answer_is_shown_whole_up_to_600_characters(length: int, cut: bool) -> None:
    result = sized(length)
    with pytest.raises(TargetError) as info:
        check_result("ls.serve", result, "who")
    shown = str(info.value).split("\nthe answer was: ", 1)[1]
    full = json.dumps(result)
    assert shown == (full[:600] + f"... ({length} characters)" if cut else full)


def test_a_schema_error_names_its_nested_path_and_shows_the_answer_as_is() -> None:
    with pytest.raises(TargetError) as info:
        check_result("ls.journal", {"entries": [{"method": "é"}, 3]}, "who")
    assert str(info.value) == (
        "who: ls.journal returned a result outside its schema at entries/1: 3 is not of type 'object'\n"
        'the answer was: {"entries": [{"method": "é"}, 3]}'
    )
    with pytest.raises(TargetError) as info:
        check_result("ls.serve", {"address": b"raw", "csrf_token": "t"}, "who")
    assert str(info.value).endswith('the answer was: {"address": "b\'raw\'", "csrf_token": "t"}')


def test_the_hint_lists_every_optional_field_and_every_observed_one() -> None:
    with pytest.raises(TargetError) as info:
        check_result("engine.build_send_request", {"request_b64": 1}, "who", frozenset({"drops", "attached"}))
    assert (
        " (optional fields of engine.build_send_request: attached, drops; this target declares it observes: "
        "attached, drops; declare them in the capability 'observes' or leave them out)\n"
    ) in str(info.value)
