"""Writes the marshal tapes tape_marshal_test.go reads: the JSON sample tape
of tape_test.go as Python's marshal writes it (versions 2, 3 and 4), and a
tape of shared objects (back-references) with 64-bit integers. Run from this
directory: python3 gen_marshal.py"""

import json
import marshal
import re

src = open("../tape_test.go", encoding="utf-8").read()
sample = re.search(r"const tapeSample = `(.*?)`", src, re.S).group(1)
events = json.loads(sample)
for v in (2, 3, 4):
    with open(f"tape_sample.v{v}.marshal", "wb") as f:
        f.write(marshal.dumps(events, v))

# Shared lists, tuples and strings (written once, then referred back to),
# and integers beyond 32 bits (marshal's 15-bit digit form).
shape = (128, 64)
whole = [[0, 3, 0, 1], [2 ** 40, 3, 1, -(2 ** 62)]]
acc = [0, shape, whole]
shared = [
    [0, "x", "SHARED_HBM", "PARAM", shape, 11, 0, 0, 1],
    [0, "y", "SBUF", "TEMP", shape, 11, 0, 0, 2],
    [1, "dma", 0, 3, [acc], [acc], {"op": "x", "v": [2 ** 40, -(2 ** 63)]}],
    [1, "dma", 0, 4, [acc, 1], [acc], {"op": "x", "v": [2 ** 40, -(2 ** 63)]}],
]
with open("tape_shared.v4.marshal", "wb") as f:
    f.write(marshal.dumps(shared, 4))
with open("tape_shared.json", "w") as f:
    json.dump(shared, f)
