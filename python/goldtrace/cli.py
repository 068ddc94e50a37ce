"""The `infergoldens` console script: the Go CLI, run in process; `infergoldens
batch ...` is goldtrace.batch's command line."""

import sys

from . import _bridge
from ._bridge import ffi, lib


def main(argv=None) -> int:
    raw = sys.argv[1:] if argv is None else list(argv)
    if raw[:1] == ["batch"]:
        from ._batch import main as batch_main

        code = batch_main(raw[1:])
        if argv is None:
            sys.exit(code)
        return code
    args = [b"infergoldens"] + [a.encode() for a in raw]
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
