"""A client for the fake language server's control endpoint, for test harnesses in other processes.

Standard library only (``urllib``; proxies from the environment are ignored, the endpoint is
always on loopback)::

    control = ControlClient(port)
    control.load_scenario(scenario_to_document(scenario))  # or a dict read from JSON/YAML
    ...  # drive the gateway under test
    entries = control.journal()  # JournalEntry.to_json() dicts: method, request, raw_b64, status...
    control.reset()
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class ControlError(RuntimeError):
    """The control endpoint refused a request (``status`` is its HTTP status, ``message`` its error
    text) or could not be reached (``status`` is None)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message if status is None else f"HTTP {status}: {message}")
        self.status = status
        self.message = message


class ControlClient:
    """Talks to ``http://host:port`` as served by ``fakels serve --control-port``."""

    def __init__(self, port: int, host: str = "127.0.0.1", *, timeout: float = 10.0, token: str | None = None) -> None:
        self.base_url = f"http://{host}:{port}"
        self.timeout = timeout
        self._token = token

    def health(self) -> bool:
        """True when the endpoint answers ``{"ok": true}``; False when it is unreachable or unwell."""
        try:
            answer = json.loads(self._request("GET", "/healthz"))
        except (ControlError, ValueError):
            return False
        return isinstance(answer, dict) and answer.get("ok") is True

    def journal(self, since: int = 0) -> list[dict[str, Any]]:
        """Journal entries from sequence number ``since`` on, oldest first. Raises :class:`ControlError`
        when the server's retention bound dropped some of them: what it answers is not all that came."""
        body = self._request("GET", f"/journal?since={int(since)}")
        # Split on "\n" only: JSON escapes it inside strings, but not U+2028, U+0085, ... (splitlines would).
        entries = [json.loads(line) for line in body.decode("utf-8").split("\n") if line.strip()]
        if entries and entries[0].get("seq", since) > since:
            raise ControlError(
                f"the fake's journal dropped entries {since}..{entries[0]['seq'] - 1} under its retention bound "
                "(fakels serve --journal-max-entries / --journal-max-bytes): read it more often or raise the bound"
            )
        return entries

    def state(self) -> dict[str, Any]:
        """Counters (turn_index, sends_accepted, panel_lost, ...) and a summary per cascade."""
        answer: dict[str, Any] = json.loads(self._request("GET", "/state"))
        return answer

    def load_scenario(self, document: Mapping[str, Any]) -> None:
        """Validate and load a scenario document (see ``fakels.scenario.scenario_to_document``);
        raises :class:`ControlError` with the server's explanation when it is invalid."""
        self._request("POST", "/scenario", json.dumps(dict(document)).encode("utf-8"))

    def reset(self) -> None:
        """Forget all cascades and clear the journal (the loaded scenario stays)."""
        self._request("POST", "/reset", b"")

    def _request(self, method: str, path: str, body: bytes | None = None) -> bytes:
        request = urllib.request.Request(self.base_url + path, data=body, method=method)
        if body is not None:
            request.add_header("Content-Type", "application/json")
        if self._token is not None:
            request.add_header("Authorization", f"Bearer {self._token}")
        try:
            with _NO_PROXY.open(request, timeout=self.timeout) as response:
                data: bytes = response.read()
                return data
        except urllib.error.HTTPError as exc:
            try:
                text = _error_text(exc.read())
            finally:
                exc.close()
            raise ControlError(text, exc.code) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            raise ControlError(
                f"fakels control endpoint {self.base_url} is not reachable ({method} {path}): {reason}"
            ) from exc


def _error_text(body: bytes) -> str:
    text = body.decode("utf-8", errors="replace")
    try:
        answer = json.loads(text)
    except ValueError:
        return text.strip() or "(no error text)"
    error = answer.get("error") if isinstance(answer, dict) else None
    return error if isinstance(error, str) else text.strip()
