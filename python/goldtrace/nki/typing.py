"""goldtrace.nki.typing (`nt`): parameter annotations.

`nt.tensor[[shape], dtype]` is a shape-only stand-in for benchmark/profile;
`nt.mutable_tensor` marks a parameter the kernel may write (and must return);
`nt.scalar` a compile-time scalar."""

import numpy as np


class _TensorType:
    def __init__(self, shape=None, dtype=None, mutable=False):
        self.shape, self.dtype, self.mutable = (tuple(shape) if shape is not None else None), dtype, mutable

    def __getitem__(self, item):
        if not isinstance(item, tuple) or len(item) != 2:
            raise TypeError("use nt.tensor[[shape...], dtype]")
        shape, dtype = item
        if isinstance(shape, int):
            shape = (shape,)
        return _TensorType(shape, dtype, self.mutable)

    def __repr__(self):
        kind = "mutable_tensor" if self.mutable else "tensor"
        return f"nt.{kind}[{list(self.shape) if self.shape else '...'}, {self.dtype}]"

    # A stand-in argument (benchmark(kernel)(nt.tensor[[128, 512], nl.float32], ...)).
    @property
    def ndim(self):
        return len(self.shape)


tensor = _TensorType()
mutable_tensor = _TensorType(mutable=True)


class scalar:
    """A compile-time scalar parameter annotation."""

    def __class_getitem__(cls, item):
        return cls


def is_mutable_annotation(ann):
    return isinstance(ann, _TensorType) and ann.mutable


def is_placeholder(x):
    return isinstance(x, _TensorType) and x.shape is not None
