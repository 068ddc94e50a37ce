"""Prints jax.lax.rng_bit_generator results on CPU as JSON, for rng_test.go."""
import json

import jax

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

algs = {"rng_three_fry": lax.RandomAlgorithm.RNG_THREE_FRY, "rng_philox": lax.RandomAlgorithm.RNG_PHILOX,
        "rng_default": lax.RandomAlgorithm.RNG_DEFAULT}
out = []
for alg, a in algs.items():
    for key in ([0x123456789ABCDEF0, 0xFEDCBA9876543210], [5, 2**64 - 3]):
        for dt in ("uint8", "uint16", "uint32", "uint64"):
            for shape in ((), (1,), (5,), (4, 3), (3, 5), (2, 3, 4), (3, 5, 7)):
                k = np.array(key, np.uint64)
                st, bits = jax.jit(lambda k: lax.rng_bit_generator(k, shape, np.dtype(dt), algorithm=a))(k)
                out.append({"alg": alg, "key": [int(v) for v in key], "dtype": dt, "shape": list(shape),
                            "state": [int(v) for v in np.asarray(st)],
                            "bits": [int(v) for v in np.asarray(bits).ravel()]})
print(json.dumps(out))
