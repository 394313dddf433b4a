"""Open the Dask client a grid runs on: an existing scheduler, Slurm jobs, or local processes.

:func:`open_client` is the one entry point. Every worker it starts runs ONE thread: grid
tasks call a JAX/CVODE solver that is not meant to share a process across threads, so
parallelism comes from worker processes. The BLAS/OpenMP pools of the workers are cut to
one thread too (``OMP_NUM_THREADS`` etc., overridable through ``worker_env``); the user's
``XLA_FLAGS`` are never touched.

A worker that dies mid-task (segfault, out-of-memory kill, ``os._exit``) costs that task
one retry on another worker; a second death raises :class:`distributed.KilledWorker`
(``allowed_failures=1`` on the schedulers we create; an external scheduler keeps its own
``distributed.scheduler.allowed-failures``, 3 by default).

Ctrl-C belongs to the process that opened the client. A terminal sends SIGINT to its whole
foreground process group, local worker processes included; they ignore it (see
:class:`IgnoreInterrupt`), so the controller alone stops the grid and closes its cluster,
and the workers' dask logs are held back while they close (closed-comm noise is not the
user's concern). Workers of an external scheduler are left as they are.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shlex
import signal
import sys
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import dask
import distributed
from distributed.diagnostics.plugin import WorkerPlugin

# Threads of the numeric libraries in each worker process; ``worker_env`` overrides.
ONE_THREAD_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
ALLOWED_FAILURES = 1  # retries of a task whose worker died, before KilledWorker
_WALLTIME = re.compile(r"^\d+:[0-5]\d:[0-5]\d$")
_PLACEHOLDER_SCHEDULER = "tcp://<scheduler-address>:8786"
_SCHEDULER_KWARGS = {"allowed_failures": ALLOWED_FAILURES, "dashboard": False}
# The scheduler's HTTP server (health, metrics) starts even without a dashboard: on a
# free loopback port, not on 8787 (taken by any other cluster: a warning, then a random port).
_NO_DASHBOARD = {"dashboard_address": "127.0.0.1:0"}
#: the loggers of Dask and of the libraries under it
DASK_LOGGERS = ("distributed", "dask_jobqueue", "tornado")


@dataclass(frozen=True)
class SlurmOptions:
    """Slurm jobs that host the grid's Dask workers (one ``sbatch`` script per job).

    queue: partition (``sbatch -p``); None = the cluster's default partition.
    walltime: time limit per job, ``HH:MM:SS`` (hours may exceed 24).
    jobs: number of Slurm jobs to start.
    processes: Dask worker processes per job, one thread each (the job asks for as many
        CPUs: ``--cpus-per-task=processes``).
    memory: memory per job (``"4GB"``), shared evenly by its worker processes.
    account: ``sbatch -A``; None = none.
    job_extra_directives: more ``#SBATCH`` lines, without the prefix (``"--qos=short"``).
    python: interpreter on the compute nodes; None = this process's ``sys.executable``.
    log_directory: where the jobs write ``dask-worker-<jobid>.out/.err``; None = the
        directory ``sbatch`` runs in (``slurm-<jobid>.out``).
    local_directory: workers' scratch space; None = Dask's default (a temp directory).
    interface: network interface of the scheduler and the workers; None (the default):
        Dask's choice, the address of this host's name, which compute nodes can reach on
        a usual cluster; ``"ib0"``/``"eth0"`` to choose; ``"lo"`` (127.0.0.1) for a
        one-node Slurm on this machine (scripts/slurm_local.sh; the tests use it).
    """

    queue: str | None = None
    walltime: str = "01:00:00"
    jobs: int = 1
    processes: int = 1
    memory: str = "4GB"
    account: str | None = None
    job_extra_directives: tuple[str, ...] = ()
    python: str | None = None
    log_directory: str | None = None
    local_directory: str | None = None
    interface: str | None = None

    def __post_init__(self) -> None:
        if not _WALLTIME.match(str(self.walltime)):
            raise ValueError(f"walltime {self.walltime!r} is not HH:MM:SS")
        for field in ("jobs", "processes"):
            value = getattr(self, field)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{field} must be a positive integer, got {value!r}")


def _job_kwargs(options: SlurmOptions, env: Mapping[str, str]) -> dict:
    """Keyword arguments of dask-jobqueue's SLURMJob/SLURMCluster for ``options``."""
    return dict(
        cores=options.processes,  # one thread per worker process: cores == processes
        processes=options.processes,
        memory=options.memory,
        queue=options.queue,
        walltime=options.walltime,
        account=options.account,
        job_extra_directives=list(options.job_extra_directives),
        python=options.python or sys.executable,
        log_directory=options.log_directory,
        local_directory=options.local_directory,
        interface=options.interface,
        job_script_prologue=[f"export {k}={shlex.quote(str(v))}" for k, v in env.items()],
    )


def slurm_job_script(options: SlurmOptions, worker_env: Mapping[str, str] | None = None) -> str:
    """The batch script one Slurm job of ``open_client(slurm=options)`` submits.

    The scheduler address is a placeholder; otherwise the script is the one dask-jobqueue
    writes (``#SBATCH`` header, ``export`` lines of the worker environment, ``python -m
    distributed.cli.dask_worker ... --nthreads 1``). For inspection and tests: nothing is
    submitted (the log directory, if set, is created).
    """
    from dask_jobqueue.slurm import SLURMJob

    kwargs = _job_kwargs(options, _worker_env(worker_env))
    return SLURMJob(_PLACEHOLDER_SCHEDULER, name="dask-worker", **kwargs).job_script()


class PinCPU(WorkerPlugin):
    """Pin worker process ``i`` (its LocalCluster name) to CPU ``cpus[i % len(cpus)]``.

    Runs at worker start-up, before the worker takes tasks, and pins every thread the
    process has (threads started later inherit the mask). Why: XLA:CPU hands the kernels
    of a program to a thread pool sized by the CPUs it sees; a process that sees one CPU
    runs this package's microsecond kernels back to back, ~1.5-2x faster per call than
    workers that each spread them over all CPUs.
    """

    name = "aragog-pin-cpu"

    def __init__(self, cpus: tuple[int, ...]):
        self.cpus = tuple(cpus)

    def setup(self, worker: distributed.Worker) -> None:
        cpu = self.cpus[int(worker.name) % len(self.cpus)]
        os.sched_setaffinity(0, {cpu})
        for tid in os.listdir("/proc/self/task"):
            with contextlib.suppress(OSError):  # a thread may end meanwhile
                os.sched_setaffinity(int(tid), {cpu})


class PreloadSolver(WorkerPlugin):
    """Import the solver and start JAX's CPU backend in every worker when it joins (after
    :class:`PinCPU`, so the backend's thread pool sees the pinned CPU), so that the
    grid's first task does not pay ~1-2 s of imports."""

    name = "aragog-preload"

    def setup(self, worker: distributed.Worker) -> None:
        import importlib

        for module in ("aragog.grid._worker", "aragog.solver._entropy_solver", "aragog.io._netcdf",
                       "aragog.eos._host"):
            importlib.import_module(module)
        from aragog._jax import jax

        jax.devices()


class IgnoreInterrupt(WorkerPlugin):
    """Ignore SIGINT in a worker process we started: Ctrl-C at a terminal reaches every
    process of its group, and a worker that raised KeyboardInterrupt would print its
    traceback while the controller closes the cluster in order anyway.

    Local workers are also spawned with SIGINT ignored (:func:`_interrupts_ignored`), which
    covers their start-up; this plugin covers workers that the nanny restarts later and
    Slurm workers. It acts only in the worker's main thread (where Python handles signals).
    """

    name = "aragog-ignore-interrupt"

    def setup(self, worker: distributed.Worker) -> None:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.SIG_IGN)


def _hush_dask_logs() -> None:
    """In a worker about to be closed: dask's own messages at CRITICAL only (a heartbeat
    that meets the closing scheduler, a running task cancelled by the close)."""
    for name in DASK_LOGGERS:
        logging.getLogger(name).setLevel(logging.CRITICAL)


def _hush_workers(client: distributed.Client, timeout: float = 5.0) -> None:
    """Run :func:`_hush_dask_logs` on the client's workers; waits at most ``timeout``
    seconds, and any failure only means the noise is not held back."""
    with contextlib.suppress(Exception):
        # callback_timeout: Client.sync's bound on the wait (a worker stuck in a solve
        # must not hold up a Ctrl-C).
        client.run(_hush_dask_logs, on_error="ignore", callback_timeout=timeout)


@contextlib.contextmanager
def _interrupts_ignored() -> Iterator[None]:
    """SIGINT ignored in this process meanwhile, so that the processes it spawns inherit
    that; restored after. Does nothing outside the main thread (no signal handling there)
    or where SIGINT's handler was not set from Python (it could not be put back)."""
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or previous is None:
        yield
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _worker_env(worker_env: Mapping[str, str] | None) -> dict[str, str]:
    """One-thread BLAS/OpenMP variables, then ``worker_env`` on top (strings)."""
    env = dict(ONE_THREAD_ENV)
    env.update({str(k): str(v) for k, v in (worker_env or {}).items()})
    return env


@contextlib.contextmanager
def _spawn_environ(spawn_env: dict[str, str]) -> Iterator[None]:
    """Make ``spawn_env`` the environment worker processes are spawned with.

    The Nanny's ``env`` reaches a worker only after it imported NumPy, too late for the
    BLAS pools; its "pre-spawn" variables come from Dask's config, but a value already in
    ``os.environ`` wins. So both are set while the cluster starts, then ``os.environ``
    is restored (Dask itself re-exports the pre-spawn values whenever a worker restarts).
    """
    saved = {k: os.environ.get(k) for k in spawn_env}
    pre_spawn = {**dask.config.get("distributed.nanny.pre-spawn-environ", {}), **spawn_env}
    os.environ.update(spawn_env)
    try:
        with dask.config.set({"distributed.nanny.pre-spawn-environ": pre_spawn}):
            yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _local_cluster(n_workers: int | None, pin_cpus: bool | None, env: dict[str, str]):
    """A LocalCluster of one-thread worker processes, pinned to CPUs when asked."""
    cpus = tuple(sorted(os.sched_getaffinity(0)))
    n = n_workers or len(cpus)
    if n < 1:
        raise ValueError(f"n_workers must be positive, got {n_workers!r}")
    if pin_cpus is None:
        pin_cpus = n <= len(cpus)
    elif pin_cpus and n > len(cpus):
        raise ValueError(f"pin_cpus needs n_workers <= {len(cpus)} available CPUs, got {n}")
    with _spawn_environ({k: env[k] for k in ONE_THREAD_ENV}), _interrupts_ignored():
        cluster = distributed.LocalCluster(
            n_workers=n,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            env=env,
            scheduler_kwargs=_SCHEDULER_KWARGS,
            **_NO_DASHBOARD,
        )
    return cluster, (PinCPU(cpus) if pin_cpus else None)


def _slurm_cluster(options: SlurmOptions, env: dict[str, str]):
    """A dask-jobqueue SLURMCluster, no jobs yet (its scheduler runs in this process).
    Raises :class:`aragog.errors.MissingDependencyError` at once where Slurm's ``sbatch``
    is not on PATH (dask-jobqueue would fail per job and leave us waiting for workers)."""
    import shutil

    if shutil.which("sbatch") is None:
        from aragog.errors import MissingDependencyError

        raise MissingDependencyError(
            "the Slurm back end (--slurm, SlurmOptions) needs Slurm's `sbatch` on PATH, and this "
            "machine has none: run on the cluster's login node, or leave out --slurm to use this "
            "machine's cores")
    from dask_jobqueue import SLURMCluster

    cluster = SLURMCluster(
        scheduler_options={**_SCHEDULER_KWARGS, **_NO_DASHBOARD},
        **_job_kwargs(options, env),
    )
    return cluster


def _wait_for_slurm_worker(client: distributed.Client, options: SlurmOptions, timeout: float):
    """Block until one worker joins; RuntimeError after ``timeout`` seconds."""
    try:
        client.wait_for_workers(1, timeout=timeout)
    except (TimeoutError, distributed.TimeoutError):
        logs = options.log_directory or "the submission directory (slurm-<jobid>.out)"
        queue = options.queue or "default"
        raise RuntimeError(
            f"no Dask worker joined from Slurm within {timeout:g} s (queue {queue}, walltime"
            f" {options.walltime}); see the job logs in {logs} and `squeue --me`"
        ) from None


@contextlib.contextmanager
def _quiet_shutdown() -> Iterator[None]:
    """Hold dask's loggers at ERROR while clusters close (closed-comm noise)."""
    loggers = [logging.getLogger(n) for n in DASK_LOGGERS]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(max(lg.getEffectiveLevel(), logging.ERROR))
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


@contextlib.contextmanager
def open_client(
    *,
    scheduler: str | None = None,
    slurm: SlurmOptions | None = None,
    n_workers: int | None = None,
    pin_cpus: bool | None = None,
    worker_env: Mapping[str, str] | None = None,
    join_timeout: float = 600.0,
) -> Iterator[distributed.Client]:
    """A Dask client for a grid; closes it, and any cluster it started, on exit.

    Give at most one of:

    scheduler: address of a running scheduler (``"tcp://127.0.0.1:8786"``); its workers
        are not ours, so ``n_workers``, ``pin_cpus`` and ``worker_env`` do not apply, and
        its own ``distributed.scheduler.allowed-failures`` holds (set it to 1 in that
        scheduler's Dask config for one retry per dead worker).
    slurm: start ``slurm.jobs`` Slurm jobs of ``slurm.processes`` one-thread workers each,
        with a scheduler in this process on ``slurm.interface`` (Dask's default address when None);
        waits up to ``join_timeout`` seconds for the first worker, then RuntimeError.
    neither: a LocalCluster of ``n_workers`` one-thread worker processes on 127.0.0.1, no
        dashboard. Default ``n_workers``: the CPUs this process may use
        (``os.sched_getaffinity``; ``os.cpu_count()`` unless Slurm, taskset or cgroups
        restrict it). ``pin_cpus`` (default: True when ``n_workers`` <= those CPUs) pins
        worker ``i`` to the ``i``-th of them (see :class:`PinCPU` for why).

    ``worker_env``: extra environment of the workers we start, over ``OMP_NUM_THREADS``,
    ``MKL_NUM_THREADS``, ``OPENBLAS_NUM_THREADS`` = 1. On the clusters we start a task
    whose worker dies is retried once, then fails with ``distributed.KilledWorker``.
    """
    if scheduler is not None and slurm is not None:
        raise ValueError("give either scheduler or slurm, not both")
    if (scheduler is not None or slurm is not None) and (n_workers is not None or pin_cpus):
        raise ValueError("n_workers and pin_cpus apply to a local cluster only")
    if scheduler is not None and worker_env:
        raise ValueError("worker_env cannot be set on the workers of an external scheduler")
    env = _worker_env(worker_env)
    stack = contextlib.ExitStack()
    try:
        client = _connect(stack, scheduler, slurm, n_workers, pin_cpus, env, join_timeout)
        if scheduler is None:  # our own workers: closed with the client (last in, first out)
            stack.callback(_hush_workers, client)
        yield client
    finally:
        with _quiet_shutdown():
            stack.close()  # the client, then the cluster (also on exceptions, Ctrl-C)


def _connect(stack, scheduler, slurm, n_workers, pin_cpus, env, join_timeout) -> distributed.Client:
    """Start what :func:`open_client` asked for; push each closer on ``stack``."""
    if scheduler is not None:
        client = distributed.Client(scheduler)
        stack.callback(client.close)
        return client
    if slurm is not None:
        cluster = _slurm_cluster(slurm, env)
        stack.callback(cluster.close)
        cluster.scale(jobs=slurm.jobs)
        client = distributed.Client(cluster)
        stack.callback(client.close)
        client.register_plugin(IgnoreInterrupt())  # also on workers that join later
        client.register_plugin(PreloadSolver())
        _wait_for_slurm_worker(client, slurm, join_timeout)
        return client
    cluster, plugin = _local_cluster(n_workers, pin_cpus, env)
    stack.callback(cluster.close)
    client = distributed.Client(cluster)
    stack.callback(client.close)
    if plugin is not None:
        client.register_plugin(plugin)
    client.register_plugin(IgnoreInterrupt())
    client.register_plugin(PreloadSolver())
    return client
