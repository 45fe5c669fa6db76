"""compare's plan on the hardware it runs on: each model timed where it runs (cached per layout
and machine), sizes scaled by the measured speeds and capped by the data, the budget filled by
the studies a bound does not hold, and a budget below the least useful sizes refused."""

from __future__ import annotations

import json
import math
import re

import pytest

from perturblab.errors import InputError
from perturblab.models import speed as speed_module
from perturblab.models.speed import Speed, count_parameters, measure_speed
from perturblab.studies.compare.config import duration
from perturblab.studies.compare.model_costs import BASELINE, model_params
from perturblab.studies.compare.plan import CLASSIFIER, LANGUAGE_MODEL, cost_of, make_plan
from helpers.compare import args_of


def _speeds(monkeypatch, rates):
    """measure_speed answering ``rates[spec]`` texts/s (None: not measurable)."""
    calls = []

    def fake(spec, role, cached=True, retime=False, say=None):
        calls.append((spec, role) + (("retime",) if retime else ()))
        rate = rates[spec]
        return None if rate is None else Speed(rate, 20 * rate, "cuda:0, bfloat16, NVIDIA H200")

    monkeypatch.setattr(speed_module, "measure_speed", fake)
    return calls


def test_measured_speeds_size_the_plan_and_the_plan_names_where(monkeypatch):
    base = BASELINE[LANGUAGE_MODEL][1]
    calls = _speeds(monkeypatch, {"smollm2-135m": base * 10, "smollm2-135m-int8": base / 2})
    plan = make_plan(args_of(reference="smollm2-135m", targets="smollm2-135m-int8", studies="selfcheck"),
                     measure=True)
    assert sorted(calls) == [("smollm2-135m", "language_model"), ("smollm2-135m-int8", "language_model")]
    # relative costs: max(1/10, 0.1) = 0.1 and 2; selfcheck scores both models, so per unit 2 × mean
    cost = cost_of("selfcheck", LANGUAGE_MODEL)
    per_unit = cost.per_unit * 2 * (0.1 + 2.0) / 2
    assert plan.studies[0].options["n"] == math.floor((600 - cost.fixed) / per_unit + 1e-9)
    text = plan.table()
    assert "at the speeds measured on cuda:0, bfloat16, NVIDIA H200" in text and "on 2 CPU cores" not in text
    assert f"speed: smollm2-135m-int8: cuda:0, bfloat16, NVIDIA H200: {20 * base / 2:.0f} tokens/s" in text


def test_retime_measures_every_model_again_from_the_command_a_config_and_python(monkeypatch, tmp_path):
    from perturblab.studies.compare.config import CompareArgs

    base = BASELINE[LANGUAGE_MODEL][1]
    calls = _speeds(monkeypatch, {"smollm2-135m": base, "smollm2-135m-int8": base})
    make_plan(args_of(reference="smollm2-135m", targets="smollm2-135m-int8", studies="selfcheck", retime=True),
              measure=True)
    assert sorted(calls) == [("smollm2-135m", "language_model", "retime"),
                             ("smollm2-135m-int8", "language_model", "retime")]
    calls.clear()
    make_plan(args_of(reference="smollm2-135m", targets="smollm2-135m-int8", studies="selfcheck"), measure=True)
    assert all(len(c) == 2 for c in calls) and len(calls) == 2  # without it: what is kept is read back
    # the one option, as the command line, a config entry and the Python function give it
    import argparse

    parser = argparse.ArgumentParser()
    CompareArgs.add_arguments(parser)
    given = parser.parse_args(["--reference", "minilm-l6", "--targets", "minilm-l3", "--out", "o", "--retime"])
    assert CompareArgs.from_cli(given).retime is True
    assert CompareArgs.from_config({"reference": "minilm-l6", "targets": "minilm-l3", "retime": True}).retime is True
    import inspect

    import perturblab as pl

    assert inspect.signature(pl.compare).parameters["retime"].default is False
    assert "--retime" in parser.format_help()


def test_a_model_that_cannot_be_timed_is_planned_from_its_parameters(monkeypatch):
    _speeds(monkeypatch, {"minilm-l6": BASELINE[CLASSIFIER][1], "tfidf-lr": None})
    measured = make_plan(args_of(reference="minilm-l6", targets="tfidf-lr"), measure=True)
    estimated = make_plan(args_of(reference="minilm-l6", targets="tfidf-lr"))
    assert [p.options for p in measured.studies] == [p.options for p in estimated.studies]
    assert measured.speeds["tfidf-lr"] is None


def test_sizes_are_capped_by_the_data_and_the_rest_of_the_budget_goes_to_the_others(tmp_path):
    data = tmp_path / "small.csv"
    data.write_text("text,label\n" + "".join(f"review number {i} was {'good' if i % 2 else 'bad'},{i % 2}\n"
                                             for i in range(60)))
    plan = make_plan(args_of(reference="minilm-l6", targets="minilm-l3", data=str(data)))
    sizes = {p.name: p.options.get("n", p.options.get("n_eval")) for p in plan.studies}
    assert sizes == {"invariances": 15, "robustness": 15, "layers": 60}  # a quarter of 60 is the test split
    text = plan.table()
    assert "invariances: the test split of --data" in text and "fewer than the 20 it is useful from" in text
    assert "--n" not in text
    # the packaged data: robustness holds at its 1,000 test examples, and invariances takes the rest
    full = make_plan(args_of(reference="minilm-l6", targets="minilm-l6-int8,minilm-l3"))
    rob = next(p for p in full.studies if p.name == "robustness")
    assert rob.options["n_eval"] == 1000
    inv = full.studies[0]
    assert 600 - cost_of("invariances", CLASSIFIER).per_unit * 2 <= full.seconds() <= 600 + 1e-6
    assert inv.options["n"] > 201  # what its 45 % share alone bought


def test_a_budget_below_the_least_useful_sizes_is_refused_with_the_budget_that_covers_them():
    args = dict(reference="minilm-l6", targets="minilm-l6-int8,minilm-l3")
    names = ("invariances", "robustness", "layers", "layers")
    unit = {"invariances": 1.0, "robustness": 3.0, "layers": 1.0}  # the reference; every model; each target
    least = sum(cost_of(n, CLASSIFIER).fixed + cost_of(n, CLASSIFIER).per_unit * cost_of(n, CLASSIFIER).least * unit[n]
                for n in names)
    with pytest.raises(InputError, match=r"--budget 0: even the least useful sizes take about .*invariances n = 20, "
                                         r"robustness n-eval = 100.*or more, or fewer --studies") as e:
        make_plan(args_of(budget="0", **args))
    minutes = re.search(r"take about ([\d.]+) (min|s)", str(e.value))
    assert float(minutes.group(1)) * (60 if minutes.group(2) == "min" else 1) == pytest.approx(least, abs=3.1)
    enough = re.search(r"give --budget (\S+) or more", str(e.value)).group(1)
    at_least = make_plan(args_of(budget=enough, **args))
    # the budget the message names is rounded up: it buys the least sizes and a few samples more
    assert cost_of("invariances", CLASSIFIER).least <= at_least.studies[0].options["n"] < 40
    assert at_least.seconds() <= 1.25 * duration(enough)


def test_the_command_refuses_a_small_budget_before_any_work(tmp_path, capsys, monkeypatch):
    from perturblab.cli import main

    monkeypatch.setenv("PERTURBLAB_SPEEDS", str(tmp_path / "speeds.json"))
    out = tmp_path / "out"
    assert main(["compare", "--reference", "minilm-l6", "--targets", "minilm-l3", "--budget", "10s",
                 "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--budget 10s: even the least useful sizes" in err and "Traceback" not in err
    assert not out.exists()


def test_the_speed_of_a_language_model_is_measured_where_it_runs_and_kept(tmp_path, monkeypatch):
    import datetime

    import torch

    from perturblab.core.placement import placement
    from helpers.tiny_lm import save_lm, tiny_lm

    monkeypatch.setenv("PERTURBLAB_SPEEDS", str(tmp_path / "speeds.json"))
    monkeypatch.setattr(speed_module, "UNSTEADY", float("inf"))  # kept however busy the machine is (tests share it)
    lm, path = tiny_lm(0), save_lm(tmp_path / "lm", 0)
    first = measure_speed(str(path), "language_model")
    assert first is not None and not first.cached and first.texts_per_s > 0
    tokens = sum(len(lm.encode(t)) for t in speed_module.PROBE_TEXTS)
    assert first.tokens_per_s == pytest.approx(first.texts_per_s * tokens / len(speed_module.PROBE_TEXTS), rel=1e-9)
    assert first.where == f"cpu ({torch.get_num_threads()} threads), float32"
    again = measure_speed(str(path), "language_model")
    assert again.cached and again.texts_per_s == first.texts_per_s
    assert again.measured == first.measured == datetime.date.today().isoformat()
    assert json.loads((tmp_path / "speeds.json").read_text())  # kept in the file the variable names
    with placement(dtype="bfloat16"):  # another dtype is another figure
        bf16 = measure_speed(str(path), "language_model")
    assert not bf16.cached and bf16.where.endswith("bfloat16")
    assert measure_speed(f"b={path}[dtype=bfloat16]", "language_model").cached
    assert measure_speed("api:m@http://127.0.0.1:9/v1", "language_model") is None


def test_a_classifier_is_timed_by_its_encoder_and_one_without_is_not_timed(tmp_path, monkeypatch):
    monkeypatch.setenv("PERTURBLAB_SPEEDS", str(tmp_path / "speeds.json"))
    speed = measure_speed("minilm-l3", "encoder")
    assert speed is not None and speed.tokens_per_s is None and "texts/s" in speed.text()
    assert measure_speed("tfidf-lr", "encoder") is None


def test_parameter_counts_match_the_model(tmp_path):
    import torch
    from safetensors.torch import save_file
    from transformers import LlamaConfig

    h, i, layers, vocab = 256, 688, 3, 1000
    cfg = LlamaConfig(hidden_size=h, intermediate_size=i, num_hidden_layers=layers, num_attention_heads=8,
                      num_key_value_heads=2, vocab_size=vocab, tie_word_embeddings=False,
                      architectures=["LlamaForCausalLM"])
    only_config = tmp_path / "config-only"
    only_config.mkdir()
    cfg.save_pretrained(only_config)
    kv = 2 * h // 8  # two key-value heads of width h / 8
    by_hand = layers * (2 * h * h + 2 * h * kv + 3 * h * i + 2 * h) + h + 2 * vocab * h
    params, source = count_parameters(str(only_config))
    assert source == "its config.json" and params * 1e6 == by_hand
    # the weights' files, when there are some, are read for their shapes alone
    weights = tmp_path / "weights"
    weights.mkdir()
    save_file({"a": torch.zeros(3, 4), "b": torch.zeros(5)}, str(weights / "model.safetensors"))
    assert count_parameters(str(weights)) == (17 / 1e6, "its safetensors headers")
    assert model_params(str(only_config)) == (params, "its config.json")


def test_a_cheap_reference_is_planned_at_what_its_searches_still_cost(monkeypatch):
    """The invariances' own work (tagging, candidates, the meaning check's MiniLM-L6) does not
    shrink with a bag-of-words reference: it is planned at the meaning check encoder's measured
    speed, and the reference's part at its own cost (tfidf-lr: none)."""
    base = BASELINE[CLASSIFIER][1]
    cost = cost_of("invariances", CLASSIFIER)
    assert cost.own > 0 and cost.own_model == "minilm-l6"
    # not measured: MiniLM-L6 costs what it did where the costs were measured, tfidf-lr nothing
    plan = make_plan(args_of(reference="tfidf-lr", targets="twin=tfidf-lr", studies="invariances", budget="1m"))
    assert plan.studies[0].count == math.floor((60 - cost.fixed) / cost.own + 1e-9)  # 285, not 387
    # measured: the encoder runs 309/115 times as fast here, so the own work costs that much less
    calls = _speeds(monkeypatch, {"tfidf-lr": None, "twin=tfidf-lr": None, "minilm-l6": 309.0})
    plan = make_plan(args_of(reference="tfidf-lr", targets="twin=tfidf-lr", studies="invariances", budget="1m"),
                     measure=True)
    assert ("minilm-l6", "encoder") in calls  # the meaning check's encoder is timed, and shown
    per = cost.own * base / 309.0
    assert plan.studies[0].count == min(math.floor((60 - cost.fixed) / per + 1e-9), cost.most)
    assert plan.studies[0].seconds == pytest.approx(cost.fixed + plan.studies[0].count * per)
    assert "speed: minilm-l6:" in plan.table()
    # MiniLM-L6 as the reference: the same 1.03 s a sample as before the own work was stated apart
    same = make_plan(args_of(reference="minilm-l6", targets="minilm-l3", studies="invariances", budget="10m"))
    assert same.studies[0].count == math.floor((600 - cost.fixed) / (cost.per_unit + cost.own) + 1e-9)
    assert cost.per_unit + cost.own == pytest.approx(1.033, abs=1e-9)
