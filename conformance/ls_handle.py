"""The kit's hold on the fake language server a gateway talks to, wherever that fake runs.

A property that drives a whole gateway loads the case's scenario, clears the journal, lets the
gateway work, then reads what the fake decoded from the wire. :class:`LsHandle` is that much;
two implementations:

- :class:`InProcessLs`: a :class:`fakels.server.FakeLSThread` the kit started itself (the gateway
  dials its address);
- :class:`StandinLs`: a stand-in binary the gateway spawned as its LS, reached through the fake's
  control endpoint (``fakels.control_client``) on the control port baked into the stand-in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn, Protocol

from conformance.errors import TargetError
from fakels.control_client import ControlClient, ControlError
from fakels.scenario import ScenarioError, parse_scenario
from fakels.server import FakeLSThread
from fakels.standin import ports_file, read_ports

# Why nothing of the wire can be judged on an HTTP target: the kit did not launch it, or launched it unwired.
NOT_WIRED = "the gateway's language server is not wired to the kit (--launch with dial or spawn)"


class LsHandle(Protocol):
    @property
    def address(self) -> str:
        """``HOST:PORT`` of the fake's gRPC listener."""
        ...

    @property
    def csrf_token(self) -> str:
        """The CSRF token the fake checks (raises ``TargetError`` when it cannot be known)."""
        ...

    def load_scenario(self, document: dict[str, Any]) -> None:
        """Play this scenario document from now on (its turns from the first); an invalid document
        raises :class:`fakels.scenario.ScenarioError`."""
        ...

    def reset(self) -> None:
        """Forget every cascade and clear the journal; the loaded scenario starts over."""
        ...

    def journal(self) -> list[dict[str, Any]]:
        """The requests received since the last reset, oldest first, as ``JournalEntry.to_json()``."""
        ...

    @property
    def http_faults(self) -> bool:
        """Whether the gateway reaches the fake through its hand-written gRPC port, so a scenario can fail a
        call at the HTTP level (fakels._grpc_h2_transport); grpcio's port answers such faults as a status."""
        ...


class InProcessLs:
    """A fake running in this process (the dial wiring). ``http_faults``: the gateway dials its h2 gRPC port."""

    def __init__(self, fake: FakeLSThread, csrf_token: str, *, http_faults: bool = False) -> None:
        self._fake = fake
        self._csrf_token = csrf_token
        self._http_faults = http_faults

    @property
    def address(self) -> str:
        return self._fake.h2_address if self._http_faults else self._fake.address

    @property
    def http_faults(self) -> bool:
        return self._http_faults

    @property
    def csrf_token(self) -> str:
        return self._csrf_token

    def load_scenario(self, document: dict[str, Any]) -> None:
        self._fake.load_scenario(parse_scenario(document, source="the case's scenario"))

    def reset(self) -> None:
        self._fake.reset()

    def journal(self) -> list[dict[str, Any]]:
        return [entry.to_json() for entry in self._fake.journal.entries()]


class StandinLs:
    """A stand-in spawned by the gateway (the spawn wiring), reached on its control port.

    Its gRPC port, pid and CSRF token come from the ports file the stand-in writes beside itself
    when it starts, read afresh on every use (a gateway that restarts its LS gets a new one).
    """

    def __init__(self, executable: Path, control_port: int, *, timeout_s: float = 10.0) -> None:
        self._executable = executable
        self._control = ControlClient(control_port, timeout=timeout_s)

    @property
    def control_port(self) -> int:
        return int(self._control.base_url.rsplit(":", 1)[1])

    def ready(self) -> bool:
        """True once the stand-in answers on its control port and has written its ports file."""
        return self._control.health() and ports_file(self._executable).is_file()

    def ports(self) -> dict[str, Any]:
        try:
            report = read_ports(self._executable, wait_s=0)
        except (OSError, ValueError) as exc:
            _unreachable(f"the stand-in LS at {self._executable} has not reported its ports ({exc})")
        return report

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.ports()['grpc']}"

    @property
    def http_faults(self) -> bool:
        return False  # the stand-in serves grpcio's port only

    def pid(self) -> int | None:
        """The pid the running stand-in reported; None before it reported one."""
        try:
            pid = read_ports(self._executable, wait_s=0).get("pid")
        except (OSError, ValueError, AttributeError):
            return None
        return pid if isinstance(pid, int) else None

    def runs_as(self, pid: int) -> bool:
        """Whether process ``pid`` runs this stand-in (its command line names the executable; Linux
        /proc), so that a recycled pid is never signalled."""
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", errors="replace").split("\0")
        except OSError:
            return False
        return str(self._executable) in argv

    @property
    def csrf_token(self) -> str:
        """The token the gateway gave the stand-in (its ``--csrf_token``), as the stand-in reported it
        in its ports file."""
        report = self.ports()
        if "csrf_token" not in report:
            _unreachable(
                f"the stand-in LS at {self._executable} did not report its CSRF token in "
                f"{ports_file(self._executable).name} (a stand-in running an older fakels?)"
            )
        token = report["csrf_token"]
        if not isinstance(token, str):
            _unreachable(f"the gateway started its stand-in LS (pid {report.get('pid')}) without --csrf_token")
        return token

    def load_scenario(self, document: dict[str, Any]) -> None:
        try:
            self._control.load_scenario(document)
        except ControlError as exc:
            if exc.status == 400:
                raise ScenarioError(exc.message) from None
            self._failed(exc)

    def reset(self) -> None:
        try:
            self._control.reset()
        except ControlError as exc:
            self._failed(exc)

    def journal(self) -> list[dict[str, Any]]:
        try:
            return self._control.journal()
        except ControlError as exc:
            self._failed(exc)

    def _failed(self, exc: ControlError) -> NoReturn:
        if exc.status is None:
            _unreachable(f"{exc} (did the gateway stop or restart its LS, the stand-in {self._executable}?)")
        raise RuntimeError(f"the stand-in LS's control endpoint refused a request: {exc}")


def _unreachable(message: str) -> NoReturn:
    raise TargetError(message)
