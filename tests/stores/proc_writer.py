"""A writer process for the durability tests: hammers every store and the audit log.

Usage: python proc_writer.py WORKER_ID COUNT ACK_FILE   (COUNT < 0 writes until killed)
State paths come from the environment (XDG_STATE_HOME, ASK_FABLE_*; with ASK_FABLE_DATABASE_URL
the stores are in PostgreSQL and the JSONL audit log is left out). After each iteration is
fully written the iteration number is appended to ACK_FILE, so the parent knows which writes
were acknowledged.
"""

from __future__ import annotations

import os
import sys
import time

from ask_fable.config import load_settings
from ask_fable.stores.audit import audit_log_for
from ask_fable.stores.cache import answer_cache_for
from ask_fable.stores.context import context_store_for
from ask_fable.stores.hub import SessionHub
from ask_fable.stores.records import HubTurn, TraceRecord
from ask_fable.stores.trace_ids import new_trace_id
from ask_fable.stores.traces import TraceStore


def main() -> int:
    worker, count, ack_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    settings = load_settings()
    context = context_store_for(settings)
    traces = TraceStore(settings)
    hub = SessionHub(settings)
    cache = answer_cache_for(settings)
    audit = audit_log_for(settings)
    ack = os.open(ack_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    i = 0
    while count < 0 or i < count:
        key = f"{worker}-{i}"
        trace_id = new_trace_id()
        context.write("local", key, f"value {key} " + "x" * 200)
        traces.record(TraceRecord.model_validate({
            "trace_id": trace_id, "ts": time.time(), "tool": "ask", "status": "ok", "session": worker,
            "providers": ["glm"], "events": [{"t_ms": 0, "name": "start", "attrs": {"key": key}}]}))
        hub.record_turn(HubTurn(session_key=worker, agent_id="agent", project="proj", oracle="glm",
                                status="ok", question=f"q {key}", answer=f"a {key}", elapsed_ms=1.0))
        cache.put("local", key, "ask_glm", {"answer": key})
        if not settings.database_url:
            audit.append({"ts": time.time(), "worker": worker, "i": i, "trace_id": trace_id,
                          "pad": "p" * 300})
        os.write(ack, f"{i} {trace_id}\n".encode())
        i += 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
