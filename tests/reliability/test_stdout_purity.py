"""stdout purity: every line the stdio server writes is JSON-RPC, also while CLIs and the Agent SDK run."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.e2e.helpers import child_env
from tests.fakes.fake_cli import install_fake_clis
from tests.fakes.fake_provider import FakeProvider
from tests.fakes.fixtures import bundled_claude_cli, claude_cli_env
from tests.reliability.stdio_peer import StdioPeer
from tests.reliability.support import SIDECAR

NOISE = 'npm WARN deprecated left-pad@1.0.0\n\x1b[33mwarning\x1b[0m: {"not": "json-rpc"}\nprogress 42%\r\n'
QUESTION = "Should the retry loop back off exponentially here?"


@pytest.mark.skipif(bundled_claude_cli() is None, reason="claude-agent-sdk ships no CLI here")
def test_every_stdout_line_is_json_rpc_while_clis_and_the_agent_sdk_run(
    fp: FakeProvider, tmp_path: Path
) -> None:
    """ask (bundled Claude Code CLI), noisy CLI tools, an HTTP tool and a council, with progress on."""
    clis = install_fake_clis(tmp_path / "bin", names=["mmx", "agy", "codex"])
    for name in ("mmx", "agy", "codex"):
        clis.behave(name, stderr=NOISE * 20, flood_stderr_bytes=256 * 1024)
    fp.enqueue(
        "anthropic", text=f"Back off with jitter.\n\n{SIDECAR}", thinking="Retries first.", times=None
    )
    env = child_env(
        PATH=f"{clis.bin_dir}{os.pathsep}{os.environ['PATH']}",
        ASK_FABLE_TOOLSETS="all",
        ASK_FABLE_CACHE="false",
        ASK_FABLE_STREAM_REASONING="true",
        ASK_FABLE_GLM_BASE_URL=fp.base_url,
        ASK_FABLE_GLM_API_KEY="glm-test-key",
        # The fake CLIs answer at once; Fable's CLI start alone would otherwise look like straggling.
        ASK_FABLE_COUNCIL_STRAGGLER_FLOOR="120",
        **claude_cli_env(fp.base_url, tmp_path / "claude-home"),
    )
    env.pop("ASK_FABLE_QUIET")  # progress lines must go to stderr, never stdout
    peer = StdioPeer(env)
    try:
        peer.initialize()
        calls = [
            ("ask", {"question": QUESTION, "session": "purity"}),
            ("ask", {"question": "And the cap on the delay?", "session": "purity"}),
            ("ask_m3", {"question": QUESTION}),
            ("ask_gemini", {"question": QUESTION}),
            ("ask_codex", {"question": QUESTION}),
            ("ask_glm", {"question": QUESTION}),
            (
                "ask_council",
                {"question": QUESTION, "models": ["fable", "m3", "codex"], "synthesizer": "glm"},
            ),
            ("ghost_tool", {}),
        ]
        ids = []
        for token, (name, arguments) in enumerate(calls, start=1):
            ids.append(
                peer.request(
                    "tools/call",
                    {"name": name, "arguments": arguments, "_meta": {"progressToken": token}},
                )
            )
            peer.wait_for(ids[-1], timeout=120)
        answers = {
            name: peer.wait_for(i)["result"]["structuredContent"]
            for (name, _), i in zip(calls, ids, strict=True)
        }
    finally:
        code = peer.close()
    lines = list(peer.lines)
    bad = []
    kinds = {"response": 0, "notification": 0}
    for line in lines:
        try:
            message = json.loads(line)
        except ValueError:
            bad.append(line)
            continue
        if not (isinstance(message, dict) and message.get("jsonrpc") == "2.0"):
            bad.append(line)
        else:
            kinds["response" if "id" in message else "notification"] += 1
    stderr = bytes(peer.stderr).decode(errors="replace")
    print(
        f"stdout: {len(lines)} lines ({kinds}), {len(bad)} not JSON-RPC; stderr: {len(stderr)} bytes; "
        f"statuses: { {n: a['status'] for n, a in answers.items()} }"
    )
    assert bad == [], bad[:3]
    assert code == 0
    assert all(
        answers[n]["status"] == "ok" for n in ("ask", "ask_m3", "ask_gemini", "ask_codex", "ask_glm")
    ), answers
    assert answers["ask_council"]["status"] == "ok" and answers["ask_council"]["quorum"] == "3/3"
    assert answers["ghost_tool"]["kind"] == "unknown_tool"
    assert kinds["notification"] > 0, "progress notifications were expected on stdout"
    assert "npm WARN" not in b"".join(lines).decode(errors="replace")
