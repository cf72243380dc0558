"""Conversion between LangChain documents and the core's candidates, hits and records.

Nothing in this module decides anything (DESIGN "Adapters only convert and delegate").

Identity: a document's id is ``metadata[id_key]`` when ``id_key`` is configured and present
(a string, or an integer turned into its decimal string), else ``Document.id``. Page content is
never used as an id: two memories that share a text stay two memories.

Record fields: a document written through :class:`~langchain_recall_gate.GatedVectorStore`
(or :class:`~shared_core.store.MemoryStore`, or the LlamaIndex write filter) carries its record
in the core's flat codec (:func:`shared_core.model.encode_record`: record fields plus
``rg_route`` / ``rg_bucket`` / ``rg_schema``); it is read from those keys alone. Other documents
are read in the seeds' flat ``MemoryHit`` shape: ``user_id``, ``agent_id``, ``memory_space_id``,
``updated_at``, ``status``, ... as top-level metadata keys. A document with neither is *plain*:
rejected as ``invalid``, or, with ``plain_documents="owned"``, read as an approved memory of the
component's configured scope (see :func:`~._common.read_fields`).

Documents handed back carry the user's own metadata (the codec's keys removed; a non-empty
``title`` kept, as screened) plus the provenance under :data:`PROVENANCE_KEY`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.runnables import RunnableConfig, ensure_config

from shared_core import GateResult, Hit, MemoryRecord, RecallGate, Scope
from shared_core.interop import PROVENANCE_KEY, is_plain, read_fields, user_metadata
from shared_core.model import is_encoded
from shared_core.recall.wrapped import Candidate, gate_candidates, hit_metadata
from shared_core.retrieval.fusion import FusionConfig

__all__ = [
    "PROVENANCE_KEY",
    "accepted_document",
    "config_scope",
    "document_id",
    "gate_documents",
    "hit_document",
    "record_document",
    "shown_document",
    "to_candidate",
    "with_config_scope",
]


def document_id(doc: Document, id_key: str | None = None) -> str | None:
    """The stable id of a document: ``metadata[id_key]`` if configured and usable, else ``Document.id``.

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


def to_candidate(
    doc: Document,
    *,
    id_key: str | None = None,
    score_key: str | None = None,
    lexical_key: str | None = None,
    plain: Mapping[str, Any] | None = None,
) -> Candidate:
    """A core candidate from a document (see the module docstring for ids and record fields).

    Args:
        doc: the document.
        id_key: metadata key holding the id.
        score_key: metadata key holding a similarity in [-1, 1]; also the candidate's native score.
        lexical_key: metadata key holding a keyword score in [0, 1].
        plain: record fields for plain documents (``plain_documents="owned"``), else ``None``.
    """
    meta = doc.metadata
    native = meta.get(score_key) if score_key is not None else None
    return Candidate(
        id=document_id(doc, id_key),
        text=doc.page_content,
        metadata=read_fields(meta, keep=(score_key, lexical_key), plain=plain),
        native_score=float(native)
        if isinstance(native, (int, float)) and not isinstance(native, bool)
        else None,
    )


def shown_document(doc: Document) -> Document:
    """A copy of a stored document as users see it: a gated record's codec keys removed, its title kept."""
    if not is_encoded(doc.metadata):
        return Document(id=doc.id, page_content=doc.page_content, metadata=dict(doc.metadata))
    meta = user_metadata(doc.metadata)
    if doc.metadata.get("title"):
        meta["title"] = doc.metadata["title"]  # the screened title: what the user wrote, masked
    return Document(id=doc.id, page_content=doc.page_content, metadata=meta)


def accepted_document(doc: Document, hit: Hit, *, provenance: bool = True) -> Document:
    """A copy of an accepted document: codec keys removed, provenance added under :data:`PROVENANCE_KEY`.

    Args:
        doc: the document as the wrapped retriever or store returned it (never modified).
        hit: the accepted hit the gate built from it.
        provenance: add ``metadata["recall_gate"]`` (R12); ``False`` returns the user's metadata.
    """
    shown = shown_document(doc)
    if provenance:
        shown.metadata[PROVENANCE_KEY] = hit_metadata(hit)
    if shown.id is None:
        shown.id = hit.record.id
    return shown


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


def config_scope(config: RunnableConfig | None) -> Any:
    """``config["configurable"]["scope"]`` (the running chain's config when ``config`` is ``None``)."""
    configurable = ensure_config(config).get("configurable") or {}
    return configurable.get("scope")


def with_config_scope(config: RunnableConfig | None, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` plus ``ambient_scope``: ``config["configurable"]["scope"]`` (the per-call ``scope`` wins)."""
    if kwargs.get("scope") is not None:
        return kwargs
    scope = config_scope(config)
    return kwargs if scope is None else {**kwargs, "ambient_scope": scope}


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
    plain: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> tuple[list[tuple[Document, Document]], GateResult, int]:
    """Convert documents to candidates, run :func:`~shared_core.recall.wrapped.gate_candidates`, convert back.

    Returns:
        ``(original, accepted copy)`` per accepted document in the gate's order, the core gate
        result (with the audit record), and how many documents were plain (no record metadata).
    """
    source: dict[int, Document] = {}
    cand_channels: list[list[Candidate]] = []
    plain_count = 0
    for docs in channels:
        cands = []
        for doc in docs:
            plain_count += is_plain(doc.metadata) and plain is None
            cand = to_candidate(doc, id_key=id_key, score_key=score_key, lexical_key=lexical_key, plain=plain)
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
    return pairs, wrapped.result, plain_count
