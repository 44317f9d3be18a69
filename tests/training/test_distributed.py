"""Data-parallel L-BFGS: the objective on 2 Dask workers (loopback) equals the
threaded one, survives a lost worker, and fit trains the same weights."""

import os
import signal

import numpy as np
import pytest

pytest.importorskip("distributed")

from spacy_crf.dask_client import dask_client, worker_pids  # noqa: E402
from spacy_crf.training.fit import fit  # noqa: E402
from spacy_crf.structures import ChainLayout  # noqa: E402
from spacy_crf.training.distributed import DaskObjective  # noqa: E402
from spacy_crf.training.objective import FeaturizedShard, ShardedObjective  # noqa: E402

from commands.test_fit import ROOT, overrides, random_chain_shard, sample_corpus  # noqa: E402,F401


def split(whole: FeaturizedShard, lengths, cut: int):
    n_first = sum(lengths[:cut])
    return [FeaturizedShard(whole.layout, whole.rows[:n_first], whole.gold[:n_first],
                            ChainLayout(np.asarray(lengths[:cut]))),
            FeaturizedShard(whole.layout, whole.rows[n_first:], whole.gold[n_first:],
                            ChainLayout(np.asarray(lengths[cut:])))]


def test_the_objective_on_workers_equals_threads_and_survives_a_lost_worker():
    rng = np.random.default_rng(3)
    lengths = [3, 1, 4, 2, 5, 2]
    parts = split(random_chain_shard(rng, lengths, partial=True), lengths, 3)
    threads = ShardedObjective(parts, c2=0.1, n_threads=2)
    with dask_client(n_workers=2) as client:
        remote = DaskObjective(parts, client, c2=0.1)
        for step in range(3):
            theta = rng.normal(size=parts[0].layout.size)
            loss, gradient = threads(theta)
            if step == 2:  # lose the worker holding the first shard
                os.kill(worker_pids(client)[remote._homes[0]], signal.SIGKILL)
            got_loss, got_gradient = remote(theta, np.full_like(theta, np.nan))
            assert got_loss == loss  # same shards, same order: the same arithmetic
            np.testing.assert_array_equal(got_gradient, gradient)
        assert remote.n_rescatters >= 1
        remote.close()
    threads.close()


def crf_weights(nlp):
    pipe = nlp.get_pipe("crf_tagger")
    return [np.asarray(node.get_param(name)) for node in pipe.model.walk()
            for name in node.param_names if node.has_param(name)]


def test_fit_on_two_workers_trains_the_single_process_weights(sample_corpus, tmp_path):  # noqa: F811
    config = ROOT / "configs" / "ewt_upos.cfg"
    with open(tmp_path / "log1", "w") as log:
        one = fit(config, None, overrides=overrides(sample_corpus), max_iterations=8,
                  eval_frequency=100, n_threads=2, stdout=log)
    with open(tmp_path / "log2", "w") as log:
        two = fit(config, None, overrides=overrides(sample_corpus), max_iterations=8,
                  eval_frequency=100, n_workers=2, stdout=log)
    assert "on 2 Dask worker(s)" in (tmp_path / "log2").read_text()
    for a, b in zip(crf_weights(one), crf_weights(two), strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-12)
    assert any(np.abs(w).max() > 0 for w in crf_weights(two))


def test_a_shard_of_read_only_buffers_is_copied_on_purpose():
    """What a zero-copy object store hands a worker: read-only arrays."""
    from spacy_crf.training.distributed import shard_loss_and_gradient

    rng = np.random.default_rng(5)
    lengths = [2, 4, 1]
    shard = random_chain_shard(rng, lengths, partial=True)
    theta = rng.normal(size=shard.layout.size)
    expected = FeaturizedShard(shard.layout, shard.rows.copy(), shard.gold.copy(),
                               ChainLayout(np.asarray(lengths))).loss_and_gradient(theta)
    for array in (shard.rows, shard.gold, shard.structure.lengths, theta):
        array.setflags(write=False)
    loss, gradient = shard_loss_and_gradient(shard, theta)
    assert loss == expected[0]
    np.testing.assert_array_equal(gradient, expected[1])
    assert shard.rows.flags.writeable and shard.structure.lengths.flags.writeable
