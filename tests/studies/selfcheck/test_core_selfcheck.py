"""The self-supervised evaluation on the study core: an edited corpus scores exactly the edited
examples, another model under the same name is scored afresh, and the Python function saves what
the command writes."""

from __future__ import annotations

import perturblab as pl
from helpers.observe import count_cells
from perturblab.cli import main
from perturblab.data.corpus import Corpus
from helpers.tiny_lm import SENTENCES, save_lm, tiny_lm

KW = dict(metrics="negation,entropy", benign_corpus=None, n=8, quiet=True)


def scored(out) -> int:
    return count_cells(out, "selfcheck.score")


def corpus(sentences):
    return Corpus(list(sentences), list(range(len(sentences))), name="hand")


def test_an_edited_corpus_or_another_model_under_the_same_name_is_scored_afresh(tmp_path):
    lm = tiny_lm(seed=0)
    first = pl.selfcheck([lm], corpus=corpus(SENTENCES), out=tmp_path / "o", **KW)
    n = scored(tmp_path / "o")
    assert n == len(first.examples) > 0
    assert pl.selfcheck([lm], corpus=corpus(SENTENCES), out=tmp_path / "o", **KW).rows == first.rows
    assert scored(tmp_path / "o") == n  # nothing scored twice
    edited = list(SENTENCES)
    edited[1] = "The dog was tired, so it slept on the warm mat all morning."  # still a negation example
    again = pl.selfcheck([lm], corpus=corpus(edited), out=tmp_path / "o", **KW)
    fresh = pl.selfcheck([lm], corpus=corpus(edited), out=tmp_path / "f", **KW)
    assert again.rows == fresh.rows and again.examples == fresh.examples
    assert 0 < scored(tmp_path / "o") - n <= 2  # the edited sentence, in the units that use it
    other = tiny_lm(seed=1)
    assert other.name == lm.name.replace("0", "1") and other.fingerprint != lm.fingerprint
    other.name = lm.name  # other weights under the same name
    swapped = pl.selfcheck([other], corpus=corpus(SENTENCES), out=tmp_path / "o", **KW)
    assert swapped.rows == pl.selfcheck([other], corpus=corpus(SENTENCES), out=tmp_path / "g", **KW).rows
    assert swapped.rows != first.rows


def test_the_function_saves_what_the_command_writes(tmp_path):
    lm_dir = save_lm(tmp_path / "lm", 0)
    text = tmp_path / "c.txt"
    text.write_text("\n\n".join(SENTENCES) + "\n")
    assert main(["selfcheck", "--models", str(lm_dir), "--corpus", str(text), "--benign-corpus", "none",
                 "--metrics", "negation,entropy", "--n", "8", "--quiet", "--out", str(tmp_path / "cli")]) == 0
    res = pl.selfcheck(str(lm_dir), corpus=str(text), benign_corpus="none", metrics="negation,entropy", n=8,
                       quiet=True)
    written = res.save(tmp_path / "api")
    assert sorted(p.name for p in written) == sorted(
        p.name for p in (tmp_path / "cli").iterdir() if p.suffix in (".json", ".csv", ".png"))
    for name in ("results.json", "examples.csv", "most_sensitive.csv"):
        assert (tmp_path / "api" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
