"""Observing a command: the control run and the clear errors of bad commands (CPU, interpreter).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from argusdb.cli import main
from argusdb.collectors.regions import ProgramSource
from argusdb.errors import UsageError
from argusdb.observe.runner.backends import Job
from argusdb.observe.runner.command import CommandBackend, CommandFailed

PROGRAMS = Path(__file__).resolve().parents[1] / "data" / "programs"
MODEL = PROGRAMS / "model"
SMALL = ["--tokens", "16", "--dim", "64", "--blocks", "1", "--steps", "2"]

pytest.importorskip("torch")
pytest.importorskip("triton")


@pytest.fixture(autouse=True)
def _interpret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def discover(argv: list[str], cwd: Path, tmp_path: Path, kernel: str = "layernorm_fwd",
             program: str = "fused_norm") -> dict:
    job = Job("find_launch", ProgramSource.from_path(MODEL / "fused_norm.py"), None, None,
              "command", {}, {"kernel": kernel, "program": program, "launches_warmup": 5},
              tmp_path / "find_launch")
    return CommandBackend(argv, cwd).run(job).detail


def test_control_run_finds_binary_launch_and_module(tmp_path: Path) -> None:
    d = discover([sys.executable, "model.py", *SMALL], MODEL, tmp_path)
    assert d["module_file"] == str((MODEL / "fused_norm.py").resolve())
    assert d["module_sha256"] == ProgramSource.from_path(MODEL / "fused_norm.py").sha256
    # 2 steps + the program's check: 3 launches, so the measured one is the last (index 2)
    assert d["launches"] == {"total": 3, "program": 3, "autotune": 0, "of_binary": 3,
                           "captured": 0}
    assert d["measure_index"] == 2 and d["ncu_launch_skip"] == 2
    assert d["binary"]["constexprs"] == {"BLOCK": 64}


def test_script_that_raises_reports_its_exception(tmp_path: Path) -> None:
    bad = tmp_path / "prog"
    bad.mkdir()
    (bad / "crash.py").write_text("raise RuntimeError('shape mismatch in block 3')\n")
    with pytest.raises(CommandFailed, match=r"exited with status 1.*shape mismatch in block 3"):
        discover([sys.executable, "crash.py"], bad, tmp_path)


def test_kernel_never_launched(tmp_path: Path) -> None:
    with pytest.raises(CommandFailed, match=r"never launched the @triton\.jit function "
                       "layernorm_fwd of module fused_norm"):
        discover([sys.executable, "-c", "import fused_norm"], MODEL, tmp_path)


def test_kernel_never_launched_where_torch_compile_was_loaded_says_what_it_launched(
        tmp_path: Path) -> None:
    """A process that loaded torch.compile's Inductor and never launched the kernel (neither
    through Triton's JIT nor as Inductor's copy of it): the refusal says what Inductor's
    launcher did launch (here nothing)."""
    code = "import torch._inductor.runtime.triton_heuristics, fused_norm"
    with pytest.raises(CommandFailed, match=r"torch\.compile \(Inductor\) was loaded and its "
                       r"launcher made 0 launch\(es\) of 0 kernel\(s\) \(none\), none of "
                       r"layernorm_fwd or of a kernel that holds it"):
        discover([sys.executable, "-c", code], MODEL, tmp_path)


def test_each_run_of_the_command_compiles_in_an_inductor_cache_of_its_own(
        tmp_path: Path) -> None:
    """The observed command runs with a TORCHINDUCTOR_CACHE_DIR below its task folder (no run
    loads what another compiled), Triton's launcher and in-process compilation."""
    dump = tmp_path / "env.json"
    code = (f"import json, os; json.dump(dict(os.environ), open({str(dump)!r}, 'w')); "
            "import fused_norm")
    with pytest.raises(CommandFailed):
        discover([sys.executable, "-c", code], MODEL, tmp_path)
    env = json.loads(dump.read_text())
    assert env["TORCHINDUCTOR_CACHE_DIR"] == str((tmp_path / "find_launch" /
                                                  "inductor_cache").resolve())
    assert env["TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER"] == "0"
    assert env["TORCHINDUCTOR_COMPILE_THREADS"] == "1"


def test_kernel_launched_from_a_subprocess_without_the_environment(tmp_path: Path) -> None:
    code = ("import os, subprocess, sys; env = {k: v for k, v in os.environ.items() "
            "if k != 'PYTHONPATH'}; subprocess.run([sys.executable, 'model.py', "
            f"*{SMALL!r}], env=env, check=True)")
    with pytest.raises(CommandFailed, match="drops PYTHONPATH"):
        discover([sys.executable, "-c", code], MODEL, tmp_path)


def test_kernel_launched_from_a_subprocess_that_keeps_the_environment(tmp_path: Path) -> None:
    code = ("import subprocess, sys; subprocess.run([sys.executable, 'model.py', "
            f"*{SMALL!r}], check=True)")
    d = discover([sys.executable, "-c", code], MODEL, tmp_path)
    assert d["launches"]["program"] == 3 and len(d["processes_with_launches"]) == 1


def run_cli(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.stdout, r.stderr


def test_missing_script_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(MODEL)
    code, _, err = run_cli("observe", "--region", "fused_norm/layernorm_fwd/load", "--signals",
                           "duration", "--dry-run", "--", "python3", "modle.py")
    assert code == 2 and "modle.py: no such script" in err


def test_dry_run_of_a_command_resolves_the_module_by_name(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.chdir(PROGRAMS)
    code, out, _ = run_cli("observe", "--region", "fused_norm/layernorm_fwd/load", "--signals",
                           "duration,inst_executed,warp_stall_samples,exposed_latency",
                           "--dry-run", "--json", "--", "python3", "model/model.py")
    assert code == 0
    doc = json.loads(out)
    assert doc["request"]["command"] == ["python3", "model/model.py"]
    # the region's own duration: a proton_scopes variant and one instrumented launch of it;
    # exposed latency from replays: the parent's replayed timing beside the program's own
    assert [t["action"] for t in doc["tasks"]] == [
        "find_launch", "proton_scopes", "cupti_timing", "cupti_timing", "forced_wait",
        "ncu_source", "proton_instr", "cupti_timing", "attribute", "derive_exposed_latency"]
    assert [t["runs_program"] for t in doc["tasks"] if t["kind"] == "collect"] == [False] * 5
    assert doc["tasks"][0]["params"]["program"] == "fused_norm"
    assert not any("keyed to it" in n for n in doc["notes"])


def test_unknown_module_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(MODEL)
    code, _, err = run_cli("observe", "--region", "norm/layernorm_fwd/load", "--signals",
                           "duration", "--dry-run", "--", "python3", "model.py")
    assert code == 2 and "no module norm.py" in err and "--program" in err


def test_scopes_no_collection_resolves_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(MODEL)
    for scope in ("loop_iter=each", "warp_role=each"):
        code, _, err = run_cli("observe", str(MODEL / "fused_norm.py"), "--region",
                               "fused_norm/layernorm_fwd/load", "--signals", "duration",
                               "--scope", scope, "--dry-run")
        assert code == 2 and "every row would come back 'all'" in err, err


def test_python_form_takes_an_argv_or_a_module_function(tmp_path: Path) -> None:
    from argusdb.observe import command_argv, observe

    obs = observe("fused_norm/layernorm_fwd", "duration", run=["python3", "model.py"],
                  cwd=MODEL, dry_run=True)
    assert obs.plan.request["command"] == ["python3", "model.py"]
    argv = command_argv(json.dumps)
    assert argv[0] == sys.executable and "importlib.import_module('json').dumps()" in argv[2]
    with pytest.raises(Exception, match="module level"):
        command_argv(lambda: None)


def test_ranks_each_get_the_hooks_and_rank_0_is_measured(tmp_path: Path) -> None:
    """Like torchrun: one launcher process starting a process per rank with RANK set."""
    code = ("import os, subprocess, sys; ps = [subprocess.Popen([sys.executable, 'model.py', "
            f"*{SMALL!r}], env={{**os.environ, 'RANK': str(r)}}) for r in (1, 0)]; "
            "sys.exit(max(p.wait() for p in ps))")
    d = discover([sys.executable, "-c", code], MODEL, tmp_path)
    assert len(d["processes_with_launches"]) == 2
    records = {json.loads(p.read_text())["pid"]: json.loads(p.read_text())
               for p in (tmp_path / "find_launch").glob("launch.*.json")}
    assert records[d["pid"]]["rank"] == "0"


def test_module_search_prefers_the_script_tree_and_skips_argus_work_folders(
        tmp_path: Path) -> None:
    """The module is looked for below the script's folder before the working directory, and
    the task folders observe wrote (a variant copy of the same module) never count."""
    from argusdb.observe import mark_work_folder, resolve_source

    prog = tmp_path / "proj"
    (prog / "pkg" / "ops").mkdir(parents=True)
    (prog / "train.py").write_text("import pkg.ops.rms\n")
    (prog / "pkg" / "ops" / "rms.py").write_text("# the kernel\n")
    # an earlier observe with --store proj/argus.duckdb wrote a variant copy beside it
    (prog / "argus.duckdb").write_text("")
    (prog / "argus.duckdb.runs" / "p-1" / "forced_wait" / "variant").mkdir(parents=True)
    (prog / "argus.duckdb.runs" / "p-1" / "forced_wait" / "variant" / "rms.py").write_text("")
    # and a marked work folder elsewhere in the tree
    work = mark_work_folder(prog / "runs" / "p-2")
    (work / "t" / "variant").mkdir(parents=True)
    (work / "t" / "variant" / "rms.py").write_text("")
    want = (prog / "pkg" / "ops" / "rms.py").resolve()
    assert resolve_source("rms/k/r", ["python3", "train.py"], prog) == want
    # run from elsewhere: a copy under the working directory does not compete with the
    # script's own tree
    other = tmp_path / "elsewhere"
    (other / "old").mkdir(parents=True)
    (other / "old" / "rms.py").write_text("")
    assert resolve_source("rms/k/r", ["python3", str(prog / "train.py")], other) == want
    # two in the script's tree: ambiguous, named
    (prog / "pkg" / "rms.py").write_text("")
    with pytest.raises(UsageError, match=r"2 files named rms\.py"):
        resolve_source("rms/k/r", ["python3", "train.py"], prog)
