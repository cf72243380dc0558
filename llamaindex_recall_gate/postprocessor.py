"""``RecallGatePostprocessor``: the recall gate as a LlamaIndex node postprocessor (A2)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from shared_core import RecallGate, Scope
from shared_core.interop import (
    PlainMode,
    ScopeSource,
    check_plain,
    default_gate,
    plain_defaults,
    positive_int,
    recall_feedback,
)
from shared_core.recall.wrapped import gate_candidates
from shared_core.timeutil import to_utc

from .convert import candidate_from_node, gated_nodes, plain_count
from .embeddings import gate_embedder
from .events import dispatch_audit
from .retriever import embed_model_option
from .scope import ScopeLike, current_scope, scope_source

__all__ = ["RecallGatePostprocessor"]

_COMPONENT = "RecallGatePostprocessor"
_log = logging.getLogger("llamaindex_recall_gate")


class RecallGatePostprocessor(BaseNodePostprocessor):
    """Gate any node list: only nodes the recall gate accepts go on to the LLM.

    Use it where you already have a retriever and a query engine::

        engine = index.as_query_engine(
            llm=llm,
            similarity_top_k=20,
            node_postprocessors=[RecallGatePostprocessor(scope=scope, embed_model=embed_model)],
        )

    The nodes' metadata is read as each memory's record and the core decides
    (:func:`shared_core.recall.wrapped.gate_candidates`, one channel, order kept). Returned nodes
    are copies with ``metadata["recall_gate"]`` (provenance) and the bounded gate score (semantic
    cosine, else lexical share), in the gate's order. Gating runs in a worker thread on the async
    path (``apostprocess_nodes``): embedding is CPU-bound.

    Scores: with ``embed_model`` the core computes the cosine between the query and each node's
    text; else ``metadata[score_key]`` if given (a similarity in [-1, 1]); else only the lexical
    share of query terms can pass ``low_score``. Without a query bundle
    (``postprocess_nodes(nodes)``) no cosine and no lexical share are computed, so only
    ``score_key`` can pass ``low_score``.

    Scope: the per-request one of :func:`llamaindex_recall_gate.recall_scope`, else the
    constructor's (failing closed, see :mod:`llamaindex_recall_gate.scope`); with neither,
    :class:`shared_core.ScopeError`.

    Args:
        scope: default scope.
        gate: the recall gate (default: the calibrated threshold of ``embed_model``, else the seeds').
        embed_model: embedding with which the core computes the semantic score (``embedding=``
            is a deprecated alias).
        score_key: metadata key holding a similarity in [-1, 1].
        lexical_key: metadata key holding a keyword score in [0, 1].
        id_key: metadata key holding the memory id (default: the node id).
        k: at most this many nodes kept (overrides ``max_hits``).
        dry_run: mark audit records as previews (decisions are identical).
        provenance: add ``metadata["recall_gate"]`` to kept nodes.
        plain_documents: nodes without record metadata: ``"reject"`` or ``"owned"``.
    """

    scope: Scope | None = Field(default=None, description="Default scope of the gate.")
    score_key: str | None = Field(default=None, description="Metadata key of a similarity in [-1, 1].")
    lexical_key: str | None = Field(default=None, description="Metadata key of a keyword score in [0, 1].")
    id_key: str | None = Field(default=None, description="Metadata key of the memory id.")
    k: int | None = Field(default=None, description="At most this many nodes kept.")
    dry_run: bool = Field(default=False, description="Mark audit records as previews.")
    provenance: bool = Field(default=True, description="Add provenance to kept nodes.")
    plain_documents: PlainMode = Field(default="reject", description="Nodes without record metadata.")
    _gate: RecallGate = PrivateAttr()
    _embedder: Any = PrivateAttr(default=None)
    _scopes: ScopeSource = PrivateAttr()

    def __init__(
        self,
        *,
        scope: ScopeLike | None = None,
        gate: RecallGate | None = None,
        embed_model: Any = None,
        score_key: str | None = None,
        lexical_key: str | None = None,
        id_key: str | None = None,
        k: int | None = None,
        dry_run: bool = False,
        provenance: bool = True,
        plain_documents: PlainMode = "reject",
        embedding: Any = None,
    ) -> None:
        embed_model = embed_model_option(embed_model, embedding)
        positive_int("k", k)
        scopes = scope_source(scope)
        check_plain(plain_documents, scopes.default)
        fields: dict[str, Any] = {
            "scope": scopes.default,
            "score_key": score_key,
            "lexical_key": lexical_key,
            "id_key": id_key,
            "k": k,
            "dry_run": dry_run,
            "provenance": provenance,
            "plain_documents": plain_documents,
        }
        super().__init__(**fields)
        self._scopes = scopes
        self._embedder = gate_embedder(embed_model) if embed_model is not None else None
        self._gate = default_gate(gate, embed_model, self._embedder)

    @classmethod
    def class_name(cls) -> str:
        """Name of the component (LlamaIndex convention)."""
        return "RecallGatePostprocessor"

    @property
    def gate(self) -> RecallGate:
        """The recall gate this postprocessor applies."""
        return self._gate

    def _run(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None, scope: Scope
    ) -> list[NodeWithScore]:
        query = query_bundle.query_str if query_bundle is not None else ""
        owner = self._scopes.default
        plain = (
            plain_defaults(owner, to_utc(self._gate.clock()))
            if self.plain_documents == "owned" and owner is not None
            else None
        )
        wrapped = gate_candidates(
            query,
            [
                [
                    candidate_from_node(
                        n,
                        id_key=self.id_key,
                        score_key=self.score_key,
                        lexical_key=self.lexical_key,
                        plain=plain,
                    )
                    for n in nodes
                ]
            ],
            scope=scope,
            gate=self._gate,
            names=["nodes"],
            embedder=self._embedder if query_bundle is not None else None,
            score_key=self.score_key,
            lexical_key=self.lexical_key,
            dry_run=self.dry_run,
            k=self.k,
            extra={"adapter": "llama_index", "component": _COMPONENT},
        )
        dispatch_audit(wrapped.result.audit, component=_COMPONENT)
        semantic = (self._embedder is not None and query_bundle is not None) or self.score_key is not None
        line = recall_feedback(
            wrapped.result,
            _COMPONENT,
            plain=0 if plain is not None else plain_count([nodes]),
            semantic=semantic,
        )
        if line is not None:
            _log.warning(line)
        return gated_nodes(wrapped, [nodes], id_key=self.id_key, provenance=self.provenance)

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        return self._run(nodes, query_bundle, self._scopes.resolve(None, current_scope()))

    async def _apostprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        scope = self._scopes.resolve(None, current_scope())
        return await asyncio.to_thread(self._run, nodes, query_bundle, scope)
