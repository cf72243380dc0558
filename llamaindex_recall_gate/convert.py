"""Conversions between LlamaIndex nodes and the core's candidates, hits and records.

Nothing here decides anything: nodes become :class:`~shared_core.candidates.Candidate` objects
(or write candidates), the core decides, and accepted hits become nodes again with their
provenance in ``metadata["recall_gate"]`` (R12).

Scores put on returned :class:`~llama_index.core.schema.NodeWithScore` objects are the bounded
score the gate thresholded on: the semantic score (cosine in [-1, 1]) when there is one, else the
lexical share in [0, 1] (see :mod:`shared_core.candidates`). They replace the wrapped retriever's
native score, which is kept in the provenance of a wrapped retriever only as ranks.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore, TextNode

from shared_core import Hit, MemoryRecord
from shared_core.model import encode_record
from shared_core.recall.wrapped import Candidate, WrappedResult, hit_metadata
from shared_core.write import MemoryCandidate

__all__ = [
    "RECALL_GATE_KEY",
    "candidate_from_node",
    "gate_score",
    "gated_nodes",
    "node_from_hit",
    "node_text",
    "record_metadata",
    "write_item_from_node",
]

RECALL_GATE_KEY = "recall_gate"
"""Metadata key holding an accepted node's provenance (R12)."""

_TUPLE_FIELDS = ("tags", "supersedes")
_LLM_VISIBLE = frozenset({"title", "updated_at"})
_EMBED_VISIBLE = frozenset({"title"})


def node_text(node: BaseNode) -> str:
    """The node's own text, without metadata (what the gate and the write gate look at)."""
    return node.get_content(metadata_mode=MetadataMode.NONE)


def _decode_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Metadata with tuple fields decoded from JSON strings (flat stores cannot hold lists)."""
    out = dict(metadata)
    for key in _TUPLE_FIELDS:
        value = out.get(key)
        if isinstance(value, str) and value.startswith("["):
            with contextlib.suppress(ValueError):  # left as is: the gate rejects what it cannot parse
                out[key] = json.loads(value)
    return out


def _node_id(node: BaseNode, id_key: str | None) -> str | None:
    if id_key is None:
        return node.node_id
    value = node.metadata.get(id_key)
    return value if isinstance(value, str) else None


def candidate_from_node(nws: NodeWithScore, *, id_key: str | None = None) -> Candidate:
    """A node with its native score as a core candidate (id: ``node_id`` or ``metadata[id_key]``)."""
    node = nws.node
    return Candidate(
        id=_node_id(node, id_key),
        text=node_text(node),
        metadata=_decode_metadata(node.metadata),
        native_score=nws.score,
    )


def gate_score(hit: Hit) -> float | None:
    """The bounded score a returned node carries: semantic if present, else lexical."""
    return hit.score if hit.score is not None else hit.lexical_score


def _excluded(keys: Iterable[str], extra: str) -> list[str]:
    out = list(keys)
    if extra not in out:
        out.append(extra)
    return out


def _with_provenance(node: BaseNode, hit: Hit) -> BaseNode:
    copy = node.model_copy()
    copy.metadata = {**node.metadata, RECALL_GATE_KEY: hit_metadata(hit)}
    copy.excluded_llm_metadata_keys = _excluded(node.excluded_llm_metadata_keys, RECALL_GATE_KEY)
    copy.excluded_embed_metadata_keys = _excluded(node.excluded_embed_metadata_keys, RECALL_GATE_KEY)
    return copy


def gated_nodes(
    wrapped: WrappedResult, channels: Sequence[Sequence[NodeWithScore]], *, id_key: str | None = None
) -> list[NodeWithScore]:
    """The accepted nodes, in the gate's order, as copies carrying provenance and the gate score.

    Args:
        wrapped: what :func:`shared_core.candidates.gate_candidates` returned.
        channels: the nodes each wrapped retriever returned (the first node seen for an id is
            the one returned, as the core fuses by first occurrence).
        id_key: the metadata key used as id, if not ``node_id``.
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
            out.append(NodeWithScore(node=_with_provenance(original.node, hit), score=gate_score(hit)))
    return out


def node_from_hit(hit: Hit) -> NodeWithScore:
    """A :class:`~shared_core.store.MemoryStore` hit as a node (id = memory id, text = body).

    Record fields go to metadata; only ``title`` and ``updated_at`` are shown to the LLM and only
    ``title`` to embeddings (the scope and lifecycle fields are bookkeeping).
    """
    record = hit.record
    metadata = record.model_dump(mode="json", exclude={"id", "body"}, exclude_none=True)
    metadata[RECALL_GATE_KEY] = hit_metadata(hit)
    node = TextNode(
        id_=record.id,
        text=record.body,
        metadata=metadata,
        excluded_llm_metadata_keys=[k for k in metadata if k not in _LLM_VISIBLE],
        excluded_embed_metadata_keys=[k for k in metadata if k not in _EMBED_VISIBLE],
    )
    return NodeWithScore(node=node, score=gate_score(hit))


_WRITE_FIELDS = frozenset(MemoryCandidate.model_fields) - {"id", "body"}


def write_item_from_node(node: BaseNode, *, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """A node as a write-gate candidate mapping (fields of ``MemoryCandidate``).

    Candidate fields come from the node's metadata, then from ``defaults`` (the store's scope and
    write defaults); the body is the node's text, the id its ``node_id`` and, unless the
    metadata names one, the source record is the node's ``ref_doc_id`` (deletion lineage, L2).
    """
    metadata = _decode_metadata(node.metadata)
    item: dict[str, Any] = {k: v for k, v in defaults.items() if k in _WRITE_FIELDS}
    item.update({k: v for k, v in metadata.items() if k in _WRITE_FIELDS})
    if item.get("source_record_id") in (None, "") and node.ref_doc_id:
        item["source_record_id"] = node.ref_doc_id
    item["body"] = node_text(node)
    item["id"] = node.node_id
    return item


def record_metadata(record: MemoryRecord) -> dict[str, Any]:
    """Flat metadata (str/int/float/bool only) for a written record, as the core stores it in Chroma.

    Besides the record fields it holds the partition keys ``rg_route`` and ``rg_bucket`` and
    epoch ``*_ts`` times, which a store can filter on.
    """
    return encode_record(record)[1]
