"""The run contracts a-e of a study's example (see :mod:`perturblab.testing`)."""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

from .outputs import MANIFEST, cells, contents, normalised, outputs
from .common import StudyReport, _captured, _command, _fail, _require, command_line

if TYPE_CHECKING:  # pragma: no cover
    from ..core.study import StudyResult
    from ..studies.registry import StudyEntry


#: the changed input of contract c for the packaged studies: options replacing the example's (a
#: study not named here: its sample, ``n``, ``n_eval`` or ``n_train``, two larger)
CHANGED_INPUTS: dict[str, dict[str, Any]] = {
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


def changed_input(entry: "StudyEntry", changed: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The options that change the example's input for contract c: ``changed``, else
    :data:`CHANGED_INPUTS`, else the example's ``n``, ``n_eval`` or ``n_train`` two larger (None:
    none of those)."""
    if changed is not None:
        return dict(changed)
    if entry.name in CHANGED_INPUTS:
        return dict(CHANGED_INPUTS[entry.name])
    size = next((k for k in ("n", "n_eval", "n_train") if isinstance(entry.example.get(k), int)), None)
    return None if size is None else {size: entry.example[size] + 2}


class StoreSpy:
    """The cells the results store was given (``written``) and found (``read``) while
    :func:`spy_on_store` was active."""

    def __init__(self) -> None:
        self.written: set[tuple[str, str]] = set()
        self.read: set[tuple[str, str]] = set()


@contextlib.contextmanager
def spy_on_store() -> Iterator[StoreSpy]:
    """Record the cells every :class:`~perturblab.core.store.ResultStore` writes and reads in the
    block (the store's methods are restored afterwards)."""
    from ..core.store import ResultStore

    spy = StoreSpy()
    add, read = ResultStore.__dict__["add_cells"], ResultStore.__dict__["cells_of"]

    def add_cells(store: Any, study: str, results: Any) -> Any:
        spy.written.update((study, k) for k in results)
        return add(store, study, results)

    def cells_of(store: Any, study: str, keys: Any) -> Any:
        found = read(store, study, keys)
        spy.read.update((study, k) for k in found)
        return found

    ResultStore.add_cells, ResultStore.cells_of = add_cells, cells_of  # type: ignore[method-assign]
    try:
        yield spy
    finally:
        ResultStore.add_cells, ResultStore.cells_of = add, read  # type: ignore[method-assign]


@contextlib.contextmanager
def failing_writer(fail_at: int, message: str = "No space left on device") -> Iterator[list[Path]]:
    """Every module holding :func:`perturblab.core.files.atomic_write_bytes` (by import, a study's
    own module too) gets one that raises an :class:`~perturblab.errors.InputError` at its
    ``fail_at``-th call; yields the paths it was asked to write. Restored afterwards."""
    from ..core import files
    from ..errors import InputError

    original = files.atomic_write_bytes
    written: list[Path] = []

    def failing(path: Any, data: bytes) -> Path:
        written.append(Path(path))
        if len(written) == fail_at:
            raise InputError(f"cannot write {path}: {message}")
        return original(path, data)

    holders = [m for m in list(sys.modules.values())
               if m is not None and vars(m).get("atomic_write_bytes") is original]
    for m in holders:
        setattr(m, "atomic_write_bytes", failing)
    try:
        yield written
    finally:
        for m in holders:
            setattr(m, "atomic_write_bytes", original)


def _same_files(study: str, contract: str, got: dict[str, str | None], want: dict[str, str | None]) -> None:
    _require(sorted(got) == sorted(want), study, contract,
             lambda: f"other files than the command's: {sorted(set(got) ^ set(want))}")
    differ = [name for name in want if got[name] != want[name]]
    _require(not differ, study, contract, f"contents differ from the command's in {differ}")


class ExampleRuns:
    """The run contracts a-e of one study, on its registry ``example``: the command runs once
    (into ``root/cli``, the directory a-c share, at the first contract that needs it) and the
    Python function once (its result shared by a, d and e). ``changed``: the options of contract
    c's changed input (default: :func:`changed_input`). The study must be registered.

    Example::

        >>> from perturblab.studies.registry import entry
        >>> runs = ExampleRuns(entry("scope"), tempfile.mkdtemp())  # doctest: +SKIP
        >>> runs.check_rerun_computes_nothing()  # doctest: +SKIP
    """

    CONTRACTS = {
        "a": "the command, the function and a config write the same files",
        "b": "a re-run computes nothing",
        "c": "a changed input computes only its cells",
        "d": "save() writes all files or none",
        "e": "the headline names each estimate with its interval and n",
    }

    def __init__(self, entry: "StudyEntry", root: str | Path, *, changed: Mapping[str, Any] | None = None) -> None:
        if not entry.example:
            raise ValueError(f"{entry.name} has no example to run")
        self.entry, self.root = entry, Path(root)
        self.cli = self.root / "cli"
        self.changed = changed
        self.seconds: dict[str, float] = {}
        self._files: dict[str, str | None] | None = None
        self._cells: dict[tuple[str, str], str] = {}
        self._result: StudyResult | None = None

    def _run(self, what: str, argv: Sequence[str], contract: str) -> None:
        t0 = time.perf_counter()
        rc, _, err = _command(argv)
        self.seconds[what] = time.perf_counter() - t0
        _require(rc == 0, self.entry.name, contract, f"`perturblab {' '.join(argv)}` exited {rc}: {err[-1500:]}")

    def _ran(self) -> None:
        if self._files is None:
            self._run("command", command_line(self.entry.name, self.entry.example, self.cli), "the example runs")
            self._files, self._cells = contents(self.cli), cells(self.cli)

    @property
    def files(self) -> dict[str, str | None]:
        """The command's output files (normalised text; None: compared by presence)."""
        self._ran()
        assert self._files is not None
        return self._files

    @property
    def stored(self) -> dict[tuple[str, str], str]:
        """The command's ``cells`` table."""
        self._ran()
        return self._cells

    @property
    def result(self) -> "StudyResult":
        """The Python function's result, its store in ``root/python``."""
        if self._result is None:
            t0 = time.perf_counter()
            with _captured():
                self._result = self.entry.load_function()(**self.entry.example, out=self.root / "python",
                                                          quiet=True)
            self.seconds["function"] = time.perf_counter() - t0
        return self._result

    # a
    def check_same_files(self, where: str | Path) -> None:
        """a. The command, the Python function (``fn(..., out=DIR).save(DIR)``) and a config entry
        (``perturblab run``: files in ``OUT/<name>/``, in ``where``) write the same files, with the
        same contents."""
        name, contract = self.entry.name, "a. " + self.CONTRACTS["a"]
        _require(self.files, name, contract, "the command wrote no output file")
        _require(any(f.endswith(".json") for f in self.files), name, contract, "the command wrote no JSON file")
        python = self.root / "python"
        saved = self.result.save(python)
        _require(sorted(str(Path(p).relative_to(python)) for p in saved) == sorted(self.files), name, contract,
                 lambda: f"save() returned other paths than the command's files: {saved}")
        _same_files(name, contract + " (the Python function)", contents(python), self.files)
        if not self.entry.config:  # a command only (demo): not an entry of a study config
            return
        import yaml

        where = Path(where)
        where.mkdir(parents=True, exist_ok=True)
        config = where / "c.yaml"
        config.write_text(yaml.safe_dump({"report": False,
                                          "studies": [{"name": name, "kind": name, **self.entry.example}]}))
        self._run("config", ["run", str(config), "--out", str(where / "run"), "--quiet"], contract)
        _require((where / "run" / name / MANIFEST).is_file(), name, contract, f"the config run wrote no {MANIFEST}")
        _same_files(name, contract + " (the config entry)", contents(where / "run" / name), self.files)

    # b
    def check_rerun_computes_nothing(self) -> None:
        """b. The command run again into the same ``--out`` computes no cell, reads every one back,
        and writes the same files."""
        name, contract = self.entry.name, "b. " + self.CONTRACTS["b"]
        stored = self.stored
        _require(stored, name, contract, "the example stored no cell")
        with spy_on_store() as spy:
            self._run("rerun", command_line(name, self.entry.example, self.cli), contract)
        _require(not spy.written, name, contract, f"{len(spy.written)} cells computed again")
        _require(cells(self.cli) == stored, name, contract, "the stored cells changed")
        _require(spy.read == set(stored), name, contract,
                 f"{len(set(stored) - spy.read)} stored cells not read back")
        _same_files(name, contract, contents(self.cli), self.files)

    # c
    def check_changed_input_computes_only_its_cells(self, where: str | Path) -> None:
        """c. A copy of the command's output directory (in ``where``) run with a changed input adds
        new cells, computes none of the stored ones again, keeps them as they were and reads some
        of them back; its outputs differ."""
        name, contract = self.entry.name, "c. " + self.CONTRACTS["c"]
        grow = changed_input(self.entry, self.changed)
        if grow is None:
            raise ValueError(f"{name}: name the changed input of contract c (check_study(..., changed=...))")
        out = Path(where) / "grown"
        stored = self.stored
        shutil.copytree(self.cli, out)
        changed = {**self.entry.example, **grow}
        _require(changed != self.entry.example, name, contract, f"{grow} does not change the example")
        with spy_on_store() as spy:
            self._run("changed", command_line(name, changed, out), contract)
        grown = cells(out)
        _require(len(grown) > len(stored), name, contract, f"no new cell for the changed input {grow}")
        _require(spy.written, name, contract, "nothing computed for the changed input")
        again = spy.written & set(stored)
        _require(not again, name, contract, lambda: f"{len(again)} stored cells computed again: {sorted(again)[:3]}")
        _require({k: grown.get(k) for k in stored} == stored, name, contract, "stored cells changed")
        _require(spy.written == set(grown) - set(stored), name, contract, "cells stored that were not computed")
        reused = Counter(ns for ns, _ in spy.read & set(stored))
        _require(reused, name, contract, lambda: (
            "no stored cell read back: every cell the changed run needs was computed afresh (computed: "
            f"{dict(Counter(ns for ns, _ in spy.written))}; stored before: {dict(Counter(ns for ns, _ in stored))})"))
        _require(contents(out) != self.files, name, contract, "the outputs are those of the unchanged input")

    # d
    def check_save_all_or_nothing(self, where: str | Path) -> None:
        """d. ``result.save(DIR)`` failing at its second file (its first when it writes one) leaves
        ``DIR`` empty; the same save without the failure writes every file."""
        from ..errors import InputError

        name, contract = self.entry.name, "d. " + self.CONTRACTS["d"]
        n_files = len(self.files)
        fail_at = 2 if n_files >= 2 else 1
        result = self.result
        empty = Path(where) / "empty"
        empty.mkdir(parents=True)
        with failing_writer(fail_at) as written:
            try:
                result.save(empty)
            except InputError as e:
                _require("No space left" in str(e), name, contract, f"another error than the writer's: {e}")
            else:
                raise _fail(name, contract, "save() did not raise the writer's error")
        _require(len(written) == fail_at, name, contract, f"{len(written)} writes, not {fail_at}")
        left = sorted(p.name for p in empty.rglob("*"))
        _require(not left, name, contract, f"a failed save left files behind: {left}")
        saved = result.save(empty)
        _require(len(saved) == n_files and sorted(outputs(empty)) == sorted(self.files), name, contract,
                 "the save without the failure wrote other files than the command's")

    # e
    def check_headline(self) -> None:
        """e. ``headline.json``: a sentence and estimates, each about a named subject and measure,
        with its n, an ordered 95 % interval (or none, and then why) and a key unique per subject;
        it reads back to the result's own headline."""
        from ..core.headline import Headline

        name, contract = self.entry.name, "e. " + self.CONTRACTS["e"]
        _require("headline.json" in self.files, name, contract, "no headline.json")
        saved = Headline.from_json(json.loads((self.cli / "headline.json").read_text()))
        _require(saved == Headline.from_json(self.result.headline().to_json()), name, contract,
                 "headline.json differs from the result's headline()")
        _require(len(saved.sentence) > 40 and saved.estimates, name, contract,
                 "no sentence of more than 40 characters, or no estimate")
        keys = Counter((e.subject, e.key) for e in saved.estimates)
        _require(max(keys.values()) == 1, name, contract,
                 lambda: f"keys named twice: {[k for k, v in keys.items() if v > 1]}")
        for e in saved.estimates:
            _require(e.subject and e.measure and e.key and e.interval, name, contract,
                     f"an estimate without subject, measure, key or interval: {e}")
            _require(isinstance(e.n, int) and e.n >= 1, name, contract, f"an estimate without its n: {e}")
            if e.low is None or e.high is None:
                _require(e.low is None and e.high is None and e.interval.startswith("no interval"), name,
                         contract, f"half an interval, or none without 'no interval (why)': {e}")
            else:
                _require(e.interval.startswith("95 %") and e.low <= e.high, name, contract,
                         f"not an ordered 95 % interval: {e}")

    def check_all(self, where: str | Path, report: StudyReport | None = None) -> None:
        """Contracts a-e, their scratch directories under ``where``; each one that held (or was
        skipped, c without a changed input) is added to ``report``."""
        where = Path(where)
        steps: list[tuple[str, Callable[[], None]]] = [
            ("a", lambda: self.check_same_files(where / "a")),
            ("b", self.check_rerun_computes_nothing),
            ("c", lambda: self.check_changed_input_computes_only_its_cells(where / "c")),
            ("d", lambda: self.check_save_all_or_nothing(where / "d")),
            ("e", self.check_headline),
        ]
        for key, step in steps:
            title = f"{key}. {self.CONTRACTS[key]}"
            if key == "c" and changed_input(self.entry, self.changed) is None:
                if report is not None:
                    report.skipped.append((title, "the example has no n, n_eval or n_train to grow; give changed="))
                continue
            step()
            if report is not None:
                report.checked.append(title)
        if report is not None:
            report.seconds.update(self.seconds)


