"""The placeholders a --launch command may use (no fakels import: the pytest plugin reads them at
start-up in every pytest run, including trees whose ``fakels`` is another package)."""

from __future__ import annotations

PLACEHOLDERS: dict[str, str] = {
    "ls_address": "dial: the fake LS's HOST:PORT",
    "csrf_token": "dial: the CSRF token the fake LS checks",
    "ls_binary": "spawn: the stand-in LS binary to spawn",
    "port": "the gateway's HTTP port",
}
