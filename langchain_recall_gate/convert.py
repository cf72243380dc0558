"""Conversion between LangChain documents and the core's candidates, hits and records.

Nothing in this module decides anything (DESIGN "Adapters only convert and delegate"): it turns a
LangChain :class:`~langchain_core.documents.Document` into a core
:class:`~shared_core.candidates.Candidate`, an accepted candidate back into a document copy with
provenance, a :class:`~shared_core.Hit` of the memory store into a document, and a
:class:`~shared_core.MemoryRecord` into the metadata stamp a gated vector store writes.

Identity: a document's id is ``metadata[id_key]`` when ``id_key`` is configured and present
(a string, or an integer turned into its decimal string), else ``Document.id``. Page content is
never used as an id: two memories that share a text stay two memories.

Record fields: a document written through :class:`~langchain_recall_gate.GatedVectorStore`
carries the record the write gate built, flattened into metadata keys under
:data:`STAMP_PREFIX` (scalars only, so any vector store, Chroma included, can hold them). When the
stamp is present, the record is read from the stamp *alone*: user metadata cannot widen a
memory's scope or change its tier. Documents without a stamp (your own data) are read in the
seeds' flat ``MemoryHit`` shape: ``user_id``, ``agent_id``, ``memory_space_id``, ``updated_at``,
``status``, ... as top-level metadata keys. Stamp keys never appear in documents handed back.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.runnables import RunnableConfig, ensure_config

from shared_core import GateResult, Hit, MemoryRecord, RecallGate, Scope, coerce_scope
from shared_core.model import encode_record
from shared_core.recall.wrapped import Candidate, gate_candidates, hit_metadata
from shared_core.retrieval.fusion import FusionConfig
from shared_core.write import MemoryCandidate

__all__ = [
    "PROVENANCE_KEY",
    "STAMP_PREFIX",
    "accepted_document",
    "config_scope_kwargs",
    "decode_stamp",
    "document_id",
    "encode_stamp",
    "gate_documents",
    "hit_document",
    "record_document",
    "resolve_scope",
    "scope_from_config",
    "stored_document",
    "strip_stamp",
    "to_candidate",
    "to_memory_candidate",
]

PROVENANCE_KEY = "recall_gate"
"""Metadata key of the provenance (R12) put on accepted documents."""

STAMP_PREFIX = "recall_gate."
"""Prefix of the metadata keys holding the record a gated vector store wrote."""

_SCHEMA_KEY = STAMP_PREFIX + "rg_schema"
_LIST_FIELDS = ("tags", "supersedes")


def document_id(doc: Document, id_key: str | None = None) -> str | None:
    """The stable id of a document: ``metadata[id_key]`` if configured and usable, else ``Document.id``.

    Args:
        doc: the document.
        id_key: metadata key holding the id (``None``: use ``Document.id`` only).

    Returns:
        The id, or ``None`` when the document has none (the gate then rejects it).
    """
    if id_key is not None:
        value = doc.metadata.get(id_key)
        if isinstance(value, str):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
    return doc.id


def encode_stamp(record: MemoryRecord) -> dict[str, Any]:
    """The metadata stamp of a record: its fields as scalar metadata under :data:`STAMP_PREFIX`."""
    _, meta = encode_record(record)
    return {STAMP_PREFIX + key: value for key, value in meta.items()}


def _unprefixed(metadata: Mapping[str, Any]) -> dict[str, Any]:
    n = len(STAMP_PREFIX)
    return {k[n:]: v for k, v in metadata.items() if isinstance(k, str) and k.startswith(STAMP_PREFIX)}


def decode_stamp(metadata: Mapping[str, Any]) -> dict[str, Any] | None:
    """The record fields of a stamp, unvalidated (the gate validates), or ``None`` without a stamp."""
    if _SCHEMA_KEY not in metadata:
        return None
    out: dict[str, Any] = {}
    for key, value in _unprefixed(metadata).items():
        if key.startswith("rg_") or key.endswith("_ts"):
            continue
        if key in _LIST_FIELDS and isinstance(value, str):
            with contextlib.suppress(ValueError):  # left as is: the gate judges it
                value = json.loads(value)
        out[key] = value
    return out


def strip_stamp(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``metadata`` without the stamp keys (what users see)."""
    return {k: v for k, v in metadata.items() if not (isinstance(k, str) and k.startswith(STAMP_PREFIX))}


def to_candidate(
    doc: Document, *, id_key: str | None = None, score_key: str | None = None, lexical_key: str | None = None
) -> Candidate:
    """A core candidate from a document (see the module docstring for ids and record fields).

    Args:
        doc: the document.
        id_key: metadata key holding the id.
        score_key: metadata key holding a similarity in [-1, 1]; also the candidate's native score.
        lexical_key: metadata key holding a keyword score in [0, 1].
    """
    meta = doc.metadata
    fields = decode_stamp(meta)
    if fields is not None:  # scores are the retriever's, not part of the stamped record
        for key in (score_key, lexical_key):
            if key is not None and key in meta:
                fields[key] = meta[key]
    native = meta.get(score_key) if score_key is not None else None
    return Candidate(
        id=document_id(doc, id_key),
        text=doc.page_content,
        metadata=meta if fields is None else fields,
        native_score=float(native)
        if isinstance(native, (int, float)) and not isinstance(native, bool)
        else None,
    )


def accepted_document(doc: Document, hit: Hit, *, provenance: bool = True) -> Document:
    """A copy of an accepted document: stamp removed, provenance added under :data:`PROVENANCE_KEY`.

    Args:
        doc: the document as the wrapped retriever or store returned it (never modified).
        hit: the accepted hit the gate built from it.
        provenance: add ``metadata["recall_gate"]`` (R12); ``False`` returns the metadata as given.
    """
    meta = strip_stamp(doc.metadata)
    if provenance:
        meta[PROVENANCE_KEY] = hit_metadata(hit)
    return Document(
        id=doc.id if doc.id is not None else hit.record.id, page_content=doc.page_content, metadata=meta
    )


def record_document(record: MemoryRecord) -> Document:
    """A document from a stored memory: body as content, the other set record fields as metadata."""
    meta = record.model_dump(mode="json", exclude={"id", "body"}, exclude_none=True)
    return Document(id=record.id, page_content=record.body, metadata=meta)


def hit_document(hit: Hit, *, provenance: bool = True) -> Document:
    """A document from an accepted hit of the memory store, with provenance unless switched off."""
    doc = record_document(hit.record)
    if provenance:
        doc.metadata[PROVENANCE_KEY] = hit_metadata(hit)
    return doc


def resolve_scope(call_scope: Any, default: Any) -> Scope:
    """The scope of one call: the per-call scope if given, else the default.

    Raises:
        ScopeError: if neither is given or the one used is incomplete (never an unscoped search).
    """
    return coerce_scope(call_scope if call_scope is not None else default)


def scope_from_config(config: RunnableConfig | None) -> Any:
    """``config["configurable"]["scope"]``, or ``None``."""
    if not config:
        return None
    configurable = config.get("configurable") or {}
    return configurable.get("scope")


def config_scope_kwargs(config: RunnableConfig | None, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with ``scope`` taken from ``config["configurable"]["scope"]`` unless given per call."""
    if kwargs.get("scope") is not None:
        return kwargs
    scope = scope_from_config(ensure_config(config))
    return kwargs if scope is None else {**kwargs, "scope": scope}


def gate_documents(
    query: str,
    channels: Sequence[Sequence[Document]],
    *,
    scope: Scope,
    gate: RecallGate,
    names: Sequence[str] | None = None,
    weights: Sequence[float] | None = None,
    fusion: FusionConfig | None = None,
    embedder: Any = None,
    score_key: str | None = None,
    lexical_key: str | None = None,
    id_key: str | None = None,
    k: int | None = None,
    dry_run: bool = False,
    provenance: bool = True,
    extra: Mapping[str, Any] | None = None,
) -> tuple[list[tuple[Document, Document]], GateResult]:
    """Convert documents to candidates, run :func:`~shared_core.candidates.gate_candidates`, convert back.

    Returns:
        ``(original, accepted copy)`` per accepted document, in the gate's order, and the core
        gate result (with the audit record).
    """
    source: dict[int, Document] = {}
    cand_channels: list[list[Candidate]] = []
    for docs in channels:
        cands = []
        for doc in docs:
            cand = to_candidate(doc, id_key=id_key, score_key=score_key, lexical_key=lexical_key)
            source[id(cand)] = doc
            cands.append(cand)
        cand_channels.append(cands)
    wrapped = gate_candidates(
        query,
        cand_channels,
        scope=scope,
        gate=gate,
        names=names,
        weights=weights,
        fusion=fusion,
        embedder=embedder,
        score_key=score_key,
        lexical_key=lexical_key,
        dry_run=dry_run,
        k=k,
        extra=extra,
    )
    pairs = []
    for cand, hit in wrapped.accepted:
        original = source[id(cand)]
        pairs.append((original, accepted_document(original, hit, provenance=provenance)))
    return pairs, wrapped.result


_SCOPE_FIELDS = frozenset({"user_id", "agent_id", "memory_space_id", "route_id"})
_CANDIDATE_FIELDS = frozenset(MemoryCandidate.model_fields) - _SCOPE_FIELDS - {"id", "body"}


def to_memory_candidate(
    doc: Document, *, memory_id: str | None, scope: Scope, defaults: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The write-gate candidate of a document (as a mapping; the write gate validates it).

    The body is the page content; metadata keys named like
    :class:`~shared_core.write_gate.MemoryCandidate` fields (``title``, ``status``, ``origin``,
    ``cited``, ``tags``, ``supersedes``, ...) fill those fields over ``defaults``. The scope is
    always the writer's (metadata cannot write into another scope) and the id is ``memory_id``
    (``None``: the write gate derives a deterministic one).
    """
    meta = strip_stamp(doc.metadata)
    fields = {**(defaults or {}), **{k: v for k, v in meta.items() if k in _CANDIDATE_FIELDS}}
    return {**fields, **scope.model_dump(), "body": doc.page_content, "id": memory_id}


def stored_document(record: MemoryRecord, metadata: Mapping[str, Any]) -> Document:
    """The document a gated vector store writes: the (screened) body, user metadata and the stamp.

    ``title`` in the user metadata is replaced by the record's (it was screened and may be masked).
    """
    meta = strip_stamp(metadata)
    meta.pop(PROVENANCE_KEY, None)
    if "title" in meta:
        meta["title"] = record.title
    meta.update(encode_stamp(record))
    return Document(id=record.id, page_content=record.body, metadata=meta)
