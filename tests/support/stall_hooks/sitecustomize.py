"""Test instrumentation for the interrupt tests, loaded only when this folder is on a subprocess's PYTHONPATH:
with ``CASCADE_TEST_STALL_IN_REPORT`` set, the kit's report writer first writes this process's id to the
marker file (``CASCADE_TEST_STALL_MARKER``) and waits 3 s, so a test can signal the kit while it writes its
report. Nothing else changes."""

from __future__ import annotations

import os

if os.environ.get("CASCADE_TEST_STALL_IN_REPORT"):
    import time
    from pathlib import Path
    from typing import Any

    import conformance.run_reports as _run_reports

    _write_reports = _run_reports.write_reports

    def _stalling_write_reports(*args: Any, **kwargs: Any) -> Any:
        marker = Path(os.environ["CASCADE_TEST_STALL_MARKER"])
        if not marker.exists():  # the first write only: the kit writes again once the signal is in
            marker.write_text(str(os.getpid()), encoding="utf-8")
            time.sleep(3.0)
        return _write_reports(*args, **kwargs)

    _run_reports.write_reports = _stalling_write_reports
