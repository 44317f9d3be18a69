"""How a word is usually written: lowercase, capitalized or in capitals, from
the word probabilities spacy-lookups-data ships (``lexeme_prob``: English,
German, Spanish, Greek).

``lexeme_prob`` holds the log-probability of each form as it is written, so
"texas" (-13.0) and "Texas" (-10.4), "military" (-9.6) and "Military" (-12.3)
are told apart: which spelling of a word people write says whether it is a
name, whatever spelling the token has. A capitalized "Military" in a
headline is still the common noun, and a lowercase "saturday" still the name;
what the case of a token cannot tell, this can.

A word's value is computed from its lowercase form ``w`` and two forms of it,
its capitalized one ``W`` (first letter upper) and its capitals ``WW``, each
``FLOOR`` where the table lacks it:

* the log-ratio ``d = logp(W) - logp(w)`` in five bins at ``-2.5, -0.7, 0.7,
  2.5`` (e-fold: 2.5 is a form 12 times more frequent than the other), from
  "lowercase" (1) to "capitalized" (5);
* whether ``WW`` is more frequent than both (``USD``, ``NASA``): each bin
  has two values, the odd one (``2 * bin - 1``) where it is not, the even one
  where it is.

So values run from 1 to 10, 0 for a word the table does not know well: none
of its three forms at ``MIN_LOGPROB`` or above (a form seen about once in 24
million words), or a form with characters other than letters. The table is
keyed by ``LOWER`` (:class:`~.word_table.WordTable`); English holds 95k words,
1.5 MB. Building it reads the 1M-entry JSON (about 0.7 s with the build), so
what is built is kept in :func:`~.lookups_data.cache_dir` for the next process.
"""

from typing import Dict, Mapping, Optional

from .lookups_data import cached_word_table, once_per_language
from .word_table import WordTable, table_from_items, word_keys

PROB_TABLE = "lexeme_prob"
#: the log-probability of a form the table lacks
FLOOR = -21.0
#: a word is kept where one of its forms is at least this likely (English:
#: 95k words; at -18, 155k and the same dev scores within 0.02)
MIN_LOGPROB = -17.0
#: the edges of the bins of ``logp(W) - logp(w)``
BIN_EDGES = (-2.5, -0.7, 0.7, 2.5)
#: values per bin: the capitals' form more frequent than both others, or not
CAPITALS = 2
#: bump when the values change, so that no cache of the old ones is read
VERSION = 1



def case_value(lower: float, capitalized: float, capitals: float) -> int:
    """The value of a word whose lowercase, capitalized and all-capitals forms
    have these log-probabilities (1 to 10, see the module)."""
    ratio = capitalized - lower
    bin_ = 1 + sum(ratio > edge for edge in BIN_EDGES)
    return (bin_ - 1) * CAPITALS + 1 + int(capitals > max(lower, capitalized))


def usual_case_table(probs: Mapping[str, float]) -> Optional[WordTable]:
    """The table of words -> their value (see the module) from ``lexeme_prob``'s
    ``{form: log-probability}``; None where no word is kept."""
    # a word is kept where one of its forms is at least MIN_LOGPROB likely: only
    # those forms name the words (English: 150k of the 1M), whose three
    # spellings are then looked up, not every form of the table grouped
    likely = (form for form, logprob in probs.items() if logprob >= MIN_LOGPROB)
    words, values = [], []
    for lower in dict.fromkeys(form.lower() for form in likely):
        if not lower.isalpha():
            continue
        # only the three spellings that count, and only where they are spellings
        # of this word ("iPhone" says nothing of "iphone"; "SS" is not a form of "ß")
        spellings = (lower, lower.capitalize(), lower.upper())
        scores = [float(probs[form]) if form in probs and form.lower() == lower else FLOOR
                  for form in spellings]
        if max(scores) < MIN_LOGPROB:
            continue
        words.append(lower)
        values.append(case_value(*scores))
    if not words:
        return None
    return table_from_items(word_keys(words), values, "LOWER")


@once_per_language
def lookups_data_usual_case_table(lang: str) -> Optional[WordTable]:
    """The table of spacy-lookups-data's ``lexeme_prob`` for ``lang``, made once
    per process (and kept in the cache for the next); None where the package
    is not installed or has no word probabilities for the language."""
    return _make_table(lang)


def _make_table(lang: str) -> Optional[WordTable]:
    return cached_word_table(lang, PROB_TABLE, f"{lang}_usual_case_v{VERSION}",
                             usual_case_table, "LOWER")
