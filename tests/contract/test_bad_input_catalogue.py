"""A catalogue of bad inputs: each one, run through the command line in this process, exits with
status 2 and one ``error:`` line on stderr that names the input and the fix, with no traceback,
and leaves every file as it was (nothing created, nothing changed). The Python-level cases below
check what the command line cannot show: a full disk half-way through a save, a corrupt cache
entry, the label rules and a pipeline fitted on string labels.

Tiny data files are written in ``tmp_path``; no model is loaded (``tfidf-lr`` is trained only in
the full-disk case, on 32 short texts)."""

from __future__ import annotations

import errno
import logging
import os
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from perturblab.cli import main
from perturblab.errors import InputError

WORDS = "good bad film plot actor scene music story".split()


def labelled_csv(path: Path, n: int = 32, labels: Callable[[int], str] = lambda i: str(i % 2)) -> Path:
    rng = np.random.default_rng(0)
    rows = ["text,label"] + [" ".join(rng.choice(WORDS, 6)) + f",{labels(i)}" for i in range(n)]
    path.write_text("\n".join(rows) + "\n")
    return path


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and directory (None) under ``root``."""
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


SCOPE = ["scope", "--reference", "tfidf-lr", "--targets", "tfidf-lr", "--capabilities", "typo", "--n", "4",
         "--trials", "1", "--quiet"]
LEARN = ["learnability", "--models", "tfidf-lr", "--perturbations", "leet_letters", "--n-train", "16", "--n-eval",
         "8", "--ps", "0.5,1", "--trials", "1", "--workers", "1", "--quiet"]

GOOD_CONFIG = """\
studies:
  - name: learn
    kind: learnability
    models: [tfidf-lr]
    perturbations: leet_letters
    data: data.csv
    trials: 1
"""


def _setup_header_only(t: Path) -> list[str]:
    (t / "header.csv").write_text("text,label\n")
    return SCOPE + ["--data", str(t / "header.csv"), "--out", str(t / "out")]


def _setup_nan_label(t: Path) -> list[str]:
    labelled_csv(t / "nan.csv", labels=lambda i: "NaN" if i == 4 else str(i % 2))
    return SCOPE + ["--data", str(t / "nan.csv"), "--out", str(t / "out")]


def _setup_label_column(t: Path) -> list[str]:
    labelled_csv(t / "data.csv")
    return SCOPE + ["--data", str(t / "data.csv"), "--label-column", "lable", "--out", str(t / "out")]


def _setup_text_column(t: Path) -> list[str]:
    labelled_csv(t / "data.csv")
    return LEARN + ["--data", str(t / "data.csv"), "--text-fields", "txt", "--out", str(t / "out")]


def _setup_seeds(value: str) -> Callable[[Path], list[str]]:
    def setup(t: Path) -> list[str]:
        labelled_csv(t / "data.csv")
        i = LEARN.index("--trials")
        args = LEARN[:i] + LEARN[i + 2:] + ["--seeds", value]
        return args + ["--data", str(t / "data.csv"), "--out", str(t / "out")]
    return setup


def _setup_ps(t: Path) -> list[str]:
    labelled_csv(t / "data.csv")
    i = LEARN.index("--ps")
    return LEARN[:i + 1] + ["1"] + LEARN[i + 2:] + ["--data", str(t / "data.csv"), "--out", str(t / "out")]


def _setup_out_is_file(t: Path) -> list[str]:
    labelled_csv(t / "data.csv")
    (t / "taken").write_text("not a directory\n")
    return LEARN + ["--data", str(t / "data.csv"), "--out", str(t / "taken")]


def _setup_capability(t: Path) -> list[str]:
    labelled_csv(t / "data.csv")
    args = [a if a != "typo" else "typo,telepathy" for a in SCOPE]
    return args + ["--data", str(t / "data.csv"), "--out", str(t / "out")]


def _setup_model_name(t: Path) -> list[str]:
    return _setup_missing_model_dir("--targets", "a/b=tfidf-lr")(t)  # one bad option: one line


def _setup_config_utf8(t: Path) -> list[str]:
    (t / "cfg.yaml").write_bytes(b"studies:\n  - kind: scope\n    reference: caf\xe9\n")
    return ["run", str(t / "cfg.yaml"), "--out", str(t / "run")]


def _setup_run_out_is_file(t: Path) -> list[str]:
    labelled_csv(t / "data.csv")
    (t / "cfg.yaml").write_text(GOOD_CONFIG)
    (t / "taken").write_text("not a directory\n")
    return ["run", str(t / "cfg.yaml"), "--out", str(t / "taken")]


def _setup_check_missing_file(t: Path) -> list[str]:
    (t / "cfg.yaml").write_text(GOOD_CONFIG.replace("data.csv", "missing.csv"))
    return ["run", str(t / "cfg.yaml"), "--check"]


def _setup_duplicated_text_header(t: Path) -> list[str]:
    """The label column's header written as a second ``text`` (pandas would read it as ``text.1``)."""
    labelled_csv(t / "dup.csv")
    (t / "dup.csv").write_text((t / "dup.csv").read_text().replace("text,label", "text,text", 1))
    return LEARN + ["--data", str(t / "dup.csv"), "--label-column", "text", "--out", str(t / "out")]


def _setup_texts_as_labels(t: Path) -> list[str]:
    """The header names the columns in the wrong order: every "label" is a different sentence."""
    rows = labelled_csv(t / "swapped.csv").read_text().splitlines()
    (t / "swapped.csv").write_text("\n".join(["label,text"] + rows[1:]) + "\n")
    return LEARN + ["--data", str(t / "swapped.csv"), "--out", str(t / "out")]


def _setup_missing_model_dir(option: str, spec: str) -> Callable[[Path], list[str]]:
    def setup(t: Path) -> list[str]:
        labelled_csv(t / "data.csv")
        i = SCOPE.index(option)
        args = SCOPE[:i + 1] + [spec.replace("TMP", str(t))] + SCOPE[i + 2:]
        return args + ["--data", str(t / "data.csv"), "--out", str(t / "out")]
    return setup


def _setup_unknown_model(t: Path) -> list[str]:
    return _setup_missing_model_dir("--targets", "minilm-l7")(t)


def _setup_report_corrupt_results(t: Path) -> list[str]:
    (t / "study").mkdir()
    (t / "study" / "results.json").write_text('[{"model": "a", "clean": 0.9}')  # cut off mid-write
    (t / "study" / "table.md").write_text("| model | clean |\n|---|---|\n| a | 0.900 |\n")
    return ["report", str(t / "study")]


# (id, setup(tmp_path) -> argv, words the one error line holds: the input and the fix)
CASES = [
    ("header-only-csv", _setup_header_only, ["header.csv", "no data rows", "add rows"]),
    ("nan-label", _setup_nan_label, ["nan.csv", "data rows 5", "NaN", "fill them in or delete those rows"]),
    ("misspelt-label-column", _setup_label_column, ["'lable'", "columns are: text, label", "--label-column"]),
    ("misspelt-text-column", _setup_text_column, ["'txt'", "--text-fields"]),
    ("seeds-0", _setup_seeds("0"), ["--trials", "at least 1", "got 0"]),
    ("seeds-negative", _setup_seeds("-1"), ["--trials", "at least 1", "got -1"]),
    ("one-p", _setup_ps, ["--ps", "at least two increasing", "got [1.0]"]),
    ("out-is-a-file", _setup_out_is_file, ["--out", "taken", "existing file", "give a directory"]),
    ("unknown-capability", _setup_capability, ["'telepathy'", "known capabilities: fairness, synonym, typo"]),
    ("non-identifier-model-name", _setup_model_name, ["'a/b=tfidf-lr'", "NAME=SOURCE", "fix the name or the path"]),
    ("config-not-utf8", _setup_config_utf8, ["cfg.yaml:3", "not UTF-8", "save the config as UTF-8"]),
    ("run-out-is-a-file", _setup_run_out_is_file, ["--out", "taken", "existing file"]),
    ("check-missing-data-file", _setup_check_missing_file, ["cfg.yaml:6", "studies.0.data", "'missing.csv'",
                                                             "check the path"]),
    ("duplicated-text-header", _setup_duplicated_text_header,
     ["column 'text' is duplicated in the header of dup.csv", "columns 1 and 2 of: text, text",
      "rename the repeated columns in the file's header line", "e.g. text,label"]),
    ("label-column-holds-texts", _setup_texts_as_labels,
     ["of swapped has only 1 example", "add examples of that class or delete its rows",
      "look like texts, not classes", "--label-column"]),
    ("missing-model-dir-relative", _setup_missing_model_dir("--reference", "./no/such/dir"),
     ["--reference", "'./no/such/dir': no such directory", "check the path"]),
    ("missing-model-dir-absolute", _setup_missing_model_dir("--targets", "TMP/nope"),
     ["--targets", "/nope': no such directory", "check the path", "config.json"]),
    ("unknown-model-name", _setup_unknown_model,
     ["--targets", "unknown model preset 'minilm-l7'", "known model presets: minilm-l3, minilm-l6, minilm-l6-int8",
      "models trained here: hf-finetune, minilm-probe, textrnn", "or give a model directory or a hub id"]),
    ("report-corrupt-results-json", _setup_report_corrupt_results,
     ["/study/results.json is not readable JSON (Expecting ',' delimiter", "re-run the study or delete the file"]),
]


def _run(argv: list[str], capsys) -> tuple[int, str]:
    capsys.readouterr()
    rc = main(argv)
    return rc, capsys.readouterr().err


@pytest.mark.parametrize("setup,needles", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_gives_one_line_exit_2_and_changes_nothing(tmp_path, capsys, setup, needles):
    argv = setup(tmp_path)
    before = snapshot(tmp_path)
    rc, err = _run(argv, capsys)
    lines = err.strip().splitlines()
    assert rc == 2, err
    assert "Traceback" not in err
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    if "minilm-l7" not in argv:
        assert "unknown model preset" not in lines[0]  # a bad NAME= or a missing path is not mistaken for a preset
    assert "stratify=False" not in lines[0]  # no command takes it
    assert snapshot(tmp_path) == before  # no output file created or changed, no directory made


def test_read_only_output_directory(tmp_path, capsys, monkeypatch):
    """An --out that cannot be created (a read-only file system; simulated: the tests may run as
    root, whom permissions do not stop)."""
    labelled_csv(tmp_path / "data.csv")
    out = tmp_path / "ro" / "out"
    real_mkdir = Path.mkdir

    def mkdir(self, *a, **kw):
        if str(self).startswith(str(tmp_path / "ro")):
            raise OSError(errno.EROFS, "Read-only file system", str(self))
        return real_mkdir(self, *a, **kw)

    monkeypatch.setattr(Path, "mkdir", mkdir)
    before = snapshot(tmp_path)
    rc, err = _run(LEARN + ["--data", str(tmp_path / "data.csv"), "--out", str(out)], capsys)
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err
    assert str(out) in lines[0] and "Read-only file system" in lines[0] and "--out" in lines[0]
    assert snapshot(tmp_path) == before


def test_check_reports_every_error_of_a_config_one_line_each(tmp_path, capsys):
    labelled_csv(tmp_path / "data.csv")
    (tmp_path / "cfg.yaml").write_text("""\
studies:
  - name: a
    kind: learnability
    models: [tfidf-lr]
    data: missing.csv
    seeds: -2
  - name: b
    kind: scope
    reference: tfidf-lr
    targets: tfidf-lr
    capabilities: [typo, telepathy]
    data: data.csv
    label_column: lable
""")
    before = snapshot(tmp_path)
    rc, err = _run(["run", str(tmp_path / "cfg.yaml"), "--check"], capsys)
    lines = err.strip().splitlines()
    assert rc == 2 and "Traceback" not in err
    assert all(line.startswith("error: ") for line in lines)
    assert len(lines) == 4, err  # each error once, in file order
    assert "cfg.yaml:5: studies.0.data: 'missing.csv'" in lines[0]
    assert "cfg.yaml:6: studies.0.seeds: must be at least 1, got -2" in lines[1]
    assert "cfg.yaml:11: studies.1.capabilities: unknown capability 'telepathy'" in lines[2]
    assert "studies.1" in lines[3] and "'lable'" in lines[3] and "--label-column" in lines[3]
    assert snapshot(tmp_path) == before
    # the same config run for real is refused the same way before anything is written
    rc, err = _run(["run", str(tmp_path / "cfg.yaml"), "--out", str(tmp_path / "run")], capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 4 and snapshot(tmp_path) == before


def test_check_passes_a_valid_config(tmp_path, capsys):
    labelled_csv(tmp_path / "data.csv")
    (tmp_path / "cfg.yaml").write_text(GOOD_CONFIG)
    assert main(["run", str(tmp_path / "cfg.yaml"), "--check"]) == 0
    assert "valid; 1 study" in capsys.readouterr().out


class _FullDisk:
    """A file object whose writes fail as on a full disk (ENOSPC); closing it closes the descriptor."""

    def __init__(self, fd: int, *a, **kw) -> None:
        self.fd = fd

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        os.close(self.fd)

    def write(self, data) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.slow  # trains tfidf-lr three times (about 1 s with the imports)
def test_full_disk_during_save_changes_no_output_file(tmp_path, capsys, monkeypatch):
    """The study runs (its finished work stays in the results store for the resume), then the disk
    fills up after its first output file (results.json) was written: one error line, exit 2, and
    the earlier results.json and every other output are as they were (no 0-byte or new
    results.json); no temporary file is left."""
    import perturblab.core.files as files

    labelled_csv(tmp_path / "data.csv")
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.json").write_text('["an earlier run"]\n')
    (out / "table.md").write_text("earlier table\n")
    before = snapshot(out)
    real_fdopen, opened = os.fdopen, []

    def fdopen(fd, *a, **kw):  # the first output file is written whole, the second finds the disk full
        opened.append(fd)
        return real_fdopen(fd, *a, **kw) if len(opened) == 1 else _FullDisk(fd)

    monkeypatch.setattr(files.os, "fdopen", fdopen)
    rc, err = _run(LEARN + ["--data", str(tmp_path / "data.csv"), "--out", str(out)], capsys)
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert "No space left on device" in lines[0] and "free disk space" in lines[0] and "--out" in lines[0]
    assert len(opened) == 2  # results.json was written (to its temporary file), summary.json failed
    after = {k: v for k, v in snapshot(out).items() if not k.startswith(("results.sqlite", "cache"))}
    assert after == before


def test_all_or_nothing_keeps_earlier_files_when_a_later_write_fails(tmp_path, monkeypatch):
    from perturblab.core import files

    (tmp_path / "a.json").write_text("old a")
    real_fdopen = os.fdopen
    calls = []

    def fdopen(fd, *a, **kw):
        calls.append(fd)
        return real_fdopen(fd, *a, **kw) if len(calls) == 1 else _FullDisk(fd)

    monkeypatch.setattr(files.os, "fdopen", fdopen)
    with pytest.raises(InputError, match="b.json: No space left on device"):
        with files.all_or_nothing():
            files.atomic_write_text(tmp_path / "a.json", "new a")
            files.atomic_write_text(tmp_path / "b.json", "new b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]  # no b.json, no temporary file
    assert (tmp_path / "a.json").read_text() == "old a"
    monkeypatch.setattr(files.os, "fdopen", real_fdopen)
    with files.all_or_nothing():
        files.atomic_write_text(tmp_path / "a.json", "new a")
        assert (tmp_path / "a.json").read_text() == "old a"  # replaced only when the block ends
    assert (tmp_path / "a.json").read_text() == "new a"


def test_corrupt_encoder_states_are_recomputed_with_one_warning(tmp_path, monkeypatch, caplog):
    """Corrupt cache entries of every kind (a damaged zip, a damaged header, a directory where a
    chunk belongs, an array of another dtype) are treated as missing: one warning, computed again,
    replaced; the run after that reads them all from the cache."""
    from perturblab.models.base import fingerprint_of
    from perturblab.models.states import layer_states, states_dir

    monkeypatch.setenv("PERTURBLAB_HOME", str(tmp_path))

    class Encoder:
        num_layers = 1
        fingerprint = fingerprint_of("catalogue-encoder")
        seen = 0

        def hidden_states(self, inputs, pooling="mean"):
            self.seen += len(inputs)
            lens = np.array([[len(t), t.count(" ")] for t in inputs], float)
            return [lens, 2 * lens]

    texts = [f"text number {i} " + "x" * i for i in range(20)]
    enc = Encoder()
    want = layer_states(enc, texts, chunk_size=4, progress=False)
    chunks = sorted(states_dir(enc, texts, "mean").glob("rows*.npy"), key=lambda p: int(p.name[4:].split("-")[0]))
    chunks[0].write_bytes(b"PK\x03\x04" + b"\x00" * 40)  # a zip that is none
    good = chunks[1].read_bytes()
    chunks[1].write_bytes(good[:10] + b"{'descr': '<f4', 'shape': (2," + b" " * 80 + b"\n")  # damaged header
    chunks[2].unlink()
    chunks[2].mkdir()  # a directory where the chunk belongs
    np.save(chunks[3], np.zeros((2, 4, 2), dtype=np.int64))  # right shape, wrong dtype
    enc.seen = 0
    with caplog.at_level(logging.WARNING, logger="perturblab.models.states"):
        got = layer_states(enc, texts, chunk_size=4, progress=False)
    assert enc.seen == 16  # the four bad chunks of four texts, nothing else
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert caplog.text.count("discarding corrupt cached hidden states") == 1
    enc.seen = 0
    layer_states(enc, texts, chunk_size=4, progress=False)
    assert enc.seen == 0  # all replaced by readable chunks


def test_sparse_integer_labels_map_to_their_distinct_values(tmp_path):
    from perturblab.data import load_file

    sparse = load_file(labelled_csv(tmp_path / "sparse.csv", n=6, labels=lambda i: "15"[i % 2]))
    assert sparse.label_names == ["1", "5"] and sparse.labels.tolist() == [0, 1, 0, 1, 0, 1]
    gap = load_file(labelled_csv(tmp_path / "gap.csv", n=6, labels=lambda i: "302"[i % 3]))
    assert gap.label_names == ["0", "2", "3"] and gap.labels.tolist() == [2, 0, 1, 2, 0, 1]
    contiguous = load_file(labelled_csv(tmp_path / "c.csv", n=6, labels=lambda i: "201"[i % 3]))
    assert contiguous.label_names == ["0", "1", "2"] and contiguous.labels.tolist() == [2, 0, 1, 2, 0, 1]


@pytest.mark.parametrize("bad", ["NaN", "nan", " NAN "])
def test_nan_labels_are_refused_with_their_row(tmp_path, bad):
    from perturblab.data import load_file

    path = tmp_path / "d.jsonl"
    path.write_text('{"text": "a", "label": 1}\n{"text": "b", "label": 0}\n'
                    f'{{"text": "c", "label": "{bad}"}}\n{{"text": "d", "label": NaN}}\n')
    with pytest.raises(InputError, match=r"2 row\(s\) of d.jsonl have no label in column 'label' \(data rows 3, 4\)"):
        load_file(path)


def test_sklearn_pipeline_fitted_on_string_labels(tmp_path):
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from perturblab.models.sklearn_backend import SklearnClassifier

    texts = ["good film", "bad film", "great plot", "awful plot", "good story", "bad acting"]
    pipe = make_pipeline(CountVectorizer(), LogisticRegression()).fit(texts, ["pos", "neg", "pos", "neg", "pos", "neg"])
    clf = SklearnClassifier(pipe, labels=["pos", "neg"])  # classes_ are ['neg', 'pos']: columns swap
    p = clf.predict_proba(["good film", "bad plot"])
    np.testing.assert_allclose(p, pipe.predict_proba(["good film", "bad plot"])[:, ::-1], rtol=0, atol=1e-12)
    assert p[0, 0] > 0.5 and p[1, 1] > 0.5  # "good" reads positive, "bad" negative
    with pytest.raises(InputError, match=r"\['pos'\] are not among the labels \['neg', 'positive'\]"):
        SklearnClassifier(pipe, labels=["neg", "positive"])


def test_unknown_names_are_pluralised():
    from perturblab.errors import UnknownNameError, plural

    assert [plural(w) for w in ("capability", "corpus", "study", "data set", "match")] == [
        "capabilities", "corpora", "studies", "data sets", "matches"]
    assert "known capabilities: a, b" in str(UnknownNameError("capability", "x", ["b", "a"]))
