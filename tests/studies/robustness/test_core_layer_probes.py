"""The layer-probe study on the study core: content-keyed resume (edited data, another model under
the same name, options that change nothing). That its function's keywords are the command's
options and its docstring example runs is checked for every study (contract/test_study_schema.py,
contract/test_python_api.py)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from helpers import tiny_bert  # noqa: E402
from helpers.observe import record_calls  # noqa: E402
from perturblab.cli import main  # noqa: E402
from perturblab import layer_probes  # noqa: E402
from perturblab.studies.robustness.layer_probes import LayerProbeStudy  # noqa: E402
from perturblab.studies.robustness.layer_probes.result import FILES  # noqa: E402

PERTURBATIONS = "swap_words,change_char"


pytestmark = pytest.mark.usefixtures("home")


@pytest.fixture
def evaluated(monkeypatch):
    """The evaluations (``clean`` or a perturbation) the study computes, in order."""
    return record_calls(monkeypatch, LayerProbeStudy, "evaluate")


def run(model, data, out, **kw):
    return layer_probes(model, perturbations=kw.pop("perturbations", PERTURBATIONS), data=data, top=2, out=out,
                        quiet=True, **kw)


def test_a_rerun_computes_only_what_changed_and_equals_a_fresh_run(tmp_path, evaluated):
    enc = tiny_bert.encoder(0, name="enc")
    train, test = tiny_bert.splits()
    first = run(enc, (train, test), tmp_path / "out")
    assert evaluated == ["clean", "swap_words", "change_char"]
    clean = [r["value"] for r in first.rows if r["metric"] == "clean_acc"]
    assert len(clean) == 3 and max(clean) > 0.6
    evaluated.clear()
    # the same run, and one whose --top changes no cell: nothing is computed
    assert run(enc, (train, test), tmp_path / "out").rows == first.rows
    assert layer_probes(enc, perturbations=PERTURBATIONS, data=(train, test), top=1, out=tmp_path / "out",
                        quiet=True).rows == first.rows
    assert evaluated == []
    # one more perturbation: only its cell
    more = run(enc, (train, test), tmp_path / "out", perturbations=PERTURBATIONS + ",drop_first")
    assert evaluated == ["drop_first"]
    assert more.rows[:len(first.rows)] == first.rows
    evaluated.clear()
    # an edited evaluation example: every cell reads it (the clean one included), and the rows equal a fresh run
    edited = test.subset(range(len(test)))
    edited.examples[3] = replace(edited.examples[3], text="good good great fun lovely film")
    again = run(enc, (train, edited), tmp_path / "out")
    assert evaluated == ["clean", "swap_words", "change_char"]
    fresh = run(enc, (train, edited), tmp_path / "fresh")
    assert again.rows == fresh.rows and again.rows != first.rows


def test_b_another_model_under_the_same_name_is_not_served_stale_cells(tmp_path, evaluated):
    data = tiny_bert.splits()
    first = run(tiny_bert.encoder(0, name="enc"), data, tmp_path / "out")
    evaluated.clear()
    other = run(tiny_bert.encoder(7, name="enc"), data, tmp_path / "out")
    assert evaluated == ["clean", "swap_words", "change_char"]
    assert other.rows != first.rows
    assert other.rows == run(tiny_bert.encoder(7, name="enc"), data, tmp_path / "fresh").rows


def test_c_the_functions_save_writes_what_the_command_writes(tmp_path, capsys):
    model = str(tiny_bert.save_bert(tmp_path / "bert", 3))
    data = tiny_bert.write_csv(tmp_path / "toy.csv", 200)
    opts = dict(n_train=100, n_eval=40, top=2)
    assert main(["layer-probes", "--model", model, "--perturbations", PERTURBATIONS, "--data", data,
                 "--n-train", "100", "--n-eval", "40", "--top", "2", "--out", str(tmp_path / "cli"), "--quiet"]) == 0
    printed = capsys.readouterr().out
    res = layer_probes(model, perturbations=PERTURBATIONS, data=data, quiet=True, **opts)
    paths = res.save(tmp_path / "api")
    assert sorted(p.name for p in paths) == sorted(FILES)
    for name in ("results.json", "top_layers.csv"):
        assert (tmp_path / "api" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes()
    assert (tmp_path / "cli" / "probe_drops.png").stat().st_size > 1000
    rows = json.loads((tmp_path / "cli" / "results.json").read_text())
    assert rows == res.rows
    for p, layers in res.top_layers.items():
        assert f"{p:16s} most affected layers: {layers or 'none'}" in printed
        got = {m: {r["layer"]: r["value"] for r in rows if r["perturbation"] == p and r["metric"] == m}
               for m in ("rank", "drop", "drop_se")}
        ranks = got["rank"]
        assert layers == [k for k in sorted(ranks, key=ranks.get)
                          if got["drop"][k] > 0 and got["drop"][k] > 2 * got["drop_se"][k]][:2]
    assert res.to_pandas().shape == (len(rows), 5)
    # the headline's largest drop over the 3 layers: Bonferroni-adjusted, z(1 − 0.025/3) = 2.3940
    for e in res.headline().estimates:
        p = e.key.split(":", 1)[1]
        got = {m: {r["layer"]: r["value"] for r in rows if r["perturbation"] == p and r["metric"] == m}
               for m in ("rank", "drop", "drop_se")}
        worst = min(got["rank"], key=got["rank"].get)
        assert e.value == got["drop"][worst]
        if ", cut to" not in e.interval:
            assert (e.high - e.value) == pytest.approx(2.3939797998 * got["drop_se"][worst], rel=1e-8)
            assert (e.value - e.low) == pytest.approx(e.high - e.value, rel=1e-8)
        assert e.interval.startswith("95 % normal interval, paired over examples, Bonferroni-adjusted for "
                                     "choosing the largest of 3 layers")


def test_the_largest_drops_interval_is_bonferroni_adjusted_by_hand():
    """z(1 − 0.025/12) = 2.8653 (1.96 unadjusted): a drop of 0.10 with s.e. 0.02 at the largest of
    12 layers gets ± 0.0573, not ± 0.0392; one layer is no choice; cut to a drop's range [−1, 1]."""
    from perturblab.studies.robustness.layer_probes.result import selected_drop_interval

    low, high, what = selected_drop_interval(0.10, 0.02, 12)
    assert (low, high) == pytest.approx((0.10 - 0.0573052, 0.10 + 0.0573052), abs=1e-7)
    assert what == ("95 % normal interval, paired over examples, Bonferroni-adjusted for choosing the largest "
                    "of 12 layers")
    low, high, what = selected_drop_interval(0.10, 0.02, 1)
    assert (low, high) == pytest.approx((0.10 - 0.0391993, 0.10 + 0.0391993), abs=1e-7)
    assert what == "95 % normal interval, paired over examples"
    low, high, what = selected_drop_interval(0.95, 0.05, 7)
    assert high == 1.0 and low == pytest.approx(0.95 - 2.6901095 * 0.05) and what.endswith(", cut to [-1, 1]")
    assert selected_drop_interval(0.1, float("nan"), 7)[:2] == (None, None)
