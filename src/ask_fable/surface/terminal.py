"""Where the ``ask-fable`` command meets the terminal: one-line errors, never a traceback.

- :func:`guarded` runs the command. Anything that escapes it becomes one line,
  ``ask-fable: error: …``, and exit 1 (the traceback as well when ``ASK_FABLE_DEBUG`` asks for
  it); Ctrl-C becomes ``ask-fable: interrupted`` and 130; a reader that went away
  (``ask-fable tools | head``) ends the command quietly with 141, as it would any shell tool.
- :func:`undecodable_argument` finds a command-line argument that is not valid UTF-8 text.
- :data:`TERMINAL_USAGE` is what a bare ``ask-fable`` prints on a terminal, where no MCP client
  is listening to a stdio server.
- :func:`stop_on_signals` makes SIGTERM, SIGHUP and Ctrl-C (SIGINT) stop a server in order: its
  calls are cancelled, their child processes ended and its stores closed; a second signal, or a
  server that has not stopped within :data:`STOP_DEADLINE` seconds, kills every child process
  group and exits at once.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from ask_fable.redact import SecretSource

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell tool killed by a closed pipe reports
DEBUG_VARIABLE = "ASK_FABLE_DEBUG"

TERMINAL_USAGE = """\
ask-fable serves MCP over stdin/stdout for a client (Claude Code, Cursor, Windsurf, opencode,
Codex), which starts it by itself; on a terminal there is no client to answer. Try:

  ask-fable init claude                    register it with a client (or cursor, windsurf, opencode, codex)
  ask-fable doctor                         see which model backends this machine can reach
  ask-fable ask "QUESTION" --context-file FILE
                                           ask from this shell
  ask-fable --help                         every command
  ask-fable serve                          serve stdio here anyway (Ctrl-D or Ctrl-C stops it)
"""


def say(message: str) -> None:
    """Print ``ask-fable: <message>`` on stderr, even when stderr is already broken."""
    with contextlib.suppress(OSError, ValueError):
        print(f"ask-fable: {message}", file=sys.stderr, flush=True)


def stdin_is_terminal() -> bool:
    """Whether a person, not an MCP client, is at the other end of stdin."""
    try:
        return bool(sys.stdin is not None and sys.stdin.isatty())
    except (OSError, ValueError):
        return False


def undecodable_argument(arguments: Sequence[str]) -> str | None:
    """The first argument that was not valid UTF-8, shown with replacement characters; else None.

    Python hands undecodable bytes in as lone surrogates; no tool or store can take them.
    """
    for argument in arguments:
        try:
            argument.encode("utf-8")
        except UnicodeEncodeError:
            return argument.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return None


@contextlib.contextmanager
def no_collection_while_loading() -> Iterator[None]:
    """Run a command with the cyclic garbage collector off until :func:`loaded`, and on again after
    it (for a caller in the same process, as it was).

    Starting a command imports and builds what it keeps to its end (modules, pydantic models, the
    tool table) and frees little; every collection meanwhile walks all of it again, about a tenth
    of a command's start. A command that goes on working (a server, a tool call) turns collection
    back on with :func:`loaded`; a short one ends before it would matter.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def loaded() -> None:
    """The command is loaded and starts its work: the garbage collector runs again."""
    gc.enable()


def guarded(run: Callable[[], int]) -> int:
    """``run()``, with every escaping exception turned into one line and an exit code."""
    try:
        code = run()
        sys.stdout.flush()  # a closed pipe shows up here for short, buffered output
        return code
    except KeyboardInterrupt:
        say("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except Exception as exc:
        leaves = list(_leaves(exc))
        if leaves and all(isinstance(leaf, BrokenPipeError) for leaf in leaves):
            _silence_stdout()
            return EXIT_BROKEN_PIPE
        debug = debug_requested()
        if debug:
            import traceback

            with contextlib.suppress(OSError, ValueError):
                traceback.print_exc(file=sys.stderr)
        cause = leaves[0] if leaves else exc
        say(f"error: {describe(cause)}"
            + ("" if debug or _expected(cause) else f" (set {DEBUG_VARIABLE}=1 to see the traceback)"))
        return EXIT_ERROR


def _expected(exc: BaseException) -> bool:
    """A failure the user can fix from its message alone (ours, or a setting that does not validate)."""
    from ask_fable.errors import AskFableError

    return isinstance(exc, AskFableError) or _settings_problems(exc) is not None


def describe(exc: BaseException) -> str:
    """One line for an exception: ours by their detail, settings by name, OS errors by reason."""
    from ask_fable.errors import AskFableError
    from ask_fable.redact import redact

    problems = _settings_problems(exc)
    if isinstance(exc, AskFableError):
        hint = exc.extra.get("hint")
        text = exc.detail + (f"; {hint}" if hint and not _said(exc.detail, str(hint)) else "")
    elif problems is not None:
        from ask_fable.config import config_file_path

        text = f"{problems} (check the environment and {config_file_path()})"
    elif isinstance(exc, OSError) and exc.strerror:
        text = f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    else:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return redact(" ".join(text.split()), _secrets())


def _said(detail: str, hint: str) -> bool:
    """Whether ``detail`` already gives every command ``hint`` names (`in backquotes`), so the hint
    would only repeat it on the one line a command prints."""
    import re

    commands = re.findall(r"`[^`]+`", hint)
    return bool(commands) and all(command in detail for command in commands)


def _settings_problems(exc: BaseException) -> str | None:
    """``invalid setting ASK_FABLE_X: what is wrong; …`` for a settings validation error, else None."""
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError) or exc.title != "Settings":
        return None
    from ask_fable.config import env_name

    return "; ".join(
        f"invalid setting {env_name(str(error['loc'][0])) if error['loc'] else 'value'}: {error['msg']}"
        for error in exc.errors()[:5]
    )


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


def _secrets() -> SecretSource:
    try:
        from ask_fable.config import load_settings

        return load_settings()
    except Exception:  # broken settings may be the very failure being reported
        return ()


def debug_requested() -> bool:
    """Whether ``ASK_FABLE_DEBUG`` (setting or variable) asks for tracebacks."""
    try:
        from ask_fable.config import load_settings

        return bool(load_settings().debug)
    except Exception:  # settings that do not load: read the variable itself
        return os.environ.get(DEBUG_VARIABLE, "").strip().lower() in ("1", "true", "yes", "on")


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


#: Signals that stop a server, by name, with the exit status the server then returns: Ctrl-C is an
#: interruption (130, as for any shell tool); SIGTERM and SIGHUP ask for an orderly stop (0).
STOP_SIGNALS: dict[str, int] = {"SIGINT": EXIT_INTERRUPTED, "SIGTERM": 0, "SIGHUP": 0}
#: Seconds a stopping server gets to cancel its calls and close its stores before its child
#: processes are killed and it exits at once.
STOP_DEADLINE = 8.0


class Stopping:
    """Which stop signal a server received (None until one arrives) and the exit status it implies."""

    def __init__(self) -> None:
        self.signal_name: str | None = None

    @property
    def exit_code(self) -> int:
        """The status to exit with: the signal's (see :data:`STOP_SIGNALS`), else 0."""
        return STOP_SIGNALS.get(self.signal_name or "", 0)

    def report(self) -> None:
        """Say on stderr why the server stopped (nothing when no signal arrived)."""
        if self.signal_name == "SIGINT":
            say("interrupted")
        elif self.signal_name is not None:
            say(f"stopped on {self.signal_name}")


def _exit_now(code: int, why: str, kill_children: Callable[[], object]) -> NoReturn:
    """Kill every child process group, say ``why`` and exit with ``code`` without any clean-up."""
    kill_children()
    with contextlib.suppress(OSError):
        os.write(2, f"ask-fable: {why}\n".encode())
    os._exit(code)


@contextlib.contextmanager
def stop_on_signals(stop: Callable[[], None] | None, *,
                    deadline: float = STOP_DEADLINE) -> Iterator[Stopping]:
    """While serving, SIGTERM, SIGHUP and SIGINT stop the server; yields what was received.

    The first one calls ``stop`` (it runs in a signal handler, so it may only set a flag or write
    to a pipe), which must make the server cancel its calls, close its stores and return. If the
    server has not returned ``deadline`` seconds later, or a second signal arrives, every child
    process group is killed and the process exits at once. Without ``stop`` the first signal does
    that. Outside the main thread nothing is installed.
    """
    import threading

    from ask_fable.backends.subprocess_runner import kill_all_groups  # never import in a handler

    stopping = Stopping()
    timers: list[threading.Timer] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if stopping.signal_name is not None or stop is None:
            first = stopping.signal_name or name
            _exit_now(STOP_SIGNALS.get(first, 0), f"{name}: stopped at once", kill_all_groups)
        stopping.signal_name = name
        with contextlib.suppress(OSError):
            os.write(2, f"ask-fable: {name}: cancelling calls in flight and stopping\n".encode())
        why = f"did not stop within {deadline:g}s: ended its child processes and exited"
        timer = threading.Timer(deadline, _exit_now, (stopping.exit_code, why, kill_all_groups))
        timer.daemon = True
        timers.append(timer)
        timer.start()
        stop()

    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for name in STOP_SIGNALS:
            signum = getattr(signal, name, None)
            if signum is not None:
                previous[signum] = signal.signal(signum, on_signal)
    try:
        yield stopping
    finally:
        for timer in timers:
            timer.cancel()
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def quiet_library_logs() -> None:
    """Keep libraries' own log lines out of a command's output: the server configures INFO logging
    for the MCP and HTTP libraries, and the database driver warns of each failed connection, while
    a command prints its result, or one line saying why it failed."""
    import logging

    for noisy in ("mcp", "httpx2", "httpx"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    logging.getLogger("psycopg").setLevel(logging.ERROR)
    # A server's line when its database stops answering: a command says so in its own result.
    logging.getLogger("ask_fable.database").setLevel(logging.ERROR)
