"""The kit's model of TURN: which text a client gets for a scripted turn.

As the real clients read a planner step (``reference/wire.md``): the streamed ``response``, and at the
end its ``modified_response`` when that strictly extends it; with no ``response`` at all, the
``modified_response``. A rewrite that does not extend the response is either kept or taken whole (a
gateway may prefer the LS's last word), never spliced; a shorter ``modified_response`` loses nothing.
"""

from __future__ import annotations


def answers(response: str, modified: str | None) -> set[str]:
    """The texts a client may be given for a turn whose planner step ended as ``response`` and
    ``modified``: the first is the real clients' reading."""
    if modified is None or modified == response:
        return {response}
    if not response:
        return {modified}
    if len(modified) > len(response) and modified.startswith(response):
        return {modified}
    if response.startswith(modified):
        return {response}  # shorter: a truncation the client must not take
    return {response, modified}
