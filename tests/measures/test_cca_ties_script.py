"""scripts/cca_ties.py on a small X (200 inputs x 48 neurons): inside tied canonical correlations
perturblab's PWCCA does not move with the copy's scale, and the released computation with white
noise uncorrelated with X approaches it as the noise shrinks; plain Gaussian noise does not."""

from __future__ import annotations

import importlib.util

import numpy as np

from helpers import ROOT


def _script():
    spec = importlib.util.spec_from_file_location("cca_ties", ROOT / "scripts" / "cca_ties.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tie_handling_on_a_small_representation(capsys):
    # the copies keep at most 24 of 48 directions; copies keeping more than about 6/11 of X's directions
    # are left out: there the SVD's completion of X's unmatched directions follows round-off and
    # perturblab's value moves with the scale too (docs/similarity.md)
    records, scan = _script().main(n=200, width=48, deleted=(24, 36), scales=(1.0, 10.0, 1e-3),
                                   eps=(1e-3, 1e-4), draws=2, scan_step=16)
    assert "(c) released PWCCA" in capsys.readouterr().out
    assert set(scan) == {8, 24, 40} and scan[24] < 1e-9 and scan[40] < 1e-9
    for r in records:
        ours = r["perturblab"]
        assert np.ptp(ours) < 1e-9  # a function of the data: the scale moves it by round-off only
        assert np.ptp(r["released"]) > 1e-6  # the released computation follows its SVD's round-off
        assert abs(r["noisy_white"][1] - ours[0]) < 1e-5  # the white-noise limit
        gauss = r["noisy_gauss"]
        np.testing.assert_allclose(gauss[:, 0], gauss[:, 1], atol=1e-4)  # settled by eps = 1e-4 ...
        assert np.abs(gauss[:, 1] - ours[0]).max() > 1e-4  # ... away from perturblab's value
