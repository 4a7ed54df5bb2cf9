"""Four Python threads run one session at once; every result equals the single-threaded one
bit for bit (graft_model_run is thread-safe and releases the GIL)."""
import threading
import time

import numpy as np

import graft


def test_four_threads_one_session(cls_model):
    sess = graft.InferenceSession(cls_model, backends=["dnnl"], shapes={"x": [1, 3, 48, 192]})
    rng = np.random.default_rng(7)
    xs = [rng.uniform(-1, 1, (1, 3, 48, 192)).astype(np.float32) for _ in range(4)]
    want = [sess.run(None, {"x": x})[0].copy() for x in xs]
    got = [[] for _ in xs]
    errors = []
    start = threading.Barrier(4)

    def work(i):
        try:
            start.wait()
            for _ in range(5):
                got[i].append(sess.run(None, {"x": xs[i]})[0])
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i in range(4):
        assert len(got[i]) == 5
        for y in got[i]:
            np.testing.assert_array_equal(y, want[i])


def test_run_releases_the_gil(det):
    """While one thread is inside sess.run (PP-OCR det at 640x640, hundreds of ms), another
    Python thread keeps running: graft holds no GIL while it works."""
    sess = graft.InferenceSession(det, backends=["dnnl"], shapes={"x": [1, 3, 640, 640]})
    x = np.zeros((1, 3, 640, 640), np.float32)
    sess.run(None, {"x": x})  # primitives created
    inside = threading.Event()
    done = threading.Event()

    def run():
        inside.set()
        for _ in range(3):
            sess.run(None, {"x": x})
        done.set()

    t = threading.Thread(target=run)
    ticks = 0
    t.start()
    inside.wait()
    while not done.is_set():
        ticks += 1
        time.sleep(0.001)
    t.join()
    # with the GIL held for the whole run the loop above could only tick between runs
    assert ticks >= 20
