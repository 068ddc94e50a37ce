"""The `infergoldens` console script: the Go CLI, run in process."""

import sys

from . import _bridge
from ._bridge import ffi, lib


def main(argv=None) -> int:
    args = [b"infergoldens"] + [a.encode() for a in (sys.argv[1:] if argv is None else argv)]
    _bridge._check_process()
    keep = [ffi.new("char[]", a) for a in args]
    argv_c = ffi.new("char *[]", keep)
    sys.stdout.flush()
    sys.stderr.flush()
    code = lib.gt_cli_main(len(args), argv_c)
    if argv is None:
        sys.exit(code)
    return code


if __name__ == "__main__":
    main()
