"""Brown clusters induced from raw text, for languages or domains without a table.

Counts the words and bigrams of tokenized text (bigrams within a line or
document, never across), keeps the words seen ``min_count`` times or more,
runs the windowed Brown clustering of ``_kernels/brown.py`` and returns each
word's bit path, ready for ``brown_clusters.write_json_table`` or a ``paths``
file; :func:`induce_file` does all that for a text file (``python -m
spacy_crf.clusters induce``).
"""

from collections import Counter
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Sequence, Tuple

import numpy as np
import srsly

from .._kernels.brown import brown_clusters
from .brown_clusters import path_value, write_json_table


def count_text(sentences: Iterable[Sequence[str]]) -> Tuple[Counter, Counter]:
    """Word counts and (left word, right word) bigram counts."""
    words: Counter = Counter()
    bigrams: Counter = Counter()
    for tokens in sentences:
        words.update(tokens)
        bigrams.update(zip(tokens[:-1], tokens[1:]))
    return words, bigrams


def induce(sentences: Iterable[Sequence[str]], n_clusters: int = 100,
           min_count: int = 2) -> List[Tuple[str, str, int]]:
    """Brown clusters of the words of ``sentences``.

    Parameters
    ----------
    sentences : iterable of sequence of str
        Tokenized text.
    n_clusters : int
        C: the clusters of the first phase (1000 is usual for large text,
        100 to 300 for a few million words).
    min_count : int
        Words seen fewer times are left out (as ``wcluster`` does with rare words).

    Returns
    -------
    list of (bits, word, count)
        Every kept word with its path, most frequent first (Liang's ``paths``
        rows). Ties in frequency are broken by the word, so the result does
        not depend on the order of the text.
    """
    if n_clusters < 1:
        raise ValueError(f"n_clusters must be at least 1, got {n_clusters}")
    counts, bigram_counts = count_text(sentences)
    vocab = sorted((w for w, c in counts.items() if c >= min_count),
                   key=lambda w: (-counts[w], w))
    if not vocab:
        return []
    index: Dict[str, int] = {w: i for i, w in enumerate(vocab)}
    total_words = float(sum(counts.values()))
    total_bigrams = float(sum(bigram_counts.values())) or 1.0
    unigram = np.asarray([counts[w] / total_words for w in vocab], dtype=np.float64)
    pairs = sorted((index[a], index[b], n) for (a, b), n in bigram_counts.items()
                   if a in index and b in index)
    left = np.asarray([p[0] for p in pairs], dtype=np.int64)
    right_word = np.asarray([p[1] for p in pairs], dtype=np.int64)
    right_count = np.asarray([p[2] for p in pairs], dtype=np.float64)
    right_ptr = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.add.at(right_ptr, left + 1, 1)
    right_ptr = np.cumsum(right_ptr)
    slot_of_word = np.empty(len(vocab), dtype=np.int64)
    merges = np.empty((n_clusters, 2), dtype=np.int64)
    n_merges = brown_clusters(n_clusters, unigram, right_ptr, right_word, right_count,
                              total_bigrams, slot_of_word, merges)
    paths = merge_tree_paths(merges[:n_merges], np.unique(slot_of_word))
    return [(paths[int(slot_of_word[i])], w, counts[w]) for i, w in enumerate(vocab)]


def merge_tree_paths(merges: np.ndarray, slots: np.ndarray) -> Dict[int, str]:
    """Each slot's bit path in the tree of the second phase's merges (the slot
    merged into gets 0, the slot merged in 1); a single cluster gets "0"."""
    paths: Dict[int, str] = {int(s): "" for s in slots}
    for a, b in reversed(merges.tolist()):
        paths[b] = paths[a] + "1"
        paths[a] = paths[a] + "0"
    return {s: p or "0" for s, p in paths.items()}


def read_texts(path: Path) -> Iterator[str]:
    """The documents of a text file: its lines, or the ``"text"`` of each JSON line.

    Raises
    ------
    ValueError
        For a JSON line without a string ``"text"``, naming the line.
    """
    with open(path, encoding="utf8", errors="strict") as file:
        for number, line in enumerate(file, 1):
            if not line.strip():
                continue
            if path.suffix.lower() != ".jsonl":
                yield line.rstrip("\n")
                continue
            try:
                row = srsly.json_loads(line)
            except ValueError as err:
                raise ValueError(f"{path}, line {number} is not JSON ({err})") from err
            if not isinstance(row, dict) or not isinstance(row.get("text"), str):
                raise ValueError(f"{path}, line {number} has no string \"text\"")
            yield row["text"]


def induce_file(text: Path, output: Path, n_clusters: int, min_count: int, lang: str) -> int:
    """Brown-cluster the words of a text file into ``output``; returns the word count."""
    import spacy

    nlp = spacy.blank(lang)
    sentences = ([t.text for t in doc if not t.is_space]
                 for doc in nlp.tokenizer.pipe(read_texts(text), batch_size=1000))
    rows = induce(sentences, n_clusters=n_clusters, min_count=min_count)
    name = output.name.lower()
    if name.endswith(".json") or name.endswith(".json.gz"):
        return write_json_table(((word, path_value(bits)) for bits, word, _ in rows), output)
    with open(output, "w", encoding="utf8") as file:
        file.writelines(f"{bits}\t{word}\t{count}\n" for bits, word, count in rows)
    return len(rows)
