"""A key echoed by a provider (error body, headers) or a CLI (stderr), or used by the caller as a
context key name or a session label, never reaches a result, stderr or any file under HOME."""

from __future__ import annotations

import os
from pathlib import Path

from tests.e2e.helpers import child_env
from tests.fakes.fake_cli import install_fake_clis
from tests.fakes.fake_provider import FakeProvider
from tests.reliability.stdio_peer import StdioPeer
from tests.reliability.support import DEEPSEEK_MODEL, GLM_MODEL, SIDECAR

KEY = "sk-PLANTED-wire-5c0ffee5c0ffee5c0ffee"
OLLAMA_KEY = "olk-PLANTED-9a8b7c6d5e4f3a2b1c0d"
QUESTION = "Is the token refresh race in the client fixed by this lock?"


def test_echoed_keys_never_reach_results_or_stderr(fp: FakeProvider, tmp_path: Path) -> None:
    """Provider errors and headers carrying the key, a CLI printing it: 0 hits on stdout and stderr."""
    clis = install_fake_clis(tmp_path / "bin", names=["mmx", "kimi"])
    clis.behave(
        "mmx", exit_code=1, stderr=f"auth failed: bearer {KEY} rejected\nAuthorization: Bearer {KEY}\n"
    )
    clis.behave("kimi", stderr=f"debug: using key {OLLAMA_KEY}\n", answer=f"Fine.\n\n{SIDECAR}\n")
    fp.enqueue(
        "anthropic",
        status=401,
        error=f"invalid x-api-key: {KEY}",
        headers={"x-echo-key": KEY},
        match=GLM_MODEL,
    )
    fp.enqueue(
        "anthropic",
        status=400,
        error=f"upstream saw Authorization: Bearer {KEY}",
        match=DEEPSEEK_MODEL,
        headers={"www-authenticate": f'Bearer realm="{KEY}"'},
        times=None,
    )
    fp.enqueue(
        "anthropic", status=429, retry_after=0.01, error=f"rate limited for {KEY}", match=GLM_MODEL
    )
    fp.enqueue(
        "anthropic",
        text=f"Fine.\n\n{SIDECAR}",
        headers={"x-request-key": KEY},
        match=GLM_MODEL,
        times=None,
    )
    fp.enqueue("ollama", status=403, error=f"key {OLLAMA_KEY} lacks scope", times=None)
    env = child_env(
        PATH=f"{clis.bin_dir}{os.pathsep}{os.environ['PATH']}",
        ASK_FABLE_TOOLSETS="all",
        ASK_FABLE_CACHE="false",
        ASK_FABLE_TIMEOUT="20",
        ASK_FABLE_GLM_BASE_URL=fp.base_url,
        ASK_FABLE_GLM_API_KEY=KEY,
        ASK_FABLE_DEEPSEEK_BASE_URL=fp.base_url,
        ASK_FABLE_DEEPSEEK_API_KEY=KEY,
        ASK_FABLE_OLLAMA_BASE_URL=fp.base_url,
        ASK_FABLE_OLLAMA_API_KEY=OLLAMA_KEY,
    )
    env.pop("ASK_FABLE_QUIET")  # the console writes progress and failures to stderr
    peer = StdioPeer(env)
    try:
        peer.initialize()
        results = [
            peer.call_tool(name, arguments, timeout=60)
            for name, arguments in [
                ("ask_glm", {"question": QUESTION}),
                ("ask_deepseek", {"question": QUESTION}),
                ("ask_glm", {"question": QUESTION}),
                ("ask_m3", {"question": QUESTION}),
                ("ask_kimi", {"question": QUESTION}),
                ("ask_ollama", {"question": QUESTION, "model": "qwen3:8b"}),
                (
                    "ask_council",
                    {
                        "question": QUESTION,
                        "models": ["glm", "deepseek", "m3", "ollama:qwen3:8b"],
                        "synthesizer": "glm",
                    },
                ),
                ("trace_list", {"limit": 20}),
                ("stats", {"window": "all"}),
                ("context_write", {"key": KEY, "value": "rotation notes"}),
                ("context_read", {"key": KEY}),
                ("context_list", {}),
                ("reset_session", {"session": f"rotate {KEY}"}),
                ("session_peek", {"session_key": f"rotate {KEY}"}),
                ("trace_list", {"session": f"rotate {KEY}"}),
            ]
        ]
    finally:
        peer.close()
    echoed = sum(KEY in r.body.decode(errors="replace") for r in fp.requests)
    stdout = b"".join(peer.lines).decode(errors="replace")
    stderr = bytes(peer.stderr).decode(errors="replace")
    kinds = [
        r["result"]["structuredContent"].get("kind") or r["result"]["structuredContent"]["status"]
        for r in results
    ]
    written = "".join(_files_under(Path.home()))
    hits = {
        where: text.count(KEY) + text.count(OLLAMA_KEY)
        for where, text in (("stdout", stdout), ("stderr", stderr), ("files under HOME", written))
    }
    print(f"outcomes {kinds}; key hits {hits}; stderr {len(stderr)} bytes")
    # glm's 401 and ollama's 403 are rejected credentials: a configuration state with a fix.
    assert kinds[:4] == ["not_configured", "upstream_error", "ok", "upstream_error"]
    assert kinds[5] == "not_configured"
    assert "auth failed" in stdout  # the CLI's stderr was quoted, minus the key
    assert kinds[-6] == "bad_args"  # a secret as a context key name is refused
    assert hits == {"stdout": 0, "stderr": 0, "files under HOME": 0}
    assert echoed == 0  # and the key never travelled in a request body either


def _files_under(base: Path) -> list[str]:
    """The name and text of every file and directory under ``base``."""
    texts = []
    for path in base.rglob("*"):
        texts.append(path.name)
        if path.is_file():
            texts.append(path.read_bytes().decode("utf-8", "replace"))
    return texts
