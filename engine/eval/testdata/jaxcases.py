"""Writes the evaluator's differential test cases; shared by the gen_*.py
generators (imported from their directory, which python puts on sys.path).

A case is a jax function and its arguments. write_case lowers it to HLO text
(pre-optimisation, as jax hands it to XLA), runs it with jax.jit on CPU and
writes into the output directory
  <name>.hlo, <name>.in<i>.bin, <name>.out<i>.bin   (raw little-endian bytes)
returning the manifest entry that names them; the Go tests
(engine/eval/jaxref_test.go) read OUTDIR/manifest.json.

Importing this module enables 64-bit types and pins jax to the CPU.
"""
import json
import os
import sys

import jax

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")

import numpy as np  # noqa: E402


def write_case(out, name, fn, args, **fields):
    """Writes one case into out; returns its manifest entry: name, hlo,
    inputs, outputs (each {file, dtype, shape}) and the extra fields given
    (comparison modes and the like, which only the generator's test reads)."""
    args = [np.asarray(a) for a in args]
    jf = jax.jit(fn)
    text = jf.lower(*args).as_text(dialect="hlo")
    res = jax.tree_util.tree_leaves(jf(*args))
    with open(os.path.join(out, name + ".hlo"), "w") as f:
        f.write(text)
    ent = {"name": name, "hlo": name + ".hlo", "inputs": [], "outputs": [], **fields}
    for kind, vals in (("inputs", args), ("outputs", res)):
        for i, v in enumerate(vals):
            v = np.array(v, order="C", copy=True)
            fname = "%s.%s%d.bin" % (name, kind[:-1], i)
            with open(os.path.join(out, fname), "wb") as f:
                f.write(v.tobytes())
            ent[kind].append({"file": fname, "dtype": v.dtype.name, "shape": list(v.shape)})
    return ent


def write_manifest(out, entries):
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(entries, f, indent=1)


def main(cases):
    """Command line of a generator: OUTDIR [NAME_PREFIX...]. Writes every
    case (name, fn, args, fields) whose name starts with one of the
    prefixes (all when none are given), then the manifest."""
    out = sys.argv[1]
    only = sys.argv[2:]
    os.makedirs(out, exist_ok=True)
    write_manifest(out, [write_case(out, name, fn, args, **fields)
                         for name, fn, args, fields in cases
                         if not only or any(name.startswith(p) for p in only)])
