"""BEIR data sets (SciFact...): loading, cases from qrels, and a store holding the corpus."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import ConfigBook, GateConfig
from ..errors import InputError
from ..model import Scope
from ..model.jsonl import iter_jsonl
from ..timeutil import Clock, system_clock
from .cache import cached_vectors
from .cases import EvalCase

if TYPE_CHECKING:
    from ..store import MemoryStore

__all__ = ["BEIR_SCOPE", "BeirData", "beir_cases", "beir_store", "beir_texts", "load_beir"]

BEIR_SCOPE = Scope(user_id="beir", agent_id="eval", memory_space_id="beir")
"""The one scope every BEIR document and query lives in."""

_COMMIT_BATCH = 1000

@dataclass(frozen=True)
class BeirData:
    """A BEIR data set: documents, the judged queries (in file order) and their judgements."""

    name: str
    doc_ids: list[str]
    titles: list[str]
    texts: list[str]
    query_ids: list[str]
    queries: list[str]
    qrels: dict[str, dict[str, int]]


def _read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """The rows of a BEIR JSON-lines file, streamed; each must carry an ``_id``."""
    for number, obj in iter_jsonl(path, what="BEIR file"):
        if "_id" not in obj:
            raise InputError(f"{path} line {number}: expected an object with '_id'")
        yield number, obj


def load_beir(folder: str | Path, *, split: str = "test", limit: int | None = None) -> BeirData:
    """Load a BEIR folder: ``corpus.jsonl``, ``queries.<split>.jsonl`` or ``queries.jsonl``, ``qrels/<split>.tsv``.

    Only queries with at least one positive judgement are kept, in file order; ``limit`` keeps the
    first ``limit`` of them. The whole corpus is always loaded (retrieval runs over all of it).

    Raises:
        InputError: if a file is missing or malformed (naming the file and line).
    """
    root = Path(folder)
    if not root.is_dir():
        raise InputError(f"BEIR folder not found: {root}")
    if limit is not None and limit < 1:
        raise InputError("limit must be a positive integer")
    doc_ids: list[str] = []
    titles: list[str] = []
    texts: list[str] = []
    seen: set[str] = set()
    for number, row in _read_jsonl(root / "corpus.jsonl"):
        did = str(row["_id"])
        if did in seen:
            raise InputError(f"{root / 'corpus.jsonl'} line {number}: duplicate _id")
        seen.add(did)
        doc_ids.append(did)
        titles.append(str(row.get("title") or ""))
        texts.append(str(row.get("text") or ""))
    qrels_path = root / "qrels" / f"{split}.tsv"
    qrels: dict[str, dict[str, int]] = {}
    try:
        with qrels_path.open(encoding="utf-8", newline="") as fh:
            reader = csv.reader(fh, delimiter="\t")
            for number, cols in enumerate(reader, start=1):
                if not cols or (number == 1 and cols[0] == "query-id"):
                    continue
                if len(cols) < 3:
                    raise InputError(f"{qrels_path} line {number}: expected query-id, corpus-id, score")
                try:
                    score = int(float(cols[2]))
                except ValueError:
                    raise InputError(f"{qrels_path} line {number}: score is not a number") from None
                if score > 0 and cols[1] in seen:
                    qrels.setdefault(cols[0], {})[cols[1]] = score
    except FileNotFoundError:
        raise InputError(f"BEIR qrels not found: {qrels_path}") from None
    queries_path = root / f"queries.{split}.jsonl"
    if not queries_path.exists():
        queries_path = root / "queries.jsonl"
    query_ids: list[str] = []
    queries: list[str] = []
    for _, row in _read_jsonl(queries_path):
        qid = str(row["_id"])
        if qid in qrels and str(row.get("text") or "").strip():
            query_ids.append(qid)
            queries.append(str(row["text"]))
            if limit is not None and len(query_ids) >= limit:
                break
    kept = set(query_ids)
    return BeirData(
        name=root.name,
        doc_ids=doc_ids,
        titles=titles,
        texts=texts,
        query_ids=query_ids,
        queries=queries,
        qrels={q: r for q, r in qrels.items() if q in kept},
    )


def beir_cases(data: BeirData, *, scope: Scope = BEIR_SCOPE) -> list[EvalCase]:
    """One case per judged query: expected = the qrels ids, graded by their qrels scores."""
    return [
        EvalCase(
            query=text,
            scope=scope,
            expected_memory_ids=tuple(data.qrels[qid]),
            relevance={k: float(v) for k, v in data.qrels[qid].items()},
            id=qid,
        )
        for qid, text in zip(data.query_ids, data.queries, strict=True)
    ]


def beir_texts(data: BeirData) -> list[str]:
    """The text embedded and indexed per BEIR document (the store's ``title + newline + text``)."""
    return [f"{t}\n{b}" if t else b for t, b in zip(data.titles, data.texts, strict=True)]


def beir_store(
    data: BeirData,
    *,
    scope: Scope = BEIR_SCOPE,
    embedding: Any = None,
    config: GateConfig | ConfigBook | None = None,
    clock: Clock = system_clock,
    cache_dir: str | Path | None = None,
    progress: bool = False,
) -> MemoryStore:
    """An in-memory store holding every BEIR document as an approved, confirmed memory of ``scope``.

    Documents are bulk-loaded with ``MemoryStore.import_records`` without screens and dedup (see
    the module docstring); vectors are cached by corpus hash.

    Args:
        data: the loaded BEIR data.
        scope: the scope every document belongs to (private to its user).
        embedding: the embedding (default: the offline MiniLM).
        config: gate settings (default: the store's, i.e. the embedding's calibrated threshold).
        clock: the store's clock; documents are stamped with its current time (all fresh).
        cache_dir: embedding cache folder (default: ``$RECALL_GATE_EVAL_CACHE`` or a temp folder).
        progress: show tqdm progress bars on stderr.

    Raises:
        InputError: if a document id is not a valid memory id.
    """
    from ..store import MemoryStore

    store = MemoryStore.in_memory(embedding=embedding, config=config, clock=clock)
    items = [
        {
            "id": did,
            "title": title,
            "body": text,
            **scope.model_dump(),
            "status": "approved",
            "tier": "confirmed",
            "origin": "external_verified",
            "cited": True,
            "source": f"beir:{data.name}",
            "verification_status": "benchmark",
        }
        for did, title, text in zip(data.doc_ids, data.titles, data.texts, strict=True)
    ]
    vectors = cached_vectors(
        store.embedder,
        beir_texts(data),
        cache_dir=cache_dir,
        progress=progress,
    )
    for start in range(0, len(items), _COMMIT_BATCH):
        decisions = store.import_records(
            items[start : start + _COMMIT_BATCH],
            vectors=vectors[start : start + _COMMIT_BATCH],
            skip=("screens", "dedup"),
        )
        refused = [d for d in decisions if not d.stored]
        if refused:
            store.close()
            raise InputError(
                f"BEIR document #{start + refused[0].index} was refused: {', '.join(refused[0].detail) or refused[0].action.value}"
            )
    return store
