"""Deliberately broken targets for the runner's meta-tests (``python:tests.support.broken_targets:...``)."""

from __future__ import annotations

from typing import Any

from conformance.targets.reference import ReferenceTarget


class DropsUnknownFields(ReferenceTarget):
    """A decoder that forgets unknown fields: WIRE-2 must fail on it."""

    def ls_decode_request(self, method: str, raw_b64: str) -> dict[str, Any]:
        result = super().ls_decode_request(method, raw_b64)
        if "unknown" in result:
            result["unknown"] = []
        return result


class DecodeOnly(ReferenceTarget):
    """Implements only decoding: the served-LS invariants are not checkable on it."""

    ls_serve = None  # type: ignore[assignment]
    ls_journal = None  # type: ignore[assignment]
    ls_advance_clock = None  # type: ignore[assignment]
    ls_stop = None  # type: ignore[assignment]

    def close(self) -> None:
        pass


def drops_unknown_fields() -> DropsUnknownFields:
    return DropsUnknownFields()


def decode_only() -> DecodeOnly:
    return DecodeOnly()
