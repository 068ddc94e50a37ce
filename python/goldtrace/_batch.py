"""goldtrace.batch (this module's `batch`): goldens for many modules at once, resumable, on a local
process pool or a Dask cluster.

Jobs come from a directory tree (the modular-flow layout `nc*/sg*/` with a
module inside, or any directories of `*.hlo`, `*.hlo.txt`, `*.pb` modules,
with inputs `in<i>.npy` / `input<i>.npy` beside a module, else synthesized) or
from a JSON-lines manifest, one job per line:

    {"module": "a/m.hlo", "inputs": ["a/x.npy"] | null, "output_dir": "out/a",
     "options": {"upcast-all-to-fp32": true, "seed": 3}}

(relative paths are relative to the manifest; options are the single-module
CLI's flags by long name). Every job runs the single-module command line in a
worker, so its goldens are the CLI's, byte for byte. A finished job leaves a
done-marker (goldtrace-done.json, written last and atomically, with the
module's, inputs' and options' hashes) and is skipped next time unless one of
them changed; a failed job leaves goldtrace-error.json with the CLI's exit
code, and is not rerun unless `retry_failed` or its module/inputs changed.

`infergoldens batch --help` describes the command line; `batch()` is the API.
"""

import argparse
import collections
import json
import multiprocessing
import os
import re
import shutil
import signal
import sys
import tempfile
import time
import traceback
from multiprocessing.connection import wait as _mp_wait

from . import _batchjob as jobmod
from ._batchjob import (CRASHED, DONE_MARKER, ERROR_RECORD, MEMORY, OptionError, is_url, join,
                        local_path, normalize_options)

MODULE_SUFFIXES = (".hlo.txt", ".hlo", ".pb")
_INPUT_RE = re.compile(r"^(in|input)(\d+)\.npy$")
SUMMARY_FILE = "summary.json"
# A worker process's own memory (Python, numpy, the Go runtime), counted
# against the limit once per worker; measured about 90 MB, rounded up.
WORKER_BASE_BYTES = 160 << 20
# Jobs handed to one local worker at a time (see _LocalPool.run).
PREFETCH = 2
# Batch exit codes: all jobs passed or were skipped; some failed; bad
# arguments or manifest; interrupted (128 + SIGTERM).
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 143

__all__ = ["batch", "discover", "read_manifest", "BatchError", "Summary", "main"]


class BatchError(ValueError):
    """The batch itself is wrong (a bad manifest line, two jobs writing into one
    directory, an unknown option); no job ran."""


class Interrupted(BaseException):
    """SIGTERM or Ctrl-C reached the driver."""


# ---- jobs ----

def _job(jid, module, inputs, output_dir, options):
    return {"id": jid, "module": str(module), "inputs": None if inputs is None else [str(p) for p in inputs],
            "output_dir": str(output_dir), "options": options}


def _listdir(fs, path):
    """(files, dirs) names of one directory, local or fsspec."""
    if fs is None:
        files, dirs = [], []
        with os.scandir(path) as it:
            for e in it:
                (dirs if e.is_dir() else files).append(e.name)
        return sorted(files), sorted(dirs)
    files, dirs = [], []
    for info in fs.ls(path, detail=True):
        name = info["name"].rstrip("/").rsplit("/", 1)[-1]
        (dirs if info["type"] == "directory" else files).append(name)
    return sorted(files), sorted(dirs)


def _module_stem(name):
    for s in MODULE_SUFFIXES:
        if name.endswith(s):
            return name[: -len(s)]
    return name


def _inputs_beside(files, prefix=""):
    """in<i>.npy / input<i>.npy of one module, in order. A gap (in0, in2) keeps
    the missing path, so the CLI reports it as a missing input."""
    found = {}
    for f in files:
        if not f.startswith(prefix):
            continue
        m = _INPUT_RE.match(f[len(prefix):])
        if m:
            found.setdefault(int(m.group(2)), []).append(f)
    if not found:
        return None
    style = "in" if any(f[len(prefix):].startswith("in") and not f[len(prefix):].startswith("input")
                        for fs_ in found.values() for f in fs_) else "input"
    names = []
    for i in range(max(found) + 1):
        have = found.get(i)
        if have:
            names.append(sorted(have)[0])
        else:
            names.append(f"{prefix}{style}{i}.npy")
    return names


def discover(root, output_dir=None, options=None):
    """The jobs of a directory tree (local path or fsspec URL). Each directory
    holding modules gives one job per module; inputs in<i>.npy / input<i>.npy
    beside a directory's single module are its inputs (with several modules,
    `<stem>.in<i>.npy`), else they are synthesized. Outputs go beside the
    module, or into `output_dir` mirroring the tree; a directory with several
    modules gets a subdirectory per module stem. Hidden directories and the
    output tree are not searched."""
    options = normalize_options(options)
    root = str(root)
    fs = None
    base = local_path(root)
    if is_url(root):
        fs, base = jobmod._fs(root)
        proto = root.split("://", 1)[0]
        if not fs.isdir(base):
            raise BatchError(f"{root}: not a directory")
    elif not os.path.isdir(base):
        raise BatchError(f"{root}: not a directory")
    out_root = None if output_dir is None else str(output_dir)
    skip = None
    if out_root is not None and not is_url(out_root) and fs is None:
        skip = os.path.realpath(local_path(out_root))
    jobs = []

    def url(p):
        return p if fs is None else f"{proto}://{p}"

    def walk(d, rel):
        files, dirs = _listdir(fs, d)
        modules = [f for f in files if f.endswith(MODULE_SUFFIXES) and not f.startswith(".")]
        for name in modules:
            stem = _module_stem(name)
            sub = [] if len(modules) == 1 else [stem]
            if len(modules) == 1:
                ins = _inputs_beside(files)
            else:
                ins = _inputs_beside(files, stem + ".")
            jid = "/".join(rel + sub) or stem
            mod = url(f"{d.rstrip('/')}/{name}" if fs else os.path.join(d, name))
            inputs = None if ins is None else [url(f"{d.rstrip('/')}/{n}" if fs else os.path.join(d, n)) for n in ins]
            out = join(out_root, *(rel + sub)) if out_root is not None else (
                url(f"{d.rstrip('/')}/{stem}" if fs else os.path.join(d, stem)) if sub else url(d))
            jobs.append(dict(_job(jid, mod, inputs, out, options), discovered=True))
        for sd in dirs:
            if sd.startswith("."):
                continue
            p = f"{d.rstrip('/')}/{sd}" if fs else os.path.join(d, sd)
            if skip is not None and os.path.realpath(p) == skip:
                continue
            if sub_is_output(p, files):
                continue
            walk(p, rel + [sd])

    def sub_is_output(p, files):
        # A multi-module directory's per-module output subdirectories.
        name = p.rstrip("/").rsplit("/", 1)[-1]
        return any(_module_stem(f) == name for f in files if f.endswith(MODULE_SUFFIXES)) and \
            sum(f.endswith(MODULE_SUFFIXES) for f in files) > 1

    walk(base, [])
    jobs.sort(key=lambda j: _natural(j["id"]))
    return jobs


def _natural(s):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def read_manifest(path, options=None):
    """The jobs of a JSON-lines manifest (blank lines and lines starting with #
    are skipped). `options` are defaults under each job's own options."""
    defaults = normalize_options(options)
    data = jobmod.read_bytes(path)
    if data is None:
        raise BatchError(f"{path}: no such directory or manifest file")
    base = os.path.dirname(local_path(path)) if not is_url(path) else str(path).rsplit("/", 1)[0]
    jobs, ids = [], collections.Counter()

    def resolve(p, where):
        if not isinstance(p, str) or not p:
            raise BatchError(f"{where}: expected a path, got {p!r}")
        if is_url(p) or p.startswith("file://") or os.path.isabs(p):
            return p
        return join(base, p)

    for lineno, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        where = f"{path}:{lineno}"
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            rec = json.loads(line)
        except ValueError as exc:
            raise BatchError(f"{where}: not JSON: {exc}") from None
        if not isinstance(rec, dict):
            raise BatchError(f"{where}: expected an object, got {type(rec).__name__}")
        unknown = set(rec) - jobmod._JOB_FIELDS
        if unknown:
            raise BatchError(f"{where}: unknown field(s) {', '.join(sorted(unknown))} "
                             f"(a job has module, inputs, output_dir, options)")
        if "module" not in rec:
            raise BatchError(f"{where}: no \"module\"")
        module = resolve(rec["module"], where + ": module")
        inputs = rec.get("inputs")
        if inputs is not None:
            if not isinstance(inputs, list):
                raise BatchError(f"{where}: \"inputs\" must be a list of paths or null")
            inputs = [resolve(p, f"{where}: inputs[{i}]") for i, p in enumerate(inputs)]
        out = rec.get("output_dir")
        out = resolve(out, where + ": output_dir") if out is not None else (
            module.rsplit("/", 1)[0] if is_url(module) else os.path.dirname(local_path(module)))
        try:
            opts = dict(defaults, **normalize_options(rec.get("options"), where + ": options"))
        except OptionError as exc:
            raise BatchError(str(exc)) from None
        jid = os.path.relpath(local_path(module), base) if not is_url(module) else module
        ids[jid] += 1
        if ids[jid] > 1:
            jid = f"{jid}#{ids[jid]}"
        jobs.append(_job(jid, module, inputs, out, dict(sorted(opts.items()))))
    return jobs


def _check_outputs_distinct(jobs):
    seen = {}
    for j in jobs:
        key = j["output_dir"] if is_url(j["output_dir"]) else os.path.realpath(local_path(j["output_dir"]))
        if key in seen:
            raise BatchError(f"jobs {seen[key]!r} and {j['id']!r} both write into {j['output_dir']} "
                             "(give each its own output_dir)")
        seen[key] = j["id"]


# ---- memory ----

def total_memory():
    """Physical memory, or the cgroup's limit when it is lower."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for p in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(p) as f:
                v = f.read().strip()
            if v.isdigit():
                total = min(total, int(v))
        except OSError:
            pass
    return total


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?i?b?)?\s*$", re.I)


def parse_size(s):
    """Bytes of '8G', '512MiB', '1.5GB', '70%' (of RAM), or a plain number."""
    if isinstance(s, (int, float)):
        return int(s)
    s = str(s).strip()
    if s.endswith("%"):
        return int(total_memory() * float(s[:-1]) / 100)
    m = _SIZE.match(s)
    if not m:
        raise BatchError(f"bad memory size {s!r} (e.g. 8G, 512M, 70%)")
    unit = (m.group(2) or "").lower().rstrip("b").rstrip("i")
    return int(float(m.group(1)) * (1024 ** " kmgt".index(unit or " ")))


def _fmt_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


# ---- planning: what to run, what to skip ----

def _plan(jobs, retry_failed):
    """Split jobs into (to_run, results of skipped and previously failed jobs)."""
    run, done = [], []
    for j in jobs:
        marker = jobmod.read_record(j["output_dir"], DONE_MARKER)
        error = jobmod.read_record(j["output_dir"], ERROR_RECORD) if marker is None else None
        if marker is None and error is None:
            if not retry_failed:
                run.append(j)
            continue
        if error is not None:
            # A failure is rerun with retry_failed, when its module, inputs or
            # options changed, or when it was no verdict on the module (a dead
            # worker, not enough memory); else it stands, reported again.
            if retry_failed or error.get("class") in (CRASHED, MEMORY) or error.get("hashes") != jobmod.job_hashes(j):
                run.append(j)
            else:
                done.append({"id": j["id"], "module": j["module"], "output_dir": j["output_dir"], "status": "failed",
                             "exit_code": error.get("exit_code"), "class": error.get("class", "internal"),
                             "message": error.get("message", ""), "seconds": 0.0, "previous": True})
        elif jobmod.marker_valid(j, marker, jobmod.job_hashes(j)):
            done.append({"id": j["id"], "module": j["module"], "output_dir": j["output_dir"], "status": "skipped",
                         "seconds": 0.0})
        elif not retry_failed:
            run.append(j)  # changed module, inputs or options, or an incomplete marker
    return run, done


# ---- progress ----

class _Progress:
    def __init__(self, total, enabled):
        self.counts = collections.Counter()
        self.bar = None
        if enabled:
            try:
                from tqdm import tqdm
            except ImportError:  # pragma: no cover - tqdm is in the batch extra
                tqdm = None
            if tqdm is not None:
                self.bar = tqdm(total=total, unit="job", dynamic_ncols=True, desc="goldens")

    def add(self, result):
        status = result["status"]
        self.counts[status] += 1
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix(done=self.counts["passed"], failed=self.counts["failed"],
                                 skipped=self.counts["skipped"], refresh=False)

    def close(self):
        if self.bar is not None:
            self.bar.close()


# ---- the local pool ----

def _worker_main(conn, log_path):
    """A spawned worker: runs jobs sent over `conn` until it gets None."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the driver decides when to stop
    # The CLI prints each failure on stderr (it is also in the result); keep
    # the terminal for the progress bar, and the log for a crash's last words.
    jobmod._scratch_dir = os.path.dirname(log_path)  # the driver removes it
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    while True:
        try:
            spec = conn.recv()
        except EOFError:
            return
        if spec is None:
            return
        try:
            res = jobmod.run_job(spec)
        except Exception as exc:  # noqa: BLE001 - the job's failure, not the worker's
            res = jobmod.record_failure(spec, 70, "internal", f"batch worker: {exc!r}\n{traceback.format_exc()}", 0.0)
        conn.send(res)


class _main_hidden:
    """Start a spawned worker without re-running the caller's __main__ in it
    (spawn imports the main script by its path or module name unless it has
    neither): a script that calls goldtrace.batch without an
    `if __name__ == "__main__":` guard must not run again in every worker. The
    workers need nothing from it: their target lives in this module."""

    def __enter__(self):
        self.main = sys.modules.get("__main__")
        self.saved = {k: self.main.__dict__[k] for k in ("__file__", "__spec__") if k in self.main.__dict__}
        if "__file__" in self.saved:
            del self.main.__file__
        self.main.__spec__ = None

    def __exit__(self, *exc):
        self.main.__dict__.pop("__spec__", None)
        self.main.__dict__.update(self.saved)
        return False


class _Worker:
    def __init__(self, ctx, logdir, n):
        self.log = os.path.join(logdir, f"worker{n}.log")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, self.log), daemon=True,
                                name=f"goldtrace-batch-{n}")
        with _main_hidden():
            self.proc.start()
        child.close()
        self.jobs = collections.deque()  # sent, not answered yet; the first one is running

    @property
    def job(self):
        return self.jobs[0] if self.jobs else None

    def stop(self, kill=False):
        if kill:
            self.proc.terminate()
        else:
            try:
                self.conn.send(None)
            except OSError:
                pass
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()

    def last_words(self):
        try:
            with open(self.log, "rb") as f:
                f.seek(0, 2)
                f.seek(max(0, f.tell() - 2000))
                return f.read().decode("utf-8", "replace").strip().splitlines()[-5:]
        except OSError:
            return []


class _LocalPool:
    """Spawned worker processes, one job each at a time, within a memory limit.
    The workers start as soon as the pool is made, so their imports overlap
    the driver's discovery and hashing."""

    def __init__(self, workers, max_memory):
        self.max_memory = max_memory
        self.n = max(1, min(workers, max(1, max_memory // WORKER_BASE_BYTES)))
        self.budget = max_memory - self.n * WORKER_BASE_BYTES
        self.ctx = multiprocessing.get_context("spawn")
        self.logdir = tempfile.mkdtemp(prefix="goldtrace-batch-")
        self.serial = iter(range(1 << 30))
        self.pool = [self._new() for _ in range(self.n)]
        self.interrupted = False
        self.closed = False

    def _new(self):
        return _Worker(self.ctx, self.logdir, next(self.serial))

    def close(self, interrupted=False):
        """Stop every worker; after an interruption, kill them and remove what
        their unfinished jobs left."""
        if self.closed:
            return
        self.closed = True
        for w in self.pool:
            w.stop(kill=interrupted or w.job is None)
        if interrupted:
            for w in self.pool:
                for j in w.jobs:
                    jobmod.clean_partial(j["output_dir"], j["options"])
        shutil.rmtree(self.logdir, ignore_errors=True)

    def run(self, jobs, on_result):
        estimates = {}
        for j in jobs:
            text = jobmod.module_text(j)
            estimates[j["id"]] = 0 if text is None else jobmod.estimate_peak_bytes(text, j["options"])
        budget = self.budget
        pending = collections.deque()
        for j in jobs:
            if estimates[j["id"]] > budget:
                on_result(jobmod.record_failure(
                    j, None, MEMORY, f"estimated peak memory {_fmt_bytes(estimates[j['id']])} exceeds the limit "
                    f"{_fmt_bytes(budget)} left for jobs (--max-memory {_fmt_bytes(self.max_memory)} less "
                    f"{self.n} worker(s) x {_fmt_bytes(WORKER_BASE_BYTES)}); raise --max-memory to run it", 0.0))
            else:
                pending.append(j)
        pool = self.pool
        used = 0
        # A worker holds up to PREFETCH jobs, so it starts the next one without
        # waiting for the driver; a queued job's estimate counts as running
        # (never more memory than allowed), and only small jobs queue.
        small = budget // (4 * self.n * PREFETCH)
        while pending or any(w.jobs for w in pool):
            for w in pool:
                while pending and len(w.jobs) < PREFETCH:
                    if w.jobs and estimates[w.jobs[-1]["id"]] > small:
                        break
                    # The first pending job that fits; the next one to fit when
                    # it does not (a large job waits for memory, small ones go on).
                    pick = next((j for j in pending if used + estimates[j["id"]] <= budget
                                 and (not w.jobs or estimates[j["id"]] <= small)), None)
                    if pick is None:
                        break
                    pending.remove(pick)
                    w.jobs.append(pick)
                    used += estimates[pick["id"]]
                    w.conn.send(pick)
            busy = [w for w in pool if w.jobs]
            ready = _mp_wait([w.conn for w in busy] + [w.proc.sentinel for w in busy])
            for w in busy:
                res = None
                if w.conn in ready:
                    try:
                        while w.jobs and w.conn.poll():
                            res = w.conn.recv()
                            used -= estimates[w.jobs.popleft()["id"]]
                            on_result(res)
                        if res is not None:
                            continue
                    except (EOFError, OSError):
                        res = None
                if w.proc.sentinel in ready or w.conn in ready:
                    w.proc.join(1)
                    if w.proc.is_alive():
                        continue
                    words = "; ".join(w.last_words())
                    how = f"signal {-w.proc.exitcode}" if (w.proc.exitcode or 0) < 0 else f"code {w.proc.exitcode}"
                    dead = w.jobs.popleft()
                    res = jobmod.record_failure(
                        dead, None, CRASHED, f"the worker process died ({how}) running this job"
                        + (f": {words}" if words else ""), 0.0)
                    jobmod.clean_partial(dead["output_dir"], dead["options"])
                    for j in reversed(w.jobs):  # queued behind it: not started, back to the queue
                        pending.appendleft(j)
                    used -= sum(estimates[j["id"]] for j in [dead, *w.jobs])
                    pool[pool.index(w)] = self._new()
                    on_result(res)


# ---- Dask ----

DASK_MEMORY_RESOURCE = "MEMORY"


def _run_dask(jobs, client, on_result):
    """One task per job. When every worker declares a MEMORY resource (bytes;
    `dask worker --resources MEMORY=8e9`), each task claims its job's estimated
    peak, so Dask runs together only what fits; a job larger than every
    worker's MEMORY fails as `memory` instead of waiting forever."""
    from distributed import as_completed

    workers = client.scheduler_info().get("workers", {})
    mems = [w.get("resources", {}).get(DASK_MEMORY_RESOURCE) for w in workers.values()]
    limit = max(mems) if mems and all(m is not None for m in mems) else None
    futures = {}
    for n, j in enumerate(jobs):
        kw = {}
        if limit is not None:
            text = jobmod.module_text(j)
            est = 0 if text is None else jobmod.estimate_peak_bytes(text, j["options"])
            if est > limit:
                on_result(jobmod.record_failure(
                    j, None, MEMORY, f"estimated peak memory {_fmt_bytes(est)} exceeds every Dask worker's "
                    f"{DASK_MEMORY_RESOURCE} resource (at most {_fmt_bytes(limit)})", 0.0))
                continue
            kw["resources"] = {DASK_MEMORY_RESOURCE: est}
        fut = client.submit(jobmod.run_job, j, key=f"goldtrace-job-{n}-{os.getpid()}-{time.time_ns()}",
                            pure=False, retries=0, **kw)
        futures[fut] = j
    try:
        for fut in as_completed(list(futures)):
            j = futures[fut]
            try:
                res = fut.result()
            except Exception as exc:  # noqa: BLE001 - a worker died (KilledWorker) or the task raised
                res = jobmod.record_failure(j, None, CRASHED, f"the Dask task failed: {type(exc).__name__}: {exc}", 0.0)
            on_result(res)
    except BaseException:
        client.cancel(list(futures))
        raise


# ---- the summary ----

class Summary(dict):
    """The batch's report: jobs, passed, failed, failed_by_class, skipped,
    seconds, slowest (five), results (one per job), interrupted. It is what
    summary.json holds; `table()` is the text the CLI prints."""

    @property
    def ok(self):
        return self["failed"] == 0 and not self["interrupted"]

    def table(self):
        lines = [f"goldtrace batch: {self['jobs']} job(s) in {self['seconds']:.2f} s"
                 + (" (interrupted)" if self["interrupted"] else "")]
        by = ", ".join(f"{k} {v}" for k, v in sorted(self["failed_by_class"].items()))
        rows = [("passed", self["passed"], ""), ("failed", self["failed"], f"  ({by})" if by else ""),
                ("skipped", self["skipped"], "  (done before, unchanged)" if self["skipped"] else "")]
        if self["not_run"]:
            rows.append(("not run", self["not_run"], ""))
        for name, n, extra in rows:
            lines.append(f"  {name:<8} {n:>7}{extra}")
        if self["slowest"]:
            lines.append("  slowest:")
            for s in self["slowest"]:
                lines.append(f"    {s['seconds']:9.3f} s  {s['id']}")
        failed = [r for r in self["results"] if r["status"] == "failed"]
        if failed:
            lines.append("  failures:")
            for r in failed[:20]:
                code = "" if r.get("exit_code") is None else f", exit {r['exit_code']}"
                prev = ", recorded earlier" if r.get("previous") else ""
                lines.append(f"    {r['id']}  [{r['class']}{code}{prev}] {r['message'].splitlines()[0] if r['message'] else ''}")
            if len(failed) > 20:
                lines.append(f"    ... and {len(failed) - 20} more (see {SUMMARY_FILE})")
        return "\n".join(lines)


def _summarize(jobs, results, seconds, interrupted):
    by_id = {r["id"]: r for r in results}
    ordered = [by_id[j["id"]] for j in jobs if j["id"] in by_id]
    counts = collections.Counter(r["status"] for r in ordered)
    classes = collections.Counter(r["class"] for r in ordered if r["status"] == "failed")
    ran = [r for r in ordered if r["status"] in ("passed", "failed") and not r.get("previous")]
    slowest = sorted(ran, key=lambda r: -r["seconds"])[:5]
    return Summary(
        jobs=len(jobs), passed=counts["passed"], failed=counts["failed"], failed_by_class=dict(sorted(classes.items())),
        skipped=counts["skipped"], not_run=len(jobs) - len(ordered), seconds=round(seconds, 3),
        slowest=[{"id": r["id"], "seconds": round(r["seconds"], 4)} for r in slowest],
        results=[dict(r, seconds=round(r["seconds"], 4)) for r in ordered], interrupted=interrupted,
    )


# ---- the API ----

def batch(source, *, output_dir=None, options=None, retry_failed=False, workers=None, max_memory="80%",
          client=None, scheduler=None, progress=None, summary_path=None):
    """Compute the goldens of many modules; returns a `Summary`.

    source: a directory tree (local path or fsspec URL), a JSON-lines manifest
        file (`*.jsonl`, `*.json`, or any file), or a list of job dicts with the
        manifest's fields.
    output_dir: for a tree, write each job's outputs here, mirroring the tree,
        instead of beside its module.
    options: single-module CLI flags (long names) for every job; a manifest
        job's own options take precedence.
    retry_failed: rerun only the jobs whose error record is current.
    workers: local worker processes (default: the usable cores).
    max_memory: the local pool's memory limit (bytes or '8G', '70%'); no job
        starts while the running jobs' estimated peaks plus the workers' own
        memory would exceed it. Default 80% of RAM.
    client / scheduler: a `dask.distributed.Client`, or a scheduler address
        ("tcp://host:8786"): run the jobs on that cluster instead.
    progress: show a tqdm bar (default: when stderr is a terminal).
    summary_path: where summary.json goes (default: the output tree, the
        source tree, or beside the manifest). False: nowhere.
    """
    t0 = time.time()
    old = signal.getsignal(signal.SIGTERM)
    in_main = _in_main_thread()
    if in_main:
        signal.signal(signal.SIGTERM, _raise_interrupted)
    pools = []

    def make_pool():
        # Started once the jobs to run are known: the workers' imports overlap
        # the memory estimates, and a run with nothing to do spawns nothing.
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        pools.append(_LocalPool(workers or cores, limit))
        return pools[0]

    try:
        limit = parse_size(max_memory if max_memory is not None else "80%")
        return _batch(source, t0, make_pool, output_dir, options, retry_failed, client, scheduler, progress,
                      summary_path)
    finally:
        for pool in pools:
            pool.close(interrupted=sys.exc_info()[0] is not None or pool.interrupted)
        if in_main:
            signal.signal(signal.SIGTERM, old)


def _batch(source, t0, make_pool, output_dir, options, retry_failed, client, scheduler, progress, summary_path):
    if isinstance(source, (list, tuple)):
        jobs = []
        defaults = normalize_options(options)
        for i, rec in enumerate(source):
            unknown = set(rec) - jobmod._JOB_FIELDS
            if unknown or "module" not in rec:
                raise BatchError(f"job {i}: needs module, may have inputs, output_dir, options; got {sorted(rec)}")
            absolute = lambda p: str(p) if is_url(p) else os.path.abspath(local_path(p))  # noqa: E731
            mod = absolute(rec["module"])
            if rec.get("output_dir"):
                rec = dict(rec, output_dir=absolute(rec["output_dir"]))
            if rec.get("inputs") is not None:
                rec = dict(rec, inputs=[absolute(p) for p in rec["inputs"]])
            out = rec.get("output_dir") or (mod.rsplit("/", 1)[0] if is_url(mod) else os.path.dirname(local_path(mod)))
            try:
                opts = dict(defaults, **normalize_options(rec.get("options"), f"job {i}: options"))
            except OptionError as exc:
                raise BatchError(str(exc)) from None
            jobs.append(_job(f"{i}:{os.path.basename(mod)}", mod, rec.get("inputs"), out, dict(sorted(opts.items()))))
        default_summary = None
    else:
        # Absolute paths: a Dask worker does not share the driver's directory.
        src = str(source) if is_url(source) else os.path.abspath(local_path(source))
        if output_dir is not None and not is_url(output_dir):
            output_dir = os.path.abspath(local_path(output_dir))
        try:
            is_dir = jobmod._fs(src)[0].isdir(jobmod._fs(src)[1]) if is_url(src) else os.path.isdir(local_path(src))
            if is_dir:
                jobs = discover(src, output_dir, options)
                default_summary = join(output_dir if output_dir is not None else src, SUMMARY_FILE)
            else:
                if output_dir is not None:
                    raise BatchError("output_dir applies to a tree; a manifest names each job's output_dir")
                jobs = read_manifest(src, options)
                default_summary = (src.rsplit("/", 1)[0] if is_url(src) else (os.path.dirname(local_path(src)) or ".")) \
                    + ("/" if is_url(src) else os.sep) + SUMMARY_FILE
        except OptionError as exc:
            raise BatchError(str(exc)) from None
    _check_outputs_distinct(jobs)

    to_run, results = _plan(jobs, retry_failed)
    if progress is None:
        progress = sys.stderr.isatty()
    bar = _Progress(len(jobs), progress)
    for r in results:
        bar.add(r)

    def on_result(r):
        results.append(r)
        bar.add(r)

    interrupted = False
    own_client = pool = None
    try:
        if to_run:
            if scheduler is not None and client is None:
                from distributed import Client

                client = own_client = Client(scheduler)
            if client is not None:
                _run_dask(to_run, client, on_result)
            else:
                pool = make_pool()
                pool.run(to_run, on_result)
    except (Interrupted, KeyboardInterrupt):
        interrupted = True
        if pool is not None:
            pool.interrupted = True
            pool.close(interrupted=True)
    finally:
        bar.close()
        if own_client is not None:
            own_client.close()
    summary = _summarize(jobs, results, time.time() - t0, interrupted)
    path = default_summary if summary_path is None else summary_path
    if path:
        jobmod.write_atomic(str(path), (json.dumps(summary, indent=1) + "\n").encode())
        summary["summary_path"] = str(path)
    return summary


def _in_main_thread():
    import threading

    return threading.current_thread() is threading.main_thread()


def _raise_interrupted(signum, frame):
    raise Interrupted()


# ---- the command line ----

def _parser():
    p = argparse.ArgumentParser(
        prog="infergoldens batch",
        description="Compute the goldens of every module of a directory tree (modular-flow nc*/sg*/ partitions, or "
                    "directories of *.hlo, *.hlo.txt, *.pb with in<i>.npy / input<i>.npy inputs) or of a JSON-lines "
                    "manifest, on a local process pool or a Dask cluster. Finished jobs are skipped on the next run "
                    "unless their module, inputs or options changed.",
        epilog="Exit codes: 0 every job passed or was skipped; 1 some job failed (each job's class -- usage, module, "
               "input, evaluation, output, internal as the single-module CLI's exit codes 2-6/70, or crashed, memory "
               "-- is in the summary and its goldtrace-error.json); 2 bad arguments or manifest; 143 interrupted.")
    p.add_argument("source", help="directory tree, or a JSON-lines manifest of jobs "
                                  '{"module", "inputs", "output_dir", "options"}; local paths or fsspec URLs')
    p.add_argument("-O", "--output-dir", help="write a tree's outputs here, mirroring the tree (default: beside each module)")
    p.add_argument("--retry-failed", action="store_true", help="rerun only the jobs that failed before")
    p.add_argument("-j", "--workers", type=int, help="local worker processes (default: the usable cores)")
    p.add_argument("--max-memory", default="80%", help="local memory limit, e.g. 8G or 70%% (default: 80%% of RAM)")
    p.add_argument("--scheduler", help="run on this Dask scheduler (tcp://host:8786) instead of locally")
    p.add_argument("--summary", help=f"where to write {SUMMARY_FILE} (default: the output or source tree, or beside "
                                     "the manifest)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--progress", dest="progress", action="store_true", default=None, help="show a progress bar")
    g.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    f = p.add_argument_group("single-module options, for every job (a manifest job's own options override them)")
    f.add_argument("-t", "--module-type", help="text, proto or snapshot (default: detect)")
    f.add_argument("-U", "--upcast-all-to-fp32", action="store_true")
    f.add_argument("-F", "--experimental-unsafe-fp8e4m3fn-as-fp8e4m3", action="store_true")
    f.add_argument("-u", "--unsafe-dtype-cast", action="store_true")
    f.add_argument("-s", "--save-intermediates", action="store_true")
    f.add_argument("-e", "--emulate-multiple-devices", type=int, nargs="?", const=-1, metavar="N")
    f.add_argument("-S", "--spmd", action="store_true")
    f.add_argument("--seed", type=int)
    return p


def main(argv=None):
    """`infergoldens batch ARGS`: returns the exit code."""
    p = _parser()
    a = p.parse_args(sys.argv[1:] if argv is None else argv)
    opts = {}
    for name in ("module_type", "upcast_all_to_fp32", "experimental_unsafe_fp8e4m3fn_as_fp8e4m3", "unsafe_dtype_cast",
                 "save_intermediates", "emulate_multiple_devices", "spmd", "seed"):
        v = getattr(a, name)
        if v is not None and v is not False:
            opts[name.replace("_", "-")] = v
    try:
        summary = batch(a.source, output_dir=a.output_dir, options=opts, retry_failed=a.retry_failed,
                        workers=a.workers, max_memory=a.max_memory, scheduler=a.scheduler, progress=a.progress,
                        summary_path=a.summary)
    except BatchError as exc:
        print(f"infergoldens batch: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (Interrupted, KeyboardInterrupt):
        print("infergoldens batch: interrupted before any job ran", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(summary.table())
    if "summary_path" in summary:
        print(f"  summary: {summary['summary_path']}")
    if summary["interrupted"]:
        return EXIT_INTERRUPTED
    return EXIT_OK if summary.ok else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
