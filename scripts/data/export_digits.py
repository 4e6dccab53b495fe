#!/usr/bin/python3
"""Exports the 8x8 handwritten digits that Debian's python3-sklearn ships (1797 images, the CSV
inside the package: sklearn.datasets.load_digits reads it, no download) to .npy files with a fixed
train / test split, for `rlx train --model mlp --data data/digits`.

Writes <out>/{train,test}_{x,y}.npy: x float32 [N, 64] (pixels / 16, so in [0, 1]), y int64 [N].
The split is a fixed permutation (numpy RandomState(0)), 1437 train / 360 test (80 / 20), so the
files are byte-identical on every run.

Usage: /usr/bin/python3 scripts/data/export_digits.py [out_dir=data/digits]
"""
import os
import sys

import numpy as np
from sklearn.datasets import load_digits


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else "data/digits"
    os.makedirs(out, exist_ok=True)
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    perm = np.random.RandomState(0).permutation(len(y))
    n_test = 360
    test, train = perm[:n_test], perm[n_test:]
    for name, idx in (("train", train), ("test", test)):
        np.save(os.path.join(out, f"{name}_x.npy"), x[idx])
        np.save(os.path.join(out, f"{name}_y.npy"), y[idx])
        print(f"{name}: {len(idx)} images, classes {np.bincount(y[idx]).tolist()}")


if __name__ == "__main__":
    main()
