"""The interop suite's fixtures: the pinned clients (installed once), and every case's run.

Each (client, session, case) is run once — rewrite, resume, the commands after — and judged
by several tests, one per check (see ``test_interop.py``). The runs of every collected test
start together at the beginning of the session, ``INTEROP_JOBS`` (default 2) at a time, so
the tests mostly wait on runs already under way.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest
from check import Runs
from install import Clients, InstallError, install_clients


@pytest.fixture(scope="session")
def clients() -> Clients:
    missing = [tool for tool in ("npm", "node") if shutil.which(tool) is None]
    if missing:
        pytest.skip(
            f"{' and '.join(missing)} not on PATH: the interop suite installs the real clients with npm"
        )
    try:
        return install_clients()
    except InstallError as exc:
        pytest.fail(f"could not install the pinned clients: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def runs(
    request: pytest.FixtureRequest, clients: Clients, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Runs]:
    jobs = int(os.environ.get("INTEROP_JOBS") or 2)
    started = Runs(clients, tmp_path_factory.mktemp("interop"), jobs)
    for item in request.session.items:
        spec = getattr(item, "callspec", None)
        if spec is not None and "case" in spec.params and item.get_closest_marker("skip") is None:
            started.start((spec.params["client"], spec.params["session"], spec.params["case"]))
    yield started
    started.pool.shutdown(wait=True, cancel_futures=True)
