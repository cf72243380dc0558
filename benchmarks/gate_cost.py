"""Gate cost per hit for a batch of 1,000 hits (issue 2's measured figure).

Run: ``python benchmarks/gate_cost.py``. Prints microseconds per hit for pre-built ``Hit`` objects
(the store and adapters pass these) and for flat dicts (the ``recall-gate gate`` path, which also
validates every field), best of several repeats.
"""

from __future__ import annotations

import random
import time
from datetime import datetime, timedelta, timezone

from shared_core import Hit, RecallGate, Scope
from shared_core.testing import FrozenClock

NOW = datetime(2026, 7, 13, tzinfo=timezone.utc)


def make_batch(n: int, seed: int = 7) -> list[dict[str, object]]:
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        out.append(
            {
                "id": f"m{i}",
                "title": rnd.choice(["Posting policy", "旧方針: 投稿", "Ops memo", "Tone guide"]),
                "body": "A memory body of ordinary length about posting rules and tone. " * rnd.randint(1, 4),
                "score": rnd.uniform(0.3, 1.0),
                "updated_at": NOW - timedelta(days=rnd.randint(0, 200)),
                "status": rnd.choice(["approved"] * 6 + ["draft", "rejected"]),
                "visibility": rnd.choice(["private", "shared"]),
                "tags": rnd.choice([[], ["long_term_policy"]]),
                "user_id": rnd.choice(["u1"] * 4 + ["u2"]),
                "agent_id": "a1",
                "memory_space_id": "s1",
                "supersedes": [f"m{rnd.randrange(n)}"] if rnd.random() < 0.05 else [],
            }
        )
    return out


def best_of(fn, repeats: int = 7) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    n = 1000
    raw = make_batch(n)
    hits = [Hit.from_flat(h) for h in raw]
    scope = Scope(user_id="u1", agent_id="a1", memory_space_id="s1")
    gate = RecallGate(clock=FrozenClock(NOW))
    gate.evaluate(hits, scope=scope, query="posting policy")  # warm caches
    t_hits = best_of(lambda: gate.evaluate(hits, scope=scope, query="posting policy"))
    t_raw = best_of(lambda: gate.evaluate(raw, scope=scope, query="posting policy"))
    res = gate.evaluate(hits, scope=scope, query="posting policy")
    print(f"batch of {n} hits: accepted {len(res.accepted)}, rejected {len(res.rejected)} {res.audit.counts}")
    print(f"  Hit objects : {t_hits * 1e6 / n:7.2f} us/hit  ({t_hits * 1e3:.2f} ms per batch)")
    print(
        f"  flat dicts  : {t_raw * 1e6 / n:7.2f} us/hit  ({t_raw * 1e3:.2f} ms per batch, includes validation)"
    )


if __name__ == "__main__":
    main()
