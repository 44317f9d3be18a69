"""The score table of a ``spacy train`` run, read back from its console output
or from the JSON lines ``spacy.ConsoleLogger.v3`` writes (``output_file``)."""

import json
import re
from pathlib import Path
from typing import List, Optional, Tuple

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def parse_train_log(text: str) -> Tuple[List[str], List[List[float]]]:
    """Column names and rows of the table ``spacy train``'s console logger prints.

    The header starts ``E    #`` and its columns are separated by two or more
    spaces (a loss column is ``LOSS NAME``); rows are whitespace-separated numbers.
    Several tables (e.g. resumed runs) are concatenated.
    """
    if text.lstrip().startswith("{"):
        return parse_jsonl_log(text)
    columns: List[str] = []
    rows: List[List[float]] = []
    for raw in text.splitlines():
        line = ANSI.sub("", raw).rstrip()
        stripped = line.strip()
        if not stripped:
            continue
        if re.match(r"^E\s+#\s", stripped):
            columns = re.split(r"\s{2,}", stripped)
            continue
        if not columns or set(stripped) <= set("- "):
            continue
        fields = stripped.split()
        if len(fields) != len(columns):
            continue
        try:
            rows.append([float(x) for x in fields])
        except ValueError:
            continue
    return columns, rows


def parse_jsonl_log(text: str) -> Tuple[List[str], List[List[float]]]:
    """The same table from the JSON lines ``spacy.ConsoleLogger.v3`` writes to its
    ``output_file`` (the shipped configs set it from ``paths.train_log``), with the
    console's columns and scale (scores already in percent there)."""
    records = [json.loads(line) for line in text.splitlines() if line.strip()]
    if not records:
        return [], []
    losses = list(records[0]["losses"])
    scores = [k for k, v in records[0]["scores"].items() if isinstance(v, (int, float))]
    columns = ["E", "#", *(f"LOSS {name.upper()}" for name in losses),
               *(name.upper() for name in scores), "SCORE"]
    rows = [[float(r["epoch"]), float(r["step"]), *(float(r["losses"][n]) for n in losses),
             *(float(r["scores"][n] or 0.0) for n in scores), float(r["score"])]
            for r in records]
    return columns, rows


def find_log_file(path: Path) -> Optional[Path]:
    """``path`` itself, or a log file holding the table in a directory (a training output dir)."""
    if path.is_file():
        return path
    if path.is_dir():
        candidates = sorted(list(path.glob("*.log")) + list(path.glob("*.txt"))
                            + list(path.glob("*.jsonl")) + list(path.glob("*/*.log")))
        for candidate in candidates:
            try:
                if parse_train_log(candidate.read_text(errors="replace"))[1]:
                    return candidate
            except OSError:
                continue
    return None
