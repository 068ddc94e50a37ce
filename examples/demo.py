"""goldtrace demo: send arrays of every XLA element type through the Go core
and back, and save/load them as .npy (ml_dtypes via the .meta sidecar)."""

import os
import tempfile

import numpy as np

import goldtrace
from goldtrace import dtypes


def main():
    rng = np.random.default_rng(0)
    print(f"goldtrace {goldtrace.__version__}: round trip of every XLA element type through Go")
    with tempfile.TemporaryDirectory() as tmp:
        for dt in dtypes.all_dtypes():
            src = rng.standard_normal(8).astype(np.float32)
            a = (src * 3).astype(dt) if dt.kind != "b" else src > 0
            (back,) = goldtrace.roundtrip(a)
            path = os.path.join(tmp, f"{dt.name}.npy")
            goldtrace.save_npy(path, a)
            loaded = goldtrace.load_npy(path)
            ok = back.tobytes() == a.tobytes() and loaded.tobytes() == a.tobytes() and loaded.dtype == dt
            sidecar = "  + .meta" if os.path.exists(path + ".meta") else ""
            print(f"  {dt.name:20s} {'ok ' if ok else 'MISMATCH'} {a[:4]}{sidecar}")


if __name__ == "__main__":
    main()
