"""Runs the embedded platform: a gunicorn web server, a Celery worker and Celery beat.

Children run in their own process groups; Ctrl-C (SIGINT) or SIGTERM stops all of them cleanly
(SIGTERM, then SIGKILL after a grace period). If one child dies, the others are stopped too and the
supervisor exits non-zero, so a broken start never looks like a running platform.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ChildSpec:
    name: str
    argv: tuple[str, ...]


def embedded_children(*, host: str, port: int, web_workers: int) -> list[ChildSpec]:
    python = sys.executable
    bindir = os.path.dirname(python)
    return [
        ChildSpec(
            "web",
            (
                os.path.join(bindir, "gunicorn"),
                "arg_platform.wsgi:application",
                "--config",
                "python:arg_platform.gunicorn_conf",  # one torch thread per worker
                "--bind",
                f"{host}:{port}",
                "--workers",
                str(web_workers),
                "--threads",
                "4",
                "--timeout",
                "60",
                "--graceful-timeout",
                "10",
                "--access-logfile",
                "-",
            ),
        ),
        ChildSpec(
            "worker",
            (
                python,
                "-m",
                "celery",
                "-A",
                "arg_platform",
                "worker",
                "--loglevel",
                "INFO",
                "--concurrency",
                "1",
                "--hostname",
                "embedded@%h",
            ),
        ),
        ChildSpec("beat", (python, "-m", "celery", "-A", "arg_platform", "beat", "--loglevel", "INFO")),
    ]


def child_environment() -> dict[str, str]:
    """The children's environment: numpy's BLAS single-threaded unless the operator says otherwise.

    Requests do small matrix-vector products; on 2 cores a multi-threaded BLAS spins threads that cost
    far more than they save (measured: 11.8 ms vs 0.37 ms for a 1,300×384 product under load).
    """
    env = dict(os.environ)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.setdefault("MKL_NUM_THREADS", "1")
    return env


class Supervisor:
    def __init__(self, children: Sequence[ChildSpec], *, grace_s: float = 10.0) -> None:
        self.specs = list(children)
        self.grace_s = grace_s
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self._stopping = False

    def _on_signal(self, signum: int, _frame: object) -> None:
        self._stopping = True

    def start(self) -> None:
        for spec in self.specs:
            self.procs[spec.name] = subprocess.Popen(
                spec.argv, start_new_session=True, env=child_environment()
            )
            print(f"[supervisor] started {spec.name} (pid {self.procs[spec.name].pid})", flush=True)

    def stop(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is None:
                print(f"[supervisor] stopping {name}", flush=True)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + self.grace_s
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def run(self) -> int:
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)
        self.start()
        code = 0
        try:
            while not self._stopping:
                for name, proc in self.procs.items():
                    if proc.poll() is not None:
                        print(
                            f"[supervisor] {name} exited with {proc.returncode}; stopping the rest",
                            flush=True,
                        )
                        code = proc.returncode or 1
                        self._stopping = True
                        break
                time.sleep(0.2)
        finally:
            self.stop()
        print("[supervisor] all stopped", flush=True)
        return code
