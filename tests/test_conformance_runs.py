"""The run contracts of every registered study (as scikit-learn's ``check_estimator`` runs one
contract over every estimator): each study runs its registry ``example`` (options that run it in
seconds on the packaged models) through each entry point, and

a. its command, its Python function (``pl.<study>(..., out=DIR).save(DIR)``) and an entry of a
   study config (``perturblab run``, files in ``OUT/<study>/``) write the same output files with
   the same contents (run ids and times left out, as ``scripts/compare_outputs.py`` leaves them
   out; figures and HTML by presence);
b. the command run again into the same ``--out`` computes nothing: no cell is computed, the
   ``cells`` table of ``results.sqlite`` keeps its rows, and the output files are the same;
c. a changed input (a larger sample, one more perturbation, measure or training example)
   computes only its own cells: new cells are added, none of the stored ones is computed again or
   changed, and the unchanged ones are read back;
d. ``result.save(DIR)`` writes all its files or none: a failure at the second file leaves an
   empty directory (no output file, no temporary file).

The command runs once per study and its output directory serves a-c. A study whose example is
empty (it cannot run in seconds without a fine-tune) is skipped with the reason, and the
studies without one are named in :data:`WITHOUT_EXAMPLE`.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sqlite3
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from perturblab.cli import main
from perturblab.core.options import option_name
from perturblab.core.store import ResultStore
from perturblab.errors import InputError
from perturblab.studies.registry import entries

ROOT = Path(__file__).resolve().parents[1]

#: one torch thread: the language models run many times faster on shared cores
pytestmark = pytest.mark.usefixtures("torch_one_thread")

#: studies that have no example: what each would need to run
WITHOUT_EXAMPLE = {
    "checkpoints": "needs classifier checkpoint directories of one training run, or --finetune (a fine-tune)",
}

#: the changed input of contract c, per study: options replacing the example's (a study not named
#: here: its sample, ``n``, ``n_eval`` or ``n_train``, two larger)
GROW: dict[str, dict[str, Any]] = {
    "scope": dict(n=10),
    "demo": dict(n=10),
    "scope-lm": dict(trials=2),  # a second draw of base sentences (n=3 draws other sentences than n=2)
    "learnability": dict(perturbations="leet_letters,whitespace"),
    "selfcheck": dict(n=4),
    "robustness": dict(perturbations="change_char,drop_first"),
    "generation": dict(perturbations="drop_first,change_char"),
    "finetuning": dict(n_train=50),  # the probes read the training sample; CKA and STIR do not
    "layer-probes": dict(perturbations="change_char,drop_first"),
    "similarity": dict(measures="cka,procrustes"),
    "grounding": dict(n_train=50),  # the probes read the training sample; the distances and warm-up do not
}

#: studies whose example takes longest (about a minute for the four contracts; their cases run with
#: ``pytest -m slow``)
SLOW = {"scope-lm", "selfcheck", "generation", "finetuning", "grounding", "learnability", "demo"}

#: output files that are compared (the rest of an output directory is the results store, its lock
#: and caches); figures and HTML are compared by presence
TEXT = {".json", ".csv", ".md"}
OUTPUT = TEXT | {".png", ".html"}
#: the file a config run adds to each study's folder (its name, kind and options)
MANIFEST = "study.json"


def _compare_module():
    spec = importlib.util.spec_from_file_location("compare_outputs", ROOT / "scripts" / "compare_outputs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


normalised = _compare_module().normalised


def _case(e):
    marks = [pytest.mark.slow] if e.name in SLOW else []
    if not e.example:
        marks.append(pytest.mark.skip(reason=f"{e.name} has no example: {WITHOUT_EXAMPLE.get(e.name, 'not given')}"))
    return pytest.param(e, id=e.name, marks=marks)


CASES = [_case(e) for e in entries()]


# -- helpers ------------------------------------------------------------------------------
def grown_input(entry) -> dict[str, Any]:
    """The options that change the example's input for contract c."""
    if entry.name in GROW:
        return GROW[entry.name]
    size = next((k for k in ("n", "n_eval", "n_train") if isinstance(entry.example.get(k), int)), None)
    assert size is not None, f"name the changed input of {entry.name} in GROW"
    return {size: entry.example[size] + 2}


def argv(name: str, options: dict[str, Any], out: Path) -> list[str]:
    """The command line of ``options`` (a list as its comma text, ``True`` as a switch)."""
    args = [name]
    for k, v in options.items():
        if v is True:
            args.append(option_name(k))
        elif v is not False:
            args += [option_name(k), ",".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)]
    return args + ["--out", str(out), "--quiet"]


def outputs(d: Path) -> dict[str, Path]:
    """The output files of a study directory, by name relative to it."""
    return {str(p.relative_to(d)): p for p in sorted(d.rglob("*"))
            if p.is_file() and p.suffix in OUTPUT and p.name != MANIFEST}


def contents(d: Path) -> dict[str, str | None]:
    """Each output file's normalised text (None for a figure or HTML page, compared by presence)."""
    return {name: normalised(p) if p.suffix in TEXT else None for name, p in outputs(d).items()}


def cells(d: Path) -> dict[tuple[str, str], str]:
    """The rows of the ``cells`` table: (namespace, key) -> stored result."""
    con = sqlite3.connect(d / "results.sqlite")
    try:
        return {(s, k): r for s, k, r in con.execute("SELECT study, key, result FROM cells")}
    finally:
        con.close()


def count_cells(d: Path) -> int:
    con = sqlite3.connect(d / "results.sqlite")
    try:
        return con.execute("SELECT count(*) FROM cells").fetchone()[0]
    finally:
        con.close()


def assert_same_files(got: dict[str, str | None], want: dict[str, str | None], what: str) -> None:
    assert sorted(got) == sorted(want), f"{what}: other files than the command's"
    differ = [name for name in want if got[name] != want[name]]
    assert not differ, f"{what}: contents differ from the command's in {differ}"


class Spy:
    """The cells the results store is asked for and given while it is installed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.written: set[tuple[str, str]] = set()
        self.read: set[tuple[str, str]] = set()
        add, read = ResultStore.add_cells, ResultStore.cells_of

        def add_cells(store, study, results):
            self.written.update((study, k) for k in results)
            return add(store, study, results)

        def cells_of(store, study, keys):
            found = read(store, study, keys)
            self.read.update((study, k) for k in found)
            return found

        monkeypatch.setattr(ResultStore, "add_cells", add_cells)
        monkeypatch.setattr(ResultStore, "cells_of", cells_of)


class Run:
    """One study's example, run once by its command (the directory that contracts a-c share) and
    once by its Python function (the result that a and d share)."""

    def __init__(self, entry, root: Path):
        self.entry, self.root = entry, root
        self.cli = root / "cli"
        self.seconds: dict[str, float] = {}
        t0 = time.perf_counter()
        assert main(argv(entry.name, entry.example, self.cli)) == 0
        self.seconds["command"] = time.perf_counter() - t0
        self.files = contents(self.cli)
        self.cells = cells(self.cli)
        self._result = None

    @property
    def result(self):
        """The Python function's result, its store in ``root/python``."""
        if self._result is None:
            t0 = time.perf_counter()
            self._result = self.entry.load_function()(**self.entry.example, out=self.root / "python", quiet=True)
            self.seconds["function"] = time.perf_counter() - t0
        return self._result


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``runs(entry)``: the study's :class:`Run`, made at its first use in this module."""
    made: dict[str, Run] = {}

    def get(entry) -> Run:
        if entry.name not in made:
            made[entry.name] = Run(entry, tmp_path_factory.mktemp(entry.name))
        return made[entry.name]

    yield get
    for name, run in made.items():  # with -s: the time each entry point took
        print(f"\n{name}: " + ", ".join(f"{k} {v:.1f} s" for k, v in run.seconds.items()), file=sys.stderr)


# -- the contracts --------------------------------------------------------------------------
def test_studies_without_an_example_are_the_known_ones():
    """Every study but those named in :data:`WITHOUT_EXAMPLE` has an example (a new study is
    checked by the contracts once its registry line gives one), and each of those is registered."""
    names = {e.name for e in entries()}
    assert {e.name for e in entries() if not e.example} == set(WITHOUT_EXAMPLE)
    assert set(GROW) <= names and SLOW <= names
    assert len([e for e in entries() if e.example and e.name not in SLOW]) >= 4


@pytest.mark.parametrize("entry", CASES)
def test_a_the_command_the_function_and_a_config_write_the_same_files(entry, runs, tmp_path):
    run = runs(entry)
    assert run.files, "the command wrote no output file"
    assert any(name.endswith(".json") for name in run.files)
    # the Python function, saving into the directory of its store
    saved = run.result.save(run.root / "python")
    assert sorted(str(Path(p).relative_to(run.root / "python")) for p in saved) == sorted(run.files)
    assert_same_files(contents(run.root / "python"), run.files, "the Python function")
    if not entry.config:  # a command only (demo): not an entry of a study config
        return
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"report": False,
                                      "studies": [{"name": entry.name, "kind": entry.name, **entry.example}]}))
    t0 = time.perf_counter()
    assert main(["run", str(config), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    run.seconds["config"] = time.perf_counter() - t0
    assert (tmp_path / "run" / entry.name / MANIFEST).is_file()
    assert_same_files(contents(tmp_path / "run" / entry.name), run.files, "the config entry")


@pytest.mark.parametrize("entry", CASES)
def test_b_a_rerun_computes_nothing(entry, runs, monkeypatch):
    run = runs(entry)
    before = count_cells(run.cli)
    assert before > 0 and before == len(run.cells)
    spy = Spy(monkeypatch)
    t0 = time.perf_counter()
    assert main(argv(entry.name, entry.example, run.cli)) == 0
    run.seconds["rerun"] = time.perf_counter() - t0
    assert spy.written == set(), f"{len(spy.written)} cells computed again"
    assert count_cells(run.cli) == before
    assert cells(run.cli) == run.cells
    assert spy.read == set(run.cells)  # every result read back from the store
    assert_same_files(contents(run.cli), run.files, "the re-run")


@pytest.mark.parametrize("entry", CASES)
def test_c_a_changed_input_computes_only_its_cells(entry, runs, monkeypatch, tmp_path):
    run = runs(entry)
    out = tmp_path / "grown"
    shutil.copytree(run.cli, out)
    old = cells(out)
    assert old == run.cells
    changed = {**entry.example, **grown_input(entry)}
    assert changed != entry.example
    spy = Spy(monkeypatch)
    t0 = time.perf_counter()
    assert main(argv(entry.name, changed, out)) == 0
    run.seconds["changed"] = time.perf_counter() - t0
    grown = cells(out)
    computed = Counter(namespace for namespace, _ in spy.written)
    assert count_cells(out) > len(old), "no new cell for the changed input"
    assert spy.written, "nothing computed for the changed input"
    again = spy.written & set(old)
    assert not again, f"{len(again)} stored cells computed again: {sorted(again)[:3]}"
    assert {k: grown[k] for k in old} == old  # every stored cell kept as it was
    assert spy.written == set(grown) - set(old)
    reused = Counter(namespace for namespace, _ in spy.read & set(old))
    assert reused, (f"no stored cell read back: every cell the changed run needs was computed afresh "
                    f"(computed: {dict(computed)}; stored before: {dict(Counter(ns for ns, _ in old))})")
    assert contents(out) != run.files  # the outputs are those of the changed input


@pytest.mark.parametrize("entry", CASES)
def test_d_save_writes_all_files_or_none(entry, runs, monkeypatch, tmp_path):
    import perturblab.core.files as files

    run = runs(entry)
    n_files = len(run.files)
    fail_at = 2 if n_files >= 2 else 1
    original = files.atomic_write_bytes
    written: list[Path] = []

    def failing(path, data):
        written.append(Path(path))
        if len(written) == fail_at:
            raise InputError(f"cannot write {path}: No space left on device")
        return original(path, data)

    # every module that holds the writer (by import) gets the failing one
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("perturblab") and \
                getattr(module, "atomic_write_bytes", None) is original:
            monkeypatch.setattr(module, "atomic_write_bytes", failing)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="No space left"):
        run.result.save(empty)
    assert len(written) == fail_at
    assert sorted(p.name for p in empty.rglob("*")) == [], "a failed save left files behind"
    monkeypatch.undo()
    saved = run.result.save(empty)  # the same save, without the failure, writes every file
    assert len(saved) == n_files and sorted(outputs(empty)) == sorted(run.files)


@pytest.mark.parametrize("entry", CASES)
def test_e_the_headline_names_each_estimate_with_its_interval_and_n(entry, runs):
    """Every study writes ``headline.json``: a sentence and at least one estimate, each about a
    named subject and measure, with its n, a 95 % interval that is ordered (or none, and then a
    reason), and a machine key unique per subject; it reads back to the result's own headline."""
    from perturblab.core.headline import Headline

    run = runs(entry)
    assert "headline.json" in run.files
    saved = Headline.from_json(json.loads((run.cli / "headline.json").read_text()))
    assert saved == Headline.from_json(run.result.headline().to_json())
    assert len(saved.sentence) > 40 and saved.estimates
    keys = Counter((e.subject, e.key) for e in saved.estimates)
    assert max(keys.values()) == 1, f"keys named twice: {[k for k, v in keys.items() if v > 1]}"
    for e in saved.estimates:
        assert e.subject and e.measure and e.key and e.interval
        assert isinstance(e.n, int) and e.n >= 1, e
        if e.low is None or e.high is None:
            assert e.low is None and e.high is None and e.interval.startswith("no interval"), e
        else:
            assert e.interval.startswith("95 %") and e.low <= e.high, e
