"""Cut the small samples in assets/ewt_sample/ from the shared corpora.

    python assets/make_samples.py ../shared/data

Takes the first sentences (in file order) of UD English EWT r2.9 train/dev/test
and the Universal NER English EWT sentences with the same sent_id, so the
dependency trees and the NER tags of the sample align token for token.
"""

import sys
from pathlib import Path

SIZES = {"train": 600, "dev": 200, "test": 200}
UNER_FILES = {
    "train": "en_ewt-ud-train.v0-normalized.iob2",
    "dev": "en_ewt-ud-dev.iob2",
    "test": "en_ewt-ud-test.iob2",
}


def blocks(path: Path):
    text = path.read_text(encoding="utf8").strip("\n")
    return [b for b in text.split("\n\n") if b.strip()]


def sent_id(block: str) -> str:
    for line in block.splitlines():
        if line.startswith("# sent_id"):
            return line.split("=", 1)[1].strip()
    raise ValueError("block without sent_id")


def main(data_dir: Path, out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    for split, n in SIZES.items():
        ud = blocks(data_dir / "ud_english_ewt" / "r2.9" / f"en_ewt-ud-{split}.conllu")[:n]
        ids = [sent_id(b) for b in ud]
        uner = {sent_id(b): b for b in blocks(data_dir / "uner_english_ewt" / UNER_FILES[split])}
        missing = [i for i in ids if i not in uner]
        if missing:
            raise SystemExit(f"{split}: {len(missing)} sentences missing from UNER")
        (out_dir / f"en_ewt-{split}.conllu").write_text("\n\n".join(ud) + "\n\n", encoding="utf8")
        (out_dir / f"en_ewt-{split}.iob2").write_text(
            "\n\n".join(uner[i] for i in ids) + "\n\n", encoding="utf8"
        )
        print(split, len(ud), "sentences")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(__file__).parent / "ewt_sample")
