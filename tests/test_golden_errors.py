"""Bad modules and bad inputs: each raises its documented goldtrace exception type,
with a message that names the problem, and leaves no output files behind."""

import os
import re

import numpy as np
import pytest
from reference import require  # noqa: E402  (tests/reference.py)

goldtrace = require("goldtrace")
require("goldtrace.golden")
from goldtrace import hlo  # noqa: E402
from goldtrace.golden import golden  # noqa: E402

ADD = """HloModule add_module

ENTRY main {
  a = f32[2,3] parameter(0)
  b = f32[2,3] parameter(1)
  ROOT r = f32[2,3] add(a, b)
}
"""

BAD_TOKEN = """HloModule bad

ENTRY main {
  a = f32[2] parameter(0)
  ROOT r = f32[2] add(a, a
}
"""

UNKNOWN_OPCODE = """HloModule bad_op

ENTRY main {
  a = f32[2] parameter(0)
  ROOT r = f32[2] frobnicate(a)
}
"""

SHAPE_MISMATCH = """HloModule bad_shape

ENTRY main {
  a = f32[2] parameter(0)
  b = f32[3] parameter(1)
  ROOT r = f32[2] add(a, b)
}
"""

ELIDED_CONSTANT = """HloModule elided

ENTRY main {
  a = f32[4] parameter(0)
  c = f32[4] constant({...})
  ROOT r = f32[4] add(a, c)
}
"""

CUSTOM_CALL = """HloModule cc

ENTRY main {
  a = f32[4] parameter(0)
  ROOT r = f32[4] custom-call(a), custom_call_target="my_vendor_frobnicator"
}
"""

UNDEFINED_OPERAND = """HloModule undef

ENTRY main {
  a = f32[4] parameter(0)
  ROOT r = f32[4] add(a, nope)
}
"""


def f32(*shape):
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)


# id, module, inputs, exception type, regexes the message must match (all of them)
CASES = [
    ("too-few-inputs", ADD, [f32(2, 3)], goldtrace.InvalidArgumentError, [r"\b2\b", r"\b1\b", r"(?i)input"]),
    ("too-many-inputs", ADD, [f32(2, 3)] * 3, goldtrace.InvalidArgumentError, [r"\b2\b", r"\b3\b", r"(?i)input"]),
    ("wrong-shape", ADD, [f32(2, 3), f32(3, 2)], goldtrace.InvalidArgumentError,
     [r"(?i)shape", r"3,\s*2|\(3, 2\)|\[3,2\]", r"(?i)\b1\b|parameter|input"]),
    ("wrong-rank", ADD, [f32(2, 3), f32(6)], goldtrace.InvalidArgumentError, [r"(?i)shape"]),
    ("wrong-dtype", ADD, [f32(2, 3), np.zeros((2, 3), np.int32)], goldtrace.InvalidArgumentError,
     [r"(?i)dtype|type", r"s32|int32", r"f32|float32"]),
    ("wrong-dtype-f64", ADD, [f32(2, 3).astype(np.float64), f32(2, 3)], goldtrace.InvalidArgumentError,
     [r"f64|float64", r"f32|float32"]),
    ("unbalanced-paren", BAD_TOKEN, [f32(2)], goldtrace.ParseError, [r"\b6:1\b", r"\)"]),
    ("garbage-text", "HloModule x\n\nENTRY main {\n  @@@ \n}\n", [], goldtrace.ParseError, [r"\b4:\d+\b"]),
    ("not-hlo-bytes", b"\x08\x96\x01garbage\xff\xfe", [], goldtrace.ParseError, [r"(?i)proto|parse|decod|invalid"]),
    ("unknown-opcode", UNKNOWN_OPCODE, [f32(2)], goldtrace.ParseError, [r"frobnicate", r"\b5:\d+\b"]),
    ("undefined-operand", UNDEFINED_OPERAND, [f32(4)], goldtrace.ParseError, [r"nope", r"\b5:\d+\b"]),
    ("shape-mismatch", SHAPE_MISMATCH, [f32(2), f32(3)], goldtrace.ParseError, [r"(?i)shape|f32\[3\]"]),
    ("elided-constant", ELIDED_CONSTANT, [f32(4)], goldtrace.ParseError,
     [r"\{\.\.\.\}|elided", r"\b5:\d+\b"]),
    ("unknown-custom-call", CUSTOM_CALL, [f32(4)], goldtrace.UnsupportedError, [r"my_vendor_frobnicator"]),
]


@pytest.mark.parametrize("module,inputs,exc,patterns", [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_golden_error(module, inputs, exc, patterns, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(exc) as info:
        golden(module, *inputs, output_dir=out)
    msg = str(info.value)
    for pat in patterns:
        assert re.search(pat, msg), f"message {msg!r} does not match {pat!r}"
    assert isinstance(info.value, goldtrace.GoldtraceError)
    leftovers = sorted(os.listdir(out)) if out.exists() else []
    assert leftovers == [], f"files left behind after a failure: {leftovers}"


def test_missing_module_file(tmp_path):
    path = tmp_path / "no_such_module.hlo"
    with pytest.raises(goldtrace.GoldtraceIOError) as info:
        golden(path, f32(2))
    assert "no_such_module.hlo" in str(info.value)
    with pytest.raises(goldtrace.GoldtraceIOError):
        hlo.load(str(path))


def test_parse_error_names_line_and_column_of_file(tmp_path):
    path = tmp_path / "broken.hlo"
    path.write_text(BAD_TOKEN)
    with pytest.raises(goldtrace.ParseError) as info:
        hlo.load(path)
    # The missing ')' is discovered at the '}' that starts line 6.
    assert re.search(r"broken\.hlo:6:1\b", str(info.value)), str(info.value)


def test_unwritable_output_dir_leaves_nothing(tmp_path):
    blocker = tmp_path / "file_not_dir"
    blocker.write_text("x")
    with pytest.raises(goldtrace.GoldtraceIOError):
        golden(ADD, f32(2, 3), f32(2, 3), output_dir=blocker / "sub")
    assert sorted(os.listdir(tmp_path)) == ["file_not_dir"]


def test_success_writes_outputs(tmp_path):
    """The control: the same module and output_dir with good inputs writes the output."""
    out = tmp_path / "out"
    (r,) = golden(ADD, f32(2, 3), f32(2, 3), output_dir=out)
    np.testing.assert_array_equal(r, 2 * f32(2, 3))
    files = sorted(os.listdir(out))
    assert files == ["value_output0.npy"], files
    np.testing.assert_array_equal(goldtrace.load_npy(out / "value_output0.npy"), r)


def test_error_does_not_poison_later_calls():
    with pytest.raises(goldtrace.InvalidArgumentError):
        golden(ADD, f32(2, 3))
    (r,) = golden(ADD, f32(2, 3), f32(2, 3))
    np.testing.assert_array_equal(r, 2 * f32(2, 3))
