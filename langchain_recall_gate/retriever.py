"""``GatedRetriever``: a LangChain retriever whose results went through the recall gate (A1)."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any, TypeVar

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
    Callbacks,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config
from langchain_core.tracers.context import tracing_v2_callback_var
from langsmith import utils as ls_utils
from langsmith.run_helpers import tracing_context
from pydantic import Field, PrivateAttr

from shared_core import GateResult, RecallGate, Scope
from shared_core.errors import ConfigError
from shared_core.interop import (
    PlainMode,
    ScopeSource,
    check_plain,
    core_embedder,
    default_gate,
    plain_defaults,
    positive_int,
    recall_feedback,
)
from shared_core.retrieval.fusion import FusionConfig
from shared_core.store import MemoryStore
from shared_core.timeutil import to_utc

from .callbacks import adispatch_audit, dispatch_audit
from .convert import gate_documents, hit_document, with_config_scope

__all__ = ["GatedRetriever", "arun_outside", "run_outside"]

_T = TypeVar("_T")

_log = logging.getLogger("langchain_recall_gate")
_WRAPPED_ONLY = ("gate", "weights", "names", "fusion", "embedding", "score_key", "lexical_key", "id_key")


@contextlib.contextmanager
def _no_tracing() -> Iterator[None]:
    tokens = (var_child_runnable_config.set(None), tracing_v2_callback_var.set(None))
    try:
        if ls_utils.tracing_is_enabled():  # LangSmith on (environment or context): switch it off here
            with tracing_context(enabled=False, parent=False):
                yield
        else:
            yield
    finally:
        tracing_v2_callback_var.reset(tokens[1])
        var_child_runnable_config.reset(tokens[0])


def _quiet(fn: Callable[[], _T]) -> _T:
    with _no_tracing():
        return fn()


def run_outside(fn: Callable[[], _T]) -> _T:
    """Run ``fn`` outside the caller's callback tree and tracing (R9, issue 13 "tracing leaks").

    The wrapped retrievers see every candidate, including other users' memories and rejected
    ones: their own runs must not reach the caller's callback handlers, ``astream_events``
    consumers, ``collect_runs`` or a LangSmith tracer. ``fn`` runs in an empty
    :class:`contextvars.Context` (no running chain config, no tracing context) with LangSmith
    tracing off; calls made in it pass their own ``callbacks``. (LangChain's global
    ``set_debug``/``set_verbose`` console output is not a context and still prints.)
    """
    return contextvars.Context().run(_quiet, fn)


async def arun_outside(fn: Callable[[], Awaitable[_T]]) -> _T:
    """Async :func:`run_outside` (Python 3.10 has no task context: the known variables are cleared instead)."""

    async def quiet() -> _T:
        with _no_tracing():
            return await fn()

    if sys.version_info >= (3, 11):
        return await asyncio.create_task(quiet(), context=contextvars.Context())
    return await quiet()


class GatedRetriever(BaseRetriever):
    """A retriever that returns only the memories the recall gate accepts.

    Two ways in (DESIGN "Two ways in, both first-class"):

    * **wrap what you have** — ``GatedRetriever(retrievers=[vector, other], weights=[2, 1],
      scope=...)`` runs your retrievers (concurrently in async), fuses their results by stable
      id (RRF, weights really applied), computes bounded scores and gates every document on its
      record metadata (see :mod:`langchain_recall_gate.convert`). Ids come from ``Document.id``
      or ``metadata[id_key]``;
    * **the hybrid store** — ``GatedRetriever.from_store(store, scope=...)`` runs the memory
      store's scoped BM25 + vector query and its gate (``store.query``): the maintained BM25 of
      this project, no ``langchain-community`` needed.

    **Scope** (R1): per call (``invoke(q, scope=...)``), in ``config["configurable"]["scope"]``,
    or the constructor's; the per-call scope wins. With none, :class:`~shared_core.ScopeError`
    before any retrieval runs. Once the retriever has served a per-request scope it never falls
    back to its constructor scope: a call that finds none (a worker thread that lost the chain's
    config) raises ``ScopeError`` instead of answering as another identity.

    **Output**: accepted documents are copies whose ``metadata["recall_gate"]`` holds their
    provenance (R12; ``provenance=False`` leaves the user's metadata as it was); rejected documents
    never come out. Each call dispatches one ``recall_gate.audit`` custom event (ids, reasons,
    counts; see :mod:`langchain_recall_gate.callbacks`). A call that accepts nothing from a
    non-empty list logs one warning (logger ``langchain_recall_gate``) with the counts by reason
    and, when it applies, what to add. :meth:`preview` is the dry run (R10).

    **Tracing**: the wrapped retrievers run outside the caller's callback tree (:func:`run_outside`:
    their runs never reach the caller's handlers, ``astream_events`` or LangSmith, since they see
    ungated text); pass ``inner_callbacks`` to trace them to handlers of your own.

    Attributes:
        retrievers: the retrievers to wrap (one or several); or use ``store``.
        weights: fusion weight per retriever (default 1.0 each).
        names: channel name per retriever, unique, shown in provenance (default ``retriever_0``...).
        store: a :class:`~shared_core.store.MemoryStore` to query instead (see :meth:`from_store`).
        gate: the recall gate for wrapped retrievers (default: a gate at the calibrated threshold
            of ``embedding`` — 0.54 for :class:`~langchain_recall_gate.MiniLMEmbeddings` — else
            the seeds' 0.78); a store uses its own gate.
        scope: default scope (a :class:`~shared_core.Scope` or a mapping of its fields).
        k: at most this many documents (``None``: the memory space's ``max_hits``); per call too.
        embedding: a LangChain ``Embeddings`` (or anything :func:`shared_core.embedding.as_embedder`
            accepts): the gate's semantic score is then the cosine it computes.
        score_key: metadata key holding a similarity in [-1, 1] (used without ``embedding``).
        lexical_key: metadata key holding a keyword score in [0, 1] instead of the core's share.
        id_key: metadata key holding the memory id (default: ``Document.id``).
        fusion: fusion settings for several retrievers (RRF by default).
        candidates: fused candidates the store passes to the gate (store only).
        dry_run: mark runs as previews in the audit (R10); decisions are identical.
        provenance: add ``metadata["recall_gate"]`` to accepted documents.
        plain_documents: documents without any record metadata: ``"reject"`` (default: ``invalid``,
            and the warning says what to add) or ``"owned"`` (read as approved, confirmed, current
            memories of the constructor ``scope``, never of a per-request one; you vouch that the
            wrapped store holds only that scope's documents).
        inner_callbacks: callbacks for the wrapped retrievers' own runs (default none).

    Example:
        >>> retriever = GatedRetriever(retrievers=[vectorstore.as_retriever(search_kwargs={"k": 20})],
        ...                            embedding=MiniLMEmbeddings(), scope=scope, k=4)
        >>> chain = {"context": retriever | format_docs, "question": RunnablePassthrough()} | prompt | llm
    """

    retrievers: list[BaseRetriever] = Field(default_factory=list)
    weights: list[float] | None = None
    names: list[str] | None = None
    store: MemoryStore | None = None
    gate: RecallGate | None = None
    scope: Scope | None = None
    k: int | None = None
    embedding: Any = None
    score_key: str | None = None
    lexical_key: str | None = None
    id_key: str | None = None
    fusion: FusionConfig | None = None
    candidates: int | None = None
    dry_run: bool = False
    provenance: bool = True
    plain_documents: PlainMode = "reject"
    inner_callbacks: Callbacks = None

    _gate: RecallGate = PrivateAttr()
    _embedder: Any = PrivateAttr(default=None)
    _scopes: ScopeSource = PrivateAttr()

    def __init__(self, **data: Any) -> None:
        scopes = ScopeSource(data.get("scope"))  # ScopeError, not a pydantic error
        data["scope"] = scopes.default
        _check(data, scopes.default)
        super().__init__(**data)
        self._scopes = scopes

    def model_post_init(self, context: Any, /) -> None:
        """Adapt the embedding once; pick the gate."""
        self._embedder = core_embedder(self.embedding) if self.embedding is not None else None
        self._gate = default_gate(self.gate, self.embedding, self._embedder)

    @classmethod
    def from_store(
        cls,
        store: MemoryStore,
        *,
        scope: Scope | Mapping[str, Any] | None = None,
        k: int | None = None,
        **kwargs: Any,
    ) -> GatedRetriever:
        """A retriever over the memory store's scoped hybrid query (BM25 + vector, then the gate).

        Args:
            store: the memory store.
            scope: default scope (per-call scope wins).
            k: at most this many documents (default: the memory space's ``max_hits``).
            **kwargs: other options (``dry_run``, ``provenance``, ``candidates``, ``tags``, ...).
        """
        return cls(store=store, scope=scope, k=k, **kwargs)

    # -- Runnable entry points: take the scope from config["configurable"] ----------------------

    def invoke(self, input: str, config: RunnableConfig | None = None, **kwargs: Any) -> list[Document]:
        """Retrieve and gate; ``scope``, ``k`` and ``dry_run`` may be given per call."""
        return super().invoke(input, config, **with_config_scope(config, kwargs))

    async def ainvoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        """Async :meth:`invoke`."""
        return await super().ainvoke(input, config, **with_config_scope(config, kwargs))

    def preview(
        self, query: str, *, scope: Scope | Mapping[str, Any] | None = None, k: int | None = None
    ) -> GateResult:
        """Dry run (R10): what the gate would accept and reject, with every reason; nothing goes to a model.

        Raises:
            ScopeError: if there is no scope.
        """
        scope_obj = self._scopes.resolve(scope)
        if self.store is not None:
            return self._query_store(self.store, query, scope_obj, k, True)
        started = time.perf_counter()
        return self._gate_channels(query, self._fetch(query), scope_obj, k, True, started)[1]

    # -- the work: one pipeline, two ways to fetch -------------------------------------------------

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        scope: Scope | Mapping[str, Any] | None = None,
        ambient_scope: Scope | Mapping[str, Any] | None = None,
        k: int | None = None,
        dry_run: bool | None = None,
    ) -> list[Document]:
        scope_obj = self._scopes.resolve(scope, ambient_scope)  # before any retrieval (R1)
        if self.store is not None:
            result = self._query_store(self.store, query, scope_obj, k, dry_run)
            dispatch_audit(result.audit, run_manager)
            return [hit_document(h, provenance=self.provenance) for h in result.accepted]
        started = time.perf_counter()
        docs, result = self._gate_channels(query, self._fetch(query), scope_obj, k, dry_run, started)
        dispatch_audit(result.audit, run_manager)
        return docs

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        scope: Scope | Mapping[str, Any] | None = None,
        ambient_scope: Scope | Mapping[str, Any] | None = None,
        k: int | None = None,
        dry_run: bool | None = None,
    ) -> list[Document]:
        scope_obj = self._scopes.resolve(scope, ambient_scope)  # before any retrieval (R1)
        if self.store is not None:
            result = await asyncio.to_thread(self._query_store, self.store, query, scope_obj, k, dry_run)
            await adispatch_audit(result.audit, run_manager)
            return [hit_document(h, provenance=self.provenance) for h in result.accepted]
        started = time.perf_counter()

        def fetch(retriever: BaseRetriever) -> Callable[[], Awaitable[list[Document]]]:
            return lambda: retriever.ainvoke(query, config=self._inner_config())

        channels = list(await asyncio.gather(*(arun_outside(fetch(r)) for r in self.retrievers)))
        docs, result = await asyncio.to_thread(
            self._gate_channels, query, channels, scope_obj, k, dry_run, started
        )
        await adispatch_audit(result.audit, run_manager)
        return docs

    def _inner_config(self) -> RunnableConfig:
        return {"callbacks": self.inner_callbacks or []}

    def _fetch(self, query: str) -> list[list[Document]]:
        """The wrapped retrievers' results, run outside the caller's tracing."""
        return run_outside(lambda: [r.invoke(query, config=self._inner_config()) for r in self.retrievers])

    def _query_store(
        self, store: MemoryStore, query: str, scope: Scope, k: int | None, dry_run: bool | None
    ) -> GateResult:
        result = store.query(
            query,
            scope=scope,
            k=k if k is not None else self.k,
            dry_run=self.dry_run if dry_run is None else dry_run,
            candidates=self.candidates,
        )
        _warn(recall_feedback(result, "GatedRetriever"))
        return result

    def _gate_channels(
        self,
        query: str,
        channels: list[list[Document]],
        scope: Scope,
        k: int | None,
        dry_run: bool | None,
        started: float,
    ) -> tuple[list[Document], GateResult]:
        owner = self._scopes.default
        plain = (
            plain_defaults(owner, to_utc(self._gate.clock()))
            if self.plain_documents == "owned" and owner is not None
            else None
        )
        pairs, result, plain_count = gate_documents(
            query,
            channels,
            scope=scope,
            gate=self._gate,
            names=self.names,
            weights=self.weights,
            fusion=self.fusion,
            embedder=self._embedder,
            score_key=self.score_key,
            lexical_key=self.lexical_key,
            id_key=self.id_key,
            k=k if k is not None else self.k,
            dry_run=self.dry_run if dry_run is None else dry_run,
            provenance=self.provenance,
            plain=plain,
            extra={
                "adapter": "langchain",
                "component": "GatedRetriever",
                "retrieve_ms": round((time.perf_counter() - started) * 1e3, 3),
                "retrievers": [r.get_name() for r in self.retrievers],
            },
        )
        semantic = self._embedder is not None or self.score_key is not None
        _warn(recall_feedback(result, "GatedRetriever", plain=plain_count, semantic=semantic))
        return [doc for _, doc in pairs], result


def _check(data: Mapping[str, Any], scope: Scope | None) -> None:
    """Misuse raises :class:`ConfigError` at construction (the same rules as the LlamaIndex adapter)."""
    retrievers = data.get("retrievers") or []
    store = data.get("store")
    if (store is None) == (not retrievers):
        raise ConfigError("give either retrievers=[...] or store=..., not both and not neither")
    if store is not None:
        given = [name for name in _WRAPPED_ONLY if data.get(name) is not None]
        if given:
            raise ConfigError(
                f"a MemoryStore brings its own gate, fusion and embedding: {', '.join(given)} "
                "apply to wrapped retrievers only"
            )
    elif data.get("candidates") is not None:
        raise ConfigError("candidates= applies to a MemoryStore only")
    weights, names = data.get("weights"), data.get("names")
    if weights is not None and len(weights) != len(retrievers):
        raise ConfigError(f"{len(weights)} weights given for {len(retrievers)} retrievers")
    if names is not None and (len(names) != len(retrievers) or len(set(names)) != len(names)):
        raise ConfigError("names must be unique, one per retriever")
    positive_int("k", data.get("k"))
    positive_int("candidates", data.get("candidates"))
    check_plain(data.get("plain_documents", "reject"), scope)


def _warn(line: str | None) -> None:
    if line is not None:
        _log.warning(line)
