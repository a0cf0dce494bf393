"""Benchmark: the web view's trace list over 100,000 traces (target ≤ 150 ms per page), as a ratio to
a trivial page of the same server.

Run: python benchmarks/bench_ui_trace_list.py [N]
Fills a temp TraceStore with N traces (default 100,000) exactly as bench_trace_list does, then
serves the web view over it the way ``ask-fable ui`` does (read-only stores, loopback, a logged-in
session) and times whole HTTP GETs of /ui/traces (rendered HTML) with each filter, a time range and
paging, against the style sheet (the same stack, no store read) in the same run. Prints
milliseconds and ratios; exits non-zero when the slowest page is over the target.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_trace_list import best_of, fill

TARGET_S = 0.150
TOKEN = "bench-token"


@contextlib.contextmanager
def served_like_ask_fable_ui(app: Any) -> Iterator[str]:
    """The web view over ``app`` on a free loopback port, served as ``ask-fable ui`` serves it (its
    ASGI app under uvicorn), in a background thread; yields the base URL."""
    from ask_fable.surface.http_app import HttpOptions
    from ask_fable.surface.http_runner import bind_socket
    from ask_fable.surface.ui.local import LOOPBACK, local_server

    sock = bind_socket(HttpOptions(host=LOOPBACK, port=0))
    port = int(sock.getsockname()[1])
    server = local_server(app, TOKEN, port)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the web view did not start")
        time.sleep(0.01)
    try:
        yield f"http://{LOOPBACK}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_STATE_HOME"] = tmp
        os.environ["XDG_CONFIG_HOME"] = str(Path(tmp) / "config")
        import httpx2

        from ask_fable.backends.resources import Resources
        from ask_fable.config import load_settings
        from ask_fable.core.app import App
        from ask_fable.stores.traces import TraceStore
        from ask_fable.surface.ui.style import STYLESHEET_VERSION

        writer = TraceStore(load_settings())
        ids = fill(writer, n)
        writer.db.close()
        middle = ids[n // 2]
        app = App(quiet=True, resources=Resources(read_only_stores=True))
        mid_ts = time.time() - 15 * 86400

        def moment(ts: float) -> str:
            return datetime.fromtimestamp(ts).astimezone().strftime("%Y-%m-%dT%H:%M")

        with served_like_ask_fable_ui(app) as base, httpx2.Client(base_url=base, timeout=60) as client:
            assert client.get("/ui/login", params={"token": TOKEN}).status_code == 303

            def get(path: str, **params: str) -> Callable[[], None]:
                def run() -> None:
                    response = client.get(path, params=params)
                    assert response.status_code == 200, (path, params, response.status_code)

                return run

            sheet = get(f"/ui/static/ui-{STYLESHEET_VERSION}.css")
            sheet()
            base_s = best_of(sheet)
            rows = client.get("/ui/traces").text.count('data-trace="')
            print(f"traces={n} rows per default page={rows} baseline (style sheet): {base_s * 1000:.3f} ms")
            cases = {
                "newest 50": get("/ui/traces"),
                "limit 200": get("/ui/traces", limit="200"),
                "tool": get("/ui/traces", tool="ask_council"),
                "status=error": get("/ui/traces", status="error"),
                "provider": get("/ui/traces", provider="deepseek"),
                "session": get("/ui/traces", session="s17"),
                "before (page)": get("/ui/traces", before=middle),
                "provider+before": get("/ui/traces", provider="glm", before=middle),
                "time range": get("/ui/traces", **{"from": moment(mid_ts - 3600), "to": moment(mid_ts)}),
                "rare status+tool": get("/ui/traces", status="error", tool="ask_chain", provider="ollama"),
                "trace page": get(f"/ui/traces/{middle}"),
            }
            worst = 0.0
            for name, fn in cases.items():
                fn()
                took = best_of(fn)
                worst = max(worst, took)
                print(f"{name:<18} {took * 1000:8.3f} ms  ratio {took / base_s:8.1f}x")
        print(f"worst {worst * 1000:.1f} ms (target ≤ {TARGET_S * 1000:.0f} ms)")
        return 0 if worst <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
