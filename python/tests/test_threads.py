"""Four Python threads run one session at once; every result equals the single-threaded one
bit for bit (graft_model_run is thread-safe and releases the GIL)."""
import threading

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
