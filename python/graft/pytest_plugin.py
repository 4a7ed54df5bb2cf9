"""graft's pytest plugin (registered through the pytest11 entry point when graft is installed).

- ``@graft_matrix(backends=["dnnl", "json"], models=[...])`` (also ``graft.testing.matrix``):
  one decorator that parametrizes a test over every (backend, model) pair; the test takes
  ``backend`` and ``model`` arguments.
- fixtures ``graft_backend`` and ``graft_model``: parametrized over ``--graft-backend NAME``
  and ``--graft-model PATH`` (repeatable; default: every registered backend, no model).
- a failing :class:`graft.testing.BackendMismatch` adds graft diff's layer table to the
  report (section "graft diff layers")."""
from __future__ import annotations

import itertools
import os
from typing import Optional, Sequence

import pytest

TABLE_ROWS = 60


def matrix(backends: Optional[Sequence[str]] = None, models: Sequence[str] = ()):
    """Parametrizes a test over (backend, model): ids "dnnl-det.onnx"."""
    import graft
    names = list(backends) if backends is not None else [str(b) for b in graft.backends()]
    pairs = list(itertools.product(names, list(models)))
    ids = [f"{b}-{os.path.basename(str(m))}" for b, m in pairs]
    return pytest.mark.parametrize("backend,model", pairs, ids=ids)


graft_matrix = matrix


def pytest_addoption(parser):
    group = parser.getgroup("graft")
    group.addoption("--graft-backend", action="append", default=None,
                    help="backend for the graft_backend fixture (repeatable; default: every backend)")
    group.addoption("--graft-model", action="append", default=None,
                    help="model for the graft_model fixture (repeatable)")


def pytest_configure(config):
    config.addinivalue_line("markers", "graft: a test of graft backends (graft.testing)")


def pytest_generate_tests(metafunc):
    if "graft_backend" in metafunc.fixturenames:
        names = metafunc.config.getoption("graft_backend")
        if not names:
            import graft
            names = [str(b) for b in graft.backends()]
        metafunc.parametrize("graft_backend", names)
    if "graft_model" in metafunc.fixturenames:
        models = metafunc.config.getoption("graft_model") or []
        metafunc.parametrize("graft_model", models, ids=[os.path.basename(m) for m in models])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is None:
        return
    from graft.testing import BackendMismatch
    exc = call.excinfo.value
    if isinstance(exc, BackendMismatch) and exc.diff is not None:
        report.sections.append(("graft diff layers", exc.diff.table(limit=TABLE_ROWS)))
