"""A store in a separate process, driven by JSON lines on stdin (for the coherence tests).

``python coherence_client.py http PORT PREFIX`` or ``python coherence_client.py embedded PATH [ro]``.
Each input line is ``{"op": ..., ...}``; each answer is one JSON line: ``{"ok": true, ...}`` or
``{"ok": false, "error": "<type>"}``. Ops: ``query`` (bodies of accepted hits), ``search`` (bodies of
fused hits), ``add``, ``correct``, ``forget``, ``approve``, ``held`` (quarantined ids), ``ids``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from stores import NOW, SCOPE, make_store, mem

from shared_core.store import MemoryStore
from shared_core.testing import FrozenClock, HashEmbedding


def open_store(argv: list[str]) -> MemoryStore:
    if argv[0] == "http":
        from shared_core import GateConfig

        return MemoryStore.http(
            "127.0.0.1",
            int(argv[1]),
            embedding=HashEmbedding(),
            collection_prefix=argv[2],
            config=GateConfig(min_score=0.2, min_lexical_score=0.6),
            clock=FrozenClock(NOW),
            timeout=5.0,
        )
    return make_store(argv[1], read_only=len(argv) > 2 and argv[2] == "ro")


def handle(store: MemoryStore, cmd: dict[str, Any]) -> dict[str, Any]:
    op = cmd["op"]
    scope = cmd.get("scope", SCOPE)
    if op == "query":
        result = store.query(cmd["q"], scope=scope)
        return {"bodies": sorted(h.record.body for h in result.accepted)}
    if op == "search":
        return {"bodies": sorted(h.record.body for h in store.search(cmd["q"], scope=scope)[0])}
    if op == "add":
        decisions = store.add([mem(b, **cmd.get("fields", {})) for b in cmd["bodies"]])
        return {"actions": [d.action.value for d in decisions], "ids": [d.id for d in decisions]}
    if op == "correct":
        d = store.correct(cmd["id"], memory_space_id=scope["memory_space_id"], body=cmd["body"])
        return {"action": d.action.value, "id": d.id}
    if op == "forget":
        return {"memories": store.forget(cmd["source"])["memories"]}
    if op == "approve":
        return {"action": store.quarantine_approve(cmd["qid"]).action.value}
    if op == "held":
        return {"ids": [h["id"] for h in store.quarantine_list()]}
    if op == "ids":
        return {"ids": sorted(store.all_ids(scope["memory_space_id"]))}
    raise ValueError(op)


def main() -> None:
    store = open_store(sys.argv[1:])
    print(json.dumps({"ok": True, "ready": True}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            out = {"ok": True, **handle(store, json.loads(line))}
        except Exception as exc:  # the test reads the error type
            out = {"ok": False, "error": type(exc).__name__}
        print(json.dumps(out), flush=True)
    store.close()


if __name__ == "__main__":
    main()
