"""A second process compiles none of our kernels (issue #32): every jitted
function on the paths a user takes is cached on disk by the first
(``@njit(cache=True)``), for the signatures that path calls it with."""

import json
import os
import subprocess
import sys

import pytest

from spacy_crf._kernels import prebuilt, shared_cache

CHILD = r"""
import json
from numba.core import event
compiled = []

class Compiles(event.Listener):
    def on_start(self, ev):
        func = ev.data["dispatcher"].py_func
        if func.__module__.startswith("spacy_crf"):
            compiled.append(f"{func.__module__}.{func.__qualname__}")

    def on_end(self, ev):
        pass

event.register("numba:compile", Compiles())

import spacy
from spacy.tokens import Doc
from spacy.training import Example

nlp = spacy.blank("en")
nlp.add_pipe("crf_tagger", name="pos", config={"target": "pos",
                                               "model": {"cluster_templates": []}})
nlp.add_pipe("crf_tagger", name="ner", config={"target": "ents", "store_confidence": True,
                                               "n_best": 2, "model": {"cluster_templates": []}})
words = ["Ann", "met", "Bob", "in", "Paris", "."]
examples = [Example.from_dict(Doc(nlp.vocab, words=words), {
    "pos": ["PROPN", "VERB", "PROPN", "ADP", "PROPN", "PUNCT"],
    "entities": ["U-PER", "O", "U-PER", "O", "U-LOC", "O"]})] * 4
optimizer = nlp.initialize(lambda: examples)
for _ in range(3):
    nlp.update(examples, sgd=optimizer)
doc = nlp("Bob met Ann in Rome .")
assert [t.pos_ for t in doc] and doc[0]._.crf_confidence is not None

# a control: a function of "ours" that is never cached is seen compiling
import numba
def probe(x):
    return x + 1
probe.__module__ = "spacy_crf._probe"
numba.njit(cache=False)(probe)(1)
print(json.dumps(compiled))
"""


def _compiled_in_a_fresh_process(env=None):
    run = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                         timeout=600, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_a_second_process_compiles_nothing():
    _compiled_in_a_fresh_process()  # fills the cache where this environment's is empty
    # only the uncached control compiles: every kernel comes from the cache
    assert _compiled_in_a_fresh_process() == ["spacy_crf._probe.probe"]


def test_a_fresh_install_compiles_nothing(tmp_path):
    """A new user's first run (an empty kernel cache) starts from the kernels the
    package ships compiled (``_kernels/prebuilt.py``): the same path compiles
    none of ours."""
    name = shared_cache.code_directory_name()
    if not any(prebuilt.archive_path(name, cpu).is_file() for cpu in prebuilt.usable_cpus()):
        pytest.skip(f"no kernels shipped compiled for {prebuilt.platform_tag()}-{name} (another "
                    "numba or Python, or stale: see test_the_shipped_kernels_match_the_sources)")
    env = {key: value for key, value in os.environ.items()
           if key not in ("NUMBA_CACHE_DIR", "NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", prebuilt.ENV)}
    env[shared_cache.ENV] = str(tmp_path / "cache")
    assert _compiled_in_a_fresh_process(env) == ["spacy_crf._probe.probe"]
