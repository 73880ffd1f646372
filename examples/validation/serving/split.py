#!/usr/bin/env python3
"""Development / held-out split of the serving validation set (measurements.json).

The rule, fixed before any prediction of these rows was computed (see docs/validation.md, "Serving"):

1. A *family* is every row of one source, model and GPU, whatever its tensor-parallel size, precision,
   input/output lengths or arrival rate. A family is never split: a held-out row never has a twin
   (the same model on the same GPU from the same page at another length) among the development rows.
2. A *stratum* is one source. Within a stratum, families are ordered by
   sha256("shardsim-serving-split-v1:" + source + "|" + model + "|" + gpu) and taken into development in
   that order while the development rows are fewer than a third of the stratum's rows and at least one
   family would stay held out. A stratum with one family is held out whole.

Everything not in development is held out: evaluated, never tuned on. If a row ever guides a change it
moves to development here (in MOVED_TO_DEVELOPMENT, with the reason) and the docs say so.

Usage: split.py [measurements.json] > split.json
"""
import hashlib
import json
import sys
from collections import defaultdict

# Rows moved from held out to development after the split was committed, with the reason. Empty at v1.
MOVED_TO_DEVELOPMENT = {}


def family_key(row):
    return (row["source"], row["model"], row["gpu"])


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "measurements.json"
    rows = json.load(open(path))["rows"]
    families = defaultdict(list)
    for row in rows:
        families[family_key(row)].append(row["id"])
    strata = defaultdict(list)
    for key in families:
        strata[key[0]].append(key)
    development = set()
    for source, keys in sorted(strata.items()):
        keys.sort(key=lambda k: hashlib.sha256(("shardsim-serving-split-v1:" + "|".join(k)).encode()).hexdigest())
        total = sum(len(families[k]) for k in keys)
        taken = 0
        for i, key in enumerate(keys):
            if 3 * taken >= total or i == len(keys) - 1:
                break
            development.update(families[key])
            taken += len(families[key])
    development.update(MOVED_TO_DEVELOPMENT)
    out = {
        "rule": "split.py v1: families (source, model, gpu) in sha256 order per source into development until a "
                "third of the source's rows; the rest held out",
        "source": "examples/validation/serving/measurements.json",
        "moved_to_development": MOVED_TO_DEVELOPMENT,
        "development": sorted(development),
        "held_out": sorted(r["id"] for r in rows if r["id"] not in development),
        "families": [
            {"source": k[0], "model": k[1], "gpu": k[2],
             "side": "development" if families[k][0] in development else "held_out", "rows": sorted(families[k])}
            for k in sorted(families)
        ],
    }
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
