"""How the released PWCCA convention depends on the basis its SVD completes, when X is wider than Y.

The released code normalises PWCCA's weights over all of X's canonical directions; the d_X - d_Y
directions that Y does not match are whatever the SVD returns to complete X's basis, so the value
moves when X's neurons are only reordered (which no similarity measure should see). perturblab's
``pwcca_distance(..., convention="released")`` follows the released computation, this dependence
included; the text's convention (``convention="paper"``) sums over the matched directions only and
does not move. Prints both conventions for X as given and for three shuffles of its neurons.

    .venv/bin/python scripts/cca_basis_dependence.py
"""

from __future__ import annotations

import numpy as np

from perturblab.measures.similarity import pwcca_distance


def main(n: int = 1000, width_x: int = 64, width_y: int = 32, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    latent = rng.standard_normal((n, width_x))
    x = latent @ rng.standard_normal((width_x, width_x))  # mixed neurons
    y = latent[:, :width_y] @ rng.standard_normal((width_y, width_y)) + 0.5 * rng.standard_normal((n, width_y))
    print(f"X: {n} inputs x {width_x} neurons; Y: {width_y} neurons (a noisy map of part of X's signal)")
    print(f"{'X':>16s} {'released':>9s} {'paper':>9s}")
    orders = [("as given", np.arange(width_x))] + [(f"shuffle {i + 1}", rng.permutation(width_x)) for i in range(3)]
    for name, order in orders:
        xs = x[:, order]
        print(f"{name:>16s} {pwcca_distance(xs, y):9.4f} {pwcca_distance(xs, y, convention='paper'):9.4f}")


if __name__ == "__main__":
    main()
