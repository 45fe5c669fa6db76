"""One contract for every registered study (as scikit-learn's ``check_estimator`` runs one contract
over every estimator): the cases are made from the registry and each study's options, so a new
study is checked by adding its registry line.

* every option's declared rule (``min``, ``above``, ``below``, ``max``) refuses a value just
  outside it the same way from the command line (exit 2, one ``error:`` line naming the option,
  no traceback, nothing written), from a study config (``perturblab run --check``) and from the
  Python function (an :class:`~perturblab.errors.InputError` before anything runs);
* every study function is made by the one entry (it checks its values) and every options class
  has the package's base (model and data options checked without loading);
* ``--out ""`` is refused.
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from perturblab.cli import main
from perturblab.core.options import option_name
from perturblab.errors import InputError
from perturblab.studies.args import Args
from perturblab.studies.registry import entries

#: a valid value for each role of a required model option (packaged models; nothing is loaded)
ROLE_VALUES = {"classifier": "tfidf-lr", "language_model": "smollm2-135m", "encoder": "minilm-l3"}


def _required(entry) -> dict[str, str]:
    """Values for the study's required options (and one of each exclusive group)."""
    out, groups = {}, set()
    for f, opt in entry.options().fields():
        if opt.runner or f.name in entry.defaults:
            continue
        if opt.one_of is not None:
            if opt.one_of in groups:
                continue
            groups.add(opt.one_of)
            out[f.name] = ROLE_VALUES.get(opt.role or "", "x")
        elif opt.required:
            out[f.name] = ROLE_VALUES[opt.role]
    return out


def _outside(opt) -> object | None:
    """A value just outside the option's declared bounds (None: it declares none)."""
    if opt.min is not None:
        return opt.min - 1 if float(opt.min).is_integer() else opt.min - 0.5
    if opt.above is not None:
        return opt.above
    if opt.below is not None:
        return opt.below
    if opt.max is not None:
        return opt.max + 1
    return None


def _cases():
    for e in entries():
        hints = __import__("typing").get_type_hints(e.options())
        for f, opt in e.options().fields():
            bad = _outside(opt)
            if opt.runner or bad is None:
                continue
            kind = hints[f.name]
            if "list" in str(kind):  # a list option: one bad item
                bad = [bad]
            elif "int" in str(kind) and "float" not in str(kind):
                bad = int(math.floor(bad))
            yield pytest.param(e, f.name, bad, id=f"{e.name}:{f.name}")


CASES = list(_cases())


def test_every_study_declares_rules():
    """Counts, sizes and bootstrap resamples have rules on every study that has them."""
    ruled = {(p.values[0].name, p.values[1]) for p in CASES}
    for e in entries():
        names = {f.name for f, _ in e.options().fields()}
        for counted in ("n_boot", "trials", "n_train", "n_eval", "seed", "epochs", "max_words", "chunk_size"):
            if counted in names:
                assert (e.name, counted) in ruled, f"{e.name} --{counted} declares no rule"
    assert len(CASES) >= 60


@pytest.mark.parametrize("entry,name,bad", CASES)
def test_rule_refused_by_the_command(entry, name, bad, tmp_path, capsys):
    out = tmp_path / "out"
    argv = [entry.name]
    for k, v in _required(entry).items():
        argv += [option_name(k), v]
    text = ",".join(map(str, bad)) if isinstance(bad, list) else str(bad)
    argv += [option_name(name), text, "--out", str(out), "--quiet"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {option_name(name)}: "), err
    assert "Traceback" not in "\n".join(err)
    assert not out.exists()


@pytest.mark.parametrize("entry,name,bad", CASES)
def test_rule_refused_by_the_python_function(entry, name, bad, tmp_path):
    fn = entry.load_function()
    kwargs = {k: v for k, v in {**entry.defaults, **_required(entry)}.items() if k != "out"}
    kwargs.update({name: bad, "out": str(tmp_path / "out"), "quiet": True})
    with pytest.raises(InputError, match=f"^{option_name(name)}: "):
        fn(**kwargs)
    assert not (tmp_path / "out").exists()


def test_rules_refused_by_a_config_check(tmp_path, capsys):
    """``perturblab run --check`` reports each study's broken rule, one line each."""
    lines = [f"out: {tmp_path / 'run'}", "studies:"]
    expected = []
    for e in entries(config_only=True):
        case = next((p.values for p in CASES if p.values[0].name == e.name), None)
        if case is None:
            continue
        _, name, bad = case
        lines.append(f"  - kind: {e.name}")
        for k, v in _required(e).items():
            lines.append(f"    {k}: {v}")
        lines.append(f"    {name}: {bad}")
        expected.append(name)
    path = tmp_path / "c.yaml"
    path.write_text("\n".join(lines) + "\n")
    assert main(["run", str(path), "--check"]) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == len(expected) >= 10
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("entry", entries(), ids=lambda e: e.name)
def test_one_entry(entry):
    """The study's function checks its values (made by the one entry) and its options class has
    the package's base, so its model and data options are checked without loading."""
    assert hasattr(entry.load_function(), "__wrapped__")
    assert issubclass(entry.options(), Args)
    assert dataclasses.is_dataclass(entry.options())


@pytest.mark.parametrize("entry", [e for e in entries() if e.name in ("scope", "selfcheck", "similarity")],
                         ids=lambda e: e.name)
def test_empty_out_refused(entry, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = [entry.name]
    for k, v in _required(entry).items():
        argv += [option_name(k), v]
    assert main(argv + ["--out", "", "--quiet"]) == 2
    assert "--out is empty" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_core_and_model_list_examples_run():
    """The one entry's and the model list's docstring examples (hand-written values) hold."""
    import doctest

    import perturblab.core.entry
    import perturblab.core.options
    import perturblab.studies.models

    for module in (perturblab.core.entry, perturblab.core.options, perturblab.studies.models):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.attempted > 0 and result.failed == 0, module.__name__


@pytest.mark.parametrize("study,argv", [
    ("robustness", ["--models", "tfidf-lr,tfidf-lr"]),
    ("selfcheck", ["--models", "smollm2-135m,smollm2-135m"]),
])
def test_a_model_given_twice_is_refused(study, argv, tmp_path, capsys):
    out = tmp_path / "out"
    assert main([study, *argv, "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "twice" in err[0] and "NAME=SOURCE" in err[0], err
    assert not out.exists()


def test_learnability_refuses_a_sample_larger_than_the_data(tmp_path, capsys):
    """60 rows split 45/15: --n-train 5000 is refused with the size there is, not cut to 45."""
    rows = ["text,label"] + [f"{'good' if i % 2 else 'bad'} film number {i},{i % 2}" for i in range(60)]
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    out = tmp_path / "out"
    argv = ["learnability", "--models", "tfidf-lr", "--data", str(tmp_path / "d.csv"), "--perturbations",
            "leet_letters", "--trials", "1", "--ps", "0.1,1", "--n-eval", "10", "--out", str(out), "--quiet"]
    assert main([*argv, "--n-train", "5000"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --n-train 5000 asks for more training examples (the training split's size) than the 45 "
                   "there are; use --n-train 45, or give more data"], err
    assert not out.exists()
