"""The grounding study on the study core: content-keyed resume (edited data, another model under the
same name), the public function against the command, and values checked against an independent
computation of one member's probe and distance."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from helpers import tiny_bert  # noqa: E402
from perturblab.cli import main  # noqa: E402
from perturblab.data import Dataset  # noqa: E402
from perturblab.measures.layerwise import PAIRWISE  # noqa: E402
from perturblab.measures.probe import fit_probe  # noqa: E402
from perturblab.models.states import layer_states  # noqa: E402
from perturblab import grounding  # noqa: E402
from perturblab.studies.grounding import GroundingStudy  # noqa: E402

KW = dict(measures="cka,procrustes", pc_layers=[2], pc_fractions=[0.0, 0.5, 0.75], n_boot=100, quiet=True)


pytestmark = pytest.mark.usefixtures("home")


@pytest.fixture
def work(monkeypatch):
    """The probes and distances the study computes: lists of member names / (measure, a, b)."""
    calls: dict[str, list] = {"probe": [], "distance": []}
    probe, distance = GroundingStudy.accuracy, GroundingStudy.distance

    def spy_probe(self, m):
        calls["probe"].append(m.name)
        return probe(self, m)

    def spy_distance(self, measure, a, b):
        calls["distance"].append((measure, a.name, b.name))
        return distance(self, measure, a, b)

    monkeypatch.setattr(GroundingStudy, "accuracy", spy_probe)
    monkeypatch.setattr(GroundingStudy, "distance", spy_distance)
    return calls


def splits(n: int = 160, seed: int = 0) -> tuple[Dataset, Dataset]:
    return tiny_bert.splits(n, train=100, seed=seed)


def variants():
    return [tiny_bert.encoder(0, name="a"), tiny_bert.encoder(1, name="b"), tiny_bert.encoder(2, name="c")]


def test_values_equal_an_independent_computation(tmp_path):
    train, test = splits()
    encs = variants()
    res = grounding(encs, data=(train, test), out=tmp_path / "out", **KW)
    depth = [m for m in res.members if m["benchmark"] == "layer_depth"]
    assert len(depth) == 3 * 2  # layers 1..2 of each variant
    ref = next(m for m in depth if m["reference"])
    states = {e.name: (layer_states(e, train.inputs(), progress=False),
                       layer_states(e, test.inputs(), progress=False)) for e in encs}
    for m in depth:
        tr, ev = states[m["variant"]][0][m["layer"]], states[m["variant"]][1][m["layer"]]
        acc = fit_probe(tr, train.labels, seed=0, C=0.01).accuracy(ev, test.labels)
        assert m["probe_accuracy"] == pytest.approx(acc, abs=1e-12)
        a = states[ref["variant"]][1][ref["layer"]]
        assert m["d_linear_cka"] == pytest.approx(1 - PAIRWISE["linear_cka"](a, ev), abs=1e-9)
        assert m["d_procrustes_distance"] == pytest.approx(PAIRWISE["procrustes_distance"](a, ev), abs=1e-9)
    assert ref["probe_accuracy"] == max(m["probe_accuracy"] for m in depth)
    # the reference's distance to itself is 0 under both (float64 on float32 states)
    assert ref["d_linear_cka"] == pytest.approx(0, abs=1e-6) and ref["d_procrustes_distance"] == pytest.approx(0, abs=1e-5)
    rows = {(r["benchmark"], r["measure"]): r for r in res.summary}
    assert rows[("layer_depth", "linear_cka")]["n"] == 5
    assert {r["benchmark"] for r in res.rows} >= {"warmup_specificity", "warmup_detection"}
    assert res.sizes() == "computed on n_train = 100, n_eval = 60"
    # the headline's bootstrap intervals over the members are labelled indicative
    heads = res.headline().estimates
    assert len(heads) == len(res.summary) > 0
    for e, r in zip(heads, res.summary):
        assert (e.value, e.low, e.high, e.n) == (r["spearman"], r["spearman_low"], r["spearman_high"], r["n"])
        assert e.interval == ("95 % percentile bootstrap over the members; indicative: the members are a designed, "
                              "dependent set, not a random sample")


def test_a_rerun_computes_only_what_changed(tmp_path, work):
    train, test = splits()
    out = tmp_path / "out"
    first = grounding(variants(), data=(train, test), out=out, **KW)
    n_probes, n_dist = len(work["probe"]), len(work["distance"])
    assert n_probes == 3 * 2 + 3 * 3 and n_dist > 0
    work["probe"].clear(), work["distance"].clear()
    again = grounding(variants(), data=(train, test), out=out, **KW)
    assert work == {"probe": [], "distance": []}  # nothing recomputed
    assert again.rows == first.rows and again.members == first.members

    # another model under the name "c": its probes are computed again, a's and b's are not
    encs = variants()
    encs[2] = tiny_bert.encoder(7, name="c")
    third = grounding(encs, data=(train, test), out=out, **KW)
    assert work["probe"] and all(name.startswith("c/") for name in work["probe"])
    assert third.members != first.members
    work["probe"].clear(), work["distance"].clear()
    fresh = grounding(encs, data=(train, test), out=tmp_path / "fresh", **KW)
    assert fresh.rows == third.rows

    # edited data: every probe is computed again
    work["probe"].clear()
    edited = Dataset([ex.__class__(("EDITED " + ex.text), ex.label) for ex in test], test.label_names)
    grounding(encs, data=(train, edited), out=out, **KW)
    assert len(work["probe"]) == n_probes


def test_save_writes_what_the_command_writes(tmp_path, capsys):
    dirs = [str(tiny_bert.save_bert(tmp_path / f"bert{i}", i)) for i in range(3)]
    data = tiny_bert.write_csv(tmp_path / "toy.csv", 200)
    opts = ["--variants", ",".join(dirs), "--data", data, "--n-train", "100", "--n-eval", "50", "--measures",
            "cka,procrustes", "--pc-layers", "2", "--pc-fractions", "0,0.5", "--n-boot", "100", "--quiet"]
    assert main(["grounding", *opts, "--out", str(tmp_path / "cli")]) == 0
    table = capsys.readouterr().out
    assert "| layer_depth | all | 5 |" in table
    res = grounding(dirs, data=data, n_train=100, n_eval=50, measures="cka,procrustes", pc_layers=[2],
                    pc_fractions=[0, 0.5], n_boot=100, quiet=True)
    res.save(tmp_path / "api")
    for name in ("results.json", "members.csv", "table.md", "config.json", "warmup_layers.png"):
        cli, api = tmp_path / "cli" / name, tmp_path / "api" / name
        if name.endswith(".png"):
            assert api.stat().st_size > 0 and cli.stat().st_size > 0
        else:
            assert cli.read_bytes() == api.read_bytes(), name
    rows = json.loads((tmp_path / "cli" / "results.json").read_text())
    assert all(np.isfinite(r["spearman"]) for r in rows if r["benchmark"] == "layer_depth")


def test_bad_input_is_refused_before_anything_runs(tmp_path, capsys):
    assert main(["grounding", "--variants", "minilm-l6", "--out", str(tmp_path / "x")]) == 2
    assert "at least two variants" in capsys.readouterr().err
    assert main(["grounding", "--variants", "a,ft:x", "--out", str(tmp_path / "x")]) == 2
    assert "ft:<integer seed>" in capsys.readouterr().err


def test_python_boundary_names_variants_and_reads_pc_fractions_none(monkeypatch):
    """Objects without a name are ``variant<i>`` by their place, named ones keep their name, and
    ``pc_fractions=None`` is the benchmark's fractions; the study is built, nothing runs."""
    from perturblab.core.boundary import Inputs
    from perturblab.studies.grounding import PC_FRACTIONS

    built = {}
    monkeypatch.setattr(Inputs, "run", lambda self, study, args: built.setdefault("study", study))
    from types import SimpleNamespace

    unnamed = SimpleNamespace(fingerprint="unnamed-encoder-v1")  # no name: named by its place
    named = tiny_bert.encoder(1, name="b")
    kw = {k: v for k, v in KW.items() if k != "pc_fractions"}
    study = grounding([unnamed, named, "minilm-l3"], data=splits(), pc_fractions=None, **kw)
    assert study is built["study"] and isinstance(study, GroundingStudy)
    assert study.variants == ["variant0", "b", "minilm-l3"]
    assert study._given == {"variant0": unnamed, "b": named}  # the spec is loaded by the study
    assert study.args.pc_fractions == list(PC_FRACTIONS)
    assert study._splits is not None and len(study._splits[0]) == 100


def test_a_base_object_is_refused_when_ft_variants_fine_tune_it():
    from perturblab.errors import InputError

    with pytest.raises(InputError, match="--base: the ft:<seed> variants fine-tune it"):
        grounding(["minilm-l3", "ft:0"], base=tiny_bert.encoder(0, name="a"), data=splits(), **KW)
