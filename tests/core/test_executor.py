"""Executors: local inline / threads and Ray give the same study outputs, byte for byte; cells
are written once each and a failing cell raises its own error."""

import threading
import time

import pytest

from perturblab.errors import InputError
from perturblab.core.executor import Cell, LocalExecutor, RayExecutor, make_executor


def _square(x):
    return x * x


def test_local_executor_inline_and_threads_return_every_cell_once():
    cells = [Cell(f"k{i}", lambda i=i: _square(i)) for i in range(7)]
    inline = list(LocalExecutor(1).run(cells))
    assert [c.key for c, _ in inline] == [c.key for c in cells]  # inline keeps the order
    assert [r for _, r in inline] == [i * i for i in range(7)]
    seen = set()

    def slow(i):
        seen.add(threading.get_ident())
        time.sleep(0.05 * (7 - i))  # later cells finish first
        return i

    threaded = dict((c.key, r) for c, r in LocalExecutor(3).run([Cell(f"k{i}", lambda i=i: slow(i)) for i in range(7)]))
    assert threaded == {f"k{i}": i for i in range(7)}
    assert len(seen) > 1


def test_executor_errors():
    with pytest.raises(ValueError, match="unique"):
        list(LocalExecutor().run([Cell("a", lambda: 1), Cell("a", lambda: 2)]))
    with pytest.raises(InputError, match="positive integer"):
        LocalExecutor(0)
    with pytest.raises(InputError, match="executor must be one of"):
        make_executor("dask")

    def boom():
        raise RuntimeError("cell failed: bad input 3")

    with pytest.raises(RuntimeError, match="bad input 3"):
        list(LocalExecutor(2).run([Cell("a", lambda: 1), Cell("b", boom)]))


def _saved(study, out, executor="local"):
    """Run ``study`` into ``out`` on ``executor`` and write its files there, as the command does;
    the result."""
    from perturblab.core.entry import run

    result = run(study, out, executor=executor, quiet=True)
    result.save(out)
    return result


def _files(out, names):
    return {n: (out / n).read_bytes() for n in names}


@pytest.fixture(scope="module")
def ray_executor():
    ex = RayExecutor(num_cpus=2)
    yield ex
    ex.shutdown()


def test_an_unreachable_ray_address_is_one_line_at_once_and_writes_nothing(tmp_path, capsys):
    """Ray retries an unreachable cluster for minutes; the address is tried first (a closed port on
    this machine answers at once), before any model loads or anything is written."""
    import socket

    from perturblab.cli import main
    from perturblab.core.executor import check_reachable

    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there now
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    out = tmp_path / "out"
    t0 = time.monotonic()
    code = main(["scope", "--reference", "tfidf-lr", "--targets", "tfidf-lr", "--capabilities", "typo", "--n", "4",
                 "--trials", "1", "--executor", "ray", "--address", f"127.0.0.1:{port}", "--out", str(out), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and time.monotonic() - t0 < 60
    assert err.count("\n") == 0 and "could not reach the Ray cluster" in err and f"127.0.0.1:{port}" in err
    assert not out.exists()
    for bad in ("nohost", "host:port", "ray://:10001"):
        with pytest.raises(InputError, match="is not HOST:PORT"):
            check_reachable(bad)
    check_reachable("auto")  # left to Ray


def test_ray_runs_a_learnability_grid_byte_identical_to_local(tmp_path, marker_csv, ray_executor):
    from perturblab.studies.learnability.config import LearnabilityArgs
    from perturblab.studies.learnability.study import LearnabilityStudy
    from perturblab.core.store import ResultStore

    data = marker_csv(tmp_path / "d.csv", 160, n_words=5)
    # TextRNN trained in a Ray worker (1 torch thread) is covered by the robustness grid below
    cfg = LearnabilityArgs(models="tfidf-lr", perturbations="leet_letters,whitespace",
                           data=str(data), n_train=80, n_eval=40, trials=2, ps=[0.01, 0.5, 1.0])
    names = ["results.json", "summary.json", "table.md"]
    _saved(LearnabilityStudy(cfg), tmp_path / "local")
    _saved(LearnabilityStudy(cfg), tmp_path / "ray", ray_executor)
    assert _files(tmp_path / "local", names) == _files(tmp_path / "ray", names)
    with ResultStore(tmp_path / "ray" / "results.sqlite") as s:
        rows = s._con.execute("SELECT key FROM cells WHERE study='learnability.train'").fetchall()
    # 2 seeds x 2 perturbations x (3 p + robustness): each stored once
    assert len(rows) == len(set(rows)) == 2 * 2 * 4


def test_ray_runs_a_robustness_grid_byte_identical_to_local(tmp_path, marker_csv, ray_executor):
    from perturblab.studies.robustness.config import RobustnessArgs
    from perturblab.studies.robustness.study import RobustnessStudy
    from perturblab.core.store import ResultStore

    data = marker_csv(tmp_path / "d.csv", 200, n_words=5)
    cfg = RobustnessArgs(models="tfidf-lr,rnn=textrnn", perturbations="change_char,drop_first",
                         data=str(data), n_train=120, n_eval=60, trials=2, metrics="accuracy,mcc")
    names = ["results.json", "summary.json", "table.md"]
    _saved(RobustnessStudy(cfg), tmp_path / "local")
    _saved(RobustnessStudy(cfg), tmp_path / "ray", ray_executor)
    assert _files(tmp_path / "local", names) == _files(tmp_path / "ray", names)
    with ResultStore(tmp_path / "ray" / "results.sqlite") as s:
        keys = [k for (k,) in s._con.execute("SELECT key FROM cells")]
    # per model: clean + change_char x 2 draws + drop_first (deterministic) x 1
    assert len(keys) == len(set(keys)) == 2 * 4


def test_ray_cell_error_is_the_cells_own(ray_executor):
    def boom():
        raise ValueError("no such perturbation 'x'")

    with pytest.raises(ValueError, match="no such perturbation"):
        list(ray_executor.run([Cell("a", boom)]))


def test_ray_runs_scope_searches_byte_identical_to_local(tmp_path, ray_executor):
    """SCoPE's search cells (capability x trial x chunk) as Ray tasks, the reference loaded by
    name in each worker: the same rows, the same stored perturbations, fairness before its
    starred capabilities, each sample searched once."""
    import json

    import numpy as np

    from helpers.observe import count_cells
    from perturblab.data import Dataset, Example
    from perturblab.studies.scope import ScopeArgs, ScopeStudy

    rng = np.random.default_rng(3)
    words = ["good", "great", "bad", "awful", "movie", "story", "acting", "terrible", "wonderful", "boring",
             "woman", "man", "director", "music"]
    sign = {"good": 1, "great": 2, "wonderful": 2, "bad": -1, "awful": -2, "terrible": -2, "boring": -1}

    def ex(i):
        ws = rng.choice(words, size=7).tolist()
        return Example(text="the " + " ".join(ws) + " .", label=int(sum(sign.get(w, 0) for w in ws) > 0), uid=str(i))

    data = [ex(i) for i in range(220)]
    splits = (Dataset(data[:160], ["negative", "positive"]), Dataset(data[160:], ["negative", "positive"]))
    from perturblab.core.entry import run

    cfg = ScopeArgs(reference="tfidf-lr", targets="tfidf-lr", capabilities="typo,fairness", n=40,
                    trials=2, n_boot=100, data="toy-scope")
    local_result = run(ScopeStudy(cfg, splits=splits, progress=False, chunk_size=16), tmp_path / "local", quiet=True)
    local = local_result.rows
    ray_result = run(ScopeStudy(cfg, splits=splits, progress=False, chunk_size=16), tmp_path / "ray",
                     executor=ray_executor, quiet=True)
    ray = ray_result.rows
    assert json.dumps(local) == json.dumps(ray)
    assert {r["capability"] for r in ray} == {"typo", "fairness", "synonym*", "typo*"}
    assert any(r["capability"] == "typo*" and r["n"] > 0 for r in ray)  # fairness qualified some samples

    def stored(result):
        return [(r["capability"], r["trial"], r["sample_id"], r["perturbed"], r["status"])
                for r in result.perturbations]

    rows = stored(ray_result)
    assert sorted(rows) == sorted(stored(local_result))
    assert count_cells(tmp_path / "ray", "scope.search") == len(rows)  # every search stored once
    assert len({r[:3] for r in rows}) == len(rows)  # no sample searched twice


def test_a_given_reference_object_searches_the_same_on_ray_as_locally(tmp_path, ray_executor):
    """A ready model object (not a spec) is scored as it is on a Ray worker as in the driver: its
    float64 probabilities are not rounded to float32 on one path only, so the searches stored
    under one content key are the same whichever executor ran them."""
    import json

    import numpy as np

    from perturblab.data import Dataset, Example
    from perturblab.core.entry import run
    from perturblab.models import CallableClassifier
    from perturblab.studies.scope import ScopeArgs, ScopeStudy

    def proba(texts):  # depends on character order, so typos change it in the low bits
        s = np.array([1e-3 * sum(i * ord(c) for i, c in enumerate(t)) for t in texts]) - 0.5
        p = 1 / (1 + np.exp(-s / 7.0))
        return np.stack([1 - p, p], axis=1)

    texts = ["a good film", "a bad film", "good acting", "bad plot", "a good story", "dull and bad"]
    data = Dataset([Example(t, int("good" in t), uid=str(i)) for i, t in enumerate(texts * 2)],
                   ["negative", "positive"])
    ref = CallableClassifier(proba, labels=["negative", "positive"], name="ref")
    cfg = ScopeArgs(reference="ref", targets="ref", capabilities="typo", n=6, trials=1, n_boot=20)

    def searched(where, executor="local"):
        study = ScopeStudy(cfg, models={"ref": ref}, splits=(data, data), progress=False)
        result = run(study, tmp_path / where, executor=executor, quiet=True)
        return result.rows, [(r["sample_id"], r["perturbed"], r["ref_loss"]) for r in result.perturbations]

    local, ray = searched("local"), searched("ray", ray_executor)
    assert any(loss for _, _, loss in local[1])  # the losses are not all 0: rounding would show
    assert json.dumps(local) == json.dumps(ray)


def test_perturblab_run_on_ray_writes_what_a_local_run_writes(tmp_path, marker_csv, ray_executor):
    """A config run with ``executor: ray`` (here joining the test's Ray instance) and the same
    config run locally give byte-identical study outputs."""
    from perturblab.runs.config import load_config
    from perturblab.runs.runner import run

    marker_csv(tmp_path / "toy.csv", 200, n_words=5)
    (tmp_path / "study.yaml").write_text(
        "data:\n  toy: {path: toy.csv}\nstudies:\n"
        "  - {name: rob, kind: robustness, models: [tfidf-lr], perturbations: [change_char, drop_last],"
        " data: toy, n_train: 120, n_test: 60, seeds: 2}\n"
        "  - {name: learn, kind: learnability, models: [tfidf-lr], perturbations: [leet_letters], data: toy,"
        " n_train: 100, n_test: 50, ps: [0.1, 1.0], seeds: 1, workers: 1}\n")
    states = {}
    for kind in ("local", "ray"):
        cfg = load_config(tmp_path / "study.yaml", out=tmp_path / kind)
        states[kind] = run(cfg, executor=kind, progress=False)
    assert states["ray"]["executor"]["kind"] == "ray"
    assert all(s["state"] == "done" for st in states.values() for s in st["studies"].values())
    for study in ("rob", "learn"):
        names = ["results.json", "summary.json", "table.md"]
        assert _files(tmp_path / "local" / study, names) == _files(tmp_path / "ray" / study, names)


def test_ray_runs_a_regression_pair_task_byte_identical_to_local(tmp_path, ray_executor):
    from helpers.pair_data import score_csv

    from perturblab.studies.robustness.config import RobustnessArgs
    from perturblab.studies.robustness.study import RobustnessStudy

    data = score_csv(tmp_path / "scores.csv", 120)
    cfg = RobustnessArgs(models="tfidf-ridge", perturbations="change_char,drop_first", data=str(data),
                         n_train=80, n_eval=30, trials=2, text_fields=["s1", "s2"], label_column="score",
                         task="regression", perturb_field="b", n_boot=200)
    names = ["results.json", "summary.json", "table.md"]
    _saved(RobustnessStudy(cfg), tmp_path / "local")
    _saved(RobustnessStudy(cfg), tmp_path / "ray", ray_executor)
    assert _files(tmp_path / "local", names) == _files(tmp_path / "ray", names)
    assert '"pearson"' in (tmp_path / "ray" / "summary.json").read_text()


def test_a_ray_executor_shut_down_starts_no_ray_again():
    """After :meth:`RayExecutor.shutdown` (an interrupted comparison's, say) a study still running
    in a thread cannot start a fresh Ray instance: the executor refuses."""
    ex = RayExecutor(num_cpus=1)
    ex.shutdown()
    with pytest.raises(RuntimeError, match="was shut down"):
        ex.start()
    with pytest.raises(RuntimeError, match="was shut down"):
        list(ex.run([Cell("k", lambda: 1)]))
