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


def test_python_objects_reach_the_study_by_their_names(monkeypatch):
    """A model object without a name is ``model<i>`` by its place; Corpus objects are used as given,
    the options holding their names (the study is built, nothing is scored)."""
    from perturblab.core.boundary import Inputs

    monkeypatch.setattr(Inputs, "run", lambda self, study, args: study)
    lm = tiny_lm(seed=0)
    lm.name = ""
    benign = Corpus([s.replace("The", "Some") for s in SENTENCES], list(range(len(SENTENCES))), name="tales")
    study = pl.selfcheck(["tiny-spec", lm], corpus=corpus(SENTENCES), benign_corpus=benign, metrics="negation",
                         n=2, quiet=True)
    assert study.model_names == ["tiny-spec", "model1"] and study.models == {"model1": lm}
    assert (study.args.corpus, study.args.benign_corpus) == ("hand", "tales")
    assert study.examples.benign is not None
    assert set(study.examples.get("negation", "benign")) <= set(benign.sentences)


def test_a_corpus_of_another_type_is_refused_with_the_fix():
    import pytest

    from perturblab.errors import InputError

    with pytest.raises(InputError, match="--benign-corpus: give a corpus name, a file or a perturblab.data.corpus"
                                         ".Corpus, not a dict"):
        pl.selfcheck([tiny_lm(seed=0)], corpus=corpus(SENTENCES), benign_corpus={"text": list(SENTENCES)}, **{
            k: v for k, v in KW.items() if k != "benign_corpus"})
