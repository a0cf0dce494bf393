"""Where the ``ask-fable`` command meets the terminal: one-line errors, never a traceback.

- :func:`guarded` runs the command. Anything that escapes it becomes one line,
  ``ask-fable: error: …``, and exit 1 (the traceback as well when ``ASK_FABLE_DEBUG`` asks for
  it); Ctrl-C becomes ``ask-fable: interrupted`` and 130; a reader that went away
  (``ask-fable tools | head``) ends the command quietly with 141, as it would any shell tool.
- :func:`undecodable_argument` finds a command-line argument that is not valid UTF-8 text.
- :data:`TERMINAL_USAGE` is what a bare ``ask-fable`` prints on a terminal, where no MCP client
  is listening to a stdio server.
- :func:`interrupt_ends_input` makes Ctrl-C stop a stdio server: the first one ends the server's
  input, as a client closing its end would; a second one exits at once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any

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
        text = exc.detail + (f"; {hint}" if hint else "")
    elif problems is not None:
        from ask_fable.config import config_file_path

        text = f"{problems} (check the environment and {config_file_path()})"
    elif isinstance(exc, OSError) and exc.strerror:
        text = f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    else:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return redact(" ".join(text.split()), _secrets())


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


@contextlib.contextmanager
def interrupt_ends_input(end_input: Callable[[], None] | None) -> Iterator[Callable[[], bool]]:
    """While serving stdio, Ctrl-C ends the server's input; a second Ctrl-C exits at once.

    Yields a function telling whether Ctrl-C was pressed. Without ``end_input`` (no stdin to
    end) or outside the main thread, Ctrl-C keeps its usual KeyboardInterrupt.
    """
    pressed: list[int] = []

    def on_interrupt(signum: int, frame: FrameType | None) -> None:
        pressed.append(signum)
        if len(pressed) == 1 and end_input is not None:
            end_input()
            return
        with contextlib.suppress(OSError):
            os.write(2, b"ask-fable: interrupted\n")
        os._exit(EXIT_INTERRUPTED)  # the server did not stop on the first Ctrl-C: do not wait for it

    previous: Any = None
    if end_input is not None:
        with contextlib.suppress(ValueError):  # not the main thread
            previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        yield lambda: bool(pressed)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
