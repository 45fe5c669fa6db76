"""The console of a run: one line per model load, the libraries' own progress and warnings only
with -v, no terminal escape codes where stderr is not a terminal."""

from __future__ import annotations

import logging
import types

import numpy as np
import pytest

pytest.importorskip("transformers")

from tiny_classifier import WORDS, tiny_model_dir  # noqa: E402

from perturblab.cli import main  # noqa: E402
from perturblab.core import console  # noqa: E402


def test_a_run_prints_one_line_per_model_load_and_nothing_of_the_libraries(tmp_path, capsys):
    a, b = tiny_model_dir(tmp_path / "a", 0), tiny_model_dir(tmp_path / "b", 1)
    rng = np.random.default_rng(0)
    rows = ["text,label"] + [f"the {' '.join(rng.choice(WORDS[:15], size=7))} .,{'pos' if i % 2 else 'neg'}"
                             for i in range(40)]
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    code = main(["scope", "--reference", f"ref={a}", "--targets", f"tgt={b}", "--capabilities", "typo", "--data",
                 str(tmp_path / "d.csv"), "--n", "4", "--trials", "1", "--n-boot", "20", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 0
    lines = [x.strip() for x in err.replace("\r", "\n").splitlines() if x.strip()]
    loads = [x for x in lines if x.startswith("loading model")]
    assert [x.split(":")[0] for x in loads] == ["loading model ref", "loading model tgt"]
    assert all(" done in " in x for x in loads)
    assert "Loading weights" not in err and "\x1b" not in err  # stderr here is no terminal
    assert any(x.startswith("searches:") for x in lines)  # perturblab's own bar stays


def test_libraries_quiet_restores_what_it_found_and_nests():
    from transformers.utils import logging as hf_logging

    before = (hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity())
    assert console.verbose() is False
    with console.libraries_quiet():
        assert not hf_logging.is_progress_bar_enabled() and hf_logging.get_verbosity() == logging.ERROR
        with console.libraries_quiet():  # the driver's block inside the command's
            pass
        assert not hf_logging.is_progress_bar_enabled()  # the inner block left it to the outer one
    assert (hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity()) == before


def test_verbose_leaves_the_libraries_alone(caplog):
    from transformers.utils import logging as hf_logging

    before = (hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity())
    caplog.set_level(logging.INFO, logger="perturblab")
    assert console.verbose()
    with console.libraries_quiet():
        assert (hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity()) == before
    lib = types.SimpleNamespace(tqdm=lambda *a, **k: k)
    with console.bars_off(lib):
        assert lib.tqdm(total=3) == {"total": 3}  # bars stay on with -v


def test_bars_off_disables_a_librarys_own_tqdm_for_the_block():
    made = []
    lib = types.SimpleNamespace(tqdm=lambda *a, **k: made.append(k) or k)
    original = lib.tqdm
    with console.bars_off(lib):
        assert lib.tqdm(range(3), desc="Converting", disable=False) == {"desc": "Converting", "disable": True}
    assert lib.tqdm is original and made == [{"desc": "Converting", "disable": True}]
    assert console.terminal() is False  # pytest captures stderr: nested bars are not drawn
