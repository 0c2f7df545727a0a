"""One object owns one `transformers serve` process's whole life.

start: a free loopback port, its own process group (setsid), stdout+stderr to a log file;
readiness: GET /v1/models until it lists the model, each probe with its own timeout, the wait
  ending the moment the process dies and giving up at a monotonic deadline;
stop: SIGTERM to the process group we started, a bounded wait, then SIGKILL of that group.
Never by name: only the PID/PGID this object spawned.

`transformers serve NAME` pins the server to NAME (FORCE_MODEL): /v1/models lists exactly NAME,
and a request for any other model is HTTP 400 ("Server is pinned to ..."). Started with cwd = the
model cache, NAME is the folder's bare name, so the served name is not a filesystem path.

Stdlib only: the suite's Python imports this; the server runs in the real-engine venv.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from rackgate.transport import ports
from rackgate.transport.procs import REGISTRY


class ServerFailed(Exception):
    """The server did not come up or died; str() carries the log's last lines."""


@dataclass(frozen=True)
class Reply:
    status: int
    body: dict
    elapsed: float


def free_loopback_port() -> int:
    return ports.free_port()


def _no_proxy_opener() -> urllib.request.OpenerDirector:
    # loopback only: never through a proxy from the environment
    return urllib.request.build_opener(urllib.request.ProxyHandler({}))


def http_json(method: str, url: str, body: dict | None = None, timeout: float = 60.0) -> Reply:
    """One request, one timeout, no retries. HTTP errors are replies, not exceptions."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"} if data else {})
    t0 = time.monotonic()
    try:
        with _no_proxy_opener().open(req, timeout=timeout) as r:
            status, raw = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    elapsed = time.monotonic() - t0
    try:
        parsed = json.loads(raw or b"{}")
    except ValueError:
        parsed = {"_raw": raw[:2000].decode(errors="replace")}
    return Reply(status, parsed if isinstance(parsed, dict) else {"_": parsed}, elapsed)


class TransformersServer:
    """`with TransformersServer(venv_bin, cache, name, log) as srv:` ... srv.url, srv.chat(...)."""

    def __init__(self, venv_bin: Path, cache: Path, model: str, log_path: Path,
                 ready_timeout: float = 240.0, stop_grace: float = 15.0, port: int | None = None,
                 extra_args: tuple[str, ...] = ()):
        self.exe = Path(venv_bin) / "transformers"
        self.cache, self.model, self.log_path = Path(cache), model, Path(log_path)
        self.ready_timeout, self.stop_grace = ready_timeout, stop_grace
        self.port = port or free_loopback_port()
        self.extra_args = tuple(extra_args)
        self.proc: subprocess.Popen | None = None
        self.pgid: int | None = None
        self.startup_s: float | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def command(self) -> list[str]:
        return [str(self.exe), "serve", self.model, "--device", "cpu", "--host", "127.0.0.1",
                "--port", str(self.port), "--log-level", "info", *self.extra_args]

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        # offline: the model is local; no update check, no telemetry, no hub lookups
        env.update(HF_HUB_OFFLINE="1", HF_HUB_DISABLE_UPDATE_CHECK="1", HF_HUB_DISABLE_TELEMETRY="1",
                   TRANSFORMERS_NO_ADVISORY_WARNINGS="1", PYTHONUNBUFFERED="1",
                   # One compute thread: with 2 OpenMP threads on 2 cores shared with anything else
                   # (the other self-tests, aiperf's workers), spinning threads were 4x slower
                   # (a 5-shot GSM8K request: 212 s vs 54 s at load 12; docs/real-engine.md).
                   OMP_NUM_THREADS=os.environ.get("RACKGATE_REALENGINE_THREADS", "1"))
        return env

    # --- life ---------------------------------------------------------------------------------
    def start(self) -> "TransformersServer":
        if not (self.cache / self.model).is_dir():
            raise ServerFailed(f"no model folder {self.cache / self.model}")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.command(), cwd=self.cache, env=self.env(), stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.pgid = self.proc.pid  # start_new_session: the child leads its own group
        # Ended by PID at exit and on SIGTERM/Ctrl-C too (rackgate.transport.procs), not only by a
        # fixture's teardown: a self-test run cut off by `timeout` must not leave the server behind.
        REGISTRY.add_spawned(self)
        try:
            self.wait_ready(t0 + self.ready_timeout)
        except BaseException:
            self.stop()
            raise
        self.startup_s = time.monotonic() - t0
        return self

    def wait_ready(self, deadline: float, poll_s: float = 0.5) -> None:
        last = "no answer yet"
        while True:
            rc = self.proc.poll()
            if rc is not None:
                raise ServerFailed(f"transformers serve (pid {self.proc.pid}) exited rc={rc} while starting; "
                                   f"log tail:\n{self.log_tail()}")
            left = deadline - time.monotonic()
            if left <= 0:
                raise ServerFailed(f"transformers serve (pid {self.proc.pid}) not ready after "
                                   f"{self.ready_timeout:g}s (last probe: {last}); log tail:\n{self.log_tail()}")
            try:
                r = http_json("GET", self.url + "/v1/models", timeout=min(5.0, max(left, 0.1)))
                ids = [m.get("id") for m in r.body.get("data", [])]
                if r.status == 200 and self.model in ids:
                    return
                last = f"HTTP {r.status} {ids}"
            except (OSError, urllib.error.URLError) as e:
                last = f"{type(e).__name__}: {e}"
            time.sleep(min(poll_s, max(deadline - time.monotonic(), 0)))

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> int | None:
        """TERM the group, wait at most stop_grace, KILL the group. Returns the exit code."""
        if self.proc is None:
            return None
        REGISTRY.drop_spawned(self)
        if self.proc.poll() is None:
            self._signal_group(signal.SIGTERM)
            try:
                self.proc.wait(timeout=self.stop_grace)
            except subprocess.TimeoutExpired:
                pass
        # Whatever is left in the group (the leader, or a child it forked) is killed. Checked
        # first, so a group id that is gone (and could be reused) is never signalled.
        if self.proc.poll() is None or self.group_members():
            self._signal_group(signal.SIGKILL)
            try:
                self.proc.wait(timeout=self.stop_grace)
            except subprocess.TimeoutExpired:
                pass
        return self.proc.returncode

    def _signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.pgid, sig)
        except ProcessLookupError:
            pass

    def group_members(self) -> list[int]:
        """PIDs still in the process group we started (read from /proc, never by name)."""
        out = []
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            # after "comm)": state ppid pgrp ...; a zombie awaiting its reaper is not running
            if int(fields[2]) == self.pgid and fields[0] != "Z":
                out.append(int(d.name))
        return out

    def log_tail(self, n: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def __enter__(self) -> "TransformersServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # --- requests -----------------------------------------------------------------------------
    def completion(self, prompt: str, max_tokens: int = 16, timeout: float = 300.0, **extra) -> Reply:
        body = {"model": self.model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0.0, **extra}
        return http_json("POST", self.url + "/v1/completions", body, timeout)

    def chat(self, content: str, max_tokens: int = 32, timeout: float = 300.0, **extra) -> Reply:
        body = {"model": self.model, "messages": [{"role": "user", "content": content}],
                "max_tokens": max_tokens, "temperature": 0.0, **extra}
        return http_json("POST", self.url + "/v1/chat/completions", body, timeout)

    def models(self, timeout: float = 10.0) -> Reply:
        return http_json("GET", self.url + "/v1/models", timeout=timeout)
