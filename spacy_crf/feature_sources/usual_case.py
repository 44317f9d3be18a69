"""How a word is usually written as a feature source: ``USUAL_CASE``, whether
people write the word lowercase, capitalized or in capitals, from spaCy's word
probabilities (``features/usual_case.py``); 0 for a word the table does not know.

The tagging, lemma, entity and sentence targets read it by default
(:data:`USUAL_CASE_TEMPLATES` in their ``optional_templates``) where
spacy-lookups-data has word probabilities for the pipeline's language
(English, German, Spanish, Greek), and leave it out quietly elsewhere. ``[initialize.components.NAME]
usual_case = false`` leaves the table out.
"""

from typing import Any, Dict, Optional, Sequence

import numpy as np

from ..errors import Errors
from ..features.usual_case import lookups_data_usual_case_table
from .base import BuildContext
from .registry import register_feature_source
from .word_tables import WordTableSource

USUAL_CASE = "USUAL_CASE"
#: the defaults of the tagging, lemma, entity and sentence targets: the word's
#: usual case, alone, with the case the token has, and its neighbours'. A
#: capitalized word that people write lowercase is a common noun in a title
#: ("Military" -> military), a lowercase one they capitalize a name ("texas"
#: -> Texas). On dev: lemma_acc +0.25, UPOS +0.09 (pos target), UPOS +0.18 and
#: UFeats +0.04 (morph target), ents_f +1.36 (docs/features.md, "How a word is
#: usually written")
USUAL_CASE_TEMPLATES = ("USUAL_CASE", "USUAL_CASE|IS_TITLE", "USUAL_CASE|IS_UPPER",
                        "USUAL_CASE[-1]|USUAL_CASE[0]|USUAL_CASE[1]")


@register_feature_source
class UsualCase(WordTableSource):
    """Word (its lowercase form) -> how it is usually written (one column).

    Parameters
    ----------
    table : WordTable
        The values (``features/usual_case.py``), keyed by ``LOWER``.
    """

    name = "usual_case"
    attrs_hint = "USUAL_CASE"
    saved_keys = ("usual_case",)

    @classmethod
    def provides(cls, attr: str) -> bool:
        return attr == USUAL_CASE

    @classmethod
    def build(cls, context: BuildContext, attrs: Sequence[str], *,
              usual_case: bool = True) -> Optional["UsualCase"]:
        """spacy-lookups-data's table for the pipeline's language (E230 where
        the model's own templates read it and there is none; optional templates
        are left out quietly: the defaults of many targets read it, and most
        languages have no word probabilities)."""
        if not attrs:
            return None
        table = lookups_data_usual_case_table(context.lang) if usual_case else None
        if table is None and USUAL_CASE in context.required:
            why = (f"[initialize.components.{context.name}] usual_case = false" if not usual_case
                   else f"spacy-lookups-data is not installed or has no word probabilities "
                        f"(lexeme_prob) for language '{context.lang}'")
            raise ValueError(Errors.E230.format(name=context.name, why=why))
        return None if table is None else cls(table)

    def value_of(self, values: np.ndarray, attr: str) -> np.ndarray:
        return values[:, 0]

    def to_msg(self) -> Dict[str, Any]:
        return {"usual_case": self.table.to_dict()}

    @classmethod
    def from_msg(cls, msg: Dict[str, Any]) -> Optional["UsualCase"]:
        table = cls.table_of(msg, "usual_case")
        return None if table is None else cls(table)
