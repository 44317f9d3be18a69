"""spaCy's lemma tables as a feature source: ``LOOKUP_LEMMA``, the edit from
the word to the lemma of spaCy's lookup table (``lemma_lookup``), and
``RULE_LEMMA_POS`` (``RULE_LEMMA_NOUN``, ``RULE_LEMMA_VERB``, ...), the edit
to the lemma spaCy's rule lemmatizer would give the word under that coarse
POS (``lemma_rules``, ``lemma_index``, ``lemma_exc``), each an edit tree as
the ``lemma`` target's labels are (``features/lemma_lookups.py``); 0 where
the tables know no lemma for the word.

The tables are spacy-lookups-data's for the pipeline's language, read at
``initialize`` into a word table saved with the component. The lemma
target's default templates read them (``Target.optional_templates``), and
those of the tagging targets (:data:`TAGGING_TEMPLATES`): left out where the
language's tables lack what they read (W041 for a target whose defaults lean
on them, ``Target.warns_without_optional_sources``: the lemma target's); a
template of the model's own that reads an attribute the tables do not give is
an error (E250).
``[initialize.components.NAME] lemma_lookups = false`` leaves the tables out.
"""

import re
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from ..errors import Errors, Warnings, warn
from ..features.lemma_lookups import (LOOKUP_COLUMN, RULE_COLUMN, LemmaTable,
                                      lookups_data_lemma_table)
from .base import BuildContext
from .registry import register_feature_source
from .word_tables import WordTableSource

LOOKUP_LEMMA = "LOOKUP_LEMMA"
RULE_LEMMA = "RULE_LEMMA_"
#: the coarse POS a ``RULE_LEMMA_POS`` may name (Universal Dependencies' UPOS)
UPOS = ("ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON",
        "PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X")
_RULE_LEMMA = re.compile(r"^RULE_LEMMA_([A-Z]+)$")
#: the tagging targets' defaults (``tag``, ``pos``, ``morph``): what the
#: tables say of the word and its neighbours, for each coarse POS that some
#: language's rules cover (a language reads those its tables have, the rest
#: are left out), and the three most languages have, together. The edit to a
#: word's lemma says what inflection it bears ("walked" -> strip "ed"): on UD
#: English EWT dev +0.23 UFeats, +0.23 UPOS, +0.25 XPOS; on UD Greek GDT (rules
#: only) +0.68 UFeats, +0.72 UPOS (docs/features.md, "spaCy's lemma tables")
TAGGING_TEMPLATES = ("LOOKUP_LEMMA[-1..1]", "RULE_LEMMA_ADJ", "RULE_LEMMA_ADV",
                     "RULE_LEMMA_DET", "RULE_LEMMA_NOUN", "RULE_LEMMA_PRON", "RULE_LEMMA_PROPN",
                     "RULE_LEMMA_VERB", "RULE_LEMMA_ADJ|RULE_LEMMA_NOUN|RULE_LEMMA_VERB")


def lemma_column(attr: str) -> Optional[str]:
    """The lemma table's column ``attr`` reads (``"lookup"``, ``"rule:NOUN"``),
    None for an attribute of another source."""
    if attr == LOOKUP_LEMMA:
        return LOOKUP_COLUMN
    m = _RULE_LEMMA.match(attr)
    return RULE_COLUMN + m.group(1) if m else None


@register_feature_source
class LemmaLookups(WordTableSource):
    """Word (its lowercase form) -> the edit ids of spaCy's lemma tables.

    Parameters
    ----------
    lemma_table : LemmaTable
        The columns the templates read.
    """

    name = "lemma_lookups"
    attrs_hint = "LOOKUP_LEMMA, RULE_LEMMA_POS"
    saved_keys = ("lemma_lookups",)

    def __init__(self, lemma_table: LemmaTable) -> None:
        super().__init__(lemma_table.table)
        self.lemma_table = lemma_table

    @classmethod
    def provides(cls, attr: str) -> bool:
        return lemma_column(attr) is not None

    @classmethod
    def check(cls, attr: str, template: str) -> None:
        m = _RULE_LEMMA.match(attr)
        if m and m.group(1) not in UPOS:
            raise ValueError(Errors.E002.format(
                template=template, why=f"'{attr}' names no coarse POS: use RULE_LEMMA_ and "
                                       f"one of {', '.join(UPOS)} (e.g. RULE_LEMMA_NOUN)"))

    @classmethod
    def build(cls, context: BuildContext, attrs: Sequence[str], *,
              lemma_lookups: bool = True) -> Optional["LemmaLookups"]:
        """The columns of spacy-lookups-data's lemma tables for the pipeline's
        language that ``attrs`` read (E250 where the model's own templates read
        one it has not; W041 where the language has no tables and optional
        templates would read them)."""
        if not attrs:
            return None
        table = lookups_data_lemma_table(context.lang) if lemma_lookups else None
        have = table.columns if table is not None else []
        missing = [attr for attr in attrs if lemma_column(attr) not in have]
        if missing:
            if not lemma_lookups:
                why = f"[initialize.components.{context.name}] lemma_lookups = false"
            elif table is None:
                why = (f"spacy-lookups-data is not installed or has no lemma tables for "
                       f"language '{context.lang}'")
            else:
                why = (f"spacy-lookups-data's lemma tables for language '{context.lang}' "
                       f"give {', '.join(lemma_attrs(table))} only")
            needed = [attr for attr in missing if attr in context.required]
            if needed:
                raise ValueError(Errors.E250.format(name=context.name, attrs=", ".join(needed),
                                                    why=why))
            # (turned off: nothing to say; a tagger's defaults are a bonus where
            # the language has tables, so their absence is no news; nor are the
            # columns a language's tables lack where it has some: the lemma
            # target's defaults name those of several languages)
            if table is None and lemma_lookups and getattr(
                    context.target, "warns_without_optional_sources", False):
                warn(Warnings.W041.format(name=context.name, attrs=", ".join(missing),
                                          why=why))
        columns = [lemma_column(attr) for attr in attrs if lemma_column(attr) in have]
        return cls(table.select(sorted(set(columns), key=have.index))) if columns else None

    def has(self, attr: str) -> bool:
        return lemma_column(attr) in self.lemma_table.columns

    def value_of(self, values: np.ndarray, attr: str) -> np.ndarray:
        return self.lemma_table.column_ids(values, lemma_column(attr))

    def to_msg(self) -> Dict[str, Any]:
        return {"lemma_lookups": self.lemma_table.to_dict()}

    @classmethod
    def from_msg(cls, msg: Dict[str, Any]) -> Optional["LemmaLookups"]:
        saved = msg.get("lemma_lookups")
        return None if saved is None else cls(LemmaTable.from_dict(saved))


def _attr_of(column: str) -> str:
    """The attribute that reads the lemma table's ``column``."""
    return LOOKUP_LEMMA if column == LOOKUP_COLUMN else RULE_LEMMA + column[len(RULE_COLUMN):]


def lemma_attrs(table: Optional[LemmaTable]) -> List[str]:
    """The attributes ``table`` gives (none without one)."""
    return [_attr_of(column) for column in table.columns] if table is not None else []
