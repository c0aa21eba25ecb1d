"""foreigngw framing every turn on one line (``FGW_FRAMING=one-line``): ``User: TEXT | Assistant: TEXT |
User: TEXT``, no line break after any turn's text. The kit finds each turn's text there as in any
framing (docs/adapters.md, "Its own framing"): IMG-1 and IMG-2 pass, as they do on its usual framing.
With the IMG search finding a turn's text only where a line break follows it, they fail (issue 44)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fakels.server import FakeLSThread
from tests.conformance.foreign.test_foreign_gateway import (
    TOKEN,
    Gateway,
    assistant,
    running_gateway,
    script,
    send_text,
    sends,
    text_turn,
    user,
)
from tests.conformance.foreign.test_foreign_verdicts import FULL, run
from tests.support.fake_ls import StartFakeLs
from tests.support.foreigngw.settings import SettingsError, load_settings

_ONE_LINE = "FGW_FRAMING=one-line"


@pytest.fixture(scope="module")
def fake(start_module_fake_ls: StartFakeLs) -> FakeLSThread:
    return start_module_fake_ls(csrf_token=TOKEN)


@pytest.fixture(scope="module")
def one_line(fake: FakeLSThread, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    yield from running_gateway(fake, tmp_path_factory, FGW_FRAMING="one-line")


def test_the_one_line_framing_puts_every_turn_on_one_line(one_line: Gateway, fake: FakeLSThread) -> None:
    script(fake, text_turn("fine"))
    messages = [user("q one"), assistant("a one"), user("q two"), assistant("a two"), user("q three")]
    answer = one_line.chat({"messages": messages})
    assert answer.status_code == 200, answer.text
    text = send_text(sends(fake)[-1])
    assert text.endswith("\n\nUser: q one | Assistant: a one | User: q two | Assistant: a two | User: q three")
    head, _, turns = text.rpartition("\n\n")
    assert head.startswith("You are FGW")
    assert "\n" not in turns


@pytest.mark.parametrize(
    ("name", "default", "choices"),
    [("FGW_FRAMING", "lines", ("lines", "one-line")), ("FGW_INPUT_ITEMS", "404", ("404", "405", "501", "page"))],
)
def test_the_framing_and_input_items_settings_take_their_choices_only(
    name: str, default: str, choices: tuple[str, ...]
) -> None:
    field = name.removeprefix("FGW_").lower()
    assert getattr(load_settings({"FGW_PORT": "0"}), field) == default
    for choice in choices:
        assert getattr(load_settings({"FGW_PORT": "0", name: f" {choice} "}), field) == choice
    with pytest.raises(SettingsError) as info:
        load_settings({"FGW_PORT": "0", name: "sideways"})
    assert str(info.value) == f"{name} must be one of {', '.join(choices)}, got 'sideways'"


def test_img_finds_turns_framed_on_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, verdicts, out = run(tmp_path, capsys, "IMG-1,IMG-2", _ONE_LINE, shrink=False, examples=6)
    assert verdicts == {"IMG-1": "pass", "IMG-2": "pass"} == {k: FULL["IMG"][k] for k in verdicts}, out
    assert code == 0, out
