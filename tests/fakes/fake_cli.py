"""Fake CLI executables (mmx, agy, codex, grok, kimi, claude) for process-level tests.

:func:`install_fake_clis` writes one small Python script per name into a directory that a
test puts first on ``PATH``. Each script logs to ``<name>.log.jsonl`` next to itself — found
from its own path, so no environment variable is needed — and behaves as told by
``<name>.behaviour.json`` next to it:

    answer             text printed to stdout (default: a short answer with a sidecar block)
    stderr             text printed to stderr
    exit_code          exit status (default 0; a non-zero exit prints no default answer)
    sleep              seconds to sleep before answering
    hang               sleep forever
    spawn_child        start a child that sleeps forever holding stdout/stderr (its pid is logged)
    ignore_sigterm     ignore SIGTERM (the child too)
    flood_bytes        bytes written to stdout before the answer
    flood_stderr_bytes bytes written to stderr
    wait_for_peers     wait (up to 10 s) until this many copies have started, else exit 3
                       (under a gate of one slot the first copy can never see the second)
    report_env         names whose values the log records
    by_argv            {argument prefix: behaviour}: the first prefix the arguments start with
                       (joined by spaces) overrides the keys above for that run

Log records (one JSON object per line): ``start`` (argv, cwd, stdin length / sha256 / base64,
env names, pid, pgid, peers running), ``child`` (child_pid), ``end``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CLI_NAMES = ("mmx", "agy", "codex", "grok", "kimi", "claude")

DEFAULT_SIDECAR = '{"recommendation": "apply", "confidence": "high", "needs_context": []}'

_SCRIPT = r'''#!__PYTHON__
import base64, hashlib, json, os, signal, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
NAME = os.path.basename(__file__)
RUNNING = os.path.join(HERE, NAME + ".running")
ARRIVED = os.path.join(HERE, NAME + ".arrived")
CHILD = (
    "import signal, time\n"
    "if __IGNORE__:\n"
    "    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "time.sleep(3600)\n"
)


def log(record):
    record.update(name=NAME, pid=os.getpid(), t=time.time())
    line = (json.dumps(record) + "\n").encode()
    fd = os.open(os.path.join(HERE, NAME + ".log.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def peers():
    return [p for p in os.listdir(RUNNING) if p != str(os.getpid())]


def write_all(stream, total):
    chunk = b"x" * (1 << 20)
    left = total
    while left > 0:
        stream.write(chunk[:left])
        left -= min(left, len(chunk))
    stream.flush()


def main():
    try:
        with open(os.path.join(HERE, NAME + ".behaviour.json"), encoding="utf-8") as fh:
            how = json.load(fh)
    except FileNotFoundError:
        how = {}
    joined = " ".join(sys.argv[1:])
    for prefix, more in how.get("by_argv", {}).items():
        if joined.startswith(prefix):
            how = {**how, **more}
            break
    if how.get("ignore_sigterm"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.makedirs(RUNNING, exist_ok=True)
    os.makedirs(ARRIVED, exist_ok=True)
    open(os.path.join(ARRIVED, str(os.getpid())), "w").close()
    marker = os.path.join(RUNNING, str(os.getpid()))
    open(marker, "w").close()
    try:
        data = sys.stdin.buffer.read() if sys.stdin is not None else b""
        log({
            "event": "start",
            "argv": sys.argv[1:],
            "argv0": sys.argv[0],
            "cwd": os.getcwd(),
            "stdin_len": len(data),
            "stdin_sha256": hashlib.sha256(data).hexdigest(),
            "stdin_b64": base64.b64encode(data).decode() if len(data) <= (1 << 20) else None,
            "env_names": sorted(os.environ),
            "env_values": {k: os.environ.get(k) for k in how.get("report_env", [])},
            "pgid": os.getpgid(0),
            "sid": os.getsid(0),
            "peers": len(peers()),
        })
        if how.get("spawn_child"):
            code = CHILD.replace("__IGNORE__", "True" if how.get("ignore_sigterm") else "False")
            child = subprocess.Popen([sys.executable, "-c", code])
            log({"event": "child", "child_pid": child.pid})
        want = how.get("wait_for_peers")
        if want:
            deadline = time.monotonic() + 10
            # Arrivals persist, so a peer that already left still counts as having overlapped.
            while len(os.listdir(ARRIVED)) < want:
                if time.monotonic() > deadline:
                    sys.stderr.write("peers never arrived\n")
                    return 3
                time.sleep(0.01)
        if how.get("sleep"):
            time.sleep(how["sleep"])
        if how.get("hang"):
            while True:
                time.sleep(3600)
        if how.get("flood_stderr_bytes"):
            write_all(sys.stderr.buffer, how["flood_stderr_bytes"])
        if how.get("flood_bytes"):
            write_all(sys.stdout.buffer, how["flood_bytes"])
        code = int(how.get("exit_code", 0))
        if "stderr" in how:
            sys.stderr.write(how["stderr"])
            sys.stderr.flush()
        default = "" if code else ("Answer from " + NAME + ".\n\n```sidecar\n" + __SIDECAR__ + "\n```\n")
        sys.stdout.write(how.get("answer", default))
        sys.stdout.flush()
        log({"event": "end", "exit_code": code})
        return code
    finally:
        try:
            os.unlink(marker)
        except OSError:
            pass


sys.exit(main())
'''


@dataclass
class FakeCLIs:
    """A directory of fake CLIs, with helpers to script them and read what they saw."""

    bin_dir: Path

    def behave(self, name: str, **behaviour: Any) -> None:
        """Set how ``name`` behaves on its next runs (replaces any earlier behaviour)."""
        (self.bin_dir / f"{name}.behaviour.json").write_text(json.dumps(behaviour), encoding="utf-8")

    def events(self, name: str) -> list[dict[str, Any]]:
        """Every record ``name`` logged, in order."""
        path = self.bin_dir / f"{name}.log.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]

    def calls(self, name: str) -> list[dict[str, Any]]:
        """The ``start`` record of each run of ``name``."""
        return [e for e in self.events(name) if e["event"] == "start"]

    def child_pids(self, name: str) -> list[int]:
        """PIDs of the children ``name`` spawned."""
        return [e["child_pid"] for e in self.events(name) if e["event"] == "child"]

    def remove(self, name: str) -> None:
        """Delete the ``name`` executable (to test a missing binary)."""
        (self.bin_dir / name).unlink()


def install_fake_clis(bin_dir: Path, names: Iterable[str] = CLI_NAMES) -> FakeCLIs:
    """Write fake executables for ``names`` into ``bin_dir`` (created) and return the handle."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    source = _SCRIPT.replace("__PYTHON__", sys.executable).replace("__SIDECAR__", repr(DEFAULT_SIDECAR))
    for name in names:
        path = bin_dir / name
        path.write_text(source, encoding="utf-8")
        path.chmod(0o755)
    return FakeCLIs(bin_dir)


def stdin_bytes(call: dict[str, Any]) -> bytes:
    """The exact stdin a logged call received."""
    return base64.b64decode(call["stdin_b64"])


def sha256(data: bytes) -> str:
    """Hex sha256, as the fakes log it."""
    return hashlib.sha256(data).hexdigest()


def is_alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie awaiting its reaper counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")
