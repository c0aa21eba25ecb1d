"""The Cascade prompt: the one text field (2) and the flat image list (field 6) of a Send.

One builder serves the fresh path and the post-resume rebuild (seed 000: a rebuilt history carries
exactly what a fresh one would). Layouts:

* **resume** (``is_resume`` without ``rebuild``) or **single turn**: the newest turn's text; the
  system text is prepended only when not resuming. Its images are field 6.
* **fresh multi-turn** (also ``rebuild``)::

      [sysText "\\n\\n"] [TRUNC_NOTE "\\n\\n"] INTRO "\\n\\n" <history lines joined by "\\n\\n">
      "\\n\\n<human>\\n" <current text> "\\n</human>"

  The history is cut by :func:`engine.prompt.history.select_history_window`; images of replayed turns are
  chosen by :func:`engine.prompt.history_images.select_history_images`, numbered after the current turn's,
  and each attached block's placeholder is replaced in place by its marker. Such a build is counted
  once in :mod:`engine.prompt.metrics` (with the structured warning when anything was dropped).

Planner mode (windsurf.js ``forceDefault``): DEFAULT when the native bridge is on, or when field 6 is
non-empty and no tool preamble is set. History images are attached only when the wire is
vision-capable (``native_mode or not tool_preamble``), so they can never flip a NO_TOOL request.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from engine.config import HistoryImageLimits, history_budget
from engine.media.gate import ImageData, ImageSettings, ImageVerdicts
from engine.prompt.extract import Fetcher, extract_images
from engine.prompt.history import Coverage, HistoryWindow, render_entry, select_history_window
from engine.prompt.history_images import ImageSelection, select_history_images
from engine.prompt.messages import Content, Message, split_roles
from engine.prompt.metrics import METRICS, DropCounts, ImageHistoryMetrics
from engine.prompt.system import build_system_text

__all__ = [
    "INTRO",
    "Coverage",
    "DropCounts",
    "Message",
    "PromptBuild",
    "build_cascade_prompt",
    "planner_uses_default",
    "truncation_note",
]

log = logging.getLogger("engine.cascade")

INTRO = "The following is a multi-turn conversation. You MUST remember and use all information from prior turns."


def truncation_note(dropped_turns: int) -> str:
    return (
        f"<truncation_note>The conversation above is truncated \u2014 {dropped_turns} earlier turns were dropped due "
        "to length limits. The user's original task and the most recent tool results are preserved. Do NOT ask the "
        "user to repeat their task; continue from the latest context.</truncation_note>"
    )


def planner_uses_default(*, native_mode: bool, tool_preamble: str, image_count: int) -> bool:
    """windsurf.js ``forceDefault``: planner mode DEFAULT (1) rather than NO_TOOL (3)."""
    return native_mode or (image_count > 0 and not tool_preamble)


@dataclass(frozen=True)
class PromptBuild:
    """What one build puts on the wire, plus its bookkeeping.

    ``images`` is field 6 in order: the current turn's images, then the attached history images
    chronologically. ``drops``/``attached`` describe the history images (zero for resume and
    single-turn builds). ``planner_default`` is the planner mode the images call for.
    """

    text: str
    images: tuple[ImageData, ...]
    coverage: Coverage
    drops: DropCounts
    attached: int
    planner_default: bool


def build_cascade_prompt(
    messages: Sequence[Message],
    *,
    model_uid: str,
    tool_preamble: str = "",
    native_mode: bool = False,
    is_resume: bool = False,
    rebuild: bool = False,
    limits: HistoryImageLimits,
    image_settings: ImageSettings,
    fetcher: Fetcher | None,
    env: Mapping[str, str],
    display_model: str | None = None,
    metrics: ImageHistoryMetrics = METRICS,
    verdicts: ImageVerdicts | None = None,
) -> PromptBuild:
    """Builds the prompt of one Send.

    ``rebuild=True`` is the post-resume rebuild of a resumed request (``is_resume`` must be set): it
    replays the full history exactly as a fresh build of the same conversation would, and is the
    request's one counted build. With a single turn it changes nothing (the mirror's no-op).
    ``tool_preamble`` is what the caller passes to the wire (empty when the native bridge is on).
    ``verdicts`` is the request's record of judged images: pass the same one to a request's resume
    build and its rebuild so no image is decoded twice (a fresh one per build when omitted).
    """
    if rebuild and not is_resume:
        raise ValueError("rebuild=True rebuilds a resumed request; a fresh request reuses its own build")
    system_messages, convo = split_roles(messages)
    sys_text = build_system_text(system_messages, model_uid=model_uid, display_model=display_model)
    verdicts = ImageVerdicts() if verdicts is None else verdicts
    current = extract_images(_newest_content(convo), fetcher=fetcher, settings=image_settings, verdicts=verdicts)
    current_images = tuple(current.images)

    if len(convo) <= 1 or (is_resume and not rebuild):
        text = current.text if is_resume or not sys_text else f"{sys_text}\n\n{current.text}"
        return _finish(
            text,
            current_images,
            Coverage(0, 0, len(convo)),
            ImageSelection((), DropCounts()),
            native_mode,
            tool_preamble,
        )

    window = select_history_window(convo, sys_text, history_budget(model_uid, env))

    def extract_block(block: object) -> ImageData | None:
        extracted = extract_images([block], fetcher=fetcher, settings=image_settings, verdicts=verdicts)
        return extracted.images[0] if extracted.images else None

    selection = select_history_images(
        window.entries,
        convo[: window.first_included],
        vision=native_mode or not tool_preamble,
        limits=limits,
        extract_block=extract_block,
        first_ordinal=len(current_images) + 1,
    )
    text = _multi_turn_text(sys_text, window, selection, current.text)
    if rebuild:
        log.info("Cascade: rebuilt full history after resume failure")
    metrics.record(selection.drops, turns=len(convo), attached=len(selection.attached))
    return _finish(text, current_images + selection.images, window.coverage, selection, native_mode, tool_preamble)


def _newest_content(convo: Sequence[Message]) -> Content:
    """``convo[convo.length - 1]?.content ?? ''``."""
    if not convo or convo[-1].content is None:
        return ""
    return convo[-1].content


def _multi_turn_text(sys_text: str, window: HistoryWindow, selection: ImageSelection, current_text: str) -> str:
    markers = selection.markers_by_turn()
    lines = [render_entry(entry, markers.get(entry.index, {})) for entry in window.entries]
    parts: list[str] = []
    if sys_text:
        parts.append(sys_text)
    if window.first_included > 0:
        parts.append(truncation_note(window.first_included))
    parts.append(INTRO)
    parts.extend(lines)
    parts.append(f"<human>\n{current_text}\n</human>")
    return "\n\n".join(parts)


def _finish(
    text: str,
    images: tuple[ImageData, ...],
    coverage: Coverage,
    selection: ImageSelection,
    native_mode: bool,
    tool_preamble: str,
) -> PromptBuild:
    if images:
        log.info("Cascade: attaching %d image(s) to field 6", len(images))
    return PromptBuild(
        text=text,
        images=images,
        coverage=coverage,
        drops=selection.drops,
        attached=len(selection.attached),
        planner_default=planner_uses_default(
            native_mode=native_mode, tool_preamble=tool_preamble, image_count=len(images)
        ),
    )
