"""Partition snapshots: what is expensive to rebuild, persisted next to an embedded store (issue 14).

The first query of a scope in a fresh process used to read every memory of the partition from
Chroma (vectors, documents, metadata: ~2.6 s for 10k memories with chromadb 1.5.9), validate
every record, tokenise every memory and build BM25. A snapshot keeps, per partition, in one
``.npz`` file under ``<store>/cache/``: the vectors, the BM25 postings and document lengths, the
stored documents and metadata (decoded lazily), and the change-feed heads it reflects. Loading
one is a few ``numpy`` reads and one JSON parse; the partition then catches up with the change feed
(:mod:`.sync`) from those heads, so a snapshot is never served stale.

A snapshot is only used when its embedding (name and dimension), tokenizer fingerprint,
collection id and format match; anything else is ignored and the partition is read from Chroma.
Only the writer writes snapshots (atomically: a temporary file renamed into place). Snapshots
hold memory text, so a delete removes the snapshot of every partition it touches *before* it
deletes in Chroma (erasure, L2), and :func:`clear` removes them all.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import StoreError
from ..retrieval.bm25 import K1, B
from ..retrieval.partition import Partition, PartitionKey, StoredRow
from ..text import tokenize

__all__ = ["Snapshot", "clear", "load", "remove", "save", "tokenizer_fingerprint"]

FORMAT = 1
_PROBE = "Running E-4012 ERR_TIMEOUT the kites' herons 2026-07-13 パスワード 記憶の設計 한국어 문장 ｆｕｌｌ"


def tokenizer_fingerprint() -> str:
    """Changes whenever tokenisation or the BM25 parameters change (snapshots are then rebuilt)."""
    probe = json.dumps([tokenize(_PROBE), K1, B], ensure_ascii=True)
    return hashlib.sha256(probe.encode()).hexdigest()[:16]


def _file(folder: Path, key: PartitionKey) -> Path:
    digest = hashlib.sha256("\x1f".join(key).encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return folder / f"p-{digest}.npz"


@dataclass
class Snapshot:
    """What :func:`load` returns: the partition and the heads it reflects (writer -> done)."""

    partition: Partition
    heads: dict[str, int]


def save(
    folder: Path,
    part: Partition,
    *,
    heads: Mapping[str, int],
    embedding: str,
    collection_id: str,
) -> None:
    """Write a partition's snapshot atomically (errors are swallowed: a snapshot is only a cache)."""
    try:
        ids, vectors, rows, dl, total, postings = part.export()
        terms = list(postings)
        lengths = np.fromiter((postings[t][0].size for t in terms), dtype=np.int64, count=len(terms))
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        prow = np.concatenate([postings[t][0] for t in terms]) if terms else np.zeros(0, np.int64)
        ptf = np.concatenate([postings[t][1] for t in terms]) if terms else np.zeros(0, np.float64)
        encoded = [r.encoded() for r in rows]
        header = {
            "format": FORMAT,
            "key": list(part.key),
            "embedding": embedding,
            "dim": part.dimension,
            "engine": part.engine,
            "tokenizer": tokenizer_fingerprint(),
            "collection": collection_id,
            "heads": dict(heads),
            "ids": ids,
            "docs": [d for d, _ in encoded],
            "metas": [m for _, m in encoded],
            "terms": terms,
            "total": total,
        }
        blob = np.frombuffer(
            json.dumps(header, ensure_ascii=False).encode("utf-8", "surrogatepass"), np.uint8
        )
        folder.mkdir(parents=True, exist_ok=True)
        target = _file(folder, part.key)
        tmp = target.with_name(target.name + f".{os.getpid()}.tmp")
        buf = io.BytesIO()
        np.savez(buf, header=blob, vectors=vectors, dl=dl, offsets=offsets, prow=prow, ptf=ptf)
        tmp.write_bytes(buf.getvalue())
        tmp.replace(target)
    except (OSError, ValueError):
        return


def load(
    folder: Path, key: PartitionKey, *, dimension: int, engine: str, embedding: str, collection_id: str
) -> Snapshot | None:
    """The snapshot of a partition, or ``None`` if absent, unreadable or made for other settings."""
    path = _file(folder, key)
    try:
        with np.load(path, allow_pickle=False) as z:
            header: dict[str, Any] = json.loads(bytes(z["header"]).decode("utf-8", "surrogatepass"))
            if (
                header.get("format") != FORMAT
                or header.get("key") != list(key)
                or header.get("embedding") != embedding
                or header.get("dim") != dimension
                or header.get("engine") != engine
                or header.get("collection") != collection_id
                or header.get("tokenizer") != tokenizer_fingerprint()
            ):
                return None
            vectors: NDArray[np.float32] = np.asarray(z["vectors"], dtype=np.float32)
            dl = np.asarray(z["dl"], dtype=np.float64)
            offsets, prow, ptf = z["offsets"], z["prow"], z["ptf"]
    except (OSError, ValueError, KeyError, json.JSONDecodeError):
        return None
    ids = [str(i) for i in header["ids"]]
    if len(ids) != len(vectors) or len(header["docs"]) != len(ids) or len(header["metas"]) != len(ids):
        return None
    terms = header["terms"]
    postings = {
        t: (prow[offsets[j] : offsets[j + 1]], ptf[offsets[j] : offsets[j + 1]]) for j, t in enumerate(terms)
    }
    rows = [StoredRow.stored(i, d, m) for i, d, m in zip(ids, header["docs"], header["metas"], strict=True)]
    part = Partition(key, dimension, engine=engine)  # type: ignore[arg-type]
    part.restore(rows, vectors, dl, int(header["total"]), postings)
    heads = {str(w): int(s) for w, s in dict(header.get("heads", {})).items()}
    return Snapshot(part, heads)


def remove(folder: Path, key: PartitionKey) -> None:
    """Delete a partition's snapshot (before its memories are deleted).

    Raises:
        StoreError: if it exists and cannot be deleted (the delete must not go ahead).
    """
    try:
        _file(folder, key).unlink(missing_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot remove a partition snapshot in {folder} ({type(exc).__name__})") from None


def clear(folder: Path) -> int:
    """Delete every snapshot and leftover temporary file; returns how many files."""
    n = 0
    try:
        for f in folder.iterdir():
            if f.name.startswith("p-") and (f.suffix in (".npz", ".tmp")):
                f.unlink(missing_ok=True)
                n += 1
    except OSError:
        return n
    return n
