"""How PWCCA depends on the basis taken inside tied canonical correlations (X against its PC-deleted copy).

X against a copy of itself with its k smallest principal components deleted has all kept canonical
correlations equal to 1 (a tie), so the canonical directions inside the tie are not unique and
PWCCA's L1 weights depend on which basis is taken. Measured for a synthetic 384-wide X over 1,000
inputs (two spectra: "flat", independent Gaussian neurons; "decaying", principal-component
standard deviations proportional to i^-1/2 mixed by a random rotation) against its copies with the
k smallest principal components deleted (copy = X's coordinates on its 384 - k largest principal
components, as the released PC-deletion experiment keeps them):

(a) the released computation (js-d/sim_metric: rows centred and the matrix divided by its Frobenius
    norm as ``dists/score_pair.py``, then ``cca_decomp`` and ``pwcca_dist`` of ``dists/scoring.py``,
    written out below in the same neurons x inputs layout and order of operations) for the copy
    multiplied by constants c, which the normalisation removes up to round-off; its spread over c;
(b) perturblab's ``pwcca_distance(..., convention="released")``, which takes X's principal
    directions inside a tie, at each c: its spread over c and its largest difference from (a); and
    its spread over c = 1, 10, 0.001 for every 32nd k on the flat X (the directions of X that the
    copy does not match are kept as the SVD completes the basis, and that completion can follow
    round-off too);
(c) the released computation with a little noise of relative size eps added to the copy (c = 1) to
    break the tie, minus perturblab's value without noise: noise that is white and uncorrelated
    with X over the inputs (Gaussian noise with X's column space and the constant projected out,
    orthonormalised, so its covariance is exactly a multiple of the identity), and plain
    independent Gaussian noise (three draws), whose finite-sample covariance over 1,000 inputs is
    not white.

The figures of (a) come from round-off and may differ on another machine or BLAS build.

    .venv/bin/python scripts/cca_ties.py
"""

from __future__ import annotations

import numpy as np

from perturblab.measures.similarity import pwcca_distance


def released_pwcca(x: np.ndarray, y: np.ndarray) -> float:
    """PWCCA of two (n, d) representations, weights from ``x``, as the released code computes it.

    Neurons x inputs layout; each row centred, the matrix divided by its Frobenius norm; each side
    whitened with the inverse square root of its covariance from ``eigh`` (every positive eigenvalue
    inverted); the full SVD of the whitened cross-covariance; every one of x's directions weighted
    by the L1 norm of its inner products with x's neurons."""
    a, b = x.T - x.T.mean(axis=1, keepdims=True), y.T - y.T.mean(axis=1, keepdims=True)
    a, b = a / np.linalg.norm(a), b / np.linalg.norm(b)

    def whitener(m: np.ndarray) -> np.ndarray:
        vals, vecs = np.linalg.eigh(m @ m.T)
        vals = (vals + np.abs(vals)) / 2
        inv = np.array([1 / np.sqrt(v) if v > 0 else 0 for v in vals])
        return vecs @ np.diag(inv) @ vecs.T

    wa, wb = whitener(a), whitener(b)
    u, rho, _ = np.linalg.svd(wa @ (a @ b.T) @ wb)
    transformed_a = (u.T @ wa @ a).T
    weights = np.sum(np.abs(transformed_a.T @ a.T), axis=1)
    weights = weights / np.sum(weights)
    k = min(len(weights), len(rho))
    return float(1 - np.dot(weights[:k], rho[:k]))


def representation(rng: np.random.Generator, n: int, width: int, spectrum: str) -> np.ndarray:
    """(n, width) synthetic representation: independent Gaussian neurons ("flat"), or principal
    components of standard deviation ∝ i^-1/2 mixed by a random rotation ("decaying")."""
    scale = np.ones(width) if spectrum == "flat" else (1.0 + np.arange(width)) ** -0.5
    rotation, _ = np.linalg.qr(rng.standard_normal((width, width)))
    return (rng.standard_normal((n, width)) * scale) @ rotation


def white_noise(rng: np.random.Generator, x: np.ndarray, width: int) -> np.ndarray:
    """(n, width) noise with orthonormal columns, centred and orthogonal to x's column space."""
    n = x.shape[0]
    u, _, _ = np.linalg.svd(x - x.mean(axis=0), full_matrices=False)
    basis = np.column_stack([np.full(n, 1 / np.sqrt(n)), u])
    g = rng.standard_normal((n, width))
    g -= basis @ (basis.T @ g)
    q, _ = np.linalg.qr(g)
    return q


def main(n: int = 1000, width: int = 384, deleted: tuple[int, ...] = (96, 192, 288),
         scales: tuple[float, ...] = (1.0, 2.0, 10.0, 1e-3, 1e3),
         eps: tuple[float, ...] = (1e-3, 1e-4, 1e-5, 1e-6), draws: int = 3,
         spectra: tuple[str, ...] = ("flat", "decaying"), scan_step: int = 32,
         seed: int = 0) -> tuple[list[dict], dict[int, float]]:
    """Print tables (a, b) and (c); return one record per (spectrum, k) with the values printed, and
    perturblab's spread over c for every ``scan_step``-th k on the first spectrum's X."""
    rng = np.random.default_rng(seed)
    records, scan = [], {}
    for spectrum in spectra:
        x = representation(rng, n, width, spectrum)
        xc = x - x.mean(axis=0)
        _, _, vt = np.linalg.svd(xc, full_matrices=False)
        for k in deleted:
            kept = width - k
            copy = xc @ vt[:kept].T
            cs = tuple(scales) + (width / kept,)  # the released PC-deletion experiment scales by width / kept
            released = np.array([released_pwcca(x, copy * c) for c in cs])
            ours = np.array([pwcca_distance(x, copy * c) for c in cs])
            size = np.linalg.norm(copy)
            white = white_noise(rng, x, kept) * size / np.sqrt(kept)  # Frobenius norm = the copy's
            gauss = [rng.standard_normal(copy.shape) * size / np.sqrt(copy.size) for _ in range(draws)]
            noisy_white = np.array([released_pwcca(x, copy + e * white) for e in eps])
            noisy_gauss = np.array([[released_pwcca(x, copy + e * g) for e in eps] for g in gauss])
            records.append(dict(spectrum=spectrum, k=k, scales=cs, released=released, perturblab=ours,
                                eps=tuple(eps), noisy_white=noisy_white, noisy_gauss=noisy_gauss))
        if spectrum == spectra[0]:
            for k in range(scan_step // 2, width, scan_step):
                copy = xc @ vt[: width - k].T
                scan[k] = float(np.ptp([pwcca_distance(x, copy * c) for c in (1.0, 10.0, 1e-3)]))

    print(f"X: {n} inputs x {width} neurons; copy: X's coordinates on its {width} - k largest principal components")
    print("(a, b) PWCCA (weights from X) of X against the copy multiplied by c = "
          + ", ".join(f"{c:g}" for c in scales) + ", width / kept")
    print(f"{'X':>9s} {'k':>4s} {'released min':>12s} {'max':>8s} {'spread':>8s} "
          f"{'perturblab':>10s} {'spread':>8s} {'|perturblab - released| max':>27s}")
    for r in records:
        rel, ours = r["released"], r["perturblab"]
        print(f"{r['spectrum']:>9s} {r['k']:4d} {rel.min():12.5f} {rel.max():8.5f} {np.ptp(rel):8.1e} "
              f"{ours[0]:10.5f} {np.ptp(ours):8.1e} {np.abs(ours - rel).max():27.5f}")

    print(f"\n(b) perturblab's spread over c = 1, 10, 0.001, {spectra[0]} X, by k (kept = {width} - k)")
    print(" ".join(f"{f'k={k}':>8s}" for k in scan))
    print(" ".join(f"{v:8.1e}" for v in scan.values()))

    print("\n(c) released PWCCA with noise of relative size eps added to the copy (c = 1), minus perturblab's value")
    print(f"{'X':>9s} {'k':>4s} {'noise':>14s} " + " ".join(f"{f'eps={e:g}':>10s}" for e in eps))
    for r in records:
        rows = [("white", r["noisy_white"])] + [(f"Gaussian {i + 1}", v) for i, v in enumerate(r["noisy_gauss"])]
        for name, values in rows:
            print(f"{r['spectrum']:>9s} {r['k']:4d} {name:>14s} "
                  + " ".join(f"{v - r['perturblab'][0]:+10.6f}" for v in values))

    spread_released = max(np.ptp(r["released"]) for r in records)
    spread_ours = max([np.ptp(r["perturblab"]) for r in records] + list(scan.values()))
    gap = max(np.abs(r["perturblab"] - r["released"]).max() for r in records)
    at = list(eps).index(1e-4) if 1e-4 in eps else len(eps) // 2
    steady = [r for r in records if np.ptp(r["perturblab"]) <= 1e-12]
    moving = [r for r in records if np.ptp(r["perturblab"]) > 1e-12]
    gauss_gaps = np.concatenate([r["noisy_gauss"][:, at] - r["perturblab"][0] for r in records])
    print(f"\nlargest spread over c: released {spread_released:.4f}, perturblab {spread_ours:.1e}")
    moved = [k for k, v in scan.items() if v > 1e-12]
    print(f"perturblab's spread over c exceeds 1e-12 ({spectra[0]} X) at k = " + (", ".join(map(str, moved)) or "none")
          + f" of {', '.join(map(str, scan))}")
    print(f"largest |perturblab - released|: {gap:.4f}")
    for name, group in (("does not move", steady), ("moves", moving)):
        if group:
            worst = max(abs(r["noisy_white"][at] - r["perturblab"][0]) for r in group)
            print(f"at eps = {eps[at]:g}, where perturblab's value {name} with c: "
                  f"|white-noise released - perturblab| <= {worst:.1e}")
    print(f"at eps = {eps[at]:g}: Gaussian-noise released - perturblab from {gauss_gaps.min():+.4f} "
          f"to {gauss_gaps.max():+.4f}")
    return records, scan


if __name__ == "__main__":
    main()
