"""A Dask cluster to spread work over: an existing scheduler by address, or a local cluster
of worker processes. The one place pmpredict starts or joins a cluster: `predict --dask`
(commands/batch.py) and the AnICA campaigns (anica/executor.py) both take their client here.

Dask (distributed) is imported only when a cluster is asked for (~1 s)."""

from __future__ import annotations

import logging
import warnings


class Cluster:
    """A client of a Dask scheduler (`address`), or of a local cluster of `workers`
    processes of one thread each, started here and closed with it."""

    def __init__(self, address: str | None = None, workers: int = 2):
        # deferred: dask.distributed (~1 s) only where a cluster is asked for
        from distributed import Client, LocalCluster
        self.local = None
        if address:
            self.client = Client(address, timeout="10s")
        else:
            with warnings.catch_warnings():
                # "port 8787 is already in use": another local cluster has it; ours takes a
                # free port, and the user need not hear of it
                warnings.simplefilter("ignore", UserWarning)
                self.local = LocalCluster(n_workers=workers, threads_per_worker=1,
                                          processes=True, dashboard_address=None,
                                          scheduler_port=0, silence_logs=logging.ERROR)
            self.client = Client(self.local)

    def submit(self, fn, *args):
        """fn(*args) on a worker: a future (not cached by Dask: every call runs)."""
        return self.client.submit(fn, *args, pure=False)

    def wait_first(self, futures, timeout: float):
        """(done, pending) once one of `futures` is done, or after `timeout` seconds."""
        # deferred: dask.distributed, loaded by __init__ already
        from distributed import wait
        if not futures:
            return set(), set()
        try:
            done, pending = wait(list(futures), timeout=timeout, return_when="FIRST_COMPLETED")
        except TimeoutError:
            return set(), set(futures)
        return set(done), set(pending)

    def close(self) -> None:
        self.client.close()
        if self.local is not None:
            self.local.close()

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
