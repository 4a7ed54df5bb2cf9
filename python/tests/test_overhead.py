"""sess.run adds less than 50 us over the C API (graft_model_run called from C in a loop) on a
small model: medians of 2000 runs each (make py-overhead prints the figures)."""
import time

import numpy as np

import graft
from conftest import SMALL

LIMIT_US = 50.0


def test_run_overhead_over_c_api():
    sess = graft.InferenceSession(graft.parse(SMALL))
    x = np.ones((1, 16), np.float32)
    feeds = {"x": x, "y": x}
    for _ in range(200):
        sess.run(None, feeds)
    runs = 2000
    c_ns = sess._model.time_c_run([x, x], runs)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        sess.run(None, feeds)
        times.append(time.perf_counter_ns() - t0)
    py_ns = sorted(times)[runs // 2]
    assert (py_ns - c_ns) / 1e3 < LIMIT_US, f"sess.run {py_ns / 1e3:.1f} us, C {c_ns / 1e3:.1f} us"
