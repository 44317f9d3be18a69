"""Where the tables built from spacy-lookups-data are cached: ``$SPACY_CRF_CACHE``,
else ``$XDG_CACHE_HOME/spacy-crf``, else ``~/.cache/spacy-crf``, the place the
kernel cache's ``numba/`` directory is in (``_kernels/shared_cache.py``)."""

import numpy as np
import pytest

from spacy_crf.features import lookups_data
from spacy_crf.features.lookups_data import cache_dir, cache_file


@pytest.fixture
def home(tmp_path, monkeypatch):
    for name in ("SPACY_CRF_CACHE", "XDG_CACHE_HOME", "SPACY_CRF_NUMBA_CACHE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_the_table_cache_is_in_the_users_cache_directory(home):
    assert cache_dir() == home / ".cache" / "spacy-crf"


def test_xdg_cache_home_moves_the_table_cache(home, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "spacy-crf"
    monkeypatch.setenv("XDG_CACHE_HOME", "")  # set but empty: as if unset
    assert cache_dir() == home / ".cache" / "spacy-crf"


def test_spacy_crf_cache_takes_precedence_over_xdg_cache_home(home, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("SPACY_CRF_CACHE", str(tmp_path / "mine"))
    assert cache_dir() == tmp_path / "mine"
    monkeypatch.setenv("SPACY_CRF_CACHE", "")
    assert cache_dir() == tmp_path / "xdg" / "spacy-crf"


def test_the_table_cache_sits_beside_the_kernel_cache(home, tmp_path, monkeypatch):
    from spacy_crf._kernels import shared_cache

    for xdg in (None, str(tmp_path / "xdg")):
        if xdg:
            monkeypatch.setenv("XDG_CACHE_HOME", xdg)
        place = shared_cache.cache_place()
        if place is None:
            pytest.skip("numba's own cache place is set (NUMBA_CACHE_DIR)")
        assert place[0] == cache_dir()


def test_tables_are_written_under_xdg_cache_home(home, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    source = tmp_path / "en_table.json"
    source.write_text("{}", encoding="utf8")
    path = cache_file([source], "en_table")
    assert path is not None and path.parent == tmp_path / "xdg" / "spacy-crf"
    lookups_data.write_cache(path, {"keys": np.arange(3)})
    assert lookups_data.read_cache(path)["keys"].tolist() == [0, 1, 2]
    assert not (home / ".cache").exists()


@pytest.mark.parametrize("enabled", [True, False])
def test_the_garbage_collector_is_paused_for_a_build_and_left_as_it_was(enabled):
    import gc

    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        with pytest.raises(RuntimeError):
            with lookups_data.paused_gc():
                assert not gc.isenabled()
                raise RuntimeError("a build that fails")
        assert gc.isenabled() == enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_a_table_made_again_of_new_sources_leaves_the_newest_two_of_its_stem(home, tmp_path,
                                                                              monkeypatch):
    """Each reinstall of spacy-lookups-data (new file times) added a copy of
    every table, never removed: 28 files, 82 MB, on a probe's machine."""
    import os

    monkeypatch.setenv("SPACY_CRF_CACHE", str(tmp_path / "cache"))
    source = tmp_path / "en_table.json"
    source.write_text("{}", encoding="utf8")
    other = cache_file([source], "en_table_v2")  # another stem, which starts alike
    lookups_data.write_cache(other, {"keys": np.arange(1)}, "en_table_v2")
    written = []
    for k in range(4):
        os.utime(source, (1_000_000 + k, 1_000_000 + k))  # a reinstall
        path = cache_file([source], "en_table")
        lookups_data.write_cache(path, {"keys": np.arange(k + 1)}, "en_table")
        os.utime(path, (2_000_000 + k, 2_000_000 + k))
        written.append(path)
    left = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert left == sorted([written[-2].name, written[-1].name, other.name])
