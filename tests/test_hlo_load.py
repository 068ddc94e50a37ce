"""Every catalog program, exported from JAX three ways, loads into goldtrace:

  unopt  lowered.as_text(dialect="hlo")    HLO text straight from the lowering
  opt    lowered.compile().as_text()       XLA:CPU-optimized text (fusions, layouts,
                                           schedules, metadata, stack frames)
  proto  the Lowered object                serialized HloModuleProto

Each load must parse and verify, report the parameters and results JAX's avals say,
and print canonical text that parses back to the same text.
"""

import numpy as np
import pytest

import jax_programs as jp

goldtrace = pytest.importorskip("goldtrace")
hlo = pytest.importorskip("goldtrace.hlo")

FORMS = {
    "unopt": jp.unopt_text,
    "opt": jp.opt_text,
    "proto": jp.lowered,
}

# (form, program id) -> precise reason; each is an xfail(strict=True).
KNOWN_FAILURES = {}


def _params(form):
    out = []
    for pid in jp.IDS:
        reason = KNOWN_FAILURES.get((form, pid))
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out.append(pytest.param(pid, marks=marks, id=pid))
    return out


def _signature(module):
    params = [(tuple(p.shape), np.dtype(p.dtype)) for p in module.parameters]
    results = [(tuple(r.shape), np.dtype(r.dtype)) for r in module.results]
    return params, results


def _check(form, pid):
    module = hlo.load(FORMS[form](pid))
    params, results = _signature(module)
    assert params == jp.in_avals(pid), "parameters differ from JAX's input avals"
    assert results == jp.out_avals(pid), "results differ from JAX's output avals"
    text = module.text
    again = hlo.load(text)
    assert again.text == text, "printed text does not round-trip"
    assert _signature(again) == (params, results)
    return module


@pytest.mark.parametrize("pid", _params("unopt"))
def test_load_unoptimized_text(pid):
    _check("unopt", pid)


@pytest.mark.parametrize("pid", _params("opt"))
def test_load_optimized_text(pid):
    _check("opt", pid)


@pytest.mark.parametrize("pid", _params("proto"))
def test_load_proto(pid):
    _check("proto", pid)


# Proto and text of the same lowering describe the same module.
SAME_SUBSET = jp.IDS[::7] + [i for i in jp.IDS if i.startswith("model-")]


@pytest.mark.parametrize("pid", sorted(set(SAME_SUBSET)))
def test_proto_and_text_agree(pid):
    from_proto = hlo.load(jp.lowered(pid))
    from_text = hlo.load(jp.unopt_text(pid))
    assert _signature(from_proto) == _signature(from_text)
    assert len(from_proto.parameters) == len(jp.inputs(pid))
