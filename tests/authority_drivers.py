"""Drivers of the authority matrix (``test_authority_matrix.py``): one per entry point that writes or recalls.

Each driver performs the table's operations the way its entry point does, with the caller's
scope and the write path's trust pinned the way that entry point pins them, and reads the
result back as an operator would (ungated, for the checks only):

``store``
    :class:`~shared_core.store.MemoryStore` (``add(path=WritePath.pinned(...))``, ``query``,
    ``delete(scope=...)``).
``langchain``
    ``langchain_recall_gate.GatedVectorStore`` over a real ``InMemoryVectorStore``: the write
    filter's ``scope=``, ``origin=``, ``cited=``, ``allow_shared=`` are the path; writes through
    ``add_texts`` (agent path) and ``add_documents`` (user path), deletes through ``delete``,
    recall through ``as_retriever()`` and through a ``GatedRetriever`` wrapping the inner store's
    own (unfiltered) retriever.
``llamaindex``
    ``llamaindex_recall_gate.GatedVectorStore`` over a real ``SimpleVectorStore``: same options;
    writes through ``add`` (agent path, decision read from the audit record) and ``submit``
    (user path), deletes through ``delete_nodes``, recall through a ``VectorStoreIndex``
    retriever and through a ``GatedRetriever`` wrapping a raw retriever over the inner store.
``langchain_store`` / ``llamaindex_store``
    The same adapters' ``from_store`` mode over a ``MemoryStore`` (its write gate and hybrid
    query; recall also through ``GatedRetriever.from_store``).
``cli``
    ``recall-gate add/query`` in process (``shared_core.apps.cli.main``) on a store folder with the
    shipped embedding. The path is ``--scope CALLER --origin O [--cited]``.
``mcp``
    The MCP tools (``call_tool``, what the server runs for ``tools/call`` after resolving the
    request's identity) as a :class:`~shared_core.apps.mcp_identity.ServerIdentity` pinned to
    the caller.

Where an entry point cannot express an operation, or its path differs from the table's by
design, :data:`EXCEPTIONS` says so and what it does instead (asserted, not skipped), or skips
the pair with the reason (shown by ``pytest -ra``).
"""

from __future__ import annotations

import io
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_doubles import HashEmbeddings
from llama_index.core import VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.core.vector_stores.types import VectorStoreQuery
from llamaindex_support import HashLlamaEmbedding
from stores import NOW, make_store

import langchain_recall_gate as lc
import llamaindex_recall_gate as li
from llamaindex_recall_gate.target import shared_docstore
from shared_core import AuditRecord, GateConfig, MemoryStore, RecallGate, WritePath
from shared_core.apps.cli import main as cli_main
from shared_core.apps.mcp_identity import ServerIdentity
from shared_core.apps.mcp_server import TOOL_NAMES, ToolFailure, call_tool
from shared_core.model import MemoryRecord
from shared_core.testing import FrozenClock
from shared_core.write import WriteAction
from shared_core.write.ledger import InMemoryLedger

SPACE = "s1"
AUTHORITY: dict[str, dict[str, Any]] = {
    "agent": {"origin": "agent_inferred"},
    "user": {"origin": "user_explicit", "cited": True, "allow_shared": True},
}
"""The table's two write paths as the options every entry point shares (``WritePath.pinned`` keywords)."""

SEED_AUTHORITY = AUTHORITY["user"]
_KEPT = (WriteAction.WRITE, WriteAction.UPDATE, WriteAction.MERGE)


@dataclass
class Outcome:
    """What an entry point did: the write action and reasons, or the ids deleted."""

    action: str | None = None
    reasons: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()


@dataclass(frozen=True)
class Difference:
    """A documented difference of one entry point from the table, for one case (and path, or ``*``).

    ``expect``: what the entry point does instead (asserted like the table's); ``None``: the
    operation cannot be expressed there at all and the pair is skipped, ``reason`` shown.
    """

    reason: str
    expect: dict[str, Any] | None = None


_NO_MCP_DELETE = (
    "the MCP server has no delete tool (tools: memory_save, memory_recall, memory_preview): an "
    "agent deletes nothing, not even its own memories; deletion is the operator's (CLI forget, review page)"
)
_NO_CLI_DELETE = (
    "the CLI has no caller-scoped delete by id: `recall-gate forget --source` is the operator's "
    "erasure of a source record for every owner (L2), not a caller's delete"
)
_MCP_NO_ID = (
    "memory_save's schema has no id field (ids are the core's): the call is refused as invalid "
    "arguments, nothing is written"
)
_MCP_NO_CONFIRMATIONS = (
    "memory_save's schema has no confirmations field: the claim is refused as invalid arguments, "
    "nothing is written"
)
_CLI_SHARED = (
    "`recall-gate add --origin` allows shared writes (an operator's file; there is no --private "
    "flag), so visibility: shared is not lowered: the agent note is held as untrusted instead, never recalled"
)

EXCEPTIONS: dict[tuple[str, str, str], Difference] = {
    ("mcp", "overwrite_another_users_id", "*"): Difference(_MCP_NO_ID, {"action": "refused"}),
    ("mcp", "overwrite_shared_id_of_another_writer", "*"): Difference(_MCP_NO_ID, {"action": "refused"}),
    ("mcp", "write_claims_confirmations", "*"): Difference(_MCP_NO_CONFIRMATIONS, {"action": "refused"}),
    ("mcp", "delete_own", "*"): Difference(_NO_MCP_DELETE, {"action": "kept"}),
    ("cli", "write_claims_shared", "agent"): Difference(
        _CLI_SHARED, {"action": "quarantine", "reason": "untrusted", "recall": "never"}
    ),
    ("cli", "delete_another_users_id", "*"): Difference(_NO_CLI_DELETE),
    ("cli", "delete_another_writers_shared", "*"): Difference(_NO_CLI_DELETE),
    ("cli", "delete_own", "*"): Difference(_NO_CLI_DELETE),
}
"""Documented differences by ``(entry, case id, path or "*")``."""


def exception_for(entry: str, case_id: str, path_name: str) -> Difference | None:
    """The documented difference of a (driver, case, path), if any."""
    return EXCEPTIONS.get((entry, case_id, path_name)) or EXCEPTIONS.get((entry, case_id, "*"))


def matrix_gate() -> RecallGate:
    """The recall gate of the wrapped adapters: the thresholds of ``tests/stores.make_store``."""
    return RecallGate(GateConfig(min_score=0.2, min_lexical_score=0.6), clock=FrozenClock(NOW))


class Entry(ABC):
    """One entry point: seed, write, recall and delete its way; read back as an operator."""

    name: str

    @abstractmethod
    def __init__(self, tmp_path: Path) -> None:
        """A fresh, empty entry point (``tmp_path``: for entry points that need a folder)."""

    @abstractmethod
    def seed(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Store the seed rows (each names its owner) as trusted memories."""

    @abstractmethod
    def write(self, path_name: str, caller: Mapping[str, str], record: Mapping[str, Any]) -> Outcome:
        """Write one record as ``caller`` on the named path."""

    @abstractmethod
    def recall(self, caller: Mapping[str, str], query: str) -> dict[str, tuple[str, ...]]:
        """The ids accepted for ``caller``, by way of recall (each must satisfy the table)."""

    @abstractmethod
    def delete(self, path_name: str, caller: Mapping[str, str], ids: list[str]) -> Outcome:
        """Delete ids as ``caller`` on the named path."""

    @abstractmethod
    def records(self, ids: Sequence[str]) -> dict[str, MemoryRecord]:
        """Stored records by id (ungated, for the checks)."""

    @abstractmethod
    def all_ids(self) -> set[str]:
        """Every stored id of the space (ungated, for the checks)."""


def _seed_item(row: Mapping[str, Any], owners: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
    return {**owners[row["owner"]], **{k: v for k, v in row.items() if k != "owner"}}


# -- MemoryStore ----------------------------------------------------------------------------------


class StoreEntry(Entry):
    """The Python API: ``MemoryStore`` with a pinned ``WritePath``."""

    name = "store"

    def __init__(self, tmp_path: Path) -> None:
        self.store: MemoryStore = make_store()

    def seed(self, rows: Sequence[Mapping[str, Any]]) -> None:
        for row in rows:
            [d] = self.store.add([{**row, "origin": "user_explicit", "cited": True}])
            assert d.stored, d

    def write(self, path_name: str, caller: Mapping[str, str], record: Mapping[str, Any]) -> Outcome:
        path = WritePath.pinned(caller, name=path_name, **AUTHORITY[path_name])
        [d] = self.store.add([dict(record)], path=path)
        return Outcome(action=d.action.value, reasons=tuple(r.value for r in d.reasons))

    def recall(self, caller: Mapping[str, str], query: str) -> dict[str, tuple[str, ...]]:
        return {"query": tuple(self.store.query(query, scope=dict(caller)).accepted_ids)}

    def delete(self, path_name: str, caller: Mapping[str, str], ids: list[str]) -> Outcome:
        before = self.all_ids()
        self.store.delete(ids, memory_space_id=SPACE, scope=dict(caller))
        return Outcome(deleted=tuple(sorted(before - self.all_ids())))

    def records(self, ids: Sequence[str]) -> dict[str, MemoryRecord]:
        return {r.id: r for r in self.store.get(list(ids), memory_space_id=SPACE)}

    def all_ids(self) -> set[str]:
        return set(self.store.all_ids(SPACE))


# -- LangChain ------------------------------------------------------------------------------------


class _FilterEntry(Entry):
    """An adapter's write filter: what is stored is read through the filter's own write target."""

    def filt(self, scope: Mapping[str, str], **authority: Any) -> Any:
        raise NotImplementedError

    def _target(self) -> Any:
        return self.filt({"user_id": "operator", "agent_id": "ops", "memory_space_id": SPACE}).writer.target

    def records(self, ids: Sequence[str]) -> dict[str, MemoryRecord]:
        return {r.id: r for r in self._target().get(list(ids), memory_space_id=SPACE)}

    def all_ids(self) -> set[str]:
        return {r.id for r in self._target().records_of_space(SPACE)}


class LangChainEntry(_FilterEntry):
    """``langchain_recall_gate.GatedVectorStore`` over a real ``InMemoryVectorStore`` (see the module docstring)."""

    name = "langchain"

    def __init__(self, tmp_path: Path) -> None:
        self.inner = InMemoryVectorStore(HashEmbeddings())
        self.ledger = InMemoryLedger()  # one ledger for every filter over the store (tombstones, holds)
        self.gate = matrix_gate()

    def filt(self, scope: Mapping[str, str], **authority: Any) -> lc.GatedVectorStore:
        return lc.GatedVectorStore(self.inner, scope=scope, ledger=self.ledger, gate=self.gate, **authority)

    def seed(self, rows: Sequence[Mapping[str, Any]]) -> None:
        for row in rows:
            scope = {k: row[k] for k in ("user_id", "agent_id", "memory_space_id")}
            meta = {k: row[k] for k in ("title", "visibility")}
            ids = self.filt(scope, **SEED_AUTHORITY).add_texts([row["body"]], [meta], ids=[row["id"]])
            assert ids == [row["id"]], ids

    def write(self, path_name: str, caller: Mapping[str, str], record: Mapping[str, Any]) -> Outcome:
        vs = self.filt(caller, **AUTHORITY[path_name])
        meta = {k: v for k, v in record.items() if k not in ("id", "body")}
        mid = record.get("id")
        if path_name == "agent":
            returned = vs.add_texts([record["body"]], [meta], ids=[mid] if mid else None)
        else:
            returned = vs.add_documents([Document(id=mid, page_content=record["body"], metadata=meta)])
        [d] = vs.last_decisions
        assert returned == ([d.id] if d.action in _KEPT else []), (returned, d)
        return Outcome(action=d.action.value, reasons=tuple(r.value for r in d.reasons))

    def recall(self, caller: Mapping[str, str], query: str) -> dict[str, tuple[str, ...]]:
        via_store = self.filt(caller).as_retriever(search_kwargs={"k": 10}).invoke(query)
        wrapped = self._wrapped(caller, query)
        return {
            "as_retriever": tuple(str(d.id) for d in via_store),
            "GatedRetriever": tuple(str(d.id) for d in wrapped),
        }

    def _wrapped(self, caller: Mapping[str, str], query: str) -> list[Document]:
        return lc.GatedRetriever(
            retrievers=[self.inner.as_retriever(search_kwargs={"k": 20})],  # unfiltered: everyone's
            scope=dict(caller),
            gate=self.gate,
            embedding=HashEmbeddings(),
            k=10,
        ).invoke(query)

    def delete(self, path_name: str, caller: Mapping[str, str], ids: list[str]) -> Outcome:
        before = self.all_ids()
        self.filt(caller, **AUTHORITY[path_name]).delete(ids)
        return Outcome(deleted=tuple(sorted(before - self.all_ids())))


# -- LlamaIndex -----------------------------------------------------------------------------------


class _RawRetriever(BaseRetriever):
    """A user's own retriever over the inner ``SimpleVectorStore``: every node, nobody's scope."""

    def __init__(self, inner: SimpleVectorStore, embed: HashLlamaEmbedding) -> None:
        super().__init__()
        self._inner = inner
        self._embed = embed

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        vec = self._embed.get_query_embedding(query_bundle.query_str)
        found = self._inner.query(VectorStoreQuery(query_embedding=vec, similarity_top_k=20))
        docs = shared_docstore(self._inner)
        nodes = [docs.get_node(i, raise_error=False) for i in found.ids or []]
        return [
            NodeWithScore(node=n, score=s) for n, s in zip(nodes, found.similarities or [], strict=False) if n
        ]


class LlamaIndexEntry(_FilterEntry):
    """``llamaindex_recall_gate.GatedVectorStore`` over a real ``SimpleVectorStore`` (see the module docstring)."""

    name = "llamaindex"

    def __init__(self, tmp_path: Path) -> None:
        self.inner = SimpleVectorStore()
        self.embed = HashLlamaEmbedding()
        self.ledger = InMemoryLedger()
        self.gate = matrix_gate()

    def filt(
        self, scope: Mapping[str, str], sinks: Sequence[Any] = (), **authority: Any
    ) -> li.GatedVectorStore:
        return li.GatedVectorStore(
            self.inner,
            embed_model=self.embed,
            scope=scope,
            ledger=self.ledger,
            gate=self.gate,
            sinks=sinks,
            **authority,
        )

    def seed(self, rows: Sequence[Mapping[str, Any]]) -> None:
        for row in rows:
            scope = {k: row[k] for k in ("user_id", "agent_id", "memory_space_id")}
            node = TextNode(
                id_=row["id"], text=row["body"], metadata={k: row[k] for k in ("title", "visibility")}
            )
            assert self.filt(scope, **SEED_AUTHORITY).add([node]) == [row["id"]]

    def write(self, path_name: str, caller: Mapping[str, str], record: Mapping[str, Any]) -> Outcome:
        meta = {k: v for k, v in record.items() if k not in ("id", "body")}
        node = TextNode(
            text=record["body"], metadata=meta, **({"id_": record["id"]} if "id" in record else {})
        )
        if path_name == "user":
            [d] = self.filt(caller, **AUTHORITY[path_name]).submit([node])
            return Outcome(action=d.action.value, reasons=tuple(r.value for r in d.reasons))
        audits: list[AuditRecord] = []
        returned = self.filt(caller, sinks=[audits.append], **AUTHORITY[path_name]).add([node])
        [audit] = [a for a in audits if a.event == "write"]
        [action] = audit.counts
        if audit.accepted_ids:
            assert returned == list(audit.accepted_ids), (returned, audit)
            return Outcome(action=action, reasons=tuple(audit.extra.get("reasons", {})))
        assert returned == [], returned
        [entry] = audit.rejected
        return Outcome(action=entry.action or action, reasons=entry.reasons)

    def recall(self, caller: Mapping[str, str], query: str) -> dict[str, tuple[str, ...]]:
        index = VectorStoreIndex.from_vector_store(self.filt(caller), embed_model=self.embed)
        via_index = index.as_retriever(similarity_top_k=10).retrieve(query)
        wrapped = self._wrapped(caller, query)
        return {
            "index_retriever": tuple(n.node.node_id for n in via_index),
            "GatedRetriever": tuple(n.node.node_id for n in wrapped),
        }

    def _wrapped(self, caller: Mapping[str, str], query: str) -> list[NodeWithScore]:
        return li.GatedRetriever(
            _RawRetriever(self.inner, self.embed),
            scope=dict(caller),
            gate=self.gate,
            embed_model=self.embed,
            k=10,
        ).retrieve(query)

    def delete(self, path_name: str, caller: Mapping[str, str], ids: list[str]) -> Outcome:
        before = self.all_ids()
        self.filt(caller, **AUTHORITY[path_name]).delete_nodes(ids)
        return Outcome(deleted=tuple(sorted(before - self.all_ids())))


# -- CLI ------------------------------------------------------------------------------------------


def _scope_arg(scope: Mapping[str, str]) -> str:
    return f"user={scope['user_id']},agent={scope['agent_id']},space={scope['memory_space_id']}"


class CliEntry(Entry):
    """``recall-gate add/query`` in process on a store folder (see the module docstring)."""

    name = "cli"

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.folder = tmp_path / "store"
        self._n = 0

    def run(self, *argv: str) -> list[dict[str, Any]]:
        out = io.StringIO()
        code = cli_main(list(argv), out=out)
        assert code == 0, (argv, code, out.getvalue())
        return [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]

    def _input(self, rows: Sequence[Mapping[str, Any]]) -> str:
        self._n += 1
        path = self.tmp / f"input-{self._n}.jsonl"
        path.write_text("".join(json.dumps(dict(r)) + "\n" for r in rows), encoding="utf-8")
        return str(path)

    def seed(self, rows: Sequence[Mapping[str, Any]]) -> None:
        items = [{**r, "origin": "user_explicit", "cited": True} for r in rows]
        got = self.run(
            "add", "--store", str(self.folder), "--input", self._input(items), "--json", "--no-progress"
        )
        assert [d["action"] for d in got] == ["write"] * len(rows), got

    def write(self, path_name: str, caller: Mapping[str, str], record: Mapping[str, Any]) -> Outcome:
        authority = AUTHORITY[path_name]
        flags = ["--origin", authority["origin"], *(["--cited"] if authority.get("cited") else [])]
        [d] = self.run(
            "add",
            "--store",
            str(self.folder),
            "--input",
            self._input([record]),
            "--scope",
            _scope_arg(caller),
            *flags,
            "--json",
            "--no-progress",
        )
        return Outcome(action=d["action"], reasons=tuple(d["reasons"]))

    def recall(self, caller: Mapping[str, str], query: str) -> dict[str, tuple[str, ...]]:
        [got] = self.run(
            "query", "--store", str(self.folder), "--scope", _scope_arg(caller), "-k", "10", "--json", query
        )
        return {"query": tuple(got["accepted"])}

    def delete(
        self, path_name: str, caller: Mapping[str, str], ids: list[str]
    ) -> Outcome:  # pragma: no cover
        raise AssertionError(_NO_CLI_DELETE)  # excluded in EXCEPTIONS

    def records(self, ids: Sequence[str]) -> dict[str, MemoryRecord]:
        with MemoryStore(self.folder, read_only=True) as store:
            return {r.id: r for r in store.get(list(ids), memory_space_id=SPACE)}

    def all_ids(self) -> set[str]:
        with MemoryStore(self.folder, read_only=True) as store:
            return set(store.all_ids(SPACE))


# -- MCP ------------------------------------------------------------------------------------------


def mcp_identity(path_name: str, caller: Mapping[str, str]) -> ServerIdentity:
    """The table's path as a server identity: the agent path is an identity whose saves are reviewed (not vouched)."""
    authority = AUTHORITY[path_name]
    return ServerIdentity(
        name=f"mcp:{path_name}",
        scope=dict(caller),  # type: ignore[arg-type]
        origin=authority["origin"],
        allow_shared=authority.get("allow_shared", False),
        review_saves=not authority.get("cited", False),
    )


class McpEntry(StoreEntry):
    """The MCP tools through ``call_tool`` as a pinned identity (see the module docstring); seeded by the operator's API."""

    name = "mcp"

    def write(self, path_name: str, caller: Mapping[str, str], record: Mapping[str, Any]) -> Outcome:
        try:
            got = call_tool(self.store, "memory_save", dict(record), identity=mcp_identity(path_name, caller))
        except ToolFailure as exc:
            if str(exc).startswith("scope is fixed by this server"):
                return Outcome(action="reject", reasons=("scope_mismatch",))  # the server's own refusal
            return Outcome(action="refused", reasons=(str(exc),))
        return Outcome(action=got["action"], reasons=tuple(got["reasons"]))

    def recall(self, caller: Mapping[str, str], query: str) -> dict[str, tuple[str, ...]]:
        ident = mcp_identity("agent", caller)
        recalled = call_tool(self.store, "memory_recall", {"query": query, "k": 10}, identity=ident)
        preview = call_tool(self.store, "memory_preview", {"query": query, "k": 10}, identity=ident)
        return {
            "memory_recall": tuple(m["id"] for m in recalled["accepted"]),
            "memory_preview": tuple(preview["accepted_ids"]),
        }

    def delete(self, path_name: str, caller: Mapping[str, str], ids: list[str]) -> Outcome:
        deleting = [t for t in TOOL_NAMES if "delete" in t or "forget" in t]
        assert not deleting, f"the server has a delete tool now ({deleting}): drive it here"
        before = self.all_ids()
        for tool in ("memory_delete", "memory_forget"):
            try:
                call_tool(self.store, tool, {"ids": ids}, identity=mcp_identity(path_name, caller))
            except ToolFailure:
                continue
            raise AssertionError(f"{tool} is not a listed tool but ran")  # pragma: no cover
        return Outcome(deleted=tuple(sorted(before - self.all_ids())))


class LangChainStoreEntry(LangChainEntry):
    """``langchain_recall_gate.GatedVectorStore.from_store`` over a ``MemoryStore`` (its write gate, its hybrid query)."""

    name = "langchain_store"

    def __init__(self, tmp_path: Path) -> None:
        self.store = make_store()

    def filt(self, scope: Mapping[str, str], **authority: Any) -> lc.GatedVectorStore:
        return lc.GatedVectorStore.from_store(self.store, scope=scope, **authority)

    def _wrapped(self, caller: Mapping[str, str], query: str) -> list[Document]:
        return lc.GatedRetriever.from_store(self.store, scope=dict(caller), k=10).invoke(query)

    records = StoreEntry.records
    all_ids = StoreEntry.all_ids


class LlamaIndexStoreEntry(LlamaIndexEntry):
    """``llamaindex_recall_gate.GatedVectorStore.from_store`` over a ``MemoryStore``."""

    name = "llamaindex_store"

    def __init__(self, tmp_path: Path) -> None:
        self.listeners: Sequence[Any] = ()
        self.store = make_store(sinks=[self._audit])
        self.embed = HashLlamaEmbedding()

    def filt(
        self, scope: Mapping[str, str], sinks: Sequence[Any] = (), **authority: Any
    ) -> li.GatedVectorStore:
        self.listeners = sinks  # a memory store's sinks are its own: listen to them for this write
        return li.GatedVectorStore.from_store(self.store, scope=scope, **authority)

    def _audit(self, record: AuditRecord) -> None:
        for sink in self.listeners:
            sink(record)

    def _wrapped(self, caller: Mapping[str, str], query: str) -> list[NodeWithScore]:
        return li.GatedRetriever.from_store(self.store, scope=dict(caller), k=10).retrieve(query)

    records = StoreEntry.records
    all_ids = StoreEntry.all_ids


ENTRIES: dict[str, type[Entry]] = {
    "store": StoreEntry,
    "langchain": LangChainEntry,
    "langchain_store": LangChainStoreEntry,
    "llamaindex": LlamaIndexEntry,
    "llamaindex_store": LlamaIndexStoreEntry,
    "cli": CliEntry,
    "mcp": McpEntry,
}
