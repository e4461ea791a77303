"""A controller that exits before it is ready is started again, as the kubelet restarts a
container (webhook_harness.started); one that exits every time fails, with its log."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from live_harness import Process, free_port
from webhook_harness import START_ATTEMPTS, Controller, started

# exits at once on its first START_ATTEMPTS - 1 runs (counted in a file), then serves 200
FLAKY = """
import http.server, sys
from pathlib import Path
runs = Path(sys.argv[1]); n = int(runs.read_text()) + 1 if runs.exists() else 1
runs.write_text(str(n))
if n <= int(sys.argv[3]):
    print(f"run {n}: failed to wait for caches to sync", flush=True); sys.exit(1)
class Ready(http.server.BaseHTTPRequestHandler):
    def do_GET(self): self.send_response(200); self.end_headers()
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[2])), Ready).serve_forever()
"""


@dataclass
class Flaky(Controller):
    work: Path
    failures: int
    proc: Process | None = None
    port: int = 0
    ports: int = 0  # how many ports it was given

    def before_restart(self) -> None:
        self.port = 0

    def start(self) -> None:
        if not self.port:
            self.port, self.ports = free_port(), self.ports + 1
        argv = [sys.executable, "-c", FLAKY, str(self.work / "runs"), str(self.port),
                str(self.failures)]  # fmt: skip
        self.proc = Process("flaky", argv, self.work / "flaky.log")
        self.proc.start()
        self.wait_ready("flaky", f"http://127.0.0.1:{self.port}/readyz")


def test_a_controller_that_exits_before_ready_is_started_again(tmp_path: Path) -> None:
    flaky = started(Flaky(tmp_path, failures=START_ATTEMPTS - 1))
    try:
        assert flaky.alive()
        assert (tmp_path / "runs").read_text() == str(START_ATTEMPTS)
        assert flaky.ports == START_ATTEMPTS  # a new port for each start
    finally:
        flaky.stop()


def test_a_controller_that_always_exits_fails_with_its_log(tmp_path: Path) -> None:
    flaky = Flaky(tmp_path, failures=START_ATTEMPTS)
    with pytest.raises(RuntimeError, match="failed to wait for caches to sync"):
        started(flaky)
    assert (tmp_path / "runs").read_text() == str(START_ATTEMPTS)
    assert not flaky.alive()
