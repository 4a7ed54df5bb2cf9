"""Runs Apache TVM (the apache-tvm wheel, scripts/tvm_oracle.sh) on the cases of cases.py and
writes, for each, <name>.input.relax (the input as TVM prints it) and <name>.expected.relax
(TVM's result as it prints it), plus cases.txt, the manifest tests/byoc/test_tvm_suite.c reads.

TVM prints constants as metadata["ir.GenericConst"][i] and omits their data; the oracle appends
graft's metadata section with the data (in the order TVM numbers them: first appearance in
printed order). A case TVM rejects (tvm_error) gets no expected file: graft's own result is the
bar there (a documented difference).

With --graft BIN it then checks the other direction: every golden module of tests/golden
without metadata, printed by `graft fmt --no-spans`, must parse in TVM; and the TVM-suite
files, printed by graft, must parse to modules structurally equal to TVM's own parse.

usage: PYTHONPATH=build/third_party/tvm python3 tests/tvm_suite/oracle.py OUTDIR [--graft BIN]"""
import base64
import glob
import os
import subprocess
import sys

import numpy as np
import tvm
from tvm import relax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cases import CASES  # noqa: E402


def constants_in_print_order(mod):
    seen, out = set(), []

    def visit(e):
        if isinstance(e, tvm.ir.GenericConst) and e not in seen:
            seen.add(e)
            out.append(e)

    for gv in sorted(mod.functions.keys(), key=lambda g: g.name_hint):
        f = mod[gv]
        if isinstance(f, relax.Function):
            relax.analysis.post_order_visit(f, visit)
    return out


def metadata_section(consts):
    lines = ['# Metadata', 'metadata = {"relax.expr.Constant": [']
    for c in consts:
        a = c.value.numpy()
        b64 = base64.b64encode(np.ascontiguousarray(a).tobytes()).decode()
        shape = "(" + ", ".join(str(d) for d in a.shape) + ("," if a.ndim == 1 else "") + ")"
        lines.append(f'    R.const_data("{a.dtype}", {shape}, "{b64}"),')
    lines.append("]}")
    return "\n".join(lines) + "\n"


def script(mod):
    text = mod.script()
    consts = constants_in_print_order(mod)
    if consts:
        text = text.replace("# Metadata omitted. Use show_meta=True in script() method to show it.", "")
        text = text.rstrip("\n") + "\n\n" + metadata_section(consts)
    return text


def parse(src):
    # from_source takes the module alone (the import lines are for a .py file)
    return tvm.script.from_source("\n".join(l for l in src.splitlines() if not l.startswith("from ")))


def run(case):
    mod = parse(case["src"])
    if case.get("consts"):
        rng = np.random.default_rng(7)
        params = {k: rng.standard_normal(s).astype("float32") for k, s in case["consts"].items()}
        mod = relax.transform.BindParams("main", params)(mod)
    inp = script(mod)
    opts = case.get("opts", [])
    pats = []
    for e in case.get("pats", []):
        p = e[1]()
        pat, ann = p if isinstance(p, tuple) else (p, None)
        pats.append(relax.transform.FusionPattern(e[0], pat, ann, check=e[2] if len(e) > 2 else None))
    fuse = relax.transform.FuseOpsByPattern(
        pats, bind_constants="no_bind_constants" not in opts, annotate_codegen="annotate_codegen" in opts)
    out = mod
    if case["stage"] in ("fuse", "merge"):
        out = fuse(out)
        if "twice" in opts:
            out = fuse(out)
    if case["stage"] in ("merge", "mergeonly"):
        out = relax.transform.MergeCompositeFunctions()(out)
    relax.analysis.well_formed(out)
    return inp, script(out)


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    manifest = []
    for case in CASES:
        name = case["name"]
        try:
            inp, exp = run(case)
            err = None
        except Exception as e:  # a case TVM rejects
            if not case.get("tvm_error") or case["tvm_error"] not in str(e):
                raise
            mod = parse(case["src"])
            inp, exp, err = script(mod), None, case["tvm_error"]
        with open(os.path.join(outdir, name + ".input.relax"), "w") as f:
            f.write(inp)
        if exp is not None:
            with open(os.path.join(outdir, name + ".expected.relax"), "w") as f:
                f.write(exp)
        opts = ",".join(case.get("opts", [])) or "-"
        manifest.append(f'{name} {case["stage"]} {case.get("graft_pats", "-")} {opts} '
                        f'{"tvm_error" if err else "expected"} # {case["tvm"]}')
        print(name, "TVM error" if err else "ok")
    with open(os.path.join(outdir, "cases.txt"), "w") as f:
        f.write("# name stage graft-pattern-file options result  # TVM test (written by oracle.py)\n")
        f.write("\n".join(manifest) + "\n")


# graft-printed forms TVM 0.27 cannot read, with the reason
TVM_CANNOT_READ = {
    "prim_value.relax": "R.Prim(value=n): TVM 0.27 dropped the value of PrimStructInfo",
    "sinfo_variety.relax": "R.Prim(value=n), as above",
    "spans_with_span.relax": "R.Prim(value=n), as above",
    "func_attrs.relax": "a global_symbol different from the function name is ill-formed in TVM 0.27",
}


def graft_fmt(graft, path):
    r = subprocess.run([graft, "fmt", "--no-spans", path], capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def roundtrip(graft, outdir):
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden")
    files = [f for d in ("", "byoc", "byoc/expected", "passes", "tvm", "layouts")
             for f in sorted(glob.glob(os.path.join(root, d, "*.relax")))]
    bad, ok = [], 0
    for f in files:
        if os.path.basename(f) in TVM_CANNOT_READ:
            continue
        text = graft_fmt(graft, f)
        if text is None or "metadata" in text:
            continue
        try:
            tvm.script.from_source(text)
            ok += 1
        except Exception as e:  # noqa: BLE001
            bad.append((f, str(e).splitlines()[0]))
    for f in sorted(glob.glob(os.path.join(outdir, "*.relax"))):
        src = open(f).read()
        if "# Metadata" in src:
            continue
        text = graft_fmt(graft, f)
        try:
            tvm.ir.assert_structural_equal(parse(src), parse(text))
            ok += 1
        except Exception as e:  # noqa: BLE001
            bad.append((f, str(e).splitlines()[0]))
    for f, why in bad:
        print("TVM cannot read graft's print of", f, ":", why)
    print(f"graft -> TVM: {ok} modules read back, {len(bad)} failed, {len(TVM_CANNOT_READ)} known exceptions")
    return not bad


if __name__ == "__main__":
    main()
    if "--graft" in sys.argv and not roundtrip(sys.argv[sys.argv.index("--graft") + 1], sys.argv[1]):
        sys.exit(1)
