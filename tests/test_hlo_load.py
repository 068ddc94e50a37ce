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
from reference import require  # noqa: E402  (tests/reference.py)

require("jax")
import jax_programs as jp  # noqa: E402

goldtrace = require("goldtrace")
hlo = require("goldtrace.hlo")

KINDS = {"unopt": "text", "opt": "text", "proto": "module_proto"}

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
    assert module.kind == KINDS[form]
    params, results = _signature(module)
    assert params == jp.in_avals(pid), "parameters differ from JAX's input avals"
    assert results == jp.out_avals(pid), "results differ from JAX's output avals"
    text = module.text
    again = hlo.load(text)
    assert again.text == text, "printed text does not round-trip"
    same, where = hlo.equal(module, again)
    assert same, f"parse(print(m)) != m: {where}"
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


# Proto and text of the same lowering describe the same module: equal models.
@pytest.mark.parametrize("pid", jp.IDS)
def test_proto_and_text_agree(pid):
    from_proto = hlo.load(jp.lowered(pid))
    from_text = hlo.load(jp.unopt_text(pid))
    assert _signature(from_proto) == _signature(from_text)
    assert len(from_proto.parameters) == len(jp.inputs(pid))
    # jax prints this text without the metadata its proto carries.
    same, where = hlo.equal(from_proto, from_text, metadata=False)
    assert same, where


PATH_SUBSET = [i for i in jp.IDS if i.startswith(("model-", "while-", "scan-", "random-bits"))]


@pytest.mark.parametrize("pid", PATH_SUBSET)
def test_load_from_path_and_name(pid, tmp_path):
    """Files on disk load like in-memory data, and all forms name the module alike."""
    text_file = tmp_path / "m.hlo"
    text_file.write_text(jp.opt_text(pid))
    proto_file = tmp_path / "m.pb"
    proto_file.write_bytes(jp.lowered(pid).compiler_ir("hlo").as_serialized_hlo_module_proto())
    from_text, from_proto = hlo.load(text_file), hlo.load(str(proto_file))
    assert from_text.kind == "text" and from_proto.kind == "module_proto"
    assert _signature(from_text) == _signature(from_proto) == (jp.in_avals(pid), jp.out_avals(pid))
    assert from_text.name == from_proto.name == hlo.load(jp.unopt_text(pid)).name
