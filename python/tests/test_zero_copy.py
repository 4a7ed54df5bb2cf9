"""Arrays go in and come out without copies: the tests check the data pointers."""
import numpy as np

import graft
from graft import _graft
from conftest import SMALL


def ptr(a):
    return a.__array_interface__["data"][0]


class DLPackOnly:
    """A producer that only speaks DLPack (as a torch tensor would)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, *args, **kw):
        return self._a.__dlpack__(*args, **kw)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_input_is_read_in_place():
    x = np.ones((1, 16), np.float32)
    assert _graft.input_data_ptr(x) == ptr(x)
    # a strided view cannot be read in place: it is copied
    wide = np.ones((1, 32), np.float32)[:, ::2]
    assert _graft.input_data_ptr(wide) != ptr(wide)


def test_dlpack_input_keeps_its_memory():
    sess = graft.InferenceSession(graft.parse(SMALL))
    x = np.full((1, 16), -1.0, np.float32)
    feeds = sess._feeds({"x": DLPackOnly(x), "y": np.zeros((1, 16), np.float32)})
    assert ptr(feeds[0]) == ptr(x) and _graft.input_data_ptr(feeds[0]) == ptr(x)
    (y,) = sess.run(None, {"x": DLPackOnly(x), "y": np.full((1, 16), 3.0, np.float32)})
    np.testing.assert_array_equal(y, np.full((1, 16), 2.0, np.float32))


def test_outputs_view_graft_memory_and_export_dlpack():
    sess = graft.InferenceSession(graft.parse(SMALL))
    x = np.ones((1, 16), np.float32)
    (a,) = sess.run(None, {"x": x, "y": x})
    (b,) = sess.run(None, {"x": x, "y": x})
    assert not a.flags.owndata and type(a.base).__name__ == "TensorRef"
    assert ptr(a) != ptr(b) and ptr(a) not in (ptr(x),)
    # out through DLPack: the consumer sees the same memory
    c = np.from_dlpack(a)
    assert ptr(c) == ptr(a)
    del b
    np.testing.assert_array_equal(a, np.full((1, 16), 2.0, np.float32))


CONST_OUT = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 4), dtype="float32")):
        with R.dataflow():
            a = R.nn.relu(x)
            R.output(a)
        return (a, R.const(2.5, "float32"))
"""


def test_constant_output_is_read_only():
    """An output that is one of the model's constants is viewed, not copied, but read-only:
    writing to it would change the model for the next run."""
    sess = graft.InferenceSession(graft.parse(CONST_OUT), optimize=False)
    a, c = sess.run(None, {"x": np.ones((1, 4), np.float32)})
    assert a.flags.writeable
    assert c.shape == () and c == np.float32(2.5)
    assert not c.flags.writeable
