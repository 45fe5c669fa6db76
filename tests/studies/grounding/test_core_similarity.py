"""The similarity study on the study core: another encoder under the same name, or edited inputs,
are compared afresh; the same ones are read back."""

from __future__ import annotations

import numpy as np
import pytest

import perturblab as pl
from helpers.observe import count_cells


class Counts:
    """Two layers from character counts; ``scale`` stands for other weights."""

    num_layers = 1

    def __init__(self, scale: float, name: str = "counts"):
        self.scale, self.name = scale, name
        self.fingerprint = f"test-counts-{scale}"
        self.calls = 0

    def hidden_states(self, inputs, pooling="mean"):
        self.calls += 1
        x = np.array([[t.count(c) for c in "aeiou "] for t in inputs], float)
        return [x, np.sqrt(x) + self.scale * x ** 2]


pytestmark = pytest.mark.usefixtures("home")  # the hidden-states cache


def write(path, prefix=""):
    path.write_text("\n\n".join(f"{prefix}text {i} says {'a' * (i % 5)} or {'o' * (i % 3)} then {'e' * (i % 4)}"
                                for i in range(50)))
    return str(path)


def matrices(out) -> int:
    return count_cells(out, "similarity.matrix")


def test_other_weights_or_edited_inputs_are_compared_afresh(tmp_path):
    data = write(tmp_path / "t.txt")
    kw = dict(data=data, n=40, measures="cka,procrustes", quiet=True)
    a, b = Counts(1.0, "a"), Counts(0.5, "b")
    first = pl.similarity(a, b, out=tmp_path / "o", **kw)
    assert matrices(tmp_path / "o") == 2
    again = pl.similarity(Counts(1.0, "a"), Counts(0.5, "b"), out=tmp_path / "o", **kw)
    assert again.rows == first.rows and matrices(tmp_path / "o") == 2
    other = pl.similarity(a, Counts(3.0, "b"), out=tmp_path / "o", **kw)  # other weights, same name
    assert other.rows == pl.similarity(a, Counts(3.0, "b"), out=tmp_path / "f", **kw).rows
    assert other.rows != first.rows and matrices(tmp_path / "o") == 4
    edited = pl.similarity(a, b, out=tmp_path / "o", **{**kw, "data": write(tmp_path / "t.txt", "EDITED ")})
    assert edited.rows != first.rows and matrices(tmp_path / "o") == 6


def test_one_object_as_both_models_is_compared_with_itself_under_its_name(tmp_path):
    """The same object as ``a`` and ``b``: one name in every row, the same-index layers identical
    (linear CKA 1 up to float rounding, ~1e-15 on these small matrices); two different objects of
    one name are refused before anything runs."""
    from perturblab.errors import InputError

    data = write(tmp_path / "t.txt")
    c = Counts(1.0, "c")
    res = pl.similarity(c, c, data=data, n=40, measures="cka", quiet=True)
    assert {(r["a"], r["b"]) for r in res.rows} == {("c", "c")}
    assert [r["value"] for r in res.rows if r["layer_a"] == r["layer_b"]] == pytest.approx([1.0, 1.0], abs=1e-9)
    calls, other = c.calls, Counts(2.0, "c")
    with pytest.raises(InputError, match="two different models are named 'c'"):
        pl.similarity(c, other, data=data, n=40, measures="cka", quiet=True)
    assert (c.calls, other.calls) == (calls, 0)  # refused before anything was encoded


def test_a_data_object_is_refused_with_the_fix(tmp_path):
    from perturblab.data import Dataset, Example
    from perturblab.errors import InputError

    data = Dataset([Example(f"text {i}", i % 2) for i in range(40)], ["no", "yes"])
    with pytest.raises(InputError, match="--data: give a data set name, a file or a corpus, not a Dataset"):
        pl.similarity(Counts(1.0, "a"), Counts(2.0, "b"), data=data, n=30, measures="cka", quiet=True)
