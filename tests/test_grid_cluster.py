"""aragog.grid._cluster: the Dask client a grid runs on (local processes, Slurm, a scheduler).

Tests marked ``slurm`` run on a real Slurm (``bash scripts/slurm_local.sh start`` gives a
one-node one on this machine) and skip by themselves when none accepts a trivial job.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import distributed
import pytest

from aragog.grid import SlurmOptions, open_client
# private: the workers' one-thread env and the Slurm job script
from aragog.grid._cluster import ONE_THREAD_ENV, slurm_job_script

REPO = Path(__file__).resolve().parents[1]
CPUS = sorted(os.sched_getaffinity(0))
HANG_S = 600  # a guard against hung workers, not a speed limit


# --- tasks (module level: the workers unpickle them by reference) -----------------------


def _worker_view() -> dict:
    """What a task sees of its worker: thread count, CPU mask, environment."""
    worker = distributed.get_worker()
    return {
        "nthreads": worker.state.nthreads,
        "cpus": sorted(os.sched_getaffinity(0)),
        "env": {k: os.environ.get(k) for k in [*ONE_THREAD_ENV, "ARAGOG_TEST_VAR", "XLA_FLAGS"]},
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
        "ignores_sigint": signal.getsignal(signal.SIGINT) == signal.SIG_IGN,
    }


def _count_then_die(path: str) -> None:
    """Append one byte to ``path``, then end the worker process without cleanup."""
    with open(path, "a") as f:
        f.write("x")
    os._exit(1)


def _tiny_solve(repo: str) -> int:
    """A 20-node, 10-year Earth solve; its status (0 = reached end_time)."""
    from aragog import EntropySolver, load_config

    # The suite's shared compile store (tests/conftest.py), inherited by the worker.
    overrides = {"mesh.number_of_nodes": 20, "solver.end_time": 10.0}
    solver = EntropySolver(load_config(f"{repo}/tests/earth_toy.toml", overrides=overrides))
    solver.initialize()
    solver.solve()
    return solver.get_state().status


def _views(client: distributed.Client) -> list[dict]:
    """``_worker_view`` from each worker, by worker address."""
    workers = sorted(client.nthreads())
    futures = [client.submit(_worker_view, pure=False, workers=[w]) for w in workers]
    return [f.result(timeout=HANG_S) for f in futures]


# --- local cluster -----------------------------------------------------------------------


@pytest.mark.skipif(len(CPUS) < 2, reason="needs 2 CPUs to pin 2 workers")
def test_local_workers_have_one_thread_and_distinct_cpus(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "7")  # ours must win in the workers
    handler = signal.getsignal(signal.SIGINT)
    with open_client(n_workers=2, worker_env={"ARAGOG_TEST_VAR": "yes"}) as client:
        views = _views(client)
    assert len(views) == 2
    # Ctrl-C is the controller's: the workers ignore it, this process's handler is back
    assert all(v["ignores_sigint"] for v in views)
    assert signal.getsignal(signal.SIGINT) is handler
    assert [v["nthreads"] for v in views] == [1, 1]
    assert all(len(v["cpus"]) == 1 for v in views)
    assert sorted(v["cpus"][0] for v in views) == CPUS[:2]
    for v in views:
        assert v["env"]["ARAGOG_TEST_VAR"] == "yes"
        assert all(v["env"][k] == "1" for k in ONE_THREAD_ENV)
        assert v["env"]["XLA_FLAGS"] == os.environ.get("XLA_FLAGS")
    assert os.environ["OMP_NUM_THREADS"] == "7"  # this process's value is restored


def test_local_workers_unpinned_see_all_cpus():
    with open_client(n_workers=1, pin_cpus=False, worker_env={"OMP_NUM_THREADS": "2"}) as client:
        (view,) = _views(client)
    assert view["cpus"] == CPUS
    assert view["env"]["OMP_NUM_THREADS"] == "2"


def test_dead_worker_costs_one_retry_then_killed_worker(tmp_path):
    counter = tmp_path / "runs"
    with open_client(n_workers=2, pin_cpus=False) as client:
        with pytest.raises(distributed.KilledWorker):
            client.submit(_count_then_die, str(counter)).result()
    assert counter.read_text() == "xx"


def test_cluster_closes_on_interrupt():
    with pytest.raises(KeyboardInterrupt):
        with open_client(n_workers=1, pin_cpus=False) as client:
            cluster = client.cluster
            raise KeyboardInterrupt
    assert client.status == "closed"
    assert cluster.status.name == "closed"


def test_external_scheduler_is_used_not_closed():
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=None) as ext:
        with open_client(scheduler=ext.scheduler_address) as client:
            assert client.submit(lambda x: x + 1, 1).result() == 2
        assert client.status == "closed"
        assert len(ext.scheduler.workers) == 1  # its worker is not ours to stop


def test_invalid_combinations():
    slurm = SlurmOptions(queue="debug", interface="lo")
    with pytest.raises(ValueError, match="either scheduler or slurm"):
        with open_client(scheduler="tcp://127.0.0.1:8786", slurm=slurm):
            pass
    with pytest.raises(ValueError, match="local cluster only"):
        with open_client(slurm=slurm, n_workers=2):
            pass
    with pytest.raises(ValueError, match="worker_env"):
        with open_client(scheduler="tcp://127.0.0.1:8786", worker_env={"A": "1"}):
            pass
    with pytest.raises(ValueError, match="pin_cpus"):
        with open_client(n_workers=len(CPUS) + 1, pin_cpus=True):
            pass


# --- Slurm options and job script (no Slurm needed) --------------------------------------


def test_slurm_job_script():
    options = SlurmOptions(queue="normal", account="geo", job_extra_directives=("--qos=short",), interface="lo")
    script = slurm_job_script(options)
    assert "#SBATCH -p normal" in script
    assert "#SBATCH -t 01:00:00" in script
    assert "#SBATCH -A geo" in script
    assert "#SBATCH --qos=short" in script
    assert f"{sys.executable} -m distributed.cli.dask_worker" in script
    assert "--nthreads 1" in script
    assert "--interface lo" in script
    assert "export OMP_NUM_THREADS=1" in script


def test_slurm_job_script_processes_and_env():
    options = SlurmOptions(processes=3, memory="6GB", python="/opt/py/bin/python")
    script = slurm_job_script(options, worker_env={"OMP_NUM_THREADS": "2", "X": "a b"})
    assert "#SBATCH --cpus-per-task=3" in script
    assert "--nworkers 3" in script and "--nthreads 1" in script
    assert "/opt/py/bin/python -m distributed.cli.dask_worker" in script
    assert "export OMP_NUM_THREADS=2" in script
    assert "export X='a b'" in script


@pytest.mark.parametrize("walltime", ["1:00", "01:60:00", "1 hour", "01:00:00:00"])
def test_invalid_walltime(walltime):
    with pytest.raises(ValueError, match=repr(walltime)):
        SlurmOptions(walltime=walltime)


def test_invalid_job_counts():
    with pytest.raises(ValueError, match="jobs"):
        SlurmOptions(jobs=0)
    with pytest.raises(ValueError, match="processes"):
        SlurmOptions(processes=0)


def test_no_slurm_worker_joins(tmp_path, monkeypatch):
    """A job that never starts: a one-line RuntimeError naming queue, walltime and logs."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text("#!/bin/sh\necho 'Submitted batch job 42'\n")
    (bin_dir / "scancel").write_text("#!/bin/sh\nexit 0\n")
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    logs = tmp_path / "logs"
    options = SlurmOptions(queue="nowhere", walltime="00:05:00", log_directory=str(logs), interface="lo")
    with pytest.raises(RuntimeError) as info:
        with open_client(slurm=options, join_timeout=1.0):
            pass
    message = str(info.value)
    assert "\n" not in message
    assert "nowhere" in message and "00:05:00" in message and str(logs) in message


# --- real Slurm ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def slurm_client(slurm_available, tmp_path_factory):
    logs = tmp_path_factory.mktemp("slurm-logs")
    options = SlurmOptions(
        queue="debug",
        walltime="00:10:00",
        jobs=1,
        processes=1,
        memory="1GB",
        log_directory=str(logs),
        interface="lo",  # this machine's Slurm and scheduler live on 127.0.0.1 only
    )
    # The job's worker unpickles this module's tasks by name: it must find the module
    # (spawned local workers inherit sys.path; a batch job does not).
    env = {"PYTHONPATH": str(Path(__file__).resolve().parent), "ARAGOG_TEST_VAR": "slurm"}
    with open_client(slurm=options, worker_env=env, join_timeout=120.0) as client:
        yield client


@pytest.mark.slurm
def test_slurm_worker_runs_in_a_job(slurm_client):
    (view,) = _views(slurm_client)
    assert view["slurm_job_id"]
    assert view["nthreads"] == 1
    assert all(view["env"][k] == "1" for k in ONE_THREAD_ENV)
    assert view["env"]["ARAGOG_TEST_VAR"] == "slurm"
    assert view["ignores_sigint"]
    assert slurm_client.scheduler.address.startswith("tcp://127.0.0.1:")
    assert slurm_client.cluster.scheduler.allowed_failures == 1


@pytest.mark.slurm
def test_slurm_worker_solves(slurm_client):
    assert slurm_client.submit(_tiny_solve, str(REPO)).result(timeout=HANG_S) == 0
