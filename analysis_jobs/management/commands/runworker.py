import os
import signal
import subprocess
import sys

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from prometheus_client import start_http_server

from analysis_jobs import metrics
from analysis_jobs.control_plane import DatabaseControlPlane
from analysis_jobs.management.arguments import non_negative_float, port, positive_float, positive_int
from analysis_jobs.management.database import ensure_database_ready
from analysis_jobs.runner import AnalysisWorkerRunner, WorkerExit


class Command(BaseCommand):
    help = "Run analysis workers: claim queued jobs and run them until stopped (SIGTERM/SIGINT)."

    def add_arguments(self, parser):
        parser.add_argument("--burst", action="store_true", help="Exit once no job is eligible.")
        parser.add_argument("--max-jobs", type=positive_int, help="Exit after running this many jobs.")
        parser.add_argument("--poll-interval", type=non_negative_float, help="Seconds to wait when the queue is empty.")
        parser.add_argument("--lease-seconds", type=positive_float, help="How long a claim or renewal holds a job.")
        parser.add_argument("--grace", type=non_negative_float, help="Seconds a job may run on after SIGTERM before it is handed back.")
        parser.add_argument("--concurrency", type=positive_int, default=1, help="Worker processes to run (default 1).")
        parser.add_argument(
            "--metrics-port", type=port, help="Serve this process's Prometheus counters on this port (with --concurrency N, ports PORT to PORT+N-1).",
        )

    def handle(self, *args, burst, max_jobs, poll_interval, lease_seconds, grace, concurrency, metrics_port, **options):
        ensure_database_ready()
        if concurrency > 1:
            return self._supervise(
                concurrency,
                burst=burst,
                options={"--max-jobs": max_jobs, "--poll-interval": poll_interval, "--lease-seconds": lease_seconds, "--grace": grace},
                metrics_port=metrics_port,
            )
        if metrics_port is not None:
            try:
                start_http_server(metrics_port, addr=settings.ANALYSIS_JOBS["METRICS_ADDRESS"], registry=metrics.WORKER)
            except OSError as error:
                raise CommandError(f"--metrics-port {metrics_port}: {error.strerror}.") from None
        control_plane = DatabaseControlPlane(lease_seconds=lease_seconds)
        runner = AnalysisWorkerRunner(
            control_plane=control_plane, poll_interval=poll_interval, grace=grace, burst=burst, max_jobs=max_jobs
        )
        runner.install_signal_handlers()
        self.stderr.write(f"worker {runner.worker_id} started")
        try:
            report = runner.run()
        except WorkerExit:
            raise CommandError("Stopped by a second signal; the running job was handed back.", returncode=130) from None
        self.stderr.write(f"worker {runner.worker_id} stopped after {report.jobs} jobs {report.outcomes}")

    def _supervise(self, concurrency, *, burst, options, metrics_port):
        """Run ``concurrency`` single workers as child processes and pass signals on to them."""
        argv = ["--burst"] if burst else []
        for flag, value in options.items():
            if value is not None:
                argv += [flag, str(value)]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(settings.BASE_DIR), os.environ.get("PYTHONPATH", "")]))
        command = [sys.executable, "-m", "django", "runworker", *argv]
        ports = [[] if metrics_port is None else ["--metrics-port", str(metrics_port + index)] for index in range(concurrency)]
        # Each child in its own session: a Ctrl-C reaches them once, through us, not twice.
        children = [subprocess.Popen([*command, *port_args], env=env, start_new_session=True) for port_args in ports]

        def forward(signum, frame):
            for child in children:
                if child.poll() is None:
                    child.send_signal(signum)

        signal.signal(signal.SIGTERM, forward)
        signal.signal(signal.SIGINT, forward)
        codes = [child.wait() for child in children]
        if any(codes):
            raise CommandError(f"Worker processes exited with {codes}.", returncode=max(abs(c) for c in codes))
