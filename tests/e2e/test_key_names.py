"""Key names at the installed ``ask-fable keys create``: a name says who or what uses the key, so it is
1-64 characters of letters, digits, spaces and ``. _ - @ + : / ' ( )``, and no two active keys of one
tenant share it. Anything else is a usage error (exit 2) that creates nothing."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.e2e.helpers import ask_fable_command, child_env, run_in_process


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    """The command run by its own entry point in this process (what it prints and exits with)."""
    return run_in_process(args, child_env())


def _spawn(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed command started as its own process, its stdin closed."""
    return subprocess.run([*ask_fable_command(), *args], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, env=child_env())


def _names() -> list[str]:
    listed = _run("keys", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    return [key["name"] for key in json.loads(listed.stdout)]


def test_a_second_active_key_with_the_same_name_in_one_tenant_is_refused_and_nothing_is_created() -> None:
    """Two keys both called ``alice`` cannot be told apart in ``keys list`` or the audit: the second is
    refused, whatever the case of its name; another tenant may use the name, and so may a new key once
    the first one is revoked."""
    assert _run("keys", "create", "--name", "alice").returncode == 0
    again = _spawn("keys", "create", "--name", "Alice", "--tenant", "alice")
    assert again.returncode == 2, again.stderr
    assert again.stdout == "" and "Traceback" not in again.stderr
    assert "ask-fable: tenant 'alice' already has an active key named 'alice' (id 1)" in again.stderr
    assert "revoke it first" in again.stderr
    assert _names() == ["alice"]
    other = _run("keys", "create", "--name", "alice", "--tenant", "platform")
    assert other.returncode == 0, other.stderr
    assert _run("keys", "revoke", "1").returncode == 0
    assert _run("keys", "create", "--name", "alice").returncode == 0
    assert _names() == ["alice", "alice", "alice"]


BAD_NAMES = {
    "300 characters": "x" * 300,
    "65 characters": "y" * 65,
    "a control character": "ci\tbot",
    "a newline": "ci\nbot",
    "shell syntax": "bot; rm -rf /",
    "only punctuation": "---",
}


@pytest.mark.parametrize("name", BAD_NAMES.values(), ids=BAD_NAMES.keys())
def test_a_name_that_is_too_long_or_not_a_plain_label_is_a_usage_error(name: str) -> None:
    done = _run("keys", "create", f"--name={name}")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("usage: ask-fable keys create ")
    assert "--name: use 1-64 letters, digits, spaces" in done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr
    assert _names() == []


GOOD_NAMES = ["ci bot", "Alice Smith", "alice's viewer", "deploy@build-7", "x" * 64, "Zoë (ops)"]


def test_the_names_the_docs_and_teams_use_are_accepted() -> None:
    for name in GOOD_NAMES:
        done = _run("keys", "create", "--name", f"  {name} ", "--json")
        assert done.returncode == 0, (name, done.stderr)
        assert json.loads(done.stdout)["name"] == name
    assert _names() == GOOD_NAMES


GLM_SECRET = "glm.Zq7Tx2Vw9Kp4Lm8Rn3Bc"
#: Not a plain label either: the name's shape check must not echo it.
ATLAS_SECRET = "atlas=Vw9Kp4Lm8Rn3Bc!Zq7Tx2"


def _run_with(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run_in_process(args, child_env(**env))


SECRET_NAMES = {
    "a configured provider key as --name": ("--name", GLM_SECRET),
    "a configured provider key inside --name": ("--name", f"ci {GLM_SECRET}"),
    "a configured provider key of another shape as --name": ("--name", ATLAS_SECRET),
    "a provider key shape as --name": ("--name", "sk-ant-api03-AbCdEfGhIjKlMnOpQrSt"),
    "a configured provider key as --tenant": ("--tenant", GLM_SECRET.lower()),
}


@pytest.mark.parametrize(("option", "value"), SECRET_NAMES.values(), ids=SECRET_NAMES.keys())
def test_a_secret_as_a_key_or_tenant_name_is_refused_and_stores_nothing(option: str, value: str) -> None:
    """Before: ``keys create --name <the value of ASK_FABLE_GLM_API_KEY>`` made the key, and ``keys list``
    showed the secret as its name. Now a name or tenant holding a configured secret, or a value shaped
    like a provider key, is refused as the context store refuses such a key: exit 2, nothing stored,
    and the value appears in no output."""
    env = {"ASK_FABLE_GLM_API_KEY": GLM_SECRET, "ASK_FABLE_DEEPSEEK_API_KEY": GLM_SECRET.lower(),
           "ASK_FABLE_ATLAS_API_KEY": ATLAS_SECRET}
    args = ["keys", "create", option, value] + (["--name", "ci bot"] if option == "--tenant" else [])
    done = _run_with(env, *args)
    assert done.returncode == 2, done.stderr
    assert "looks like a secret" in done.stderr and option in done.stderr, done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr
    assert value not in done.stderr and GLM_SECRET.lower() not in done.stderr.lower()
    assert ATLAS_SECRET not in done.stderr
    listed = _run_with(env, "keys", "list", "--json")
    assert json.loads(listed.stdout) == []
