"""Conversions between LlamaIndex nodes and the core's candidates, hits and records.

Nothing here decides anything: nodes become :class:`~shared_core.recall.wrapped.Candidate`
objects (or write candidates), the core decides, and accepted hits become nodes again with their
provenance in ``metadata["recall_gate"]`` (R12).

Record fields: a node written through a gated vector store (this adapter's, the LangChain one's,
or :class:`~shared_core.store.MemoryStore`) carries its record in the core's flat codec and is
read from those keys alone; other nodes in the seeds' flat ``MemoryHit`` shape; a *plain* node
(no record metadata at all) is rejected as ``invalid`` unless ``plain_documents="owned"``.

Scores put on returned :class:`~llama_index.core.schema.NodeWithScore` objects are the bounded
score the gate thresholded on: the semantic score (cosine in [-1, 1]) when there is one, else the
lexical share in [0, 1]. They replace the wrapped retriever's native score, which is kept in the
provenance of a wrapped retriever only as ranks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from llama_index.core.schema import (
    BaseNode,
    MetadataMode,
    NodeRelationship,
    NodeWithScore,
    RelatedNodeInfo,
    TextNode,
)

from shared_core import Hit, MemoryRecord
from shared_core.interop import (
    PROVENANCE_KEY,
    RESERVED_KEYS,
    is_plain,
    read_fields,
    stored_document,
    write_fields,
)
from shared_core.recall.wrapped import Candidate, WrappedResult, hit_metadata

__all__ = [
    "PROVENANCE_KEY",
    "candidate_from_node",
    "gate_score",
    "gated_nodes",
    "node_from_hit",
    "node_from_record",
    "node_text",
    "plain_count",
    "stored_node",
    "write_item_from_node",
]

_LLM_VISIBLE = frozenset({"title", "updated_at"})
_EMBED_VISIBLE = frozenset({"title"})


def node_text(node: BaseNode) -> str:
    """The node's own text, without metadata (what the gate and the write gate look at)."""
    return node.get_content(metadata_mode=MetadataMode.NONE)


def _node_id(node: BaseNode, id_key: str | None) -> str | None:
    if id_key is None:
        return node.node_id
    value = node.metadata.get(id_key)
    return value if isinstance(value, str) else None


def candidate_from_node(
    nws: NodeWithScore,
    *,
    id_key: str | None = None,
    score_key: str | None = None,
    lexical_key: str | None = None,
    plain: Mapping[str, Any] | None = None,
) -> Candidate:
    """A node with its native score as a core candidate (id: ``node_id`` or ``metadata[id_key]``)."""
    node = nws.node
    return Candidate(
        id=_node_id(node, id_key),
        text=node_text(node),
        metadata=read_fields(node.metadata, keep=(score_key, lexical_key), plain=plain),
        native_score=nws.score,
    )


def plain_count(channels: Iterable[Sequence[NodeWithScore]]) -> int:
    """How many nodes carry no record metadata at all."""
    return sum(is_plain(n.node.metadata) for chan in channels for n in chan)


def gate_score(hit: Hit) -> float | None:
    """The bounded score a returned node carries: semantic if present, else lexical."""
    return hit.score if hit.score is not None else hit.lexical_score


def _excluded(keys: Iterable[str], extra: Iterable[str]) -> list[str]:
    out = list(keys)
    out.extend(k for k in extra if k not in out)
    return out


def _with_provenance(node: BaseNode, hit: Hit | None) -> BaseNode:
    """A copy whose provenance and record keys are hidden from the LLM and from embeddings."""
    copy = node.model_copy()
    copy.metadata = dict(node.metadata)
    if hit is not None:
        copy.metadata[PROVENANCE_KEY] = hit_metadata(hit)
    hidden = [k for k in copy.metadata if k in RESERVED_KEYS and k not in _LLM_VISIBLE] + [PROVENANCE_KEY]
    copy.excluded_llm_metadata_keys = _excluded(node.excluded_llm_metadata_keys, hidden)
    copy.excluded_embed_metadata_keys = _excluded(node.excluded_embed_metadata_keys, hidden)
    return copy


def gated_nodes(
    wrapped: WrappedResult,
    channels: Sequence[Sequence[NodeWithScore]],
    *,
    id_key: str | None = None,
    provenance: bool = True,
) -> list[NodeWithScore]:
    """The accepted nodes, in the gate's order, as copies carrying provenance and the gate score.

    Args:
        wrapped: what :func:`shared_core.recall.wrapped.gate_candidates` returned.
        channels: the nodes each wrapped retriever returned (the first node seen for an id is
            the one returned, as the core fuses by first occurrence).
        id_key: the metadata key used as id, if not ``node_id``.
        provenance: add ``metadata["recall_gate"]`` (R12).
    """
    first: dict[str, NodeWithScore] = {}
    for chan in channels:
        for nws in chan:
            nid = _node_id(nws.node, id_key)
            if nid is not None:
                first.setdefault(nid, nws)
    out: list[NodeWithScore] = []
    for cand, hit in wrapped.accepted:
        original = first.get(cand.id) if cand.id is not None else None
        if original is not None:
            node = _with_provenance(original.node, hit if provenance else None)
            out.append(NodeWithScore(node=node, score=gate_score(hit)))
    return out


def node_from_record(record: MemoryRecord) -> TextNode:
    """A stored memory as a node (id = memory id, text = body, record fields as hidden metadata)."""
    metadata = record.model_dump(mode="json", exclude={"id", "body"}, exclude_none=True)
    node = TextNode(
        id_=record.id,
        text=record.body,
        metadata=metadata,
        excluded_llm_metadata_keys=[k for k in metadata if k not in _LLM_VISIBLE],
        excluded_embed_metadata_keys=[k for k in metadata if k not in _EMBED_VISIBLE],
    )
    if record.source_record_id:
        node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=record.source_record_id)
    return node


def node_from_hit(hit: Hit, *, provenance: bool = True) -> NodeWithScore:
    """A :class:`~shared_core.store.MemoryStore` hit as a node; only ``title`` and ``updated_at`` reach the LLM."""
    node = node_from_record(hit.record)
    if provenance:
        node.metadata[PROVENANCE_KEY] = hit_metadata(hit)
        node.excluded_llm_metadata_keys.append(PROVENANCE_KEY)
        node.excluded_embed_metadata_keys.append(PROVENANCE_KEY)
    return NodeWithScore(node=node, score=gate_score(hit))


def write_item_from_node(node: BaseNode, *, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """A node as a write-gate candidate mapping (fields of ``MemoryCandidate``).

    Candidate fields come from the node's metadata, then from ``defaults``; the body is the
    node's text, the id its ``node_id`` and, unless the metadata names one, the source record is
    the node's ``ref_doc_id`` (deletion lineage, L2). Owner and trust are the write path's.
    """
    item: dict[str, Any] = {**defaults, **write_fields(node.metadata)}
    if item.get("source_record_id") in (None, "") and node.ref_doc_id:
        item["source_record_id"] = node.ref_doc_id
    item["body"] = node_text(node)
    item["id"] = node.node_id
    return item


def stored_node(original: BaseNode | None, record: MemoryRecord) -> BaseNode:
    """The node to store for a record: the original (relationships kept) with the record's text and metadata.

    The user's metadata keys are kept; the codec's keys (hidden from the LLM and from
    embeddings) carry the record, so any reader of the collection sees the same memory.
    """
    base = original if original is not None else node_from_record(record)
    _, meta = stored_document(record, base.metadata)
    node = base.model_copy()
    node.metadata = meta
    node.excluded_llm_metadata_keys = _excluded(
        base.excluded_llm_metadata_keys, [k for k in meta if k in RESERVED_KEYS and k not in _LLM_VISIBLE]
    )
    node.excluded_embed_metadata_keys = _excluded(
        base.excluded_embed_metadata_keys, [k for k in meta if k in RESERVED_KEYS and k not in _EMBED_VISIBLE]
    )
    node.set_content(record.body)
    node.embedding = None
    if record.source_record_id and node.ref_doc_id is None:
        node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=record.source_record_id)
    return node
