"""Fuzzed MCP input: every tool with random, wrong-typed, missing, huge and odd-unicode arguments.

Every backend points at loopback fakes (the fake provider, fake CLIs first on PATH, the Claude CLI
bridge on the fake ``claude``), so an argument set that happens to be valid still finishes fast and
offline. Each result must be structured (``status`` present, ``isError`` mirroring it, no traceback
text), never ``kind: internal`` (a bug), and the server must answer the next good call.

In memory the examples run over one client through a blocking portal; over stdio raw JSON-RPC
lines are written to a spawned ``ask-fable``, including bytes that are not UTF-8 and escaped lone
surrogates. ``pytest -m slow`` runs the larger variants.
"""

from __future__ import annotations

import functools
import json
import os
import string
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from ask_fable.backends.http_client import RetryPolicy
from ask_fable.surface.registry import all_tools
from tests.e2e.helpers import child_env
from tests.fakes.fake_cli import FakeCLIs, install_fake_clis
from tests.fakes.fake_provider import FakeProvider
from tests.reliability.stdio_peer import StdioPeer
from tests.reliability.support import make_server, offline_settings, payload_of

SPECS = {spec.name: spec for spec in all_tools()}
FAST = RetryPolicy(attempts=2, base_delay=0.01, max_delay=0.01)
FUZZ_HEALTH = [
    HealthCheck.function_scoped_fixture,
    HealthCheck.too_slow,
    HealthCheck.data_too_large,
    HealthCheck.large_base_example,
]

# --- strategies -----------------------------------------------------------------------------------

ODD_CHARS = st.characters(categories=["Cs", "Co", "Cn", "Cc", "Cf", "Zl", "Zp", "Mn", "So"])
PLAUSIBLE = st.sampled_from(
    [
        "Is the retry loop in the fetcher bounded?",
        "fable",
        "m3",
        "default",
        "all",
        "glm",
        "ollama:qwen3:8b",
        "full",
        "24h",
        "provider",
        "safe",
        "deep",
        "1h",
        "../../etc/passwd",
        "",
        " ",
        "k" * 300,
    ]
)


QUESTIONS = st.one_of(
    st.sampled_from(
        [
            "Is the retry loop in the fetcher bounded?",
            "Why does the pool deadlock on close?",
            "Should the cache key include the tenant id?",
        ]
    ),
    st.text(min_size=3, max_size=200),
)


def scalars(json_safe: bool) -> st.SearchStrategy[Any]:
    """Leaf values; NaN and infinities only where no JSON encoder sits in between."""
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=not json_safe, allow_infinity=not json_safe),
        st.text(max_size=40),
        st.text(ODD_CHARS, max_size=20) if not json_safe else st.text(max_size=5),
        PLAUSIBLE,
        st.integers(min_value=10_000, max_value=400_000).map(lambda n: "y" * n),
    )


@functools.cache
def values(json_safe: bool) -> st.SearchStrategy[Any]:
    """Any JSON-ish value: scalars, lists and objects nested a little (built once: a strategy is
    immutable, and building a recursive one for every example cost more than running the call)."""
    return st.recursive(
        scalars(json_safe),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
        max_leaves=8,
    )


def arguments_for(name: str, json_safe: bool) -> st.SearchStrategy[dict[str, Any]]:
    """Random argument dicts for ``name``: its own fields (any subset, any type) plus unknown keys."""
    spec = SPECS.get(name)
    return _arguments_with(tuple(spec.args.model_fields) if spec is not None else ("question",), json_safe)


@functools.cache
def _arguments_with(fields: tuple[str, ...], json_safe: bool) -> st.SearchStrategy[dict[str, Any]]:
    """:func:`arguments_for` by the tool's fields, built once for each."""
    own = st.fixed_dictionaries({}, optional={field: values(json_safe) for field in fields})
    extra = st.dictionaries(
        st.text(string.ascii_letters + "_-", min_size=1, max_size=12), values(json_safe), max_size=2
    )
    fuzzed = st.tuples(own, extra).map(lambda pair: {**pair[1], **pair[0]})
    # Mostly-valid calls too, so the pipeline and the backends run, not only argument validation.
    nearly = st.fixed_dictionaries(
        {"question": QUESTIONS}, optional={f: values(json_safe) for f in fields[1:2]}
    )
    return st.one_of(fuzzed, nearly) if "question" in fields else fuzzed


def calls(json_safe: bool) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    """(tool name, arguments): registered tools most of the time, unknown names sometimes."""
    unknown = st.text(max_size=30).filter(lambda n: n not in SPECS)
    name = st.one_of(st.sampled_from(sorted(SPECS)), st.sampled_from(sorted(SPECS)), unknown)
    return name.flatmap(lambda n: st.tuples(st.just(n), arguments_for(n, json_safe)))


# --- wiring ---------------------------------------------------------------------------------------


@pytest.fixture
def offline(
    fp: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[FakeProvider, FakeCLIs]:
    """The fake provider answering every model route, and fake CLIs (claude included) first on PATH."""
    clis = install_fake_clis(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{clis.bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir(tmp_path)
    fp.set_json("GET", "/api/v1/models", {"data": []})
    fp.set_json("GET", "/v1/models", {"data": []})
    return fp, clis


Tally = Counter[str]


@pytest.fixture
def tally(request: pytest.FixtureRequest) -> Iterator[Tally]:
    """Counts of result statuses/kinds seen by one test, printed as its figure."""
    seen: Tally = Counter()
    yield seen
    outcomes = dict(seen.most_common())
    print(f"{request.node.name}: {sum(seen.values())} fuzzed calls, 0 crashes; outcomes {outcomes}")


@pytest.fixture
def memory_client(
    offline: tuple[FakeProvider, FakeCLIs], tally: Tally
) -> Iterator[tuple[BlockingPortal, Client]]:
    """One in-memory client on a server with every tool, usable from synchronous hypothesis tests."""
    fp, clis = offline
    server = make_server(["all"], retry=FAST, **offline_settings(fp, clis))
    with (
        start_blocking_portal("asyncio") as portal,
        portal.wrap_async_context_manager(Client(server)) as client,
    ):
        yield portal, client


def _outcome(payload: dict[str, Any]) -> str:
    return payload["status"] if payload["status"] != "error" else f"error:{payload.get('kind')}"


def _check_round(
    portal: BlockingPortal, client: Client, name: str, arguments: dict[str, Any], tally: Tally
) -> None:
    async def both() -> tuple[Any, Any]:
        result = await client.call_tool(name, arguments)
        good = await client.call_tool("ask_fable_help", {"topic": "sidecar"})
        return result, good

    result, good = portal.call(both)
    payload = payload_of(result)
    tally[_outcome(payload)] += 1
    assert payload.get("kind") != "internal", f"{name} crashed on {str(arguments)[:500]}: {payload}"
    if name not in SPECS:
        assert payload["kind"] == "unknown_tool"
    assert payload_of(good)["status"] == "ok"


def _fuzz_memory(
    memory_client: tuple[BlockingPortal, Client], case: tuple[str, dict[str, Any]], tally: Tally
) -> None:
    portal, client = memory_client
    _check_round(portal, client, *case, tally)


@settings(max_examples=400, deadline=None, suppress_health_check=FUZZ_HEALTH, database=None)
@given(case=calls(json_safe=False))
def test_fuzzed_calls_in_memory(
    memory_client: tuple[BlockingPortal, Client], case: tuple[str, dict], tally: Tally
) -> None:
    """400 random calls across every tool: structured results, no internal errors, the next call works."""
    _fuzz_memory(memory_client, case, tally)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None, suppress_health_check=FUZZ_HEALTH, database=None)
@given(case=calls(json_safe=False))
def test_fuzzed_calls_in_memory_long(
    memory_client: tuple[BlockingPortal, Client], case: tuple[str, dict], tally: Tally
) -> None:
    """The same with 3,000 examples."""
    _fuzz_memory(memory_client, case, tally)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_tool_survives_hostile_values(
    memory_client: tuple[BlockingPortal, Client], name: str, tally: Tally
) -> None:
    """Each tool with every field set to each hostile value in turn: a structured answer each time."""
    portal, client = memory_client
    hostile: list[Any] = [
        None,
        0,
        -1,
        2**64,
        1.5,
        float("nan"),
        True,
        [],
        {},
        ["a", 1],
        {"x": {"y": []}},
        "\ud800",
        "\udfff\ud800",
        "\x00\x1b[31m",
        "\u202e" * 50,
        "é" * 70_000,
        "x" * 1_200_000,
    ]
    fields = list(SPECS[name].args.model_fields) or ["unexpected"]
    for value in hostile:
        _check_round(portal, client, name, {field: value for field in fields}, tally)
    _check_round(portal, client, name, {}, tally)
    _check_round(portal, client, name, {"no_such_argument": "x"}, tally)


# --- over stdio ------------------------------------------------------------------------------------


@pytest.fixture
def stdio_peer(offline: tuple[FakeProvider, FakeCLIs]) -> Iterator[StdioPeer]:
    """A spawned ``ask-fable`` serving every tool against the fakes, already initialized."""
    fp, clis = offline
    wiring = offline_settings(fp, clis)
    env = child_env(
        PATH=os.environ["PATH"],
        ASK_FABLE_TOOLSETS="all",
        **{
            f"ASK_FABLE_{k.upper()}": str(v).lower() if isinstance(v, bool) else str(v)
            for k, v in wiring.items()
        },
    )
    peer = StdioPeer(env)
    try:
        peer.initialize()
        yield peer
    finally:
        code = peer.close()
        stderr = bytes(peer.stderr).decode(errors="replace")
        assert code == 0, stderr[-3000:]
        assert "Traceback" not in stderr, stderr[-3000:]
        bad = [line for line in peer.lines if not _is_json_rpc(line)]
        assert bad == [], f"non-JSON-RPC stdout lines: {bad[:3]}"


def _is_json_rpc(line: bytes) -> bool:
    try:
        message = json.loads(line)
    except ValueError:
        return False
    return isinstance(message, dict) and message.get("jsonrpc") == "2.0"


def _stdio_round(peer: StdioPeer, name: str, arguments: Any, tally: Tally | None = None) -> None:
    answer = peer.call_tool(name, arguments, timeout=60)
    if "error" in answer:  # a JSON-RPC error (e.g. arguments that are not an object) is structured too
        assert {"code", "message"} <= set(answer["error"]), answer
        if tally is not None:
            tally[f"jsonrpc-error:{answer['error']['code']}"] += 1
    else:
        content = answer["result"]
        payload = content.get("structuredContent")
        assert isinstance(payload, dict) and "status" in payload, content
        assert payload.get("kind") != "internal", f"{name} crashed on {str(arguments)[:300]}: {payload}"
        assert content.get("isError", False) is (payload["status"] == "error")
        assert "Traceback (most recent call last)" not in json.dumps(content)
        if tally is not None:
            tally[_outcome(payload)] += 1
    good = peer.call_tool("ask_fable_help", {"topic": "sidecar"})
    assert good["result"]["structuredContent"]["status"] == "ok"


@settings(max_examples=60, deadline=None, suppress_health_check=FUZZ_HEALTH, database=None)
@given(case=calls(json_safe=True))
def test_fuzzed_calls_over_stdio(stdio_peer: StdioPeer, case: tuple[str, dict], tally: Tally) -> None:
    """60 random calls over stdio: structured answers, the next good call works, stdout stays JSON-RPC."""
    _stdio_round(stdio_peer, *case, tally)


@pytest.mark.slow
@settings(max_examples=500, deadline=None, suppress_health_check=FUZZ_HEALTH, database=None)
@given(case=calls(json_safe=True))
def test_fuzzed_calls_over_stdio_long(stdio_peer: StdioPeer, case: tuple[str, dict], tally: Tally) -> None:
    """The same with 500 examples."""
    _stdio_round(stdio_peer, *case, tally)


def test_malformed_wire_input_over_stdio(stdio_peer: StdioPeer) -> None:
    """Bad UTF-8, lone surrogates, non-object arguments, broken JSON: answered or skipped, never fatal.

    Requests 901 and 902 escape lone surrogates; they are sent for their effect on the server (it must
    keep serving); that such a request gets its answer is the test below.
    """
    peer = stdio_peer
    raw_lines = [
        b'{"jsonrpc": "2.0", "id": 900, "method": "tools/call", "params": {"name": "ask_fable_help", '
        b'"arguments": {"topic": "\xff\xfe\xc3\x28"}}}\n',
        b'{"jsonrpc": "2.0", "id": 901, "method": "tools/call", "params": {"name": "ask", '
        b'"arguments": {"question": "\\ud800\\udc00\\ud800 why?"}}}\n',
        b'{"jsonrpc": "2.0", "id": 902, "method": "tools/call", "params": {"name": "ask_glm", '
        b'"arguments": {"question": "lone \\udfff surrogate in the bounded retry loop?"}}}\n',
        b"this is not json at all\n",
        b'{"jsonrpc": "2.0", "id": 903, "method": "tools/call", "params": {"name": "ask_glm"\n',
        b'{"jsonrpc": "2.0", "id": 904, "method": "no/such/method"}\n',
        b"\xc0\xaf\xed\xa0\x80\n",
        b"[]\n",
        b"\n",
    ]
    for line in raw_lines:
        peer.send_raw(line)
    for name, arguments in [
        ("ask_glm", None),
        ("ask_glm", ["question"]),
        ("ask_glm", "question?"),
        ("ask_council", 42),
        ("context_write", {"key": "k" * 10_000, "value": "\x00"}),
    ]:
        _stdio_round(peer, name, arguments)
    for request_id in (900, 904):
        answer = peer.wait_for(request_id, timeout=60)
        assert "result" in answer or "error" in answer
    _stdio_round(peer, "ask_fable_help", {})


def test_request_escaping_a_lone_surrogate_gets_an_answer(stdio_peer: StdioPeer) -> None:
    """A question with an escaped lone surrogate is answered (or refused with a JSON-RPC error)."""
    stdio_peer.send_raw(
        b'{"jsonrpc": "2.0", "id": 950, "method": "tools/call", "params": {"name": '
        b'"ask_fable_help", "arguments": {"topic": "sidecar \\ud83d"}}}\n'
    )
    try:
        answer = stdio_peer.wait_for(950, timeout=30)
    finally:
        _stdio_round(stdio_peer, "ask_fable_help", {})  # the server keeps serving either way
    assert "result" in answer or "error" in answer


async def test_a_call_whose_only_context_is_missing_passes_the_well_formed_check() -> None:
    """A case the fuzzer found: ``ask`` with an empty question and a ``context_ref`` that names nothing
    stored is answered ``needs_context`` (a contract status), which the check must accept."""
    async with Client(make_server()) as client:
        result = await client.call_tool("ask", {"question": "",
                                                "context_ref": "Is the retry loop in the fetcher bounded?"})
    assert payload_of(result)["status"] == "needs_context"
