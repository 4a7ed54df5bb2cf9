"""The cases of TVM's Relax BYOC tests, written for graft's TVM-suite golden tests.

Each case restates one scenario of Apache TVM's tests/python/relax test files (named in `tvm`)
with our own modules: `src` is the input as user-written TVMScript, `pats` the DPL patterns
TVM runs (our own Python, the same meaning as the test's), `graft_pats` the graft pattern file
(tests/golden/tvm_suite/patterns/) that says the same, `stage` what runs:
  fuse   FuseOpsByPattern(pats, bind_constants, annotate_codegen)
  merge  FuseOpsByPattern then MergeCompositeFunctions
  mergeonly  MergeCompositeFunctions on a module that has composites already
`opts` are FuseOpsByPattern options. `consts` maps a parameter to bind (BindParams) to the
shape of the constant (values from a fixed seed). tests/tvm_suite/oracle.py runs TVM on each
and writes the input and TVM's result as TVM prints them."""

from tvm.relax.dpl.pattern import has_dtype, is_const, is_op, is_tuple, is_tuple_get_item, wildcard


def no_leak(ctx):
    """cuBLAS's check: no intermediate of the match is used outside it."""
    from tvm.relax.backend.utils import has_leaking_intermediate_variables
    return not has_leaking_intermediate_variables(ctx)


def conv_relu():
    return is_op("relax.nn.relu")(is_op("relax.nn.conv2d")(wildcard(), wildcard()))


def conv():
    return is_op("relax.nn.conv2d")(wildcard(), wildcard())


def op1(name):
    return is_op(name)(wildcard())


def op2(name):
    return is_op(name)(wildcard(), wildcard())


HDR = """from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tirx as T

@I.ir_module
class Module:
"""

CONV2D_RELU = HDR + """
    @R.function
    def main(data: R.Tensor((1, 4, 8, 8), "float32"), weight1: R.Tensor((4, 4, 3, 3), "float32")):
        with R.dataflow():
            conv1 = R.nn.relu(R.nn.conv2d(data, weight1, padding=(1, 1)))
            R.output(conv1)
        return conv1
"""

CONV2D_RELU_X2 = HDR + """
    @R.function
    def main(data: R.Tensor((1, 4, 8, 8), "float32"), weight1: R.Tensor((4, 4, 3, 3), "float32"),
             weight2: R.Tensor((4, 4, 3, 3), "float32")):
        with R.dataflow():
            conv1 = R.nn.relu(R.nn.conv2d(data, weight1, padding=(1, 1)))
            conv2 = R.nn.relu(R.nn.conv2d(conv1, weight2, padding=(0, 0)))
            R.output(conv2)
        return conv2
"""

CONV2D_CONV2D_RELU = HDR + """
    @R.function
    def main(data: R.Tensor((1, 4, 8, 8), "float32"), weight1: R.Tensor((4, 4, 3, 3), "float32"),
             weight2: R.Tensor((4, 4, 3, 3), "float32")):
        with R.dataflow():
            conv1 = R.nn.conv2d(data, weight1, padding=(1, 1))
            conv2d = R.nn.relu(R.nn.conv2d(conv1, weight2, padding=(0, 0)))
            R.output(conv2d)
        return conv2d
"""

BRANCH_TUPLE_OUTPUT = HDR + """
    @R.function
    def main(data: R.Tensor((1, 4, 8, 8), "float32"), weight: R.Tensor((4, 4, 3, 3), "float32")):
        with R.dataflow():
            conv1 = R.nn.conv2d(data, weight)
            relu1 = R.nn.relu(conv1)
            gelu1 = R.nn.gelu(relu1)
            gelu2 = R.nn.gelu(conv1)
            out = R.add(gelu1, gelu2)
            R.output(out)
        return out
"""

BRANCH = HDR + """
    @R.function
    def main(data: R.Tensor((1, 4, 8, 8), "float32"), weight: R.Tensor((4, 4, 3, 3), "float32")):
        with R.dataflow():
            conv1 = R.nn.conv2d(data, weight)
            relu1 = R.nn.relu(conv1)
            gelu1 = R.nn.gelu(conv1)
            out = R.add(relu1, gelu1)
            R.output(out)
        return out
"""

LAMBDA = HDR + """
    @R.function
    def main(x: R.Tensor((8,), "float32")):
        @R.function
        def local(y: R.Tensor((8,), "float32")) -> R.Tensor((8,), "float32"):
            z = R.multiply(y, y)
            return z
        w = local(x)
        return w
"""

MULTIPLY = HDR + """
    @R.function
    def main(x: R.Tensor((10, 10), "float32"), y: R.Tensor((10, 10), "float32")):
        with R.dataflow():
            lv0 = R.multiply(x, y)
            R.output(lv0)
        return lv0
"""

CALL_TIR = HDR.replace("@I.ir_module", "@I.ir_module(s_tir=True)") + """
    @T.prim_func(private=True, s_tir=True)
    def relu(data: T.Buffer((1, 4, 8, 8), "float32"), out: T.Buffer((1, 4, 8, 8), "float32")):
        for ax0, ax1, ax2, ax3 in T.grid(1, 4, 8, 8):
            with T.sblock("relu"):
                i, j, k, l = T.axis.remap("SSSS", [ax0, ax1, ax2, ax3])
                out[i, j, k, l] = T.max(data[i, j, k, l], T.float32(0))

    @R.function
    def main(data: R.Tensor((1, 4, 8, 8), "float32"), weight1: R.Tensor((4, 4, 3, 3), "float32")):
        cls = Module
        with R.dataflow():
            conv1 = R.nn.conv2d(data, weight1, padding=(1, 1))
            relu1 = R.call_tir(cls.relu, (conv1,), R.Tensor((1, 4, 8, 8), "float32"))
            R.output(relu1)
        return relu1
"""

UNUSED = HDR + """
    @R.function
    def main(data: R.Tensor((1, 4, 8, 8), "float32"), weight1: R.Tensor((4, 4, 3, 3), "float32")):
        with R.dataflow():
            conv1 = R.nn.conv2d(data, weight1, padding=(1, 1))
            relu = R.nn.relu(data)
            R.output(conv1)
        return conv1
"""

SPLIT = HDR + """
    @R.function
    def main(inp: R.Tensor((16, 32), "float32")):
        with R.dataflow():
            tup = R.split(inp, [16], axis=1)
            out = R.add(tup[0], tup[1])
            R.output(out)
        return out
"""

CLIP1 = HDR + """
    @R.function
    def main(x: R.Tensor((10, 10), "float32")):
        with R.dataflow():
            gv = R.clip(x, 0, 4)
            R.output(gv)
        return gv
"""

CLIP2 = HDR + """
    @R.function
    def main(x: R.Tensor((10, 10), "float32")):
        with R.dataflow():
            gv0 = R.clip(x, 0, 4)
            gv1 = R.clip(x, 1, 3)
            R.output(gv0, gv1)
        return (gv0, gv1)
"""

VAR_ALIAS = HDR + """
    @R.function
    def main(x: R.Tensor((1, 16), "float32"), w: R.Tensor((16, 16), "float32")):
        with R.dataflow():
            w1 = R.permute_dims(w, axes=None)
            y = R.matmul(x, w1)
            y1 = y
            out = R.add(x, y1)
            R.output(out)
        return out
"""

MATMUL_SYMBOLIC = HDR + """
    @R.function
    def main(x: R.Tensor(("batch", 16), "float32"), w1: R.Tensor((16, 16), "float32"),
             w2: R.Tensor((16, "m"), "float32")):
        with R.dataflow():
            matmul1 = R.matmul(x, w1)
            matmul2 = R.matmul(x, w2)
            out = (matmul1, matmul2)
            R.output(out)
        return out
"""

IF_BRANCH = HDR + """
    @R.function
    def main(cond: R.Tensor((), "bool"), x: R.Tensor((1, 4, 8, 8), "float32"),
             w: R.Tensor((4, 4, 3, 3), "float32")):
        if cond:
            with R.dataflow():
                a = R.nn.relu(R.nn.conv2d(x, w))
                R.output(a)
            r = a
        else:
            with R.dataflow():
                b = R.nn.conv2d(x, w)
                c = R.nn.relu(b)
                d = R.add(c, c)
                R.output(d)
            r = d
        return r
"""

CONCAT = HDR + """
    @R.function
    def main(x: R.Tensor((10,), "float32"), y: R.Tensor((10,), "float32")):
        with R.dataflow():
            lv = R.abs(x)
            lv1 = R.abs(y)
            lv2 = R.concat([lv, lv1])
            gv = R.nn.relu(lv2)
            R.output(gv)
        return gv
"""

RELU_CHAIN = HDR + """
    @R.function
    def main(x: R.Tensor((2, 4), "float32")):
        with R.dataflow():
            first = R.nn.relu(x)
            kept = R.nn.relu(first)
            dead = R.nn.relu(kept)
            R.output(kept)
        return kept
"""

STATIC_SHAPE = HDR + """
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((2, 2), "float32"):
        shape = R.shape([2, 2])
        with R.dataflow():
            out = R.reshape(x, shape)
            R.output(out)
        return out
"""

IDENTICAL_REGIONS = HDR + """
    @R.function
    def main(data: R.Tensor((1, 4, 8, 8), "float32"), w1: R.Tensor((4, 4, 3, 3), "float32"),
             w2: R.Tensor((4, 4, 3, 3), "float32")):
        with R.dataflow():
            a = R.nn.relu(R.nn.conv2d(data, w1, padding=(1, 1)))
            b = R.nn.relu(R.nn.conv2d(data, w2, padding=(1, 1)))
            c = R.add(a, b)
            R.output(c)
        return c
"""

# MergeCompositeFunctions inputs: composite functions written out (as FuseOpsByPattern makes them)

def composite(name, comp, params, body, ret):
    ps = ", ".join(f"{p}: {t}" for p, t in params)
    return f"""
    @R.function(private=True)
    def {name}({ps}) -> {ret}:
        R.func_attr({{"Composite": "{comp}", "Primitive": True}})
        with R.dataflow():
{body}
        return gv
"""


T4 = 'R.Tensor((1, 4, 8, 8), "float32")'
W4 = 'R.Tensor((4, 4, 3, 3), "float32")'


def unary(name, comp, op):
    return composite(name, comp, [("x", T4)], f"            gv = {op}(x)\n            R.output(gv)", T4)


def binary(name, comp, op):
    return composite(name, comp, [("x", T4), ("y", T4)], f"            gv = {op}(x, y)\n            R.output(gv)", T4)


CONV_RELU_COMP = composite("fused_relax_nn_conv2d_relax_nn_relu", "dnnl.conv2d_relu", [("data", T4), ("weight", W4)],
                           "            lv = R.nn.conv2d(data, weight, padding=(1, 1))\n            gv = R.nn.relu(lv)\n            R.output(gv)", T4)

MERGE_X2 = HDR + CONV_RELU_COMP + f"""
    @R.function
    def main(data: {T4}, weight1: {W4}, weight2: {W4}):
        cls = Module
        with R.dataflow():
            lv = cls.fused_relax_nn_conv2d_relax_nn_relu(data, weight1)
            gv = cls.fused_relax_nn_conv2d_relax_nn_relu(lv, weight2)
            R.output(gv)
        return gv
"""

DIAMOND_COMPS = (composite("fused_relax_nn_conv2d", "compiler_A.conv2d", [("data", T4), ("weight", W4)],
                           "            gv = R.nn.conv2d(data, weight, padding=(1, 1))\n            R.output(gv)", T4)
                 + unary("fused_relax_nn_relu", "compiler_A.relu", "R.nn.relu")
                 + binary("fused_relax_add", "compiler_A.add", "R.add"))


def diamond(gelu_backend):
    return HDR + DIAMOND_COMPS + unary("fused_relax_nn_gelu", f"{gelu_backend}.gelu", "R.nn.gelu") + f"""
    @R.function
    def main(data: {T4}, weight: {W4}):
        cls = Module
        with R.dataflow():
            lv = cls.fused_relax_nn_conv2d(data, weight)
            lv1 = cls.fused_relax_nn_relu(lv)
            lv2 = cls.fused_relax_nn_gelu(lv)
            gv = cls.fused_relax_add(lv1, lv2)
            R.output(gv)
        return gv
"""


MERGE_PRODUCERS = HDR + unary("fused_relax_nn_relu", "compiler_A.relu", "R.nn.relu") + unary(
    "fused_relax_nn_gelu", "compiler_A.gelu", "R.nn.gelu") + binary("fused_relax_add", "compiler_A.add", "R.add") + f"""
    @R.function
    def main(x: {T4}):
        cls = Module
        with R.dataflow():
            lv = cls.fused_relax_nn_relu(x)
            lv1 = cls.fused_relax_nn_relu(lv)
            lv2 = cls.fused_relax_nn_gelu(x)
            lv3 = cls.fused_relax_nn_gelu(lv2)
            gv = cls.fused_relax_add(lv1, lv3)
            R.output(gv)
        return gv
"""

MERGE_PRODUCERS_CYCLIC = HDR + unary("fused_relax_nn_relu", "compiler_A.relu", "R.nn.relu") + unary(
    "fused_relax_nn_gelu", "compiler_A.gelu", "R.nn.gelu") + binary("fused_relax_add", "compiler_A.add", "R.add") + f"""
    @R.function
    def main(x: {T4}):
        cls = Module
        with R.dataflow():
            lv = cls.fused_relax_nn_relu(x)
            lv1 = R.nn.relu(lv)
            lv2 = cls.fused_relax_nn_gelu(lv1)
            gv = cls.fused_relax_add(lv, lv2)
            R.output(gv)
        return gv
"""

MERGE_REGIONS_EXAMPLE = HDR + binary("fused_relax_add", "compiler_A.add", "R.add") + unary(
    "fused_relax_nn_relu", "compiler_A.relu", "R.nn.relu") + unary("fused_relax_nn_gelu", "compiler_B.gelu", "R.nn.gelu") + f"""
    @R.function
    def main(x1: {T4}, x2: {T4}, x3: {T4}):
        cls = Module
        with R.dataflow():
            lv = cls.fused_relax_add(x1, x2)
            lv1 = cls.fused_relax_nn_gelu(x3)
            lv2 = cls.fused_relax_add(lv, lv1)
            lv3 = cls.fused_relax_nn_gelu(lv2)
            lv4 = cls.fused_relax_nn_relu(lv)
            lv5 = cls.fused_relax_add(lv4, lv3)
            gv = cls.fused_relax_add(lv5, lv1)
            R.output(gv)
        return gv
"""

MIXED_NON_COMPOSITE = HDR + composite("fused_relax_nn_conv2d", "tensorrt.conv2d", [("data", T4), ("weight", W4)],
                                      "            gv = R.nn.conv2d(data, weight, padding=(1, 1))\n            R.output(gv)", T4) + f"""
    @R.function
    def main(data: {T4}, weight: {W4}):
        cls = Module
        with R.dataflow():
            lv = cls.fused_relax_nn_conv2d(data, weight)
            gv = R.nn.relu(lv)
            R.output(gv)
        return gv
"""

MERGE_CALL_TIR = HDR.replace("@I.ir_module", "@I.ir_module(s_tir=True)") + """
    @T.prim_func(private=True, s_tir=True)
    def copy(a: T.Buffer((1, 4, 8, 8), "float32"), b: T.Buffer((1, 4, 8, 8), "float32")):
        for i0, i1, i2, i3 in T.grid(1, 4, 8, 8):
            with T.sblock("copy"):
                v0, v1, v2, v3 = T.axis.remap("SSSS", [i0, i1, i2, i3])
                b[v0, v1, v2, v3] = a[v0, v1, v2, v3]
""" + unary("fused_relax_nn_relu", "compiler_A.relu", "R.nn.relu") + f"""
    @R.function
    def main(x: {T4}):
        cls = Module
        with R.dataflow():
            lv = cls.fused_relax_nn_relu(x)
            lv1 = R.call_tir(cls.copy, (lv,), R.Tensor((1, 4, 8, 8), "float32"))
            gv = cls.fused_relax_nn_relu(lv1)
            R.output(gv)
        return gv
"""

H8 = 'R.Tensor((1, 8), "float32")'
H4 = 'R.Tensor((1, 4), "float32")'
SPLIT_COMP = composite("fused_relax_split", "compiler_A.split", [("x", H8)],
                       "            gv = R.split(x, indices_or_sections=2, axis=1)\n            R.output(gv)",
                       f"R.Tuple({H4}, {H4})")


def tuple_case(relu_backend, escape):
    """split -> projections -> (relu on one half) -> re-packed tuple -> swapped projections ->
    subtract; with escape the whole split tuple is also returned."""
    comps = SPLIT_COMP + composite(
        "fused_relax_subtract", "compiler_A.subtract", [("x", H4), ("y", H4)],
        "            gv = R.subtract(x, y)\n            R.output(gv)", H4)
    relu = "lv1"
    if relu_backend:
        comps += composite("fused_relax_nn_relu", f"{relu_backend}.relu", [("x", H4)],
                           "            gv = R.nn.relu(x)\n            R.output(gv)", H4)
        relu = "cls.fused_relax_nn_relu(lv1)"
    ret = "(gv, lv)" if escape else "gv"
    return HDR + comps + f"""
    @R.function
    def main(x: {H8}):
        cls = Module
        with R.dataflow():
            lv = cls.fused_relax_split(x)
            lv1 = lv[0]
            lv2 = lv[1]
            {"lv3 = " + relu if relu_backend else ""}
            lv4 = ({"lv3" if relu_backend else "lv1"}, lv2)
            lv5 = lv4[1]
            lv6 = lv4[0]
            gv = cls.fused_relax_subtract(lv5, lv6)
            R.output(gv{", lv" if escape else ""})
        return {ret}
"""


MAXIMAL = HDR + """
    @R.function
    def main(x: R.Tensor((32, 8), "int32"), y: R.Tensor((8, 8), "int32"), bias: R.Tensor((8,), "int32")):
        with R.dataflow():
            lv0 = R.matmul(x, y, out_dtype="int32")
            lv1 = R.add(lv0, bias)
            lv2 = R.clip(lv1, -128, 127)
            R.output(lv2)
        return lv2
"""

CONV_STRIDES = HDR + """
    @R.function
    def main(x: R.Tensor((1, 4, 8, 8), "float32"), w: R.Tensor((4, 4, 3, 3), "float32")):
        with R.dataflow():
            a = R.nn.conv2d(x, w, strides=(2, 2))
            b = R.nn.conv2d(x, w)
            R.output(a, b)
        return (a, b)
"""

SHAPES = HDR + """
    @R.function
    def main(x: R.Tensor((2, 3, 3), "float32"), y: R.Tensor((3, 3, 3), "float32"), z: R.Tensor((2, 3, 3), "float16")):
        with R.dataflow():
            a = R.nn.relu(x)
            b = R.nn.relu(y)
            c = R.nn.relu(z)
            R.output(a, b, c)
        return (a, b, c)
"""

ADD_CONST = HDR + """
    @R.function
    def main(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32")):
        with R.dataflow():
            a = R.add(x, R.const(2.0, "float32"))
            b = R.add(a, y)
            R.output(b)
        return b
"""

ONLY_USED_BY = HDR + """
    @R.function
    def main(x: R.Tensor((4, 4), "float32"), w: R.Tensor((4, 4), "float32")):
        with R.dataflow():
            a = R.matmul(x, w)
            b = R.nn.relu(a)
            c = R.matmul(b, w)
            d = R.nn.relu(c)
            e = R.add(c, d)
            R.output(e)
        return e
"""

ACTIVATIONS = HDR + """
    @R.function
    def main(x: R.Tensor((4,), "float32")):
        with R.dataflow():
            a = R.nn.relu(x)
            b = R.nn.gelu(a)
            c = R.sigmoid(b)
            R.output(c)
        return c
"""

NHWC_CONVS = HDR + """
    @R.function
    def main(x: R.Tensor((1, 8, 8, 4), "float32"), w: R.Tensor((4, 3, 3, 4), "float32"), v: R.Tensor((1, 4, 8, 8), "float32"), k: R.Tensor((4, 4, 3, 3), "float32")):
        with R.dataflow():
            a = R.nn.conv2d(x, w, data_layout="NHWC", kernel_layout="OHWI")
            b = R.nn.conv2d(v, k)
            R.output(a, b)
        return (a, b)
"""


CONV_NHWC_X2 = """
    @R.function
    def {name}(data: R.Tensor((4, 8, 8, 8), "float16"), weight1: R.Tensor((8, 3, 3, 8), "float16"),
             weight2: R.Tensor((8, 3, 3, 8), "float16")):
        with R.dataflow():
            conv1 = R.nn.conv2d(data, weight1, padding=(1, 1), data_layout="NHWC", kernel_layout="OHWI")
            conv2 = R.nn.conv2d(conv1, weight2, padding=(1, 1), data_layout="NHWC", kernel_layout="OHWI")
            R.output(conv2)
        return conv2
"""
MULTI_ENTRY = HDR + CONV_NHWC_X2.format(name="main2") + CONV_NHWC_X2.replace(
    "            R.output(conv2)\n        return conv2",
    "            conv3 = Module.main2(data, weight1, weight2)\n            result = R.add(conv2, conv3)\n"
    "            R.output(result)\n        return result").format(name="main")


def rhs_is_const(ctx):
    return isinstance(ctx.annotated_expr["rhs"], type(ctx.annotated_expr["root"].args[0])) is False and \
        type(ctx.annotated_expr["rhs"]).__name__ == "GenericConst"


def conv_annotated():
    lhs, rhs = wildcard(), wildcard()
    out = is_op("relax.nn.conv2d")(lhs, rhs)
    return out, {"root": out, "lhs": lhs, "rhs": rhs}


def nchw_only(ctx):
    return ctx.annotated_expr["root"].attrs.data_layout == "NCHW"


def one_user(ctx):
    mm = [v for v, e in ctx.matched_bindings.items() if getattr(e, "op", None) is not None and e.op.name == "relax.matmul"]
    return all(len(ctx.var_usages.get(v, [])) == 1 for v in mm)


P = "test_dataflow_pattern.py"
F = "test_transform_fuse_ops_by_pattern.py"
M = "test_transform_merge_composite_functions.py"
D = "test_codegen_dnnl.py"

CASES = [
    # name, tvm test, source, TVM patterns, graft pattern file, stage, options
    dict(name="fuse_conv2d_relu_x2", tvm=F + "::test_partition_conv2d_relu", src=CONV2D_RELU_X2,
         pats=[("dnnl.conv2d_relu", conv_relu)], graft_pats="conv2d_relu", stage="fuse"),
    dict(name="fuse_multiple_patterns", tvm=F + "::test_partition_multiple_patterns", src=CONV2D_CONV2D_RELU,
         pats=[("dnnl.conv2d_relu", conv_relu), ("dnnl.conv2d", conv)], graft_pats="conv2d_relu_then_conv2d", stage="fuse"),
    dict(name="fuse_partition_order", tvm=F + "::test_partition_order", src=CONV2D_RELU_X2,
         pats=[("dnnl.conv2d", conv), ("dnnl.conv2d_relu", conv_relu)], graft_pats="conv2d_then_conv2d_relu", stage="fuse"),
    dict(name="fuse_branch_tuple_output", tvm=F + "::test_branch_tuple_output", src=BRANCH_TUPLE_OUTPUT,
         pats=[("dnnl.conv2d_relu", conv_relu)], graft_pats="conv2d_relu", stage="fuse"),
    dict(name="fuse_cyclic_dependency", tvm=F + "::test_cyclic_dependency", src=BRANCH,
         pats=[("compiler_A.conv2d_relu_add", lambda: is_op("relax.add")(conv_relu(), wildcard()))],
         graft_pats="conv2d_relu_add", stage="fuse", tvm_error="cyclic dependency"),
    dict(name="fuse_bind_params", tvm=F + "::test_bind_params", src=CONV2D_RELU, consts={"weight1": (4, 4, 3, 3)},
         pats=[("dnnl.conv2d_relu", conv_relu)], graft_pats="conv2d_relu", stage="fuse"),
    dict(name="fuse_annotate_codegen", tvm=F + "::test_annotate_codegen", src=CONV2D_RELU,
         pats=[("dnnl.conv2d_relu", conv_relu)], graft_pats="conv2d_relu", stage="fuse", opts=["annotate_codegen"]),
    dict(name="fuse_no_patterns", tvm=F + "::test_no_op_if_no_patterns_match[False]", src=CONV2D_RELU,
         pats=[], graft_pats="empty", stage="fuse"),
    dict(name="fuse_no_patterns_annotate", tvm=F + "::test_no_op_if_no_patterns_match[True]", src=CONV2D_RELU,
         pats=[], graft_pats="empty", stage="fuse", opts=["annotate_codegen"]),
    dict(name="fuse_unmatched_lambda", tvm=F + "::test_unmatched_calls_may_include_lambda_functions[False]", src=LAMBDA,
         pats=[("compiler_A.relu", lambda: op1("relax.nn.relu"))], graft_pats="relu", stage="fuse"),
    dict(name="fuse_unmatched_lambda_annotate", tvm=F + "::test_unmatched_calls_may_include_lambda_functions[True]",
         src=LAMBDA, pats=[("compiler_A.relu", lambda: op1("relax.nn.relu"))], graft_pats="relu", stage="fuse",
         opts=["annotate_codegen"]),
    dict(name="fuse_annotate_multiply", tvm=F + "::test_compare_with_merge_composite_path (path 1)", src=MULTIPLY,
         pats=[("cutlass.multiply", lambda: op2("relax.multiply"))], graft_pats="multiply", stage="fuse",
         opts=["annotate_codegen"]),
    dict(name="merge_multiply", tvm=F + "::test_compare_with_merge_composite_path (path 2)", src=MULTIPLY,
         pats=[("cutlass.multiply", lambda: op2("relax.multiply"))], graft_pats="multiply", stage="merge"),
    dict(name="fuse_ignore_call_tir", tvm=F + "::test_ignore_call_tir", src=CALL_TIR,
         pats=[("cutlass.conv2d", conv)], graft_pats="conv2d", stage="fuse"),
    dict(name="fuse_unused", tvm=F + "::test_unused", src=UNUSED,
         pats=[("cutlass.conv2d", conv)], graft_pats="conv2d", stage="fuse"),
    dict(name="fuse_bind_constants", tvm=F + "::test_bind_constants", src=CONV2D_RELU, consts={"weight1": (4, 4, 3, 3)},
         pats=[("dnnl.conv2d_relu", conv_relu)], graft_pats="conv2d_relu", stage="fuse", opts=["no_bind_constants"]),
    dict(name="fuse_split", tvm=F + "::test_split (split)", src=SPLIT,
         pats=[("x.split", lambda: op1("relax.split"))], graft_pats="split", stage="fuse"),
    dict(name="fuse_split_add", tvm=F + "::test_split (split, getitems, add)", src=SPLIT,
         pats=[("x.split", lambda: is_op("relax.add")(is_tuple_get_item(op1("relax.split"), 0),
                                                      is_tuple_get_item(op1("relax.split"), 1)))],
         graft_pats="split_add", stage="fuse"),
    dict(name="fuse_clip", tvm=F + "::test_clip (one clip)", src=CLIP1,
         pats=[("x.clip", lambda: is_op("relax.clip")(wildcard(), wildcard(), wildcard()))], graft_pats="clip", stage="fuse"),
    dict(name="fuse_clip2", tvm=F + "::test_clip (two clips)", src=CLIP2,
         pats=[("x.clip", lambda: is_op("relax.clip")(wildcard(), wildcard(), wildcard()))], graft_pats="clip", stage="fuse"),
    dict(name="fuse_var_alias", tvm=F + "::test_intermediate_var_to_var_binding", src=VAR_ALIAS,
         pats=[("cublas.matmul_transposed_bias", lambda: is_op("relax.add")(wildcard(), is_op("relax.matmul")(wildcard(), op1("relax.permute_dims"))), no_leak),
               ("cublas.matmul_transposed", lambda: is_op("relax.matmul")(wildcard(), op1("relax.permute_dims")), no_leak)],
         graft_pats="matmul_transposed", stage="fuse", opts=["annotate_codegen"]),
    dict(name="fuse_annotate_twice", tvm=F + "::test_multple_runs", src=CONV2D_RELU,
         pats=[("dnnl.conv2d_relu", conv_relu)], graft_pats="conv2d_relu", stage="fuse", opts=["annotate_codegen", "twice"]),
    dict(name="fuse_matmul_symbolic", tvm=F + "::test_matmul_symbolic_var", src=MATMUL_SYMBOLIC,
         pats=[("cublas.matmul", lambda: op2("relax.matmul"))], graft_pats="matmul", stage="fuse", opts=["annotate_codegen"]),
    dict(name="fuse_dataflow_inside_branch", tvm=F + "::test_dataflow_inside_branch", src=IF_BRANCH,
         pats=[("dnnl.conv2d_relu", conv_relu)], graft_pats="conv2d_relu", stage="fuse"),
    dict(name="fuse_concat_abs", tvm=F + "::test_concat (concat of abs)", src=CONCAT,
         pats=[("x.concat_abs_abs", lambda: is_op("relax.concat")(is_tuple([op1("relax.abs"), op1("relax.abs")])))],
         graft_pats="concat_abs_abs", stage="fuse"),
    dict(name="fuse_concat", tvm=F + "::test_concat (concat alone)", src=CONCAT,
         pats=[("x.concat", lambda: op1("relax.concat"))], graft_pats="concat", stage="fuse"),
    dict(name="fuse_relu_chain_dead_tail", tvm=F + "::test_unique_boundary_output_precedes_last_group_binding", src=RELU_CHAIN,
         pats=[("compiler_A.relu_chain", lambda: op1("relax.nn.relu") if False else is_op("relax.nn.relu")(is_op("relax.nn.relu")(op1("relax.nn.relu"))))],
         graft_pats="relu_chain", stage="fuse", opts=["annotate_codegen"]),
    dict(name="fuse_static_shape", tvm=F + "::test_inline_bound_static_shape_argument", src=STATIC_SHAPE,
         pats=[("compiler_A.reshape", lambda: op2("relax.reshape"))], graft_pats="reshape", stage="fuse"),
    dict(name="merge_identical_regions", tvm=F + " / " + M + " (BlockBuilder dedup of equal functions)", src=IDENTICAL_REGIONS,
         pats=[("dnnl.conv2d_relu", conv_relu)], graft_pats="conv2d_relu", stage="merge"),
    dict(name="fuse_multiple_entries_same_extern", tvm=F + "::test_multiple_entries_multiple_calls_same_extern",
         src=MULTI_ENTRY, pats=[("cutlass.conv2d", conv)], graft_pats="conv2d", stage="fuse", opts=["annotate_codegen"]),
    dict(name="fuse_check_rejects", tvm=F + "::test_check_pattern", src=CONV2D_RELU,
         pats=[("cutlass.conv2d", conv_annotated, rhs_is_const)], graft_pats="conv2d_const_weight", stage="fuse"),
    dict(name="fuse_match_maximal_or", tvm=F + "::test_match_maximal_subgraph", src=MAXIMAL,
         pats=[("orclip", lambda: is_op("relax.add")(op2("relax.matmul"), wildcard()) |
                is_op("relax.clip")(is_op("relax.add")(op2("relax.matmul"), wildcard()), wildcard(), wildcard()))],
         graft_pats="orclip", stage="fuse"),
    # test_dataflow_pattern.py's pattern kinds, as FuseOpsByPattern partitions
    dict(name="dpl_op_attr", tvm=P + "::test_op_attr", src=CONV_STRIDES,
         pats=[("x.conv_s2", lambda: op2("relax.nn.conv2d").has_attr({"strides": [2, 2]}))], graft_pats="conv_strides2", stage="fuse"),
    dict(name="dpl_and_shape_dtype", tvm=P + "::test_and_pattern", src=SHAPES,
         pats=[("x.relu233", lambda: is_op("relax.nn.relu")(wildcard().has_shape((2, 3, 3)) & has_dtype("float32")))],
         graft_pats="relu_f32_233", stage="fuse"),
    dict(name="dpl_not_shape", tvm=P + "::test_not_pattern", src=SHAPES,
         pats=[("x.relu_not233", lambda: is_op("relax.nn.relu")(~wildcard().has_shape((2, 3, 3))))],
         graft_pats="relu_not_233", stage="fuse"),
    dict(name="dpl_dtype", tvm=P + "::test_dtype_pattern", src=SHAPES,
         pats=[("x.relu16", lambda: is_op("relax.nn.relu")(has_dtype("float16")))], graft_pats="relu_f16", stage="fuse"),
    dict(name="dpl_constant", tvm=P + "::test_constant_pattern", src=ADD_CONST,
         pats=[("x.add_const", lambda: is_op("relax.add")(wildcard(), is_const()))], graft_pats="add_const", stage="fuse"),
    dict(name="dpl_or", tvm=P + "::test_or_pattern", src=ACTIVATIONS,
         pats=[("x.act", lambda: op1("relax.nn.relu") | op1("relax.nn.gelu"))], graft_pats="relu_or_gelu", stage="fuse"),
    dict(name="dpl_only_used_by", tvm=P + "::test_simple_oub (matmul >> relu as a check)", src=ONLY_USED_BY,
         pats=[("x.mm_relu", lambda: is_op("relax.nn.relu")(op2("relax.matmul")), one_user)],
         graft_pats="mm_relu_oub", stage="fuse"),
    dict(name="dpl_named_check_nhwc", tvm=F + " (a backend check rejecting a layout, by name)", src=NHWC_CONVS,
         pats=[("dnnl.conv2d", conv_annotated, nchw_only)], graft_pats="conv2d_dnnl_check", stage="fuse"),
    # MergeCompositeFunctions
    dict(name="merge_conv2d_relu_x2", tvm=M + "::test_conv2d_relu_x2", src=MERGE_X2, stage="mergeonly"),
    dict(name="merge_diamond_cyclic_dep", tvm=M + "::test_diamond_cyclic_dep", src=diamond("compiler_B"), stage="mergeonly"),
    dict(name="merge_diamond", tvm=M + "::test_diamond", src=diamond("compiler_A"), stage="mergeonly"),
    dict(name="merge_producers", tvm=M + "::test_merge_producers", src=MERGE_PRODUCERS, stage="mergeonly"),
    dict(name="merge_producers_cyclic_dep", tvm=M + "::test_merge_producers_cyclic_dep", src=MERGE_PRODUCERS_CYCLIC, stage="mergeonly"),
    dict(name="merge_compiler_regions_example", tvm=M + "::test_merge_compiler_regions_example", src=MERGE_REGIONS_EXAMPLE, stage="mergeonly"),
    dict(name="merge_mixed_non_composite", tvm=M + "::test_mixed_non_composite", src=MIXED_NON_COMPOSITE, stage="mergeonly"),
    dict(name="merge_call_tir", tvm=M + "::test_handle_existence_of_call_tir", src=MERGE_CALL_TIR, stage="mergeonly"),
    dict(name="merge_tuple_projection", tvm=M + "::test_tuple_projection_merging", src=tuple_case(None, False), stage="mergeonly"),
    dict(name="merge_tuple_cycle_boundary", tvm=M + "::test_tuple_projection_preserves_real_cycle_boundary", src=tuple_case("compiler_B", False), stage="mergeonly"),
    dict(name="merge_tuple_escape", tvm=M + "::test_tuple_projection_rejects_escaping_tuple", src=tuple_case(None, True), stage="mergeonly"),
    # DNNL
    dict(name="dnnl_offload", tvm=D + "::test_dnnl_offload (partition part)", src=CONV2D_RELU_X2,
         pats=[("dnnl.conv2d_relu", conv_relu)], graft_pats="conv2d_relu", stage="merge"),
]
