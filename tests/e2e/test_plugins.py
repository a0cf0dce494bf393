"""A backend installed from outside: the example plugin (examples/plugin-openai-compatible), built and
pip-installed into a virtual environment beside ask-fable, is served through its entry point like a
built-in backend; a broken plugin is reported by doctor and stops nothing."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.e2e.helpers import child_env, structured
from tests.fakes.fake_provider import FakeProvider

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "plugin-openai-compatible"
KEY = "sk-acme-live-0123456789abcdef"
GLM_KEY = "glm-test-key-0123456789"


def _answer(text: str) -> str:
    sidecar = {"recommendation": "apply", "confidence": "high", "needs_context": []}
    return f"{text}\n\n```sidecar\n{json.dumps(sidecar)}\n```"


def _venv(root: Path) -> Path:
    """A virtual environment that sees this test run's packages (ask-fable included) through a .pth
    file, so nothing is downloaded; returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    host = sysconfig.get_paths()["purelib"]
    (Path(site) / "_host_packages.pth").write_text(f"import site; site.addsitedir({host!r})\n")
    return python


def _pip_install(python: Path, *sources: Path) -> None:
    """Build each of ``sources`` as a package and install them into ``python``'s environment with pip."""
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    "--no-index", "--no-build-isolation", *map(str, sources)], check=True)


def _plugin_package(root: Path, name: str, entry: str, module: str) -> Path:
    """A one-module package ``name`` whose entry point ``entry`` is declared in the plugin group."""
    root.mkdir(parents=True)
    (root / "pyproject.toml").write_text(textwrap.dedent(f"""
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "{name.replace('_', '-')}"
        version = "0.1.0"

        [project.entry-points."ask_fable.backends"]
        {entry}

        [tool.setuptools]
        py-modules = ["{name}"]
    """))
    (root / f"{name}.py").write_text(module)
    return root


@pytest.fixture(scope="module")
def plugin_python(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The python of a venv holding ask-fable, the example plugin, and two broken plugins."""
    base = tmp_path_factory.mktemp("plugins")
    python = _venv(base / "venv")
    example = base / "example"
    shutil.copytree(EXAMPLE, example)  # the build writes beside its source: never into this repository
    broken_import = _plugin_package(base / "broken_import", "ask_fable_broken_import",
                                    'broken = "ask_fable_broken_import:BACKEND"',
                                    "import ask_fable_no_such_module  # noqa\n")
    bad_descriptor = _plugin_package(base / "bad_descriptor", "ask_fable_bad_descriptor",
                                     'clash = "ask_fable_bad_descriptor:declare"',
                                     textwrap.dedent("""
        from dataclasses import replace

        from ask_fable.backends.builtin import GLM
        from ask_fable.backends.descriptor import Token


        def declare():
            fine = replace(GLM, name="glm_two", tokens=(Token("glm2"),), tool=None)
            return [fine, replace(GLM, name="glm_again")]  # its tokens are GLM's: refused
        """))
    _pip_install(python, example, broken_import, bad_descriptor)
    yield python


def _ask_fable(python: Path) -> str:
    """The venv's ``ask-fable`` command, as pip writes a console script (ask-fable itself comes from
    the host environment the venv sees, so its script is written here)."""
    script = python.parent / "ask-fable"
    if not script.exists():
        script.write_text(f"#!{python}\nimport sys\n\nfrom ask_fable.cli import console_main\n\n"
                          "if __name__ == '__main__':\n    sys.exit(console_main())\n")
        script.chmod(0o755)
    return str(script)


def _server(python: Path, fp: FakeProvider, **env: str) -> StdioServerParameters:
    values = {"ASK_FABLE_ACME_API_KEY": KEY, "ASK_FABLE_ACME_BASE_URL": f"{fp.base_url}/v1",
              "ASK_FABLE_GLM_API_KEY": GLM_KEY, "ASK_FABLE_GLM_BASE_URL": f"{fp.base_url}/api/anthropic",
              "ASK_FABLE_TOOLSETS": "all", "ASK_FABLE_CACHE": "0", "ASK_FABLE_TRACE_MODE": "full", **env}
    return StdioServerParameters(command=_ask_fable(python), args=[], env=child_env(**values))


async def test_the_installed_plugin_answers_ask_and_a_council(plugin_python: Path, fp: FakeProvider) -> None:
    fp.enqueue("openai", text=_answer(f"Acme says: keep the lock (key {KEY})."), match="acme-large-2")
    fp.enqueue("openai", text=_answer("As an Acme Labs model, I'd keep it."), match="acme-large-2")
    fp.enqueue("anthropic", text=_answer("GLM agrees: keep it."), match="glm-5.2")
    fp.enqueue("anthropic", text=_answer("Synthesis: keep the lock."), match="glm-5.2")
    with anyio.fail_after(60):
        async with Client(_server(plugin_python, fp)) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            single = await structured(client, "ask", {"question": "Should the cache keep its lock?",
                                                      "model": "acme"})
            council = await structured(client, "ask_council", {
                "question": "Should the cache keep its global lock?", "models": ["acme-large", "glm"],
                "synthesizer": "glm"})
            traces = await structured(client, "trace_list", {"limit": 5})
            details = [await structured(client, "trace_get",
                                        {"trace_id": t["trace_id"], "include_content": True})
                       for t in traces["traces"]]
    assert "ask_acme" in tools
    assert single["status"] == "ok", single
    assert single["answer"].startswith("Acme says: keep the lock") and KEY not in single["answer"]
    assert council["status"] == "ok", council
    assert {s["token"] for s in council["sources"]} == {"acme", "glm"}
    acme_calls = fp.requests_for("openai")
    assert acme_calls and all(r.path == "/v1/chat/completions" for r in acme_calls)
    assert acme_calls[0].headers.get("authorization") == f"Bearer {KEY}"
    synthesis = fp.last_json("anthropic")
    assert "Acme Labs" not in json.dumps(synthesis)  # the plugin's lab is hidden from the synthesizer
    recorded = json.dumps(details)
    assert "Acme says: keep the lock" in recorded and KEY not in recorded  # the answer, its key redacted


async def test_doctor_and_diagnose_list_the_plugin_and_report_the_broken_ones(
        plugin_python: Path, fp: FakeProvider) -> None:
    done = subprocess.run([_ask_fable(plugin_python), "doctor", "--json", "--no-probe"],
                          capture_output=True, text=True, env=_server(plugin_python, fp).env, timeout=60)
    report = json.loads(done.stdout)
    acme = next(b for b in report["backends"] if b["name"] == "acme")
    assert (acme["kind"], acme["status"], acme["model"]) == ("http", "ready", "acme-large-2")
    problems = {p["plugin"]: p["problem"] for p in report["plugin_problems"]}
    assert "ModuleNotFoundError" in problems["broken"] and "already" in problems["clash"]
    names = [b["name"] for b in report["backends"]]
    assert "glm_again" not in names and "glm_two" not in names  # all of a plugin's backends, or none
    env = _server(plugin_python, fp).env
    human = subprocess.run([_ask_fable(plugin_python), "doctor", "--no-probe"],
                           capture_output=True, text=True, env=env, timeout=60).stdout
    assert "! plugins: 2 could not be loaded" in human and "plugin 'broken'" in human
    with anyio.fail_after(60):
        async with Client(_server(plugin_python, fp)) as client:
            result = await structured(client, "diagnose", {"backends": ["acme"], "probe": False})
    [entry] = result["backends"]
    assert entry["name"] == "acme" and entry["status"] == "ready"
    assert {p["plugin"] for p in result["plugin_problems"]} == {"broken", "clash"}
