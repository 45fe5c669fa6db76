"""A CCA measure on fewer inputs than its representations need is refused before the inputs are
encoded, with advice the data can follow: more data when the data holds too few inputs, a larger
``--n`` only when it holds enough."""

from __future__ import annotations

import pytest
from helpers import tiny_bert

import perturblab as pl
from perturblab.errors import InputError
from perturblab.models.hf import HFEncoder

pytestmark = pytest.mark.usefixtures("home")  # the hidden-states cache


@pytest.fixture
def encoded(monkeypatch):
    """How many inputs the encoders were asked for."""
    seen = [0]
    original = HFEncoder.hidden_states

    def count(self, inputs, *a, **kw):
        seen[0] += len(inputs)
        return original(self, inputs, *a, **kw)

    monkeypatch.setattr(HFEncoder, "hidden_states", count)
    return seen


def _similarity(data, n, out, measures="cka,pwcca"):
    # two tiny BERTs of hidden size 16: a CCA measure needs 16 + 16 + 1 = 33 inputs
    return pl.similarity(tiny_bert.encoder(0, name="a"), tiny_bert.encoder(1, name="b"), data=data, n=n,
                         measures=measures, out=out, quiet=True)


@pytest.mark.parametrize("n", [500, 20])
def test_data_with_too_few_inputs_is_refused_before_encoding_asking_for_more_data(tmp_path, n, encoded):
    data = tiny_bert.write_csv(tmp_path / "twenty.csv", 20)
    with pytest.raises(InputError) as e:
        _similarity(data, n, tmp_path / "o")
    # 16 + 16 - (20 - 1) = 13 canonical correlations forced to 1
    assert str(e.value) == (f"--data {data}: holds 20 inputs, and pwcca_distance needs at least 33 for "
                            "representations of 16 and 16 dimensions (with 20, 13 of the canonical correlations are 1 "
                            "whatever the models); give data of at least 33 inputs, or measures without CCA "
                            "(--measures cka,procrustes)")
    assert encoded[0] == 0 and not (tmp_path / "o").exists()  # no work


def test_data_with_enough_inputs_is_asked_for_a_larger_n(tmp_path, encoded):
    data = tiny_bert.write_csv(tmp_path / "forty.csv", 40)
    with pytest.raises(InputError, match=r"got 20: .* Use --n 33 or more"):
        _similarity(data, 20, tmp_path / "o")
    assert encoded[0] == 0
    res = _similarity(data, 33, tmp_path / "o", measures="pwcca")
    assert {r["n"] for r in res.rows} == {33}  # the advice, followed, runs
