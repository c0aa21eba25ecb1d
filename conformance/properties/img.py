"""IMG: images of replayed turns (seed 000), checked on the Send a target builds.

Every property asks ``engine.build_send_request`` (IMG-6 also ``engine.play_turns`` against a
fakels the check starts itself) and reads the request bytes with fakels's decoder: the prompt is
``items[0].text``, field 6 is ``images``, the planner mode is
``cascade_config.planner_config.conversational.planner_mode``. What a correct build contains is
the kit's own model (:mod:`conformance.models.img`); the cases come from
:mod:`conformance.strategies.img`.

Not observable through the operations, so not checked here: the structured drop log line and the
process-wide counters (IMG-4), that extraction stops before fetching an image that would be dropped
(IMG-7), and the engine-internal count of the rebuilt build (IMG-6; what is checked is that the
resume attempt's own build counts nothing and that exactly one rebuilt Send follows a rejection).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conformance.example_tags import untagged
from conformance.fixtures.images import REFUSED_BLOCKS, guard_block, image_block, label, png_b64, png_index
from conformance.gateway import play_conversation
from conformance.models.img import (
    DEFAULT_MAX_IMAGE_BYTES,
    ENV_IMAGE_BYTES,
    ENV_IMAGES,
    MARKER_RE,
    MODEL_UID,
    PLACEHOLDER,
    Model,
    Slot,
    env_limit,
    model,
    position_of,
    summary,
    without_history_images,
)
from conformance.models.journal import unescaped
from conformance.properties import SCOPE_HINT, Case, Evidence, OverHttp, invariant_property, require
from conformance.strategies.img import (
    any_wire,
    cases,
    determinism_cases,
    envs,
    gated_cases,
    guard_cases,
    rebuild_cases,
    vision_on,
)
from conformance.targets import Target
from fakels.decoder import decode
from fakels.rpcs import RPCS

_SEND = RPCS["SendUserCascadeMessage"]

# ---------------------------------------------------------------------------- what the target sent


@dataclass(frozen=True)
class Sent:
    text: str
    images: tuple[tuple[str, str], ...]  # (base64_data, mime_type), field-6 order
    planner_mode: Any
    attached: int | None = None
    drops: Mapping[str, int] | None = None

    @property
    def labels(self) -> list[str]:
        return [label(data, mime) for data, mime in self.images]

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"text": self.text, "field6": self.labels, "planner_mode": self.planner_mode}
        if self.attached is not None:
            out |= {"attached": self.attached, "drops": dict(self.drops or {})}
        return out


def decode_send(raw: bytes) -> Sent:
    fields = decode(_SEND.request_type, raw).fields
    items = fields.get("items") or [{}]
    images = tuple((str(i.get("base64_data", "")), str(i.get("mime_type", ""))) for i in fields.get("images", []))
    conversational = fields.get("cascade_config", {}).get("planner_config", {}).get("conversational", {})
    return Sent(str(items[0].get("text", "")), images, conversational.get("planner_mode"))


def build(
    target: Target,
    case: Case,
    evidence: Evidence,
    *,
    name: str = "sent",
    messages: Sequence[Mapping[str, Any]] | None = None,
    is_resume: bool = False,
) -> Sent:
    result = target.call(
        "engine.build_send_request",
        messages=list(case["messages"] if messages is None else messages),
        model_uid=MODEL_UID,
        tool_preamble=case["tool_preamble"],
        native_mode=case["native_mode"],
        is_resume=is_resume,
        env=dict(case.get("env", {})),
    )
    sent = decode_send(base64.b64decode(result["request_b64"]))
    # A black-box target tags each request to keep caches and pools out of the example: not its text.
    text = untagged(sent.text)
    sent = Sent(text, sent.images, sent.planner_mode, result.get("attached"), result.get("drops"))
    evidence.add(name, sent.summary())
    return sent


_COUNTERS = "history-image counters (attached, drops)"


def counters_of(sent: Sent, evidence: Evidence) -> tuple[int, dict[str, int]] | None:
    """The build's counters, or None (recorded as not observed) when the target does not expose them."""
    if sent.attached is None or sent.drops is None:
        evidence.not_observed(_COUNTERS)
        return None
    return sent.attached, dict(sent.drops)


def check_lines(sent: Sent, expected: Model, ordinal_of: Callable[[Slot], int | None]) -> None:
    """Each replayed turn's text (markers in place of attached blocks, a placeholder of the gateway's
    own wording for the others) appears in the prompt, oldest first, and the current turn's text after
    them. Only the texts are judged, inside whatever framing the gateway puts around turns (role
    lines, tags, its own system and identity lines): no statement asks for a framing, nor for the
    placeholder's words; a placeholder only must not be a marker (an image it says is attached)."""
    text = unescaped(sent.text)
    at = 0
    for body in map(unescaped, expected.bodies(ordinal_of)):
        found = _turn_text(body).search(text, at)
        assert found is not None, (
            f"a replayed turn is not in the prompt as expected (attached blocks as markers, the rest as "
            f"placeholders)\n  expected text: {body!r}\n  prompt from offset {at}: {text[at:][:600]!r}"
        )
        at = found.end()
    current = unescaped(expected.current_text)
    assert text.find(current, at) >= 0, (
        f"the current turn's text {current!r} is not in the prompt after the replayed turns; the prompt from "
        f"offset {at}: {text[at:][:600]!r}"
    )


# What stands for an image that is not attached: any text of the gateway's own, but never a marker.
_ANY_PLACEHOLDER = r"(?:(?!\[Image #\d+ attached to this request)[\s\S])*?"


def _turn_text(body: str) -> re.Pattern[str]:
    """``body`` (the model's text, with the seed's placeholder) as a pattern that takes any wording of
    the placeholder that is not a marker."""
    return re.compile(_ANY_PLACEHOLDER.join(re.escape(piece) for piece in body.split(PLACEHOLDER)))


# ---------------------------------------------------------------------------- IMG-1


@invariant_property(
    "IMG-1",
    needs=("engine.build_send_request",),
    cases=cases(wire=vision_on(), env=envs()),
    max_examples=40,
)
def history_images_reach_field_6(target: Target, case: Case, evidence: Evidence) -> None:
    """Every history image within the bounds rides field 6 (byte-identical: the kit's PNGs are small
    enough to pass the gate untouched), and its block's placeholder is replaced by its marker."""
    expected = model(case)
    evidence.add("expected", summary(expected))
    sent = build(target, case, evidence)
    labels = sent.labels
    history_part = list(sent.images[expected.k :])
    for slot in expected.attached:
        assert slot.image is not None
        assert (slot.image, "image/png") in history_part, (
            f"{slot.name} (turn {slot.turn}, block {slot.block}) is within the bounds but is not in field 6 "
            f"after the current turn's {expected.k} image(s); field 6 is {labels}"
        )
    check_lines(sent, expected, lambda slot: position_of(labels, slot))


# ---------------------------------------------------------------------------- IMG-2


@invariant_property(
    "IMG-2",
    needs=("engine.build_send_request",),
    cases=cases(wire=vision_on(), env=envs(truncating=False)),
    max_examples=40,
)
def ordinals_name_field_6_positions(target: Target, case: Case, evidence: Evidence) -> None:
    """Current images are field 6 #1..k in document order and carry no marker; the history images
    the target attached follow oldest turn first; the markers read #k+1, #k+2, ... in the text, and
    the marker in place of a block names that block's image's field-6 position."""
    expected = model(case)
    evidence.add("expected", summary(expected))
    sent = build(target, case, evidence)
    labels = sent.labels
    current = [f"img{png_index(i)}" for i in expected.current_images]
    assert labels[: expected.k] == current, f"field 6 must start with the current images {current}; it is {labels}"
    chronological = {s.name: (s.turn, s.block) for s in expected.history if s.image is not None}
    history = labels[expected.k :]
    stray = [name for name in history if name not in chronological]
    assert not stray, f"field 6 after the current images holds {stray}, which are no history images; {labels}"
    ordered = sorted(history, key=lambda name: chronological[name])
    assert history == ordered, f"history images in field 6 are not oldest turn first: {history}, expected {ordered}"
    numbers = [int(n) for n in MARKER_RE.findall(sent.text)]
    wanted = list(range(expected.k + 1, len(labels) + 1))
    assert numbers == wanted, (
        f"the markers in the prompt read {numbers}; with {expected.k} current image(s) and {len(history)} history "
        f"image(s) in field 6 they must read {wanted}"
    )
    check_lines(sent, expected, lambda slot: position_of(labels, slot))


# ---------------------------------------------------------------------------- IMG-3


@invariant_property(
    "IMG-3",
    needs=("engine.build_send_request",),
    cases=cases(wire=vision_on(), env=envs()),
    max_examples=40,
)
def bounds_newest_turn_first(target: Target, case: Case, evidence: Evidence) -> None:
    """The attached history images are exactly the kit's greedy pick: newest turn first, document
    order inside a turn, each image checked against the count cap and the byte budget (0 disables),
    and every image the bounds refuse counted as ``cap`` or ``bytes``."""
    expected = model(case)
    evidence.add("expected", summary(expected))
    sent = build(target, case, evidence)
    history = sent.labels[expected.k :]
    wanted = [s.name for s in expected.attached]
    env = case["env"]
    require(
        bool(history) or not wanted,
        "the target attached no history image where the bounds allow some (IMG-1 judges that): nothing to bound",
    )
    assert history == wanted, (
        f"history images in field 6 are {history}; the bounds ({ENV_IMAGES}={env.get(ENV_IMAGES, 'default')}, "
        f"{ENV_IMAGE_BYTES}={env.get(ENV_IMAGE_BYTES, 'default')}, newest turn first, per image) allow {wanted}"
    )
    budget = env_limit(env, ENV_IMAGE_BYTES, DEFAULT_MAX_IMAGE_BYTES, allow_zero=True)
    spent = sum(len(data) for data, _ in sent.images[expected.k :])
    assert spent <= budget, f"{spent} base64 characters of history images exceed the budget of {budget}"
    counters = counters_of(sent, evidence)
    if counters is not None:
        attached, drops = counters
        got = {k: drops.get(k) for k in ("cap", "bytes")}
        want = {k: expected.drops[k] for k in ("cap", "bytes")}
        assert got == want, f"drops by the bounds are {got}, expected {want}"
        assert attached == len(wanted), f"attached={attached}, expected {len(wanted)}"


# ---------------------------------------------------------------------------- IMG-4


@invariant_property(
    "IMG-4",
    needs=("engine.build_send_request",),
    cases=cases(wire=any_wire(), env=envs(), refused=True),
    over_http=OverHttp(hidden="history-image counters"),
    max_examples=40,
)
def every_history_attachment_is_counted(target: Target, case: Case, evidence: Evidence) -> None:
    """attached plus every drop reason equals the image-like blocks of the history; attached equals
    the history images in field 6; truncated, no_vision and unextractable are what the kit expects."""
    require(
        {"attached", "drops"} <= set(target.capabilities("engine.build_send_request").get("observes", ())),
        f"the target does not expose the {_COUNTERS}, which are what IMG-4 is about",
    )
    expected = model(case)
    evidence.add("expected", summary(expected))
    sent = build(target, case, evidence)
    require(
        sent.attached is not None and sent.drops is not None,
        f"the target does not expose the {_COUNTERS}, which are what IMG-4 is about",
    )
    attached, drops = int(sent.attached or 0), dict(sent.drops or {})
    total = len(expected.history)
    counted = attached + sum(drops.values())
    assert counted == total, (
        f"attached={attached} + drops {drops} = {counted}, but the history has {total} image-like block(s): "
        f"some were {'lost' if counted < total else 'double-counted'}"
    )
    in_field_6 = len(sent.images) - expected.k
    assert attached == in_field_6, (
        f"attached={attached} but {in_field_6} history image(s) ride field 6 ({sent.labels[expected.k :]})"
    )
    for reason in ("truncated", "no_vision", "unextractable"):
        assert drops.get(reason) == expected.drops[reason], (
            f"drops[{reason}]={drops.get(reason)}, expected {expected.drops[reason]} "
            f"(first replayed turn {expected.first_included} of {len(expected.convo)}, vision={expected.vision})"
        )


# ---------------------------------------------------------------------------- IMG-5


@invariant_property("IMG-5", needs=("engine.build_send_request",), cases=gated_cases, max_examples=30)
def no_history_images_without_vision(target: Target, case: Case, evidence: Evidence) -> None:
    """With a tool preamble and no native bridge, field 6 holds only the current images, every
    image-like block of a replayed turn is counted no_vision, no marker appears, and the planner mode
    is the one of the same conversation with the history images removed."""
    expected = model(case)
    evidence.add("expected", summary(expected))
    sent = build(target, case, evidence)
    current = [f"img{png_index(i)}" for i in expected.current_images]
    assert sent.labels == current, f"without vision field 6 must be the current images {current}; it is {sent.labels}"
    counters = counters_of(sent, evidence)
    if counters is not None:
        attached, drops = counters
        assert attached == 0, f"attached={attached} without vision"
        assert drops.get("no_vision") == len(expected.replayed), (
            f"no_vision={drops.get('no_vision')}, but the replayed turns have {len(expected.replayed)} "
            "image-like block(s)"
        )
        assert drops.get("truncated") == len(expected.truncated), f"truncated={drops.get('truncated')}"
    assert not MARKER_RE.search(sent.text), f"a marker in a prompt without vision: {sent.text[:400]!r}"
    stripped = build(
        target, case, evidence, name="without history images", messages=without_history_images(case["messages"])
    )
    assert sent.planner_mode == stripped.planner_mode, (
        f"history images flipped the planner mode: {sent.planner_mode} with them, {stripped.planner_mode} without"
    )


# ---------------------------------------------------------------------------- IMG-6


def _matches_model(what: str, sent: Sent, conversation: list[dict[str, Any]], native: bool, evidence: Evidence) -> None:
    """``sent`` carries what the kit's model says a fresh build of ``conversation`` carries."""
    expected = model({"messages": conversation, "env": {}, "tool_preamble": "", "native_mode": native})
    evidence.add(f"expected for {what}", summary(expected))
    assert sent.labels == expected.field6, (
        f"{what}: field 6 differs from a fresh build of the conversation\n  sent:     {sent.labels}\n"
        f"  expected: {expected.field6}"
    )
    check_lines(sent, expected, lambda slot: position_of(sent.labels, slot))
    assert sent.planner_mode == expected.planner_mode, (
        f"{what}: planner mode {sent.planner_mode}, a fresh build has {expected.planner_mode}"
    )


def _builds_fresh(target: Target) -> bool:
    """Whether the target can be asked for a fresh build of a conversation (not only play it)."""
    return "engine.build_send_request" in target.operations()


def _equal_sends(rebuilt: Sent, fresh: Sent) -> None:
    assert rebuilt.images == fresh.images, (
        f"field 6 of the rebuilt Send differs from a fresh build of the same conversation\n"
        f"  rebuilt: {rebuilt.labels}\n  fresh:   {fresh.labels}"
    )
    assert rebuilt.text == fresh.text, (
        f"the rebuilt Send's prompt differs from a fresh build of the same conversation\n"
        f"  rebuilt: {rebuilt.text[-600:]!r}\n  fresh:   {fresh.text[-600:]!r}"
    )
    assert rebuilt.planner_mode == fresh.planner_mode, (
        f"the rebuilt Send's planner mode is {rebuilt.planner_mode}, a fresh build's {fresh.planner_mode}"
    )


@invariant_property("IMG-6", needs=("engine.play_turns|gateway.chat",), cases=rebuild_cases, max_examples=20)
def rebuild_equals_fresh(target: Target, case: Case, evidence: Evidence) -> None:
    """Turn 1 runs fresh on a cascade that then expires; turn 2 resumes it, is rejected as expired,
    and the target restarts. Judged on the wire against the kit's model: the one Send on the fresh
    cascade carries exactly what a fresh build of the whole conversation carries (text, field 6,
    planner mode), as turn 1's own Send does for turn 1. Where the target exposes its counters, its
    resume build of the conversation counts nothing, so the rebuild is the request's only counted
    build. A target that never resumes turn 1's cascade rebuilds nothing: not checkable."""
    scenario = {"turns": [{"chunks": [{"text": case["answer"]}], "expire_after": True}]}
    native = bool(case["native_mode"])
    played = play_conversation(
        target, scenario, [case["first"], case["second"]], native_mode=native, model_uid=MODEL_UID
    )
    first, second = played.turns
    sends = [e for e in played.journal if e["method"] == "SendUserCascadeMessage"]
    evidence.add("the target's own report per turn", played.reports)
    cascades = [str((e.get("request") or {}).get("cascade_id", "?")) for e in sends]
    evidence.add("sends", [f"{e['status']} {cascade}" for e, cascade in zip(sends, cascades, strict=True)])
    assert sends, "the fake received no SendUserCascadeMessage"
    assert sends[0]["status"] == "OK", f"turn 1's Send was not accepted: {evidence.items['sends']}"
    require(
        cascades[1:].count(cascades[0]) > 0,
        "the target never resumed turn 1's cascade (turn 2 went to a fresh cascade), so no resume was rejected "
        f"and nothing was rebuilt; {SCOPE_HINT}",
    )
    rejected = [i for i, e in enumerate(sends) if e["status"] != "OK"]
    assert len(rejected) == 1, (
        f"expected exactly one rejected Send (the resume of the expired cascade): {evidence.items['sends']}"
    )
    after = sends[rejected[0] + 1 :]
    assert len(after) == 1, f"after the rejected resume {len(after)} Sends went out; the rebuilt history goes out once"
    assert cascades[rejected[0] + 1] != cascades[rejected[0]], "the rebuilt Send went to the expired cascade again"
    rebuilt = decode_send(base64.b64decode(after[0]["raw_b64"]))
    evidence.add("rebuilt", rebuilt.summary())
    conversation = [*first, {"role": "assistant", "content": case["answer"]}, *second]
    evidence.add("conversation (turn 1's answer is the one the fake scripted)", conversation)
    fresh_case = {"messages": conversation, "env": {}, "tool_preamble": "", "native_mode": native}
    if _builds_fresh(target):
        # The statement's own terms: what a fresh cascade of the same conversation carries, as this target
        # builds it (whatever it attaches, frames or leaves out is judged by IMG-1..5, not here).
        fresh = build(target, fresh_case, evidence, name="a fresh build of the conversation")
        _equal_sends(Sent(untagged(rebuilt.text), rebuilt.images, rebuilt.planner_mode), fresh)
    else:
        _matches_model("the rebuilt Send", rebuilt, conversation, native, evidence)
        _matches_model(
            "turn 1's fresh Send", decode_send(base64.b64decode(sends[0]["raw_b64"])), list(first), native, evidence
        )
    if not {"attached", "drops"} <= set(target.capabilities("engine.build_send_request").get("observes", ())):
        evidence.not_observed(_COUNTERS)
        return
    resume = build(
        target,
        fresh_case,
        evidence,
        name="resume build",
        is_resume=True,
    )
    counters = counters_of(resume, evidence)
    if counters is not None:
        attached, drops = counters
        assert (attached, {k: v for k, v in drops.items() if v}) == (0, {}), (
            f"a resume attempt's build counted history images (attached={attached}, drops={drops}); "
            "only the rebuild may count them"
        )


# ---------------------------------------------------------------------------- IMG-7


def _short(block: Mapping[str, Any]) -> str:
    text = json.dumps(block)
    return text if len(text) <= 200 else f"{text[:160]}... ({len(text)} chars)"


def _require_history_images(target: Target, base: Case, case: Case, evidence: Evidence) -> None:
    """IMG-7 compares the history path with the current one: a target that attaches no history image
    at all (not even the kit's own small PNG in the same place) breaks IMG-1, not IMG-7's guards."""
    plain = [{"type": "text", "text": case["text"]}, image_block(png_b64(1, 0), "image_url")]
    if case["history_role"] == "user":
        history = [{"role": "user", "content": plain}, {"role": "assistant", "content": "ok"}]
    else:
        history = [{"role": "user", "content": "look"}, {"role": "assistant", "content": plain}]
    control = build(
        target,
        {**base, "messages": [*history, {"role": "user", "content": "next"}]},
        evidence,
        name="a plain PNG in history",
    )
    require(
        bool(control.images),
        "the target attaches no history image at all, not even a plain PNG (IMG-1 judges that): its guards on "
        "history images cannot be compared with the current turn's",
    )


@invariant_property("IMG-7", needs=("engine.build_send_request",), cases=guard_cases, max_examples=40)
def history_images_pass_the_same_guards(target: Target, case: Case, evidence: Evidence) -> None:
    """For each block: in the current turn of a one-turn conversation and in a replayed turn it gives
    the same field-6 bytes, or neither gives any. SSRF targets, non-http schemes, non-image payloads
    and payloads over 5 MB never produce a field-6 image and are counted unextractable in history."""
    base = {"env": {}, "tool_preamble": "", "native_mode": case["native_mode"]}
    for name in case["blocks"]:
        block = guard_block(name)
        evidence.add("block", f"{name}: {_short(block)}")
        content = [{"type": "text", "text": case["text"]}, block]
        alone = [{"role": "user", "content": content}]
        current = build(target, {**base, "messages": alone}, evidence, name="in the current turn")
        if case["history_role"] == "user":
            history = [{"role": "user", "content": content}, {"role": "assistant", "content": "ok"}]
        else:
            history = [{"role": "user", "content": "look"}, {"role": "assistant", "content": content}]
        messages = [*history, {"role": "user", "content": "next"}]
        replayed = build(target, {**base, "messages": messages}, evidence, name="in history")
        if current.images and not replayed.images:
            _require_history_images(target, base, case, evidence)
        assert replayed.images == current.images, (
            f"{name}: the current turn gives field 6 {current.labels}, the same block in a replayed "
            f"{case['history_role']} turn gives {replayed.labels}"
        )
        if name in REFUSED_BLOCKS:
            assert current.images == (), f"{name}: the guard let it through to field 6: {current.labels}"
        counters = counters_of(replayed, evidence)
        if counters is None:
            continue
        attached, drops = counters
        assert (attached, attached + sum(drops.values())) == (len(replayed.images), 1), (
            f"{name}: one history block, attached={attached}, drops={drops}, field 6 {replayed.labels}"
        )
        if name in REFUSED_BLOCKS:
            assert drops.get("unextractable") == 1, f"{name}: refused in history but drops are {drops}"


# ---------------------------------------------------------------------------- IMG-8


@invariant_property("IMG-8", needs=("engine.build_send_request",), cases=determinism_cases, max_examples=30)
def same_conversation_same_bytes(target: Target, case: Case, evidence: Evidence) -> None:
    """Two builds of the same conversation (independent copies) give byte-identical text, field 6
    and counters."""
    first = build(target, json.loads(json.dumps(case)), evidence, name="first build")
    second = build(target, json.loads(json.dumps(case)), evidence, name="second build")
    assert first.text == second.text, (
        f"the prompt text differs between two builds:\n  {first.text!r}\n  {second.text!r}"
    )
    assert first.images == second.images, f"field 6 differs between two builds: {first.labels} vs {second.labels}"
    if counters_of(first, evidence) is not None:
        assert (first.attached, first.drops) == (second.attached, second.drops), (
            f"counters differ between two builds: {first.attached} {first.drops} vs {second.attached} {second.drops}"
        )
