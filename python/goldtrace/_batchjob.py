"""One job of goldtrace.batch, as run by a worker (a spawned local process or a
Dask worker): hash the module and inputs, run the infergoldens command line in
process, and record the result beside the outputs -- the done-marker (written
last, atomically) or the per-job error record.

Paths are local paths or fsspec URLs. Remote files are staged into a local
temporary directory, and the outputs are uploaded before the marker."""

import fnmatch
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time

# The done-marker and the error record, in each job's output directory.
DONE_MARKER = "goldtrace-done.json"
ERROR_RECORD = "goldtrace-error.json"
MARKER_VERSION = 1

# Exit codes of the single-module CLI (engine/golden) and their class names.
EXIT_CLASSES = {2: "usage", 3: "module", 4: "input", 5: "evaluation", 6: "output", 70: "internal"}
# Batch-only failure classes: the worker process died (a crash, or killed by
# the OOM killer), or the job's estimated peak memory alone exceeds the limit.
CRASHED = "crashed"
MEMORY = "memory"

# The single-module CLI's flags a job's options may set, by long name, with
# their kind. The module, inputs and output directory are the job's own fields.
FLAGS = {
    "module-type": str,
    "input-type": str,
    "output": list,
    "verbose": int,
    "save-intermediates": bool,
    "upcast-all-to-fp32": bool,
    "experimental-unsafe-fp8e4m3fn-as-fp8e4m3": bool,
    "unsafe-dtype-cast": bool,
    "emulate-multiple-devices": int,
    "spmd": bool,
    "seed": int,
}
SHORT_FLAGS = {"t": "module-type", "I": "input-type", "o": "output", "v": "verbose", "s": "save-intermediates",
               "U": "upcast-all-to-fp32", "F": "experimental-unsafe-fp8e4m3fn-as-fp8e4m3", "u": "unsafe-dtype-cast",
               "e": "emulate-multiple-devices", "S": "spmd"}
_JOB_FIELDS = {"module", "inputs", "output_dir", "options"}

# Files a run writes into its output directory (besides -o names).
_OUTPUT_PATTERNS = ("value_output*.npy", "value_output*.npy.meta", "value_intermediate*.npy",
                    "value_intermediate*.npy.meta", "intermediates.json")
_STAGING_PATTERN = ".infergoldens-tmp-*"

# Dask runs several jobs per worker process in threads; each job's staging and
# marker writes use their own files, so the lock only guards the native call's
# first import.
_import_lock = threading.Lock()


class OptionError(ValueError):
    """A job's options are not the single-module CLI's flags."""


def normalize_options(options, where="options"):
    """Check and canonicalize options (long flag names, '-' spelled; values typed)."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise OptionError(f"{where}: must be an object of CLI flags, got {type(options).__name__}")
    out = {}
    for key, value in options.items():
        name = str(key).lstrip("-").replace("_", "-")
        name = SHORT_FLAGS.get(name, name)
        if name in ("module", "m", "input", "i", "output-dir", "O", "help", "h", "error-file"):
            raise OptionError(f"{where}: {key!r} is not an option here (module, inputs and output_dir are job fields)")
        kind = FLAGS.get(name)
        if kind is None:
            raise OptionError(f"{where}: unknown flag {key!r} (known: {', '.join(sorted(FLAGS))})")
        if kind is bool:
            if not isinstance(value, bool):
                raise OptionError(f"{where}: {key!r} takes true or false, got {value!r}")
            if value:
                out[name] = True
        elif kind is int:
            if name == "emulate-multiple-devices" and value is True:
                value = -1  # all replica_count x num_partitions devices
            if isinstance(value, bool) or not isinstance(value, int):
                raise OptionError(f"{where}: {key!r} takes an integer, got {value!r}")
            out[name] = value
        elif kind is str:
            if not isinstance(value, str):
                raise OptionError(f"{where}: {key!r} takes a string, got {value!r}")
            out[name] = value
        else:
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise OptionError(f"{where}: {key!r} takes a list of file names, got {value!r}")
            out[name] = list(value)
    return dict(sorted(out.items()))


def cli_flags(options):
    """The command-line flags of normalized options."""
    argv = []
    for name, value in options.items():
        if value is True:
            argv.append(f"--{name}")
        elif isinstance(value, list):
            for v in value:
                argv += [f"--{name}", v]
        else:
            argv.append(f"--{name}={value}")
    return argv


# ---- paths: local or fsspec ----

def is_url(path):
    return "://" in str(path) and not str(path).startswith("file://")


def local_path(path):
    path = str(path)
    return path[len("file://"):] if path.startswith("file://") else path


def _fs(path):
    import fsspec

    return fsspec.core.url_to_fs(str(path))


def join(base, *parts):
    base = str(base)
    if is_url(base):
        return "/".join([base.rstrip("/")] + [p.strip("/") for p in parts])
    return os.path.join(local_path(base), *parts)


def read_bytes(path):
    """Bytes of a file, or None when it does not exist."""
    if is_url(path):
        fs, p = _fs(path)
        try:
            return fs.cat_file(p)
        except FileNotFoundError:
            return None
    try:
        with open(local_path(path), "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def exists(path):
    if is_url(path):
        fs, p = _fs(path)
        return fs.exists(p)
    return os.path.exists(local_path(path))


def file_size(path):
    if is_url(path):
        fs, p = _fs(path)
        try:
            return fs.size(p)
        except FileNotFoundError:
            return None
    try:
        return os.path.getsize(local_path(path))
    except OSError:
        return None


def write_atomic(path, data):
    """Write a whole file so a reader sees the old one or the new one, never a
    part: a temporary file beside it, then a rename (object stores' single
    put is atomic by itself)."""
    if is_url(path):
        fs, p = _fs(path)
        from fsspec.implementations.local import LocalFileSystem

        if not isinstance(fs, LocalFileSystem):
            fs.makedirs(p.rsplit("/", 1)[0], exist_ok=True)
            fs.pipe_file(p, data)
            return
        path = p
    path = local_path(path)
    d = os.path.dirname(path) or "."
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".goldtrace-tmp-", dir=d)
    try:
        # No fsync: a marker torn by a power loss does not parse and counts as
        # absent, so its job reruns; a rename never exposes a partial file.
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def remove(path):
    try:
        if is_url(path):
            fs, p = _fs(path)
            if fs.exists(p):
                fs.rm(p)
        else:
            os.unlink(local_path(path))
    except FileNotFoundError:
        pass


# ---- hashes ----

def content_hash(data, meta=None):
    """sha256 of a file's bytes; an .npy's ml_dtypes sidecar counts too, since it
    retypes the bits."""
    h = hashlib.sha256(data)
    if meta is not None:
        h.update(b"\0goldtrace-npy-meta\0")
        h.update(meta)
    return h.hexdigest()


def job_hashes(spec):
    """The hashes a done-marker records: module, each input (None when missing),
    and the options."""
    data = read_bytes(spec["module"])
    inputs = []
    for p in spec.get("inputs") or []:
        b = read_bytes(p)
        inputs.append(None if b is None else content_hash(b, read_bytes(str(p) + ".meta")))
    return {
        "module": None if data is None else content_hash(data),
        "inputs": inputs,
        "options": hashlib.sha256(json.dumps(spec.get("options") or {}, sort_keys=True).encode()).hexdigest(),
    }


def read_record(output_dir, name):
    data = read_bytes(join(output_dir, name))
    if data is None:
        return None
    try:
        rec = json.loads(data)
    except ValueError:
        return None
    return rec if isinstance(rec, dict) else None


def marker_valid(spec, marker, hashes):
    """A done-marker stands when it records these hashes and every output it
    lists is there with its recorded size."""
    if not marker or marker.get("version") != MARKER_VERSION or marker.get("hashes") != hashes:
        return False
    for name, size in (marker.get("outputs") or {}).items():
        if file_size(join(spec["output_dir"], name)) != size:
            return False
    return True


# ---- running ----

def _cli_main(argv):
    with _import_lock:
        from . import cli
    return cli.main(argv)


def clean_partial(output_dir, options=None):
    """Remove what an interrupted run of a job may have left: the CLI's staging
    directories, and output files that no done-marker vouches for."""
    if is_url(output_dir):
        return
    d = local_path(output_dir)
    try:
        names = os.listdir(d)
    except FileNotFoundError:
        names = []
    for n in names:
        if fnmatch.fnmatchcase(n, _STAGING_PATTERN) or n.startswith(".goldtrace-tmp-"):
            t = os.path.join(d, n)
            shutil.rmtree(t, ignore_errors=True) if os.path.isdir(t) else remove(t)
    if DONE_MARKER in names:
        return
    for n in names:
        if any(fnmatch.fnmatchcase(n, pat) for pat in _OUTPUT_PATTERNS):
            remove(os.path.join(d, n))
    for name in (options or {}).get("output", []):
        p = name if os.path.isabs(name) else os.path.join(d, name)
        remove(p)
        remove(p + ".meta")


def _written_outputs(out_dir, options, t0):
    names = {n for n in os.listdir(out_dir) if any(fnmatch.fnmatchcase(n, pat) for pat in _OUTPUT_PATTERNS)}
    for name in options.get("output", []):
        p = name if os.path.isabs(name) else os.path.join(out_dir, name)
        for q in (p, p + ".meta"):
            if os.path.exists(q):
                names.add(os.path.relpath(q, out_dir))
    return sorted(names)


def _stage_in(path, tmp, name):
    """A local path for `path`: itself, or a copy staged from a URL (with its
    .meta sidecar). Missing remote files stay missing, so the CLI reports them."""
    if not is_url(path):
        return local_path(path)
    dst = os.path.join(tmp, name)
    for suffix in ("", ".meta"):
        data = read_bytes(str(path) + suffix)
        if data is not None:
            with open(dst + suffix, "wb") as f:
                f.write(data)
    return dst


def _upload(local_dir, names, remote_dir):
    fs, base = _fs(remote_dir)
    fs.makedirs(base, exist_ok=True)
    for n in names:
        fs.put_file(os.path.join(local_dir, n), base.rstrip("/") + "/" + n)


def run_job(spec):
    """Run one job and record its result; returns the result as a dict
    (id, status "passed"/"failed", class, exit_code, message, seconds). Never
    raises for a failing module: the error is the result."""
    t0 = time.time()
    options = spec.get("options") or {}
    out_dir = spec["output_dir"]
    remote_out = is_url(out_dir)
    result = {"id": spec["id"], "module": spec["module"], "output_dir": out_dir}
    remote = remote_out or is_url(spec["module"]) or any(is_url(p) for p in spec.get("inputs") or [])
    with (tempfile.TemporaryDirectory(prefix="goldtrace-job-") if remote else _scratch()) as tmp:
        hashes = job_hashes(spec)
        for i, h in enumerate(hashes["inputs"]):
            if h is None:
                # Say which file is missing (the CLI would first count them).
                p = spec["inputs"][i]
                where = "" if not spec.get("discovered") else \
                    " (inputs are in<i>.npy or input<i>.npy beside the module, numbered from 0 without gaps)"
                remove(join(out_dir, DONE_MARKER))
                clean_partial(out_dir, options)
                return record_failure(spec, 4, "input", f"input #{i} ({p}): no such file{where}",
                                      time.time() - t0, hashes, t0)
        # A rerun first retires the old records, so a kill mid-run can never
        # leave a marker beside outputs it does not describe.
        remove(join(out_dir, DONE_MARKER))
        remove(join(out_dir, ERROR_RECORD))
        clean_partial(out_dir, options)
        module = _stage_in(spec["module"], tmp, "module" + _suffix(spec["module"]))
        inputs = [_stage_in(p, tmp, f"in{i}.npy") for i, p in enumerate(spec.get("inputs") or [])]
        run_dir = os.path.join(tmp, "out") if remote_out else local_path(out_dir)
        err_file = os.path.join(tmp, f"error-{os.getpid()}-{threading.get_ident()}.json")
        remove(err_file)
        argv = ["-m", module]
        for p in inputs:
            argv += ["-i", p]
        argv += ["-O", run_dir] + cli_flags(options) + ["--error-file", err_file]
        code = _cli_main(argv)
        seconds = time.time() - t0
        if code == 0:
            names = _written_outputs(run_dir, options, t0)
            if remote_out:
                _upload(run_dir, names, out_dir)
            marker = {
                "version": MARKER_VERSION,
                "module": str(spec["module"]),
                "inputs": [str(p) for p in spec.get("inputs") or []],
                "hashes": hashes,
                "options": options,
                "outputs": {n: os.path.getsize(os.path.join(run_dir, n)) for n in names},
                "seconds": round(seconds, 6),
                "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            write_atomic(join(out_dir, DONE_MARKER), (json.dumps(marker, indent=1) + "\n").encode())
            result.update(status="passed", exit_code=0, seconds=seconds, started=t0, finished=time.time())
            return result
        message = f"infergoldens exited with code {code} and left no message"
        if code == 2:
            message += (" (a usage error the CLI did not record: a native library older than --error-file? "
                        "reinstall goldtrace)")
        try:
            with open(err_file) as f:
                rec = json.load(f)
            message, code = rec.get("message") or message, int(rec.get("exit_code", code))
        except (OSError, ValueError):
            pass
        # Name the job's own files, not their staged copies.
        for staged, orig in [(module, spec["module"])] + list(zip(inputs, spec.get("inputs") or [])):
            if staged != orig:
                message = message.replace(staged, str(orig))
        message = message.replace(run_dir, str(out_dir))
    return record_failure(spec, code, EXIT_CLASSES.get(code, "internal"), message, seconds, hashes, t0)


_scratch_dir = None


class _scratch:
    """The process's one scratch directory (for the CLI's error file), made
    once: a job on local paths needs no staging directory of its own."""

    def __enter__(self):
        global _scratch_dir
        with _import_lock:
            if _scratch_dir is None or not os.path.isdir(_scratch_dir):
                _scratch_dir = tempfile.mkdtemp(prefix="goldtrace-batch-scratch-")
                import atexit

                atexit.register(shutil.rmtree, _scratch_dir, True)
        return _scratch_dir

    def __exit__(self, *exc):
        return False


def record_failure(spec, code, klass, message, seconds, hashes=None, started=None):
    """Write a job's error record and return its failed result."""
    if hashes is None:
        try:
            hashes = job_hashes(spec)
        except Exception:  # noqa: BLE001 - the record matters more than its hashes
            hashes = None
    rec = {"version": MARKER_VERSION, "module": str(spec["module"]), "exit_code": code, "class": klass,
           "message": message, "hashes": hashes, "options": spec.get("options") or {},
           "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    try:
        write_atomic(join(spec["output_dir"], ERROR_RECORD), (json.dumps(rec, indent=1) + "\n").encode())
    except OSError as exc:
        message += f" (and the error record could not be written: {exc})"
    return {"id": spec["id"], "module": spec["module"], "output_dir": spec["output_dir"], "status": "failed",
            "exit_code": code, "class": klass, "message": message, "seconds": seconds,
            "started": started if started is not None else time.time(), "finished": time.time()}


def _suffix(path):
    p = str(path)
    for s in (".hlo.txt", ".hlo", ".pb", ".txt"):
        if p.endswith(s):
            return s
    return ""


# ---- memory estimate ----

_ELEM_BITS = {"pred": 8, "s2": 2, "s4": 4, "s8": 8, "s16": 16, "s32": 32, "s64": 64, "u2": 2, "u4": 4, "u8": 8,
              "u16": 16, "u32": 32, "u64": 64, "f16": 16, "bf16": 16, "f32": 32, "f64": 64, "c64": 64, "c128": 128}
_SHAPE = re.compile(r"\b(pred|[su](?:2|4|8|16|32|64)|bf16|f16|f32|f64|c64|c128|f8e\w+?|f4e\w+?)\[([^\]]*)\]")
_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.+?)\s+([a-z][\w\-]*)\((.*)$")
_NAME = re.compile(r"%?([A-Za-z_][\w.\-]*)")
_HEADER_INT = re.compile(r"\b(replica_count|num_partitions)=(\d+)")
_ALIASING_OPS = {"tuple", "get-tuple-element", "bitcast", "parameter"}
_JOB_SLACK = 8 << 20


def shape_bytes(text, upcast=False):
    total = 0
    for dt, dims in _SHAPE.findall(text):
        n = 1
        for d in dims.replace("<=", "").split(","):
            d = d.strip()
            if d:
                n *= int(d) if d.isdigit() else 1
        bits = _ELEM_BITS.get(dt, 8)
        if upcast and (dt.startswith("f8") or dt.startswith("f4") or dt in ("bf16", "f16")):
            bits = 32
        total += (n * bits + 7) // 8
    return total


def estimate_peak_bytes(hlo_text, options=None):
    """A heuristic upper estimate of the memory one job needs beyond its
    process: per computation, the largest sum of values alive at once in
    program order (the evaluator drops a value after its last use); the entry
    computation's peak plus the largest of the others' (a call nests one at a
    time) plus the parameters, doubled (the Go heap grows to twice its live
    data before collecting), plus twice the largest value computed in f32
    (low-precision ops compute in f32; an output is serialized whole), all
    times the emulated devices, plus a few MB for the module and the runtime."""
    options = options or {}
    upcast = bool(options.get("upcast-all-to-fp32"))
    peaks, entry_peak, params, largest = [], 0, 0, 0
    comp, is_entry = None, False
    header = hlo_text[:4096].split("\n", 1)[0]

    def finish():
        nonlocal entry_peak
        if comp is None:
            return
        order, sizes, uses = comp
        last = {}
        for i, (_, operands) in enumerate(order):
            for o in operands:
                last[o] = i
        live = peak = 0
        for i, (name, _) in enumerate(order):
            live += sizes[name]
            peak = max(peak, live)
            for o in {o for o in order[i][1]}:
                if last.get(o) == i:
                    live -= sizes.get(o, 0)
        if is_entry:
            entry_peak = peak
        else:
            peaks.append(peak)

    for line in hlo_text.splitlines():
        s = line.strip()
        if s.endswith("{") and "=" not in s.split("(")[0]:
            finish()
            comp, is_entry = ([], {}, {}), s.startswith("ENTRY")
            continue
        if s == "}":
            finish()
            comp = None
            continue
        if comp is None:
            continue
        m = _INSTR.match(line)
        if not m:
            continue
        name, shape, opcode, rest = m.groups()
        order, sizes, _ = comp
        b = 0 if opcode in _ALIASING_OPS else shape_bytes(shape, upcast)
        if opcode not in ("tuple", "get-tuple-element"):
            largest = max(largest, shape_bytes(shape, upcast=True))
        if opcode == "parameter":
            nb = shape_bytes(shape, upcast)
            if is_entry:
                params += nb
            b = 0
        depth, ops = 1, []
        for j, ch in enumerate(rest):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                ops = [o for o in _NAME.findall(rest[:j]) if o in sizes]
                break
        sizes[name] = b
        order.append((name, ops))
    finish()
    devices = 1
    e = options.get("emulate-multiple-devices", 0) or 0
    if options.get("spmd") or e < 0:
        counts = dict((k, int(v)) for k, v in _HEADER_INT.findall(header))
        devices = max(1, counts.get("replica_count", 1)) * max(1, counts.get("num_partitions", 1))
    elif e > 0:
        devices = e
    return devices * (2 * (params + entry_peak + max(peaks, default=0)) + 2 * largest) + _JOB_SLACK


def module_text(spec):
    """The HLO text of a job's module for the estimate (protos are parsed), or
    None when it cannot be read."""
    data = read_bytes(spec["module"])
    if data is None:
        return None
    if b"HloModule" in data[:4096] and data[:4096].isascii():
        return data.decode("utf-8", "replace")
    try:
        with _import_lock:
            from . import hlo
        return hlo.load(data).text
    except Exception:  # noqa: BLE001 - the job itself will report the module error
        return None


if __name__ == "__main__":  # pragma: no cover - a debugging aid
    print(json.dumps(run_job(json.loads(sys.stdin.read()))))
