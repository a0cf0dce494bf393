"""Context cost of the server: bytes of tools/list per toolset, and of the instructions.

Measures the tools/list result as a client receives it (JSON, as the SDK serializes it) for the
default toolset, each family alone, the default plus the context bus, and ``all``, plus the
server's instructions. Target: the default listing stays ≤ 12 KB (12,288 bytes).

Run: python benchmarks/bench_context_cost.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.sandbox import throwaway_home

DEFAULT_BUDGET = 12 * 1024


async def listing_bytes(toolsets: list[str] | None) -> tuple[int, int]:
    """(number of tools, bytes of the tools/list result) for a server started with ``toolsets``."""
    from mcp import Client

    from ask_fable.config import load_settings
    from ask_fable.core.app import App
    from ask_fable.surface.server import build_server

    server = build_server(App(load_settings()), toolsets=toolsets)
    async with Client(server, mode="legacy") as client:
        result = await client.list_tools()
    wire = json.dumps(result.model_dump(by_alias=True, mode="json", exclude_none=True), separators=(",", ":"))
    return len(result.tools), len(wire.encode("utf-8"))


async def main() -> int:
    """Print one line per toolset; exit 1 when the default listing is over budget."""
    from ask_fable.surface.registry import FAMILIES
    from ask_fable.surface.server import INSTRUCTIONS

    rows: list[tuple[str, list[str] | None]] = [("default", None)]
    rows += [(family, [family]) for family in FAMILIES]
    rows += [("default,context", ["default", "context"]), ("all", ["all"])]
    default_size = 0
    print(f"{'toolset':<22} {'tools':>5} {'bytes':>8} {'≈tokens':>8}")
    for label, toolsets in rows:
        count, size = await listing_bytes(toolsets)
        if label == "default":
            default_size = size
        print(f"{label:<22} {count:>5} {size:>8} {size // 4:>8}")
    instructions = len(INSTRUCTIONS.encode("utf-8"))
    print(f"{'instructions':<22} {'':>5} {instructions:>8} {instructions // 4:>8}")
    verdict = "within" if default_size <= DEFAULT_BUDGET else "OVER"
    print(f"default listing {default_size} bytes: {verdict} the {DEFAULT_BUDGET}-byte budget")
    return 0 if default_size <= DEFAULT_BUDGET else 1


if __name__ == "__main__":
    with throwaway_home():
        raise SystemExit(anyio.run(main))
