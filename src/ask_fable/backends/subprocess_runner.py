"""The one way a CLI backend runs a local executable.

Every call gets its own process session (so the CLI and anything it spawns share one process
group), an environment built from an allow-list, stdin from the given bytes or ``/dev/null``,
and stdout/stderr pipes read concurrently under a byte bound. Whatever happens — normal exit,
timeout, cancellation — the whole group is ended before :func:`run_process` returns:

    timeout / cancel ─▶ SIGTERM to the group ─▶ grace ─▶ SIGKILL to the group ─▶ reap ─▶ drain
    normal exit      ─▶ SIGKILL to whatever is left in the group (stray grandchildren) ─▶ drain

A per-binary gate bounds concurrent processes; the time a call spends queued counts against
its own timeout, so a call parked behind busy slots fails as ``OracleTimeout``.
"""

from __future__ import annotations

import asyncio
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

# Semaphores belong to one event loop; tests and embedders may run several loops in turn.
_GATES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, int], anyio.Semaphore]] = (
    weakref.WeakKeyDictionary()
)


def _gate_for(gate: str, limit: int) -> anyio.Semaphore:
    loop = asyncio.get_running_loop()
    per_loop = _GATES.setdefault(loop, {})
    key = (gate, limit)
    if key not in per_loop:
        per_loop[key] = anyio.Semaphore(limit)
    return per_loop[key]


@contextlib.asynccontextmanager
async def gate_slot(gate: str, limit: int) -> AsyncIterator[None]:
    """Hold one of ``limit`` slots of the per-binary ``gate`` (``limit <= 0``: no gate).

    Waiting for a slot is an ordinary checkpoint, so an enclosing deadline bounds the queueing.
    """
    if limit <= 0:
        yield
        return
    async with _gate_for(gate, limit):
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


async def run_process(
    argv: list[str],
    *,
    stdin: bytes | None,
    env: dict[str, str],
    timeout: float,
    gate: str,
    gate_limit: int,
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
    cwd: str | None = None,
    kill_grace: float = DEFAULT_KILL_GRACE,
) -> ProcessResult:
    """Run ``argv`` in a new session and return its output, never leaving a process behind.

    ``argv[0]`` is resolved with ``shutil.which`` against ``env["PATH"]`` (missing →
    :class:`BinaryMissing`). ``env`` is used exactly as given. ``stdin`` bytes are written then
    closed (``None`` → ``/dev/null``). ``timeout`` covers queueing at the ``gate`` (``gate_limit``
    slots; ``<= 0`` disables it) plus the run; past it the group gets SIGTERM, ``kill_grace``
    seconds, SIGKILL, and :class:`OracleTimeout` is raised. Cancellation ends the group the same way.
    """
    if not argv:
        raise ValueError("argv must name a program")
    name = argv[0]
    resolved = shutil.which(name, path=env.get("PATH", ""))
    if resolved is None:
        raise BinaryMissing(f"`{name}` is not installed or not on PATH", binary=name)

    started = time.monotonic()
    queued_s = 0.0
    spawned: list[anyio.abc.Process] = []
    out = _Capture(max_output_bytes)
    err = _Capture(max_output_bytes)
    exit_code: list[int] = []

    with anyio.move_on_after(timeout):
        async with gate_slot(gate, gate_limit):
            queued_s = time.monotonic() - started
            # Shielded so a cancel arriving mid-spawn cannot leave a child nobody will kill.
            with anyio.CancelScope(shield=True):
                try:
                    process = await anyio.open_process(
                        [resolved, *argv[1:]],
                        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE,
                        cwd=cwd,
                        env=env,
                        start_new_session=True,
                    )
                except OSError as exc:
                    raise UpstreamError(f"could not start `{name}`: {exc.strerror or exc}") from exc
            spawned.append(process)
            try:
                await _run_spawned(process, stdin, out, err, exit_code)
            finally:
                with anyio.CancelScope(shield=True):
                    await _end_group(process, kill_grace)
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
