"""Symbolic integers of the tracer: affine expressions over loop variables,
program ids and tile axes.

A loop variable of `affine_range` is a Sym with one LOOP_VAR term; `nl.arange(n)`
is a Sym of shape (n,) with one TILE_AXIS term on axis 0. Index expressions
broadcast numpy-style (right-aligned), which is how `nl.mgrid` / `arange(n)[:, None]`
build 2-D index grids. Anything Python must know concretely (an `if`, a list
index, `range(i)`) raises SymbolicValueError naming the kernel's line.
"""

import numbers

from .errors import KernelError, SymbolicValueError, user_location

LOOP_VAR, PROGRAM_ID, TILE_AXIS = 1, 2, 3
CMP_CODES = {"<": 1, "<=": 2, ">": 3, ">=": 4, "==": 5, "!=": 6}


def _broadcast(a, b):
    ra, rb = len(a), len(b)
    r = max(ra, rb)
    a2 = (1,) * (r - ra) + tuple(a)
    b2 = (1,) * (r - rb) + tuple(b)
    out = []
    for x, y in zip(a2, b2):
        if x != y and x != 1 and y != 1:
            raise KernelError(f"{user_location()}: index expressions of shapes {tuple(a)} and {tuple(b)} do not broadcast")
        out.append(max(x, y))
    return tuple(out)


def broadcast_shapes(*shapes):
    out = ()
    for s in shapes:
        out = _broadcast(out, s)
    return out


class Sym:
    """const + sum(coef * var); `shape` is the broadcast shape of an index
    expression (() for a scalar such as a loop variable)."""

    __slots__ = ("const", "terms", "shape")
    __array_priority__ = 1000  # numpy scalars defer to our operators

    def __init__(self, const=0, terms=None, shape=()):
        self.const = int(const)
        self.terms = terms if terms is not None else {}
        self.shape = tuple(shape)

    # ---- construction helpers ----
    @staticmethod
    def var(kind, ident, shape=()):
        return Sym(0, {(kind, ident): 1}, shape)

    @staticmethod
    def axis(k, shape):
        if shape[k] == 1:
            return Sym(0, {}, shape)
        return Sym(0, {(TILE_AXIS, k): 1}, shape)

    def is_const(self):
        return not self.terms

    def _aligned(self, rank):
        """The terms with tile axes renumbered for a right-aligned rank."""
        off = rank - len(self.shape)
        if off == 0:
            return dict(self.terms)
        out = {}
        for (kind, ident), c in self.terms.items():
            out[(kind, ident + off) if kind == TILE_AXIS else (kind, ident)] = c
        return out

    # ---- arithmetic ----
    @staticmethod
    def coerce(x):
        if isinstance(x, Sym):
            return x
        if isinstance(x, NonAffine):
            x.fail()
        if isinstance(x, (bool,)):
            return Sym(int(x))
        if isinstance(x, numbers.Integral):
            return Sym(int(x))
        if hasattr(x, "dtype") and getattr(x, "shape", None) == () and x.dtype.kind in "iu":
            return Sym(int(x))
        return None

    def _combine(self, other, sign):
        o = Sym.coerce(other)
        if o is None:
            return NotImplemented
        shape = _broadcast(self.shape, o.shape)
        r = len(shape)
        terms = self._aligned(r)
        for k, c in o._aligned(r).items():
            v = terms.get(k, 0) + sign * c
            if v:
                terms[k] = v
            else:
                terms.pop(k, None)
        return Sym(self.const + sign * o.const, terms, shape)

    def __add__(self, other):
        return self._combine(other, 1)

    __radd__ = __add__

    def __sub__(self, other):
        return self._combine(other, -1)

    def __rsub__(self, other):
        o = Sym.coerce(other)
        if o is None:
            return NotImplemented
        return o._combine(self, -1)

    def __neg__(self):
        return Sym(-self.const, {k: -c for k, c in self.terms.items()}, self.shape)

    def __pos__(self):
        return self

    def __mul__(self, other):
        o = Sym.coerce(other)
        if o is None:
            return NotImplemented
        if self.is_const() and not self.shape:
            a, b = o, self.const
        elif o.is_const() and not o.shape:
            a, b = self, o.const
        else:
            raise KernelError(f"{user_location()}: index expression is not affine: product of two symbolic values")
        if b == 0:
            return Sym(0, {}, a.shape)
        return Sym(a.const * b, {k: c * b for k, c in a.terms.items()}, a.shape)

    __rmul__ = __mul__

    def _const_only(self, what):
        if self.terms:
            raise KernelError(
                f"{user_location()}: `{what}` of a loop variable or index is not affine; "
                "use static_range for a loop whose index needs it"
            )
        return self.const

    def __floordiv__(self, other):
        o = Sym.coerce(other)
        if o is None:
            return NotImplemented
        if not o.is_const():
            self._const_only("//")
        d = o.const
        if self.terms:
            # Exact division keeps affinity: (4*i + 8) // 4 == i + 2.
            if d and all(c % d == 0 for c in self.terms.values()) and self.const % d == 0:
                return Sym(self.const // d, {k: c // d for k, c in self.terms.items()}, self.shape)
            self._const_only("//")
        return Sym(self.const // d, {}, self.shape)

    def __rfloordiv__(self, other):
        return other // self._const_only("//")

    def __mod__(self, other):
        o = Sym.coerce(other)
        if o is None:
            return NotImplemented
        o._const_only("%")
        if self.terms:
            # Not affine: a value the kernel may pass where goldtrace does not
            # need it (nc_matmul's tile_position hint); any use that needs the
            # value (an index, a Python int, a condition) reports this line.
            return NonAffine(f"{user_location()}: `%` of a loop variable or index is not affine; "
                             "use static_range for a loop whose index needs it")
        return Sym(self.const % o.const, {}, self.shape)

    def __truediv__(self, other):
        raise KernelError(f"{user_location()}: `/` on an index gives a float; use `//`")

    # ---- comparisons build predicates (masks) ----
    def _cmp(self, other, op):
        o = Sym.coerce(other)
        if o is None:
            return NotImplemented
        return Pred(self - o, op)

    def __lt__(self, other):
        return self._cmp(other, "<")

    def __le__(self, other):
        return self._cmp(other, "<=")

    def __gt__(self, other):
        return self._cmp(other, ">")

    def __ge__(self, other):
        return self._cmp(other, ">=")

    def __eq__(self, other):
        return self._cmp(other, "==")

    def __ne__(self, other):
        return self._cmp(other, "!=")

    __hash__ = object.__hash__

    # ---- places where Python needs a concrete value ----
    def _concrete(self, why):
        if not self.terms:
            return self.const
        raise SymbolicValueError(
            f"{user_location()}: a loop variable or index (affine_range/sequential_range/program_id/arange) "
            f"cannot be used {why}; its value is only known when the kernel runs. "
            "Use nl.static_range for a loop Python must unroll, or express the condition as a mask"
        )

    def __bool__(self):
        return bool(self._concrete("as a Python condition (if/while/and/or)"))

    def __index__(self):
        return self._concrete("as a Python integer (list index, range(), slice of a Python list)")

    __int__ = __index__

    def __float__(self):
        return float(self._concrete("as a Python float"))

    def __len__(self):
        if self.shape:
            return self.shape[0]
        raise SymbolicValueError(f"{user_location()}: len() of a scalar index")

    def __iter__(self):
        raise SymbolicValueError(f"{user_location()}: a symbolic index cannot be iterated in Python")

    # ---- reshaping index expressions: arange(n)[:, None] ----
    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        new_shape = []
        axis_map = {}
        src = 0
        for k in key:
            if k is None:
                new_shape.append(1)
            elif isinstance(k, slice) and k == slice(None):
                if src >= len(self.shape):
                    raise KernelError(f"{user_location()}: too many indices for index expression of shape {self.shape}")
                axis_map[src] = len(new_shape)
                new_shape.append(self.shape[src])
                src += 1
            elif k is Ellipsis:
                while src < len(self.shape) - sum(1 for x in key[key.index(k) + 1:] if x is not None):
                    axis_map[src] = len(new_shape)
                    new_shape.append(self.shape[src])
                    src += 1
            else:
                raise KernelError(f"{user_location()}: index expressions support only `:`, `None` and `...` subscripts")
        while src < len(self.shape):
            axis_map[src] = len(new_shape)
            new_shape.append(self.shape[src])
            src += 1
        terms = {}
        for (kind, ident), c in self.terms.items():
            terms[(kind, axis_map[ident]) if kind == TILE_AXIS else (kind, ident)] = c
        return Sym(self.const, terms, tuple(new_shape))

    def substitute(self, axes):
        """Replace TILE_AXIS k by the Sym axes[k] (composition of views)."""
        out = Sym(self.const, {}, ())
        for (kind, ident), c in self.terms.items():
            if kind == TILE_AXIS:
                out = out + axes[ident] * c
            else:
                v = out.terms.get((kind, ident), 0) + c
                if v:
                    out.terms[(kind, ident)] = v
                else:
                    out.terms.pop((kind, ident), None)
        out.shape = ()
        return out

    def to_json(self, rank=None):
        """[constant, kind, id, coef, ...]: the tape's affine (kernel/ir/tape.go)."""
        terms = self.terms if rank is None else self._aligned(rank)
        out = [self.const]
        for (k, i), c in terms.items():
            out += (k, i, c)
        return out

    def __repr__(self):
        names = {LOOP_VAR: "i", PROGRAM_ID: "pid", TILE_AXIS: "t"}
        parts = [f"{c}*{names[k]}{i}" for (k, i), c in self.terms.items()]
        if self.const or not parts:
            parts.append(str(self.const))
        s = " + ".join(parts)
        return f"Sym({s}, shape={self.shape})" if self.shape else f"Sym({s})"


class Pred:
    """`expr cmp 0`; `&` joins predicates into a mask."""

    __slots__ = ("expr", "cmp")

    def __init__(self, expr, cmp):
        self.expr, self.cmp = expr, cmp

    def __and__(self, other):
        return Mask([self]) & other

    def __rand__(self, other):
        return Mask([self]) & other

    def __or__(self, other):
        raise KernelError(f"{user_location()}: masks join with `&` only (a mask is a conjunction of affine predicates)")

    __ror__ = __or__

    def __bool__(self):
        if self.expr.is_const():
            v = self.expr.const
            return {"<": v < 0, "<=": v <= 0, ">": v > 0, ">=": v >= 0, "==": v == 0, "!=": v != 0}[self.cmp]
        raise SymbolicValueError(
            f"{user_location()}: a comparison of a loop variable or index cannot be used as a Python condition; "
            "its value is only known when the kernel runs (use it as a mask=, or nl.static_range)"
        )

    @property
    def shape(self):
        return self.expr.shape

    def preds(self):
        return [self]

    def to_json(self, rank):
        return [CMP_CODES[self.cmp], *self.expr.to_json(rank)]


class Mask:
    """A conjunction of predicates."""

    __slots__ = ("items",)

    def __init__(self, items):
        self.items = list(items)

    def __and__(self, other):
        if isinstance(other, Pred):
            return Mask(self.items + [other])
        if isinstance(other, Mask):
            return Mask(self.items + other.items)
        if other is True:
            return self
        return NotImplemented

    __rand__ = __and__

    def __bool__(self):
        return all(bool(p) for p in self.items)

    @property
    def shape(self):
        return broadcast_shapes(*[p.shape for p in self.items])

    def preds(self):
        return list(self.items)


class NonAffine:
    """The result of a non-affine operation on loop variables or indices. It
    may be carried around and combined; using it where a value is needed
    raises the error of the line that made it."""

    def __init__(self, message):
        self.message = message

    def fail(self, *args, **kwargs):
        raise KernelError(self.message)

    def _same(self, *args, **kwargs):
        return self

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __floordiv__ = __rfloordiv__ = _same
    __mod__ = __rmod__ = __neg__ = __pos__ = _same
    __bool__ = __index__ = __int__ = __float__ = __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = fail
    __hash__ = None

    def __repr__(self):
        return "<non-affine value>"
