"""neuronxcc.nki.language.constants: numeric constants kernels import."""

import numpy as np

inf = float("inf")
nan = float("nan")
fp32_min = float(np.finfo(np.float32).min)
fp32_max = float(np.finfo(np.float32).max)
pmax = 128
psum_fmax = 512
