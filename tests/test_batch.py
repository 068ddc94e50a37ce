"""goldtrace.batch / `infergoldens batch`: over a generated modular-flow tree of a
few hundred small modules and a manifest, on the local spawn pool and on a real
dask.distributed.LocalCluster, every golden equals the single-module CLI's byte
for byte (and numpy's where it has an answer); a run killed by SIGTERM leaves no
partial output and a restart finishes only the rest; a corrupt module and a
missing input fail alone with their CLI exit-code class."""

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

goldtrace = pytest.importorskip("goldtrace")
from goldtrace import batch as gt_batch  # noqa: E402
from goldtrace import _batch as batchmod  # noqa: E402
from goldtrace import _batchjob as jobmod  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import batch_modules as bm  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG_PARENT = os.path.dirname(os.path.dirname(goldtrace.__file__))
N_TREE = 240
CORRUPT = "nc01/sg07"
GAP = "nc02/sg11"  # in0.npy and in2.npy, no in1.npy


def _env():
    return dict(os.environ, PYTHONPATH=PKG_PARENT + os.pathsep + os.environ.get("PYTHONPATH", ""))


@pytest.fixture(scope="session")
def cli(tmp_path_factory):
    """The single-module CLI, built from this tree's cmd/infergoldens."""
    if shutil.which("go") is None:
        pytest.skip("needs the Go toolchain")
    out = str(tmp_path_factory.mktemp("bin") / "infergoldens")
    cmd = ["go", "build", "-o", out, "./cmd/infergoldens"]
    if subprocess.run(cmd, cwd=ROOT, env=dict(os.environ, GOEXPERIMENT="simd")).returncode != 0:
        subprocess.run(cmd, cwd=ROOT, check=True)
    return out


def _cli_ref(cli, module, inputs, out, flags=()):
    cmd = [cli, "-m", module, "-O", out, *flags]
    for p in inputs:
        cmd += ["-i", p]
    return subprocess.run(cmd, capture_output=True, text=True)


def _inputs_of(d):
    return [os.path.join(d, f) for f in sorted(os.listdir(d), key=lambda f: (len(f), f))
            if f.endswith(".npy") and (f.startswith("in") or f.startswith("input"))]


@pytest.fixture(scope="session")
def tree(tmp_path_factory, cli):
    """The generated tree (pristine; tests copy it) and the CLI's goldens per job."""
    root = str(tmp_path_factory.mktemp("tree") / "model")
    jobs = bm.write_tree(root, N_TREE)
    with open(os.path.join(root, CORRUPT, "model.hlo"), "w") as f:
        f.write("HloModule broken\n\nENTRY main {\n  a = f32[4] parameter(0)\n  ROOT r = f32[4] add(a, a\n}\n")
    gap = os.path.join(root, GAP)
    for f in glob.glob(os.path.join(gap, "in*.npy*")):
        os.unlink(f)
    goldtrace.save_npy(os.path.join(gap, "in0.npy"), np.ones((3, 5), np.float32))
    goldtrace.save_npy(os.path.join(gap, "in2.npy"), np.ones((3, 5), np.float32))
    refs = {}
    ref_root = str(tmp_path_factory.mktemp("ref"))
    for rel, (d, want) in jobs.items():
        if rel in (CORRUPT, GAP):
            continue
        out = os.path.join(ref_root, rel)
        res = _cli_ref(cli, os.path.join(d, "model.hlo"), _inputs_of(d), out)
        assert res.returncode == 0, (rel, res.stderr)
        refs[rel] = (out, want)
    return root, refs


def _copy(tree, dst):
    shutil.copytree(tree[0], dst)
    return str(dst)


def _assert_same_files(ref_dir, out_dir, rel):
    names = sorted(f for f in os.listdir(ref_dir))
    assert names, rel
    for n in names:
        with open(os.path.join(ref_dir, n), "rb") as a, open(os.path.join(out_dir, n), "rb") as b:
            assert a.read() == b.read(), f"{rel}/{n} differs from the single-module CLI's"


def _check_tree(refs, out_root, src_root=None):
    """Every job's outputs are the CLI's bytes and numpy's values; the marker is there."""
    for rel, (ref, want) in refs.items():
        out = os.path.join(out_root, rel)
        _assert_same_files(ref, out, rel)
        assert os.path.exists(os.path.join(out, jobmod.DONE_MARKER)), rel
        if want is not None:
            for i, w in enumerate(want):
                got = goldtrace.load_npy(os.path.join(out, f"value_output{i}.npy"))
                assert got.dtype == w.dtype and got.tobytes() == w.tobytes(), rel


def _check_failures(summary, out_root):
    by = {r["id"]: r for r in summary["results"]}
    assert by[CORRUPT]["status"] == "failed" and by[CORRUPT]["class"] == "module" and by[CORRUPT]["exit_code"] == 3
    assert "model.hlo:6" in by[CORRUPT]["message"], by[CORRUPT]["message"]
    assert by[GAP]["status"] == "failed" and by[GAP]["class"] == "input" and by[GAP]["exit_code"] == 4
    assert "in1.npy" in by[GAP]["message"] and "no such file" in by[GAP]["message"]
    for rel in (CORRUPT, GAP):
        d = os.path.join(out_root, rel)
        assert not glob.glob(os.path.join(d, "value_output*")), f"{rel}: partial outputs left"
        assert not os.path.exists(os.path.join(d, jobmod.DONE_MARKER))
        rec = json.load(open(os.path.join(d, jobmod.ERROR_RECORD)))
        assert rec["exit_code"] == by[rel]["exit_code"] and rec["message"] == by[rel]["message"]
    assert summary["failed"] == 2 and summary["failed_by_class"] == {"input": 1, "module": 1}


def _markers(root):
    return {os.path.relpath(os.path.dirname(p), root): (os.stat(p).st_mtime_ns, open(p).read())
            for p in glob.glob(os.path.join(root, "**", jobmod.DONE_MARKER), recursive=True)}


def test_local_pool_tree_resume_and_retry(tree, tmp_path):
    root = _copy(tree, tmp_path / "model")
    refs = tree[1]
    s = gt_batch(root, workers=2, progress=False)
    assert s["jobs"] == N_TREE and s["passed"] == N_TREE - 2 and s["skipped"] == 0 and not s["interrupted"]
    _check_tree(refs, root)
    _check_failures(s, root)
    on_disk = json.load(open(os.path.join(root, "summary.json")))
    assert on_disk["passed"] == s["passed"] and on_disk["failed_by_class"] == s["failed_by_class"]
    assert len(on_disk["slowest"]) == 5 and on_disk["slowest"][0]["seconds"] >= on_disk["slowest"][-1]["seconds"]

    # Unchanged: nothing reruns; the failures stay reported without rerunning.
    before = _markers(root)
    s2 = gt_batch(root, workers=2, progress=False)
    assert s2["skipped"] == N_TREE - 2 and s2["passed"] == 0 and s2["failed"] == 2
    assert all(r.get("previous") for r in s2["results"] if r["status"] == "failed")
    assert _markers(root) == before

    # A changed module and a changed input rerun, nothing else.
    mod = os.path.join(root, "nc00/sg00/model.hlo")
    with open(mod, "a") as f:
        f.write("\n")
    x = goldtrace.load_npy(os.path.join(root, "nc00/sg01/in0.npy"))
    goldtrace.save_npy(os.path.join(root, "nc00/sg01/in0.npy"), x + 1)
    s3 = gt_batch(root, workers=2, progress=False)
    ran = sorted(r["id"] for r in s3["results"] if r["status"] == "passed")
    assert ran == ["nc00/sg00", "nc00/sg01"] and s3["failed"] == 2
    after = _markers(root)
    assert {k for k in after if after[k] != before[k]} == {"nc00/sg00", "nc00/sg01"}
    got = goldtrace.load_npy(os.path.join(root, "nc00/sg01/value_output0.npy"))
    y = goldtrace.load_npy(os.path.join(root, "nc00/sg01/in1.npy"))
    np.testing.assert_array_equal(got, (x + 1) + y)  # job 1 is s32 add

    # --retry-failed reruns only the failed ones: fix one, the other fails again.
    shutil.copy(os.path.join(root, "nc00/sg00/model.hlo"), os.path.join(root, CORRUPT, "model.hlo"))
    for f in glob.glob(os.path.join(root, CORRUPT, "in*.npy")):
        os.unlink(f)
    for i, a in enumerate([np.ones((4,), np.float32), np.full((4,), 2, np.float32)]):
        goldtrace.save_npy(os.path.join(root, CORRUPT, f"in{i}.npy"), a)
    s4 = gt_batch(root, workers=2, progress=False, retry_failed=True)
    assert [r["id"] for r in s4["results"] if r["status"] == "passed"] == [CORRUPT]
    assert [r["id"] for r in s4["results"] if r["status"] == "failed" and not r.get("previous")] == [GAP]
    assert s4["skipped"] == N_TREE - 2
    assert not os.path.exists(os.path.join(root, CORRUPT, jobmod.ERROR_RECORD))
    s5 = gt_batch(root, workers=2, progress=False)
    assert s5["skipped"] == N_TREE - 1 and [r["id"] for r in s5["results"] if r.get("previous")] == [GAP]


def test_output_dir_mirrors_tree_and_cli_entry_point(tree, tmp_path):
    root = _copy(tree, tmp_path / "model")
    out = str(tmp_path / "goldens")
    res = subprocess.run([sys.executable, "-m", "goldtrace.cli", "batch", root, "-O", out, "-j", "2", "--no-progress"],
                         capture_output=True, text=True, env=_env())
    assert res.returncode == 1, res.stderr  # two jobs fail
    assert "failed         2  (input 1, module 1)" in res.stdout and "slowest:" in res.stdout
    _check_tree(tree[1], out)
    summary = json.load(open(os.path.join(out, "summary.json")))
    _check_failures(summary, out)
    assert not glob.glob(os.path.join(root, "**", "value_output*"), recursive=True), "wrote into the source tree"


def _manifest(tmp_path, cli):
    """A manifest over a few modules with per-job options, and the CLI's goldens."""
    lib = tmp_path / "lib"
    lib.mkdir()
    lines, refs = [], {}
    for k in range(12):
        text, xs, _ = bm.module(k)
        mod = lib / f"m{k}.hlo"
        mod.write_text(text)
        inputs = []
        for i, x in enumerate(xs):
            goldtrace.save_npy(lib / f"m{k}_x{i}.npy", x)
            inputs.append(f"lib/m{k}_x{i}.npy")
        opts = [{}, {"upcast-all-to-fp32": True}, {"seed": 7}, {"save_intermediates": True}, {"U": True, "seed": 3}][k % 5]
        if k % 5 == 3 and not xs:
            opts = {"output": ["first.npy", "second.npy"]}
        lines.append(json.dumps({"module": f"lib/m{k}.hlo", "inputs": inputs or None, "output_dir": f"out/j{k}",
                                 "options": opts}))
        flags = jobmod.cli_flags(jobmod.normalize_options(opts))
        ref = str(tmp_path / "ref" / f"j{k}")
        res = _cli_ref(cli, str(mod), [str(tmp_path / p) for p in inputs], ref, flags)
        assert res.returncode == 0, res.stderr
        refs[f"lib/m{k}.hlo"] = (ref, str(tmp_path / "out" / f"j{k}"))
    # A missing input file named by a job.
    lines.append(json.dumps({"module": "lib/m0.hlo", "inputs": ["lib/m0_x0.npy", "lib/nope.npy"], "output_dir": "out/bad"}))
    (tmp_path / "jobs.jsonl").write_text("\n".join(lines) + "\n")
    return str(tmp_path / "jobs.jsonl"), refs


def test_manifest_local(tmp_path, cli):
    manifest, refs = _manifest(tmp_path, cli)
    s = gt_batch(manifest, workers=2, progress=False)
    assert s["passed"] == 12 and s["failed"] == 1 and s["failed_by_class"] == {"input": 1}
    bad = [r for r in s["results"] if r["status"] == "failed"][0]
    assert "nope.npy" in bad["message"] and bad["exit_code"] == 4
    for jid, (ref, out) in refs.items():
        _assert_same_files(ref, out, jid)
    assert os.path.exists(tmp_path / "summary.json")
    assert os.path.exists(tmp_path / "out" / "j3" / "intermediates.json")
    assert gt_batch(manifest, workers=2, progress=False)["skipped"] == 12


def test_plain_directory_of_modules(tmp_path, cli):
    jax = pytest.importorskip("jax")
    d = tmp_path / "mods"
    d.mkdir()
    text_a, xs_a, want_a = bm.module(0)
    (d / "a.hlo").write_text(text_a)
    for i, x in enumerate(xs_a):
        goldtrace.save_npy(d / f"a.in{i}.npy", x)
    (d / "b.hlo.txt").write_text(bm.module(3)[0])  # synthesized inputs
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    lowered = jax.jit(lambda v: jax.numpy.tanh(v) * 2).lower(x)
    (d / "c.pb").write_bytes(lowered.compiler_ir("hlo").as_serialized_hlo_module_proto())
    goldtrace.save_npy(d / "c.input0.npy", x)
    sub = d / "one"
    sub.mkdir()
    (sub / "only.hlo").write_text(text_a)
    for i, v in enumerate(xs_a):
        goldtrace.save_npy(sub / f"input{i}.npy", v)

    s = gt_batch(str(d), workers=2, progress=False)
    assert sorted(r["id"] for r in s["results"]) == ["a", "b", "c", "one"] and s["passed"] == 4, s.table()
    cases = {"a": (d / "a.hlo", [d / f"a.in{i}.npy" for i in range(len(xs_a))], d / "a"),
             "b": (d / "b.hlo.txt", [], d / "b"),
             "c": (d / "c.pb", [d / "c.input0.npy"], d / "c"),
             "one": (sub / "only.hlo", [sub / f"input{i}.npy" for i in range(len(xs_a))], sub)}
    for jid, (mod, ins, out) in cases.items():
        ref = str(tmp_path / "ref" / jid)
        res = _cli_ref(cli, str(mod), [str(p) for p in ins], ref)
        assert res.returncode == 0, res.stderr
        _assert_same_files(ref, str(out), jid)
    np.testing.assert_array_equal(goldtrace.load_npy(d / "a" / "value_output0.npy"), want_a[0])
    np.testing.assert_allclose(goldtrace.load_npy(d / "c" / "value_output0.npy"), np.asarray(jax.jit(
        lambda v: jax.numpy.tanh(v) * 2)(x)), rtol=0, atol=0)
    # The per-module output directories are not searched as inputs of the tree.
    assert gt_batch(str(d), workers=2, progress=False)["skipped"] == 4


def test_manifest_errors_name_the_line(tmp_path):
    m = tmp_path / "jobs.jsonl"
    m.write_text('{"module": "a.hlo"}\n{"module": "b.hlo", "options": {"upcast": true}}\n')
    with pytest.raises(batchmod.BatchError, match=r"jobs.jsonl:2: options: unknown flag 'upcast'"):
        gt_batch(str(m))
    m.write_text('{"module": "a.hlo"}\n\n{"module": "b.hlo",\n')
    with pytest.raises(batchmod.BatchError, match=r"jobs.jsonl:3: not JSON"):
        gt_batch(str(m))
    m.write_text('{"module": "a.hlo", "output_dir": "o"}\n{"module": "b.hlo", "output_dir": "o"}\n')
    with pytest.raises(batchmod.BatchError, match="both write into"):
        gt_batch(str(m))
    with pytest.raises(batchmod.BatchError, match="nowhere: no such directory or manifest file"):
        gt_batch(str(tmp_path / "nowhere"))
    m.write_text('{"module": "a.hlo", "options": {"input": "x.npy"}}\n')
    res = subprocess.run([sys.executable, "-m", "goldtrace.cli", "batch", str(m)], capture_output=True, text=True, env=_env())
    assert res.returncode == 2 and "jobs.jsonl:1" in res.stderr and "job fields" in res.stderr
    assert not (tmp_path / "summary.json").exists()


def test_sigterm_then_restart_finishes_the_rest(tmp_path, cli):
    root = str(tmp_path / "slow")
    n = 40
    jobs = bm.write_tree(root, n, per_nc=20, make=lambda k: (bm.slow_module(k, 60000),
                                                              [np.linspace(-1, 1, 64, dtype=np.float32) + k], None))
    cmd = [sys.executable, "-m", "goldtrace.cli", "batch", root, "-j", "2", "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    deadline = time.time() + 300
    while len(_markers(root)) < n // 4 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    done = _markers(root)
    assert proc.returncode == 143, (out, err)
    assert n // 4 <= len(done) < n, len(done)
    assert "(interrupted)" in out
    # Nothing partial: a job directory has a done-marker and all its outputs, or no outputs at all.
    assert not glob.glob(os.path.join(root, "**", ".infergoldens-tmp-*"), recursive=True)
    assert not glob.glob(os.path.join(root, "**", ".goldtrace-tmp-*"), recursive=True)
    for rel, (d, _) in jobs.items():
        outs = glob.glob(os.path.join(d, "value_output*"))
        if rel in done:
            assert [os.path.basename(p) for p in outs] == ["value_output0.npy"]
        else:
            assert outs == [], f"{rel}: partial output without a done-marker"
            assert not os.path.exists(os.path.join(d, jobmod.ERROR_RECORD))
    assert json.load(open(os.path.join(root, "summary.json")))["interrupted"] is True

    s = gt_batch(root, workers=2, progress=False)
    assert s["skipped"] == len(done) and s["passed"] == n - len(done) and s["failed"] == 0
    after = _markers(root)
    assert all(after[k] == done[k] for k in done), "a finished job was redone"
    for rel, (d, _) in list(jobs.items())[::7]:
        ref = str(tmp_path / "ref" / rel)
        assert _cli_ref(cli, os.path.join(d, "model.hlo"), _inputs_of(d), ref).returncode == 0
        _assert_same_files(ref, d, rel)


def test_dead_worker_fails_its_job_alone(tmp_path):
    import multiprocessing
    import threading

    root = str(tmp_path / "slow")
    n = 4
    # Each job must outlive the worker's start-up plus the second below by a
    # wide margin, on a fast quiet machine too: loop steps keep getting
    # cheaper (issue 12; 400000 steps took 0.13 s at 0.3 us a step), so the
    # count leaves a factor of ~10 over today's ~3.5 s per job.
    bm.write_tree(root, n, per_nc=n, make=lambda k: (bm.slow_module(k, 12_000_000), [np.ones(64, np.float32)], None))
    killed = []

    def kill_one():
        deadline = time.time() + 120
        while time.time() < deadline:
            ws = [p for p in multiprocessing.active_children() if p.name.startswith("goldtrace-batch-")]
            if ws:
                time.sleep(1.0)  # it has a job by now: the driver hands them out on start
                os.kill(ws[0].pid, signal.SIGKILL)
                killed.append(ws[0].pid)
                return
            time.sleep(0.01)

    t = threading.Thread(target=kill_one)
    t.start()
    s = gt_batch(root, workers=2, progress=False)
    t.join()
    assert killed
    crashed = [r for r in s["results"] if r["status"] == "failed"]
    assert len(crashed) == 1 and crashed[0]["class"] == "crashed" and "signal 9" in crashed[0]["message"], crashed
    assert s["passed"] == n - 1
    d = os.path.join(root, crashed[0]["id"])
    assert not glob.glob(os.path.join(d, "value_output*")) and not glob.glob(os.path.join(d, ".infergoldens-tmp-*"))
    # A crash is not a verdict on the module: the next run retries it.
    s2 = gt_batch(root, workers=2, progress=False)
    assert s2["passed"] == 1 and s2["skipped"] == n - 1


def test_script_without_main_guard(tmp_path):
    # Spawned workers must not re-run the calling script (it would batch again in each).
    bm.write_tree(str(tmp_path / "t"), 4)
    script = tmp_path / "run.py"
    script.write_text("import goldtrace, os\n"
                      "open(os.path.join(os.path.dirname(__file__), 'runs.txt'), 'a').write('x')\n"
                      "s = goldtrace.batch(os.path.join(os.path.dirname(__file__), 't'), workers=2, progress=False)\n"
                      "print(s['passed'])\n")
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=_env(), timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "4" and (tmp_path / "runs.txt").read_text() == "x"


def test_progress_bar_counts(tmp_path, capsys):
    root = str(tmp_path / "t")
    bm.write_tree(root, 6)
    gt_batch(root, workers=1, progress=True)
    gt_batch(root, workers=1, progress=True)
    err = capsys.readouterr().err
    assert "6/6" in err and "done=6" in err and "skipped=6" in err and "job/s" in err


_PROBE = r"""
import json, sys
from goldtrace import cli, _batchjob
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM"):
            return int(line.split()[1]) * 1024
before = hwm()
code = cli.main(["-m", sys.argv[1], "-O", sys.argv[2]])
print(json.dumps({"code": code, "peak": hwm() - before, "estimate": _batchjob.estimate_peak_bytes(open(sys.argv[1]).read())}))
"""

_MEM_MODULES = {
    "negate": "ENTRY main {\n  a = f32[2048,2048] parameter(0)\n  ROOT r = f32[2048,2048] negate(a)\n}\n",
    "bf16": "ENTRY main {\n  a = f32[2048,2048] parameter(0)\n  b = bf16[2048,2048] convert(a)\n"
            "  c = bf16[] constant(3)\n  cb = bf16[2048,2048] broadcast(c), dimensions={}\n"
            "  m = bf16[2048,2048] multiply(b, cb)\n  ROOT r = f32[2048,2048] convert(m)\n}\n",
    "concat": "ENTRY main {\n  a = f32[2048,2048] parameter(0)\n  b = f32[2048,2048] add(a, a)\n"
              "  c = f32[2048,2048] multiply(a, b)\n  k = f32[6144,2048] concatenate(a, b, c), dimensions={0}\n"
              "  ROOT t = f32[2048,6144] transpose(k), dimensions={1,0}\n}\n",
}


@pytest.mark.parametrize("name", sorted(_MEM_MODULES))
def test_memory_estimate_bounds_the_measured_peak(tmp_path, name):
    mod = tmp_path / f"{name}.hlo"
    mod.write_text(f"HloModule {name}\n\n" + _MEM_MODULES[name])
    res = subprocess.run([sys.executable, "-c", _PROBE, str(mod), str(tmp_path / "out")], capture_output=True,
                         text=True, env=_env())
    assert res.returncode == 0, res.stderr
    r = json.loads(res.stdout)
    assert r["code"] == 0
    # The measured growth of the process's resident high-water mark is real
    # (the module's values are tens of MB) and under the estimate, which is
    # not absurdly loose either.
    assert 16 << 20 < r["peak"] <= r["estimate"] <= 4 * r["peak"], r


def test_memory_limit(tmp_path):
    # Each big job holds two f32[2048,2048] values (16 MiB each) at once.
    big = ("HloModule big\n\nENTRY main {\n  a = f32[2048,2048] parameter(0)\n"
           "  ROOT r = f32[2048,2048] negate(a)\n}\n")
    est = jobmod.estimate_peak_bytes(big)
    assert 2 * 16 << 20 <= est <= 8 * 16 << 20
    huge = big.replace("2048,2048", "8192,8192")
    slack = jobmod._JOB_SLACK
    assert jobmod.estimate_peak_bytes(huge) - slack == 16 * (est - slack)
    assert jobmod.estimate_peak_bytes(big, {"emulate-multiple-devices": 4}) - slack == 4 * (est - slack)
    jobs = []
    for name, text in [("b1", big), ("b2", big), ("b3", big), ("h", huge)]:
        d = tmp_path / name
        d.mkdir()
        (d / "m.hlo").write_text(text)
        jobs.append({"module": str(d / "m.hlo"), "output_dir": str(d)})
    # Room for the two workers and one big job, not two, not the huge one.
    limit = 2 * batchmod.WORKER_BASE_BYTES + est + est // 2
    s = gt_batch(jobs, workers=2, max_memory=limit, progress=False, summary_path=False)
    by = {r["id"].split(":")[0]: r for r in s["results"]}
    assert by["3"]["status"] == "failed" and by["3"]["class"] == "memory" and "--max-memory" in by["3"]["message"]
    assert not (tmp_path / "h" / "value_output0.npy").exists()
    spans = sorted((by[i]["started"], by[i]["finished"]) for i in "012")
    assert all(r["status"] == "passed" for r in (by["0"], by["1"], by["2"]))
    for (s0, f0), (s1, f1) in zip(spans, spans[1:]):
        assert f0 <= s1, "two jobs ran together beyond the memory limit"
    # The memory failure is not sticky: with room, it runs.
    s2 = gt_batch(jobs[3:], workers=1, max_memory="20G", progress=False, summary_path=False)
    assert s2["passed"] == 1
    a = goldtrace.load_npy(tmp_path / "h" / "value_output0.npy")
    assert a.shape == (8192, 8192)


def test_parse_size():
    assert batchmod.parse_size("8G") == 8 << 30
    assert batchmod.parse_size("512MiB") == 512 << 20
    assert batchmod.parse_size(1000) == 1000
    assert 0 < batchmod.parse_size("50%") < batchmod.total_memory()
    with pytest.raises(batchmod.BatchError, match="bad memory size"):
        batchmod.parse_size("lots")


DASK_WORKER_MEMORY = 400e6


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("distributed")
    # Each worker declares 400 MB of the MEMORY resource the runner claims per job.
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=2, processes=True, dashboard_address=":0",
                                       resources={"MEMORY": DASK_WORKER_MEMORY},
                                       env={"PYTHONPATH": PKG_PARENT + os.pathsep + os.environ.get("PYTHONPATH", "")})
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


def test_dask_tree_and_manifest(tree, tmp_path, cli, dask_client):
    # fsspec URLs: the workers stage the modules and inputs, and upload the outputs.
    root = "local://" + _copy(tree, tmp_path / "model")
    out = "local://" + str(tmp_path / "goldens")
    s = gt_batch(root, output_dir=out, client=dask_client, progress=False)
    assert s["passed"] == N_TREE - 2 and s["skipped"] == 0
    _check_tree(tree[1], str(tmp_path / "goldens"))
    _check_failures(s, str(tmp_path / "goldens"))
    ran_on = dask_client.run(os.getpid)
    assert len(ran_on) == 2 and os.getpid() not in ran_on.values()
    assert gt_batch(root, output_dir=out, client=dask_client, progress=False)["skipped"] == N_TREE - 2

    mdir = tmp_path / "m"
    mdir.mkdir()
    manifest, refs = _manifest(mdir, cli)
    # A relative manifest path: the workers, in another directory, get absolute paths.
    res = subprocess.run([sys.executable, "-m", "goldtrace.cli", "batch", os.path.basename(manifest), "--scheduler",
                          dask_client.scheduler.address, "--no-progress"], capture_output=True, text=True, env=_env(),
                         cwd=os.path.dirname(manifest))
    assert res.returncode == 1, res.stderr
    for jid, (ref, o) in refs.items():
        _assert_same_files(ref, o, jid)
    summary = json.load(open(mdir / "summary.json"))
    assert summary["passed"] == 12 and summary["failed_by_class"] == {"input": 1}


def test_dask_memory_resource(tmp_path, dask_client):
    # Two jobs of ~232 MB estimated peak each: one at a time per worker (400 MB
    # of MEMORY), never two on one worker although each has two threads; a
    # job estimated over any worker's MEMORY fails at once instead of waiting.
    big = ("HloModule big\n\nENTRY main {\n  a = f32[3000,3000] parameter(0)\n"
           "  ROOT r = f32[3000,3000] negate(a)\n}\n")
    est = jobmod.estimate_peak_bytes(big)
    assert DASK_WORKER_MEMORY / 2 < est < DASK_WORKER_MEMORY
    jobs = []
    for k, text in enumerate([big] * 4 + [big.replace("3000,3000", "9000,9000")]):
        d = tmp_path / f"j{k}"
        d.mkdir()
        (d / "m.hlo").write_text(text)
        jobs.append({"module": str(d / "m.hlo"), "output_dir": str(d)})
    s = gt_batch(jobs, client=dask_client, progress=False, summary_path=False)
    by = {r["id"].split(":")[0]: r for r in s["results"]}
    assert by["4"]["status"] == "failed" and by["4"]["class"] == "memory" and "MEMORY" in by["4"]["message"]
    assert [by[str(k)]["status"] for k in range(4)] == ["passed"] * 4
    spans = sorted((by[str(k)]["started"], by[str(k)]["finished"]) for k in range(4))
    # At most two (one per worker) ran at any moment.
    for i, (st, _) in enumerate(spans):
        assert sum(1 for s0, f0 in spans if s0 <= st < f0) <= 2



def test_dask_sigterm_then_restart(tmp_path, dask_client):
    root = str(tmp_path / "slow")
    n = 24
    jobs = bm.write_tree(root, n, per_nc=12, make=lambda k: (bm.slow_module(k, 60000),
                                                              [np.linspace(-1, 1, 64, dtype=np.float32) - k], None))
    cmd = [sys.executable, "-m", "goldtrace.cli", "batch", root, "--scheduler", dask_client.scheduler.address,
           "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    deadline = time.time() + 300
    while len(_markers(root)) < n // 4 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, (out, err)
    # Tasks already running on the workers finish (Dask cannot stop them);
    # wait for the cluster to go idle before looking.
    deadline = time.time() + 120
    while sum(len(v) for v in dask_client.processing().values()) and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)
    done = _markers(root)
    assert n // 4 <= len(done) < n, len(done)
    for rel, (d, _) in jobs.items():
        outs = glob.glob(os.path.join(d, "value_output*"))
        assert glob.glob(os.path.join(d, ".infergoldens-tmp-*")) == []
        assert (outs != []) == (rel in done), f"{rel}: outputs without a done-marker, or a marker without outputs"
    s = gt_batch(root, client=dask_client, progress=False)
    assert s["skipped"] == len(done) and s["passed"] == n - len(done) and s["failed"] == 0
    after = _markers(root)
    assert all(after[k] == done[k] for k in done), "a finished job was redone"


def test_go_binary_hands_batch_to_python(tmp_path, cli):
    root = str(tmp_path / "t")
    bm.write_tree(root, 3)
    env = dict(_env(), GOLDTRACE_PYTHON=sys.executable)
    res = subprocess.run([cli, "batch", root, "--no-progress"], capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    assert "passed         3" in res.stdout and os.path.exists(os.path.join(root, "nc00/sg02", jobmod.DONE_MARKER))
    res = subprocess.run([cli, "batch", root], capture_output=True, text=True,
                         env=dict(env, GOLDTRACE_PYTHON=str(tmp_path / "no-python")))
    assert res.returncode == 2 and "pip install goldtrace" in res.stderr and "no-python" in res.stderr
