"""The one way ask-fable runs a local executable: CLI calls, version probes and warm CLIs.

Every child gets its own process session (so the CLI and anything it spawns share one process
group), an environment built from an allow-list, stdin from the given bytes or ``/dev/null``,
and stdout/stderr pipes read concurrently under a byte bound. Whatever happens — normal exit,
timeout, cancellation — the whole group is ended before :func:`run_process` returns:

    timeout / cancel ─▶ SIGTERM to the group ─▶ grace ─▶ SIGKILL to the group ─▶ reap ─▶ drain
    normal exit      ─▶ SIGKILL to whatever is left in the group (stray grandchildren) ─▶ drain

The App's :class:`ProcessGates` bound concurrent processes per binary; the time a call spends
queued counts against its own timeout, so a call parked behind busy slots fails as
``OracleTimeout``. :func:`probe_version` runs ``--version`` probes the same way, with the base
allow-list only. A long-lived child (a warm Claude Code CLI) is started by
:func:`open_session_process` in its own session too, and :meth:`SessionProcess.end` ends its
whole group.

Every group still running is known to the process: :func:`kill_all_groups` ends them all at once.
A server stopping on a signal cancels its calls, whose groups end as above; when it cannot wait
any longer (a second signal, its deadline) it calls :func:`kill_all_groups` before exiting, and the
interpreter's exit does the same as a last resort.

:func:`run_attached` is the one exception to the pipes: a command the user drives by hand (the
Claude Code login of ``ask-fable login``) runs attached to the terminal, in the foreground.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import fnmatch
import os
import shutil
import signal
import subprocess
import time
import weakref
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.abc

from ask_fable.errors import BinaryMissing, OracleTimeout, UpstreamError

#: Variables every CLI may see: where to find programs and home, locale, terminal, temp dir,
#: user name, XDG base dirs (CLIs keep their login sessions there) and proxy / CA settings the
#: CLI needs to reach its own service.
BASE_ENV_ALLOW: tuple[str, ...] = (
    "PATH", "HOME", "LANG", "LANGUAGE", "LC_*", "TERM", "TMPDIR", "USER", "LOGNAME",
    "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
    "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "no_proxy",
    "all_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS",
)

#: Never copied from the server's environment, whatever an allow-list says.
_NEVER_PREFIXES = ("ASK_FABLE_",)

DEFAULT_MAX_OUTPUT_BYTES = 8 * 1024 * 1024
#: Seconds between SIGTERM and SIGKILL when a call is ended early.
DEFAULT_KILL_GRACE = 2.0
#: Seconds to wait for the pipes to reach EOF once the group is dead.
_DRAIN_TIMEOUT = 2.0
_READ_CHUNK = 65536


@dataclass(frozen=True)
class ProcessResult:
    """What a finished process produced. Output beyond the byte bound is read and discarded."""

    returncode: int
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    pid: int
    elapsed_s: float
    queued_s: float


def build_env(
    allowed: Iterable[str],
    extra: dict[str, str] | None = None,
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Copy only allow-listed variables from ``base`` (default ``os.environ``), then apply ``extra``.

    ``allowed`` holds exact names or shell-style patterns (``LC_*``). ``ASK_FABLE_*`` variables are
    never copied, even when a pattern would match; ``extra`` is applied verbatim on top.
    """
    source = os.environ if base is None else base
    patterns = list(allowed)
    exact = {p for p in patterns if not any(ch in p for ch in "*?[")}
    globs = [p for p in patterns if p not in exact]
    env: dict[str, str] = {}
    for name, value in source.items():
        if name.startswith(_NEVER_PREFIXES):
            continue
        if name in exact or any(fnmatch.fnmatchcase(name, g) for g in globs):
            env[name] = value
    if extra:
        env.update(extra)
    return env


# --- per-binary concurrency gate -------------------------------------------------------------


_Semaphores = dict[tuple[str, int], anyio.Semaphore]


class ProcessGates:
    """The per-binary concurrency gates of one App: ``limit`` slots per binary name.

    Semaphores belong to one event loop, so each loop that uses the gates gets its own set.
    """

    def __init__(self) -> None:
        self._per_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Semaphores] = (
            weakref.WeakKeyDictionary()
        )

    def _semaphore(self, gate: str, limit: int) -> anyio.Semaphore:
        per_loop = self._per_loop.setdefault(asyncio.get_running_loop(), {})
        key = (gate, limit)
        if key not in per_loop:
            per_loop[key] = anyio.Semaphore(limit)
        return per_loop[key]

    @contextlib.asynccontextmanager
    async def slot(self, gate: str, limit: int) -> AsyncIterator[None]:
        """Hold one of ``limit`` slots of the per-binary ``gate`` (``limit <= 0``: no gate).

        Waiting for a slot is an ordinary checkpoint, so an enclosing deadline bounds the queueing.
        """
        if limit <= 0:
            yield
            return
        async with self._semaphore(gate, limit):
            yield


# --- bounded pipe reading -------------------------------------------------------------------


@dataclass
class _Capture:
    limit: int
    data: bytearray = field(default_factory=bytearray)
    truncated: bool = False

    def feed(self, chunk: bytes) -> None:
        room = self.limit - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        if len(chunk) > max(room, 0):
            self.truncated = True


async def _pump(stream: anyio.abc.ByteReceiveStream, capture: _Capture) -> None:
    # Keep reading past the bound so the child never blocks on a full pipe.
    with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
        while True:
            capture.feed(await stream.receive(_READ_CHUNK))


async def _feed_stdin(stream: anyio.abc.ByteSendStream, data: bytes) -> None:
    # A CLI that exits without reading its stdin is not an error of ours.
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, BrokenPipeError,
                             ConnectionResetError):
        await stream.send(data)
    with contextlib.suppress(Exception):
        await stream.aclose()


# --- group termination ----------------------------------------------------------------------


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


#: Process groups of :func:`run_process` children not ended yet (their leaders' pids).
_LIVE_GROUPS: set[int] = set()


def kill_all_groups() -> int:
    """SIGKILL every child process group still running (calls and warm CLIs); returns how many.

    Safe from a signal handler or another thread: it only reads copies of the live sets and sends
    signals.
    """
    groups = {*_LIVE_GROUPS, *(session.pid for session in list(_LIVE_SESSIONS) if session.returncode is None)}
    for pgid in groups:
        _signal_group(pgid, signal.SIGKILL)
    return len(groups)


async def _leader_exit(process: anyio.abc.Process) -> int:
    """The leader's exit status, without waiting for its pipes.

    ``Process.wait()`` on asyncio also waits for every pipe to close, which a grandchild holding
    stdout can postpone forever; the return code is known as soon as the leader is reaped.
    """
    delay = 0.002
    while (code := process.returncode) is None:
        await anyio.sleep(delay)
        delay = min(delay * 2, 0.05)
    return code


async def _end_group(process: anyio.abc.Process, grace: float) -> None:
    """SIGTERM the group, give the leader ``grace`` seconds, then SIGKILL the group."""
    pgid = process.pid
    if process.returncode is None:
        _signal_group(pgid, signal.SIGTERM)
        with anyio.move_on_after(grace):
            await _leader_exit(process)
    # Even when the leader exited on SIGTERM, a descendant may ignore it: kill the whole group.
    _signal_group(pgid, signal.SIGKILL)
    with anyio.move_on_after(grace + 5):
        await _leader_exit(process)


async def _run_spawned(
    process: anyio.abc.Process, stdin: bytes | None, out: _Capture, err: _Capture, exit_code: list[int]
) -> None:
    """Feed stdin and read both pipes until the leader exits; then clear the group and drain.

    The leader's status goes into ``exit_code`` the moment it is known, and the drain runs in its
    own bounded, shielded scope: a deadline that falls during the drain cannot turn a finished
    process into a timeout or cut its output short.
    """
    assert process.stdout is not None and process.stderr is not None
    drained = (anyio.Event(), anyio.Event())
    # Shielded from the caller's deadline; ended explicitly once the drain is over or abandoned.
    pump_scopes = (anyio.CancelScope(shield=True), anyio.CancelScope(shield=True))

    async def pump(
        stream: anyio.abc.ByteReceiveStream, capture: _Capture, done: anyio.Event, scope: anyio.CancelScope
    ) -> None:
        with scope:
            try:
                await _pump(stream, capture)
            finally:
                done.set()

    async with anyio.create_task_group() as tasks:
        try:
            tasks.start_soon(pump, process.stdout, out, drained[0], pump_scopes[0])
            tasks.start_soon(pump, process.stderr, err, drained[1], pump_scopes[1])
            if stdin is not None and process.stdin is not None:
                tasks.start_soon(_feed_stdin, process.stdin, stdin)
            exit_code.append(await _leader_exit(process))
            # The leader is gone; stray descendants would otherwise hold the pipes open forever.
            _signal_group(process.pid, signal.SIGKILL)
            with anyio.CancelScope(shield=True), anyio.move_on_after(_DRAIN_TIMEOUT):
                for done in drained:
                    await done.wait()
        finally:
            for scope in pump_scopes:
                scope.cancel()
            tasks.cancel_scope.cancel()


def _resolve(argv: list[str], env: Mapping[str, str]) -> str:
    """``argv[0]`` as an executable path on ``env["PATH"]``; :class:`BinaryMissing` when it is not."""
    if not argv:
        raise ValueError("argv must name a program")
    resolved = shutil.which(argv[0], path=env.get("PATH", ""))
    if resolved is None:
        raise BinaryMissing(f"`{argv[0]}` is not installed or not on PATH", binary=argv[0])
    return resolved


async def _spawn(
    resolved: str, argv: list[str], *, stdin_pipe: bool, env: dict[str, str], cwd: str | None
) -> anyio.abc.Process:
    """Start ``argv`` (its program already resolved) as the leader of a new process session."""
    try:
        return await anyio.open_process(
            [resolved, *argv[1:]],
            stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        raise UpstreamError(f"could not start `{argv[0]}`: {exc.strerror or exc}") from exc


async def run_process(
    argv: list[str],
    *,
    stdin: bytes | None,
    env: dict[str, str],
    timeout: float,
    gates: ProcessGates | None = None,
    gate: str = "",
    gate_limit: int = 0,
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
    cwd: str | None = None,
    kill_grace: float = DEFAULT_KILL_GRACE,
) -> ProcessResult:
    """Run ``argv`` in a new session and return its output, never leaving a process behind.

    ``argv[0]`` is resolved with ``shutil.which`` against ``env["PATH"]`` (missing →
    :class:`BinaryMissing`). ``env`` is used exactly as given. ``stdin`` bytes are written then
    closed (``None`` → ``/dev/null``). ``timeout`` covers queueing for one of ``gate_limit`` slots
    of ``gates``' ``gate`` (no ``gates`` or ``gate_limit <= 0``: not gated) plus the run; past it
    the group gets SIGTERM, ``kill_grace`` seconds, SIGKILL, and :class:`OracleTimeout` is raised.
    Cancellation ends the group the same way.
    """
    name = argv[0] if argv else ""
    resolved = _resolve(argv, env)
    started = time.monotonic()
    queued_s = 0.0
    spawned: list[anyio.abc.Process] = []
    out = _Capture(max_output_bytes)
    err = _Capture(max_output_bytes)
    exit_code: list[int] = []
    slot = gates.slot(gate or name, gate_limit) if gates is not None else contextlib.nullcontext()

    with anyio.move_on_after(timeout):
        async with slot:
            queued_s = time.monotonic() - started
            # Shielded so a cancel arriving mid-spawn cannot leave a child nobody will kill.
            with anyio.CancelScope(shield=True):
                process = await _spawn(resolved, argv, stdin_pipe=stdin is not None, env=env, cwd=cwd)
            spawned.append(process)
            _LIVE_GROUPS.add(process.pid)
            try:
                await _run_spawned(process, stdin, out, err, exit_code)
            finally:
                with anyio.CancelScope(shield=True):
                    await _end_group(process, kill_grace)
                    _LIVE_GROUPS.discard(process.pid)
                    await _close(process)

    elapsed = time.monotonic() - started
    if not exit_code:
        if not spawned:
            raise OracleTimeout(
                f"`{name}` waited {elapsed:.1f}s for a free slot (limit {gate_limit} per binary) "
                f"and ran out of its {timeout:g}s timeout",
                binary=name,
            )
        raise OracleTimeout(
            f"`{name}` did not finish within {timeout:g}s; its process group was killed", binary=name
        )
    return ProcessResult(
        returncode=exit_code[0],
        stdout=bytes(out.data),
        stderr=bytes(err.data),
        stdout_truncated=out.truncated,
        stderr_truncated=err.truncated,
        pid=spawned[0].pid,
        elapsed_s=elapsed,
        queued_s=queued_s,
    )


async def _close(process: anyio.abc.Process) -> None:
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            with contextlib.suppress(Exception):
                await stream.aclose()
    # Also release the event loop's transport now, not at garbage collection after the loop is gone.
    with contextlib.suppress(Exception), anyio.move_on_after(2):
        await process.aclose()


# --- version probes -------------------------------------------------------------------------

#: Output of a ``--version`` probe kept (a version is one short line).
_PROBE_OUTPUT_BYTES = 64 * 1024


async def probe_version(binary: str, timeout: float) -> tuple[bool, str]:
    """Run ``binary --version`` like any CLI call (base allow-list only: no key reaches it).

    Returns (succeeded, first output line or the reason it failed); never raises for the probe's
    own failure.
    """
    label = f"`{Path(binary).name} --version`"
    try:
        result = await run_process([binary, "--version"], stdin=None, env=build_env(BASE_ENV_ALLOW),
                                   timeout=timeout, max_output_bytes=_PROBE_OUTPUT_BYTES, kill_grace=0.5)
    except OracleTimeout:
        return False, f"{label} did not answer within {timeout:g}s"
    except (BinaryMissing, UpstreamError) as exc:
        return False, f"cannot start {binary}: {exc.detail}"
    output = result.stdout.decode("utf-8", "replace") + "\n" + result.stderr.decode("utf-8", "replace")
    first = next((line.strip() for line in output.splitlines() if line.strip()), "")
    if result.returncode != 0:
        return False, f"{label} exited {result.returncode}: {first[:160]}"
    return True, first[:120]


def run_attached(argv: list[str], env: Mapping[str, str]) -> int:
    """Run ``argv`` attached to this terminal (stdin, stdout and stderr inherited) until it exits, and
    return its exit status (130 when Ctrl-C ended it).

    For a command the user drives by hand, such as a login that asks questions: the child stays in
    this process group, so Ctrl-C reaches it as it reaches us, and we wait for it to finish.
    """
    resolved = _resolve(argv, env)
    process = subprocess.Popen([resolved, *argv[1:]], env=dict(env))
    while True:
        try:
            code = process.wait()
        except KeyboardInterrupt:
            continue  # the child got the same Ctrl-C; wait for it to end
        return 130 if code == -signal.SIGINT else code


# --- long-lived children ----------------------------------------------------------------------


class SessionProcess:
    """A long-lived child (a warm CLI) in its own process session, its pipes left to the caller.

    :meth:`end` ends the whole group, so nothing the CLI spawned outlives it. Groups still alive
    when the interpreter exits are killed then, as a last resort.
    """

    def __init__(self, process: anyio.abc.Process) -> None:
        self.process = process
        _LIVE_SESSIONS.add(self)

    @property
    def pid(self) -> int:
        """The leader's pid (also the process group id)."""
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        """The leader's exit status, ``None`` while it runs."""
        return self.process.returncode

    async def wait(self) -> int:
        """The leader's exit status, once it has exited (its pipes may still be open)."""
        return await _leader_exit(self.process)

    async def clear_group_on_exit(self) -> None:
        """Once the leader exits, kill what is left of its group, so no descendant holds its pipes
        open (the reader then sees the end of the output)."""
        await _leader_exit(self.process)
        _signal_group(self.pid, signal.SIGKILL)

    async def end(self, *, graceful: float = 0.0, kill_grace: float = DEFAULT_KILL_GRACE) -> None:
        """Close stdin, give the leader ``graceful`` seconds to exit on its own, then end the group.

        Every wait is bounded and shielded: a cancelled caller still leaves no process behind.
        """
        with anyio.CancelScope(shield=True):
            if self.process.stdin is not None:
                with contextlib.suppress(Exception):
                    await self.process.stdin.aclose()
            if graceful > 0:
                with anyio.move_on_after(graceful):
                    await _leader_exit(self.process)
            await _end_group(self.process, kill_grace)
            await _close(self.process)
        _LIVE_SESSIONS.discard(self)


async def open_session_process(
    argv: list[str], *, env: dict[str, str], cwd: str | None = None
) -> SessionProcess:
    """Start ``argv`` in a new process session with pipes on stdin, stdout and stderr.

    ``argv[0]`` is resolved against ``env["PATH"]`` (missing → :class:`BinaryMissing`); a start
    failure is :class:`UpstreamError`. The caller reads and writes the pipes and must
    :meth:`SessionProcess.end` it.
    """
    resolved = _resolve(argv, env)
    with anyio.CancelScope(shield=True):
        process = await _spawn(resolved, argv, stdin_pipe=True, env=env, cwd=cwd)
    return SessionProcess(process)


#: Session processes not ended yet (held even when their owner was dropped without ending them).
_LIVE_SESSIONS: set[SessionProcess] = set()


atexit.register(kill_all_groups)
