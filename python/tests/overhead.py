"""What sess.run adds over the C API on a small model: the median of graft_model_run called
from C in a loop (Model.time_c_run, no Python in it) against the median of sess.run(None,
feeds) from Python, on the same artifact and inputs. Prints both and the difference.
Usage: python python/tests/overhead.py [RUNS]"""
import sys
import time

import numpy as np

import graft
from conftest import SMALL

runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
sess = graft.InferenceSession(graft.parse(SMALL))
x = np.ones((1, 16), np.float32)
feeds = {"x": x, "y": x}
for _ in range(1000):
    sess.run(None, feeds)
c_ns = sess._model.time_c_run([x, x], runs)
times = []
for _ in range(runs):
    t0 = time.perf_counter_ns()
    sess.run(None, feeds)
    times.append(time.perf_counter_ns() - t0)
py_ns = sorted(times)[runs // 2]
print(f"small model (add + relu on 1x16), {runs} runs, medians: C graft_model_run {c_ns / 1e3:.2f} us, "
      f"Python sess.run {py_ns / 1e3:.2f} us, overhead {(py_ns - c_ns) / 1e3:.2f} us")
