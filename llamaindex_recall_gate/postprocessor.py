"""``RecallGatePostprocessor``: the recall gate as a LlamaIndex node postprocessor (A2)."""

from __future__ import annotations

from typing import Any

from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from shared_core import ConfigError, RecallGate, Scope, coerce_scope
from shared_core.embedding import as_embedder
from shared_core.recall.wrapped import gate_candidates

from .convert import candidate_from_node, gated_nodes
from .events import dispatch_audit
from .scope import ScopeLike, resolve_scope

__all__ = ["RecallGatePostprocessor"]

_COMPONENT = "RecallGatePostprocessor"


class RecallGatePostprocessor(BaseNodePostprocessor):
    """Gate any node list: only nodes the recall gate accepts go on to the LLM.

    Use it where you already have a retriever and a query engine::

        engine = index.as_query_engine(
            llm=llm,
            similarity_top_k=20,
            node_postprocessors=[
                RecallGatePostprocessor(scope=scope, gate=RecallGate(config), embedding=embed_model)
            ],
        )

    The nodes' metadata is read as each memory's record and the core decides
    (:func:`shared_core.candidates.gate_candidates`, one channel, order kept). Returned nodes are
    copies with ``metadata["recall_gate"]`` (provenance) and the bounded gate score (semantic
    cosine, else lexical share), in the gate's order.

    Scores: with ``embedding`` the core computes the cosine between the query and each node's
    text; else ``metadata[score_key]`` if given (a similarity in [-1, 1]); else only the lexical
    share of query terms can pass ``low_score``. The nodes' own scores are never thresholded.
    Without a query bundle (``postprocess_nodes(nodes)``) there is no query to compare with: no
    cosine and no lexical share are computed, so only ``score_key`` can pass ``low_score``; every
    other rule applies as usual.

    Scope: the constructor's, or the per-request one of
    :func:`llamaindex_recall_gate.recall_scope`; with neither, :class:`shared_core.ScopeError`.

    Args:
        scope: default scope.
        gate: the recall gate (default: ``RecallGate()`` with the seeds' defaults).
        embedding: embedding with which the core computes the semantic score.
        score_key: metadata key holding a similarity in [-1, 1].
        lexical_key: metadata key holding a keyword score in [0, 1].
        id_key: metadata key holding the memory id (default: the node id).
        k: at most this many nodes kept (overrides ``max_hits``).
        dry_run: mark audit records as previews (decisions are identical).
    """

    scope: Scope | None = Field(default=None, description="Default scope of the gate.")
    score_key: str | None = Field(default=None, description="Metadata key of a similarity in [-1, 1].")
    lexical_key: str | None = Field(default=None, description="Metadata key of a keyword score in [0, 1].")
    id_key: str | None = Field(default=None, description="Metadata key of the memory id.")
    k: int | None = Field(default=None, ge=1, description="At most this many nodes kept.")
    dry_run: bool = Field(default=False, description="Mark audit records as previews.")
    _gate: RecallGate = PrivateAttr()
    _embedder: Any = PrivateAttr(default=None)

    def __init__(
        self,
        *,
        scope: ScopeLike | None = None,
        gate: RecallGate | None = None,
        embedding: Any = None,
        score_key: str | None = None,
        lexical_key: str | None = None,
        id_key: str | None = None,
        k: int | None = None,
        dry_run: bool = False,
    ) -> None:
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise ConfigError("k must be a positive integer")
        fields: dict[str, Any] = {
            "scope": coerce_scope(scope) if scope is not None else None,
            "score_key": score_key,
            "lexical_key": lexical_key,
            "id_key": id_key,
            "k": k,
            "dry_run": dry_run,
        }
        super().__init__(**fields)
        self._gate = gate if gate is not None else RecallGate()
        self._embedder = as_embedder(embedding) if embedding is not None else None

    @classmethod
    def class_name(cls) -> str:
        """Name of the component (LlamaIndex convention)."""
        return "RecallGatePostprocessor"

    @property
    def gate(self) -> RecallGate:
        """The recall gate this postprocessor applies."""
        return self._gate

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        scope = resolve_scope(self.scope)
        query = query_bundle.query_str if query_bundle is not None else ""
        wrapped = gate_candidates(
            query,
            [[candidate_from_node(n, id_key=self.id_key) for n in nodes]],
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
        return gated_nodes(wrapped, [nodes], id_key=self.id_key)
