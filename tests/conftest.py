"""The fixtures and hooks of every test: small deterministic models that need no download, a
temporary data home, compare's sizes made tiny, and the servers some tests talk to.

The tests live in folders by concept (core/, contract/, cli/, models/, studies/<study>/, ...);
this file applies to all of them. What they share besides fixtures is the package
:mod:`helpers` (``tests/helpers/``: tiny models, toy data, a completions endpoint, a PostgreSQL
server, ...), imported as ``from helpers.tiny_lm import tiny_lm``: pyproject.toml's pytest section
puts tests/ on ``sys.path``. Nothing imports this file. report_pages (the report tests' page
parser) sits in report/ beside its only users. A test module that imports another
test module (``from test_robustness_study import toy_csv``) shares its folder."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

# the models' measured speeds are kept apart from the user's (tests time models under load)
os.environ.setdefault("PERTURBLAB_SPEEDS", str(Path(tempfile.mkdtemp(prefix="perturblab-speeds-")) / "speeds.json"))


def pytest_configure(config):
    """Under pytest-xdist the workers share the cores: each sizes its math libraries' thread pools
    to its share before any test imports them (:func:`helpers.threads.share_cores`)."""
    from helpers.threads import share_cores, usable_cores

    share_cores(os.environ, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0")), usable_cores())


@pytest.fixture
def lexicon():
    """A :class:`~helpers.lexicon.LexiconClassifier` over eight sentiment and film words."""
    from helpers.lexicon import LexiconClassifier

    return LexiconClassifier({"good": 2.0, "great": 3.0, "bad": -2.0, "awful": -3.0,
                              "movie": 0.1, "film": 0.5, "flick": -0.4, "picture": 0.2})


@pytest.fixture(scope="module")
def torch_one_thread():
    """One torch intra-op thread for a test module (restored afterwards)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def marker_csv():
    """``marker_csv(path, n, seed=0, n_words=6)`` writes a toy labelled CSV (see
    :func:`helpers.marker_data.write_marker_csv`)."""
    from helpers.marker_data import write_marker_csv

    return write_marker_csv


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A temporary PERTURBLAB_HOME (``tmp_path / "home"``) for one test; returns its path. A module
    whose every test needs it says ``pytestmark = pytest.mark.usefixtures("home")``."""
    monkeypatch.setenv("PERTURBLAB_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture(scope="module")
def module_home(tmp_path_factory):
    """A temporary PERTURBLAB_HOME for a whole test module (converted models and trained heads go
    there, made once for the module's tests)."""
    mp = pytest.MonkeyPatch()
    root = tmp_path_factory.mktemp("plhome")
    mp.setenv("PERTURBLAB_HOME", str(root))
    yield root
    mp.undo()


@pytest.fixture(scope="module")
def oanc():
    """The packaged OANC corpus, read once per module."""
    from helpers.installed import corpus_or_skip
    from perturblab.data import corpus

    corpus_or_skip(corpus.OANC_FILE)
    return corpus.load_corpus("oanc")


@pytest.fixture(scope="module")
def tok():
    """The tiny causal LM's byte-level BPE tokenizer (:func:`helpers.tiny_lm.tiny_tokenizer`); a
    module whose models need another tokenizer defines its own ``tok``."""
    from helpers.tiny_lm import tiny_tokenizer

    return tiny_tokenizer()


@pytest.fixture
def tiny_costs(monkeypatch):
    """compare's least and most sizes made 8, so that the command runs in seconds on the packaged
    models (:func:`helpers.compare.make_costs_tiny`)."""
    from helpers.compare import make_costs_tiny

    make_costs_tiny(monkeypatch)


@pytest.fixture(scope="module")
def pg_url():
    """The URL of a throwaway PostgreSQL server for a test module (skips without the server
    binaries; see :mod:`helpers.pg_server`)."""
    from helpers.pg_server import postgres_server

    yield from postgres_server()


@pytest.fixture(scope="module")
def pg():
    """A throwaway PostgreSQL server with a password user for a test module: a function, database
    name -> the URL of a new database there (see :func:`helpers.pg_server.password_server`)."""
    from helpers.pg_server import password_server

    yield from password_server()


@pytest.fixture(scope="module")
def robustness_study(tmp_path_factory):
    """A real, small robustness study (TF-IDF + LR on the toy marker data; no offline assets) for
    a test module: its output folder, for the report tests."""
    from helpers.marker_data import write_marker_csv
    from perturblab.cli import main

    root = tmp_path_factory.mktemp("report_rob")
    data = write_marker_csv(root / "data.csv", 80)
    out = root / "rob"
    rc = main(["robustness", "--models", "tfidf-lr", "--perturbations", "leet_letters,drop_first,change_char",
               "--data", str(data), "--seeds", "1", "--n-train", "40", "--n-test", "40", "--out", str(out), "--quiet"])
    assert rc == 0
    return out


@pytest.fixture(scope="module")
def chromium() -> str:
    """The Chromium executable; skips (fails under PERTURBLAB_REQUIRE_BROWSER=1) when there is none."""
    from perturblab.report.screenshot import find_chromium

    exe = find_chromium()
    if exe is None:
        if os.environ.get("PERTURBLAB_REQUIRE_BROWSER") == "1":
            pytest.fail("PERTURBLAB_REQUIRE_BROWSER=1 but no Chromium was found; run ./setup.sh --browser")
        pytest.skip("no Chromium found (install it with ./setup.sh --browser)")
    return exe


@pytest.fixture(scope="module")
def native():
    """The packaged SmolLM2-135M run natively by llama.cpp (``[backend=llamacpp]``), loaded once per
    module; a module using it skips first when the llamacpp extra is missing."""
    from perturblab.models.resolve import load_model

    return load_model("smollm2-135m[backend=llamacpp]", "language_model")
