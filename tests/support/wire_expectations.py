"""Expected decoded values shared by the WIRE tests."""

from __future__ import annotations

from typing import Any


def client_metadata_dict(*, api_key: str, request_id: int, session_id: str, user_jwt: str) -> dict[str, Any]:
    """The decoded ``Metadata`` a real client sends (wire.md section 2.1), by field name."""
    return {
        "ide_name": "windsurf",
        "extension_version": "2.0.67",
        "api_key": api_key,
        "locale": "en",
        "os": "linux",
        "ide_version": "2.0.67",
        "hardware": "x86_64",
        "request_id": request_id,
        "session_id": session_id,
        "extension_name": "windsurf",
        "user_jwt": user_jwt,
    }
