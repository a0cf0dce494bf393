"""The context bus tools through the MCP client: write, read, list, delete, pack and context_ref."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from ask_fable.surface.server import build_server
from tests.e2e.helpers import TEST_KEY, structured, wired_app
from tests.fakes.fake_provider import FakeProvider

KEY = TEST_KEY





async def test_write_read_list_delete_round_trip() -> None:
    async with Client(build_server(wired_app(), toolsets=["all"])) as c:
        written = await structured(c, "context_write", {"key": "billing", "value": "def charge(): ...\n" * 50,
                                                   "description": "billing service"})
        assert written["status"] == "ok" and written["key"] == "billing"
        assert written["size_chars"] == len("def charge(): ...\n" * 50)
        await structured(c, "context_write", {"key": "notes", "value": "design notes"})

        listing = await structured(c, "context_list", {})
        assert listing["count"] == 2
        assert {e["key"] for e in listing["entries"]} == {"billing", "notes"}
        assert listing["entries"][0]["key"] == "notes"  # most recently updated first
        for entry in listing["entries"]:
            assert "value" not in entry and entry["age_s"] >= 0
        assert "def charge" not in str(listing)

        read = await structured(c, "context_read", {"key": "billing"})
        assert read["value"] == "def charge(): ...\n" * 50
        assert read["description"] == "billing service" and read["size_chars"] == written["size_chars"]
        assert read["age_s"] >= 0

        overwritten = await structured(c, "context_write", {"key": "billing", "value": "v2"})
        assert overwritten["created_at"] == written["created_at"] and overwritten["size_chars"] == 2

        first = await structured(c, "context_delete", {"key": "billing"})
        assert first.pop("trace_id")
        assert first == {"status": "ok", "key": "billing", "existed": True, "deleted": True}
        second = await structured(c, "context_delete", {"key": "billing"})
        assert second["existed"] is False and second["status"] == "ok"
        assert [e["key"] for e in (await structured(c, "context_list", {}))["entries"]] == ["notes"]


async def test_missing_key_is_not_found_with_suggestions() -> None:
    async with Client(build_server(wired_app(), toolsets=["context"])) as c:
        await structured(c, "context_write", {"key": "auth-flow", "value": "x"})
        missing = await structured(c, "context_read", {"key": "auth-flwo"})
        assert missing["status"] == "error" and missing["kind"] == "not_found"
        assert missing["did_you_mean"] == ["auth-flow"]


@pytest.mark.parametrize(("tool", "arguments"), [
    ("context_write", {"key": "", "value": "x"}),
    ("context_write", {"key": "a\nb", "value": "x"}),
    ("context_write", {"key": "k" * 201, "value": "x"}),
    ("context_read", {"key": "  "}),
    ("context_delete", {"key": "tab\there"}),
    ("context_pack", {"key": "", "paths": ["a.py"]}),
    ("context_write", {"key": "k"}),
    ("context_write", {"key": "k", "value": "v", "extra": 1}),
    ("context_pack", {"key": "k", "paths": []}),
])
async def test_bad_keys_and_arguments_are_structured_bad_args(tool: str, arguments: dict[str, Any]) -> None:
    async with Client(build_server(wired_app(project_root=Path.cwd()), toolsets=["context"])) as c:
        result = await structured(c, tool, arguments)
    assert result["status"] == "error" and result["kind"] == "bad_args", result
    assert result["detail"]


async def test_annotations() -> None:
    async with Client(build_server(wired_app(), toolsets=["context"])) as c:
        tools = {t.name: t.annotations for t in (await c.list_tools()).tools}
    for name in ("context_read", "context_list"):
        assert tools[name].read_only_hint is True and tools[name].idempotent_hint is True
        assert tools[name].open_world_hint is False
    for name in ("context_write", "context_delete", "context_pack"):
        assert tools[name].read_only_hint is False and tools[name].open_world_hint is False
    assert tools["context_delete"].destructive_hint is True
    assert tools["context_write"].destructive_hint is False


async def test_pack_without_project_root_is_not_configured() -> None:
    async with Client(build_server(wired_app(), toolsets=["context"])) as c:
        result = await structured(c, "context_pack", {"key": "k", "paths": ["src/app.py"]})
        assert result["status"] == "error" and result["kind"] == "not_configured"
        assert "ASK_FABLE_PROJECT_ROOT" in result["detail"]
        assert (await structured(c, "context_list", {}))["count"] == 0


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "session.py").write_text("".join(f"def step_{n}(): pass\n" for n in range(1, 201)))
    (root / "src" / "tokens.py").write_text("REFRESH_WINDOW = 30\n")
    (root / "huge.log").write_text("z" * 5000)
    (tmp_path / "secret.txt").write_text("OUTSIDE THE ROOT")
    (root / "escape").symlink_to(tmp_path / "secret.txt")
    return root


async def test_pack_reports_files_and_skips_and_the_bundle_feeds_context_ref(
    fp: FakeProvider, tmp_path: Path
) -> None:
    root = _project(tmp_path)
    app = wired_app(fp, project_root=root, pack_max_file_bytes=4000)
    async with Client(build_server(app, toolsets=["all"])) as c:
        packed = await structured(c, "context_pack", {
            "key": "auth-flow", "description": "login path",
            "paths": ["src/tokens.py", "src/session.py:40-42", "../secret.txt", "escape", "/etc/passwd",
                      "huge.log", "missing.py", "src"],
        })
        assert packed["status"] == "ok", packed
        assert [f["path"] for f in packed["files"]] == ["src/tokens.py", "src/session.py:40-42"]
        assert {s["path"]: s["reason"] for s in packed["skipped"]} == {
            "../secret.txt": "outside_root", "escape": "outside_root", "/etc/passwd": "outside_root",
            "huge.log": "too_large", "missing.py": "not_found", "src": "not_a_file",
        }
        assert packed["root"] == str(root.resolve()) and packed["max_chars"] == 24000
        assert packed["description"] == "login path"

        stored = await structured(c, "context_read", {"key": "auth-flow"})
        assert "### file: src/tokens.py\nREFRESH_WINDOW = 30\n" in stored["value"]
        assert "### file: src/session.py (lines 40-42)\ndef step_40(): pass\n" in stored["value"]
        assert "def step_43" not in stored["value"] and "OUTSIDE THE ROOT" not in stored["value"]
        assert stored["size_chars"] == packed["chars"]

        fp.enqueue("anthropic", text="Replay is possible after the refresh window.")
        answer = await structured(c, "ask_glm", {"question": "Where can a refresh token be replayed?",
                                            "context_ref": "auth-flow"})
        assert answer["status"] == "ok" and answer["context_ref_resolved"] == ["auth-flow"]
        sent = fp.requests_for("anthropic")[-1].body.decode()
        assert "REFRESH_WINDOW = 30" in sent and "def step_41(): pass" in sent
        assert "OUTSIDE THE ROOT" not in sent


async def test_pack_budget_defaults_to_the_setting_and_the_argument_overrides_it(tmp_path: Path) -> None:
    root = _project(tmp_path)
    app = wired_app(project_root=root, pack_max_chars=120)
    async with Client(build_server(app, toolsets=["context"])) as c:
        paths = ["src/tokens.py", "src/session.py:1-5"]
        default = await structured(c, "context_pack", {"key": "k", "paths": paths})
        assert default["max_chars"] == 120
        assert [s["reason"] for s in default["skipped"]] == ["over_budget"]
        assert default["chars"] <= 120
        wide = await structured(c, "context_pack", {"key": "k", "paths": paths, "max_chars": 100_000})
        assert wide["max_chars"] == 100_000 and wide["skipped"] == []

        narrow = await structured(c, "context_pack", {
            "key": "k2", "paths": ["src/session.py:1-5", "src/tokens.py"], "max_chars": 50,
        })
        assert narrow["max_chars"] == 50 and [f["path"] for f in narrow["files"]] == ["src/tokens.py"]


async def test_pack_with_nothing_admitted_leaves_the_key_alone(tmp_path: Path) -> None:
    root = _project(tmp_path)
    async with Client(build_server(wired_app(project_root=root), toolsets=["context"])) as c:
        await structured(c, "context_write", {"key": "k", "value": "previous"})
        result = await structured(c, "context_pack", {"key": "k", "paths": ["../secret.txt", "nope"]})
        assert result["status"] == "error" and result["kind"] == "bad_args"
        assert {s["reason"] for s in result["skipped"]} == {"outside_root", "not_found"}
        assert (await structured(c, "context_read", {"key": "k"}))["value"] == "previous"


async def test_pack_root_that_is_not_a_directory(tmp_path: Path) -> None:
    async with Client(build_server(wired_app(project_root=tmp_path / "gone"), toolsets=["context"])) as c:
        result = await structured(c, "context_pack", {"key": "k", "paths": ["a"]})
    assert result["kind"] == "not_configured" and "ASK_FABLE_PROJECT_ROOT" in result["detail"]


async def test_all_missing_ref_calls_no_model(fp: FakeProvider) -> None:
    async with Client(build_server(wired_app(fp), toolsets=["all"])) as c:
        await structured(c, "context_write", {"key": "billing", "value": "x"})
        result = await structured(
            c, "ask_glm", {"question": "Is the charge idempotent?", "context_ref": "biling"}
        )
    assert result["status"] == "needs_context" and result["did_you_mean"] == ["billing"]
    assert fp.requests_for("anthropic") == []


async def test_bus_is_shared_between_server_processes_state() -> None:
    """Two Apps over the same context.db (as two server processes are) see each other's writes."""
    async with Client(build_server(wired_app(), toolsets=["context"])) as one, \
            Client(build_server(wired_app(), toolsets=["context"])) as two:
        await structured(one, "context_write", {"key": "shared", "value": "from one"})
        assert (await structured(two, "context_read", {"key": "shared"}))["value"] == "from one"
        await structured(two, "context_delete", {"key": "shared"})
        assert (await structured(one, "context_read", {"key": "shared"}))["kind"] == "not_found"
