#!/usr/bin/python3
"""The model zoo: real architectures with random weights, exported to ONNX, no download.

    /usr/bin/python3 scripts/zoo_export.py --out DIR [--model NAME]... [--force] [--list]

Writes DIR/NAME.onnx for each model (all of them by default); a model whose file exists is
skipped (--force rewrites it), unless DIR/zoo_version differs from ZOO_VERSION (the script
changed what it exports): then every model is exported again and DIR/refs is cleared. Runs on Debian's python3-torch 1.13 / python3-torchvision 0.14
(scripts/deps.sh installs them). Every model has one float32 input named "x"; its shape is in
ZOO below and in the file. Weights are random, from fixed seeds, so the same versions give
the same bytes. Biases, batch-norm statistics and ConvNeXt's layer scales are randomized too
(their defaults, 0 / mean 0, variance 1 / 1e-6, make those layers trivial, and graft's
simplifier removes an add of zeros, which a trained model never has). Opset 13: the
form most exported models in the wild have (layer norm as ReduceMean / Sub / Pow / Sqrt / Div,
GELU as Erf).
"""
import argparse
import math
import os
import shutil
import sys
import time


def architectures():
    """name -> constructor; torch is imported here only (listing and skipping need none)."""
    import torch
    import torch.nn as nn

    class EncoderLayer(nn.Module):
        """One BERT encoder layer as BERT writes it: batch-first, per-head reshapes, post-norm."""

        def __init__(self, hidden, heads, ffn):
            super().__init__()
            self.heads = heads
            self.dh = hidden // heads
            self.query = nn.Linear(hidden, hidden)
            self.key = nn.Linear(hidden, hidden)
            self.value = nn.Linear(hidden, hidden)
            self.attn_out = nn.Linear(hidden, hidden)
            self.attn_norm = nn.LayerNorm(hidden, eps=1e-12)
            self.inter = nn.Linear(hidden, ffn)
            self.gelu = nn.GELU()  # erf form
            self.out = nn.Linear(ffn, hidden)
            self.out_norm = nn.LayerNorm(hidden, eps=1e-12)

        def split(self, t):
            b, s, _ = t.shape
            return t.view(b, s, self.heads, self.dh).permute(0, 2, 1, 3)

        def forward(self, x):
            b, s, h = x.shape
            q = self.split(self.query(x))
            k = self.split(self.key(x))
            v = self.split(self.value(x))
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.dh)
            ctx = torch.matmul(torch.softmax(scores, dim=-1), v)
            ctx = ctx.permute(0, 2, 1, 3).reshape(b, s, h)
            x = self.attn_norm(x + self.attn_out(ctx))
            return self.out_norm(x + self.out(self.gelu(self.inter(x))))


    class BertEncoder(nn.Module):
        """Embedding layer norm and 6 encoder layers over float embeddings x: [1, seq, hidden]."""

        def __init__(self, layers=6, hidden=384, heads=6, ffn=1536):
            super().__init__()
            self.emb_norm = nn.LayerNorm(hidden, eps=1e-12)
            self.layers = nn.ModuleList([EncoderLayer(hidden, heads, ffn) for _ in range(layers)])

        def forward(self, x):
            x = self.emb_norm(x)
            for layer in self.layers:
                x = layer(x)
            return x

    def tv(name, **kw):
        def make():
            import torchvision.models as m
            return getattr(m, name)(weights=None, **kw)
        return make

    def video(name):
        def make():
            import torchvision.models.video as m
            return getattr(m, name)(weights=None)
        return make

    def seg(name):
        """A segmentation net with its dilated backbone (its output: the 'out' map only)."""
        class Out(nn.Module):
            def __init__(self, net):
                super().__init__()
                self.net = net

            def forward(self, x):
                return self.net(x)['out']

        def make():
            import torchvision.models.segmentation as m
            return Out(getattr(m, name)(weights=None, weights_backbone=None))
        return make

    return {
        'resnet18': tv('resnet18'),
        'mobilenet_v3_large': tv('mobilenet_v3_large'),
        'regnet_y_400mf': tv('regnet_y_400mf'),
        'shufflenet_v2_x1_0': tv('shufflenet_v2_x1_0'),
        'mnasnet1_0': tv('mnasnet1_0'),
        'convnext_tiny': tv('convnext_tiny'),
        'googlenet': tv('googlenet', aux_logits=False, init_weights=True),
        'bert_encoder': BertEncoder,
        'swin_t': tv('swin_t'),
        'densenet121': tv('densenet121'),
        'r3d_18': video('r3d_18'),
        'lraspp_mobilenet_v3_large': seg('lraspp_mobilenet_v3_large'),
    }


ZOO_VERSION = '2'  # bump when an export changes
IMAGE = (1, 3, 224, 224)
# name -> input shape (the constructors: architectures())
ZOO = {
    'resnet18': IMAGE,
    'mobilenet_v3_large': IMAGE,
    'regnet_y_400mf': IMAGE,
    'shufflenet_v2_x1_0': IMAGE,
    'mnasnet1_0': IMAGE,
    'convnext_tiny': IMAGE,
    'googlenet': IMAGE,
    'bert_encoder': (1, 96, 384),
    'swin_t': IMAGE,
    'densenet121': IMAGE,
    'r3d_18': (1, 3, 8, 112, 112),
    'lraspp_mobilenet_v3_large': (1, 3, 256, 256),
}


def randomize_stats(model, gen):
    """Batch-norm running statistics and affine parameters, layer scales: random, bounded."""
    import torch
    import torch.nn as nn
    with torch.no_grad():
        for mod in model.modules():
            if isinstance(mod, nn.modules.batchnorm._BatchNorm):
                mod.running_mean.copy_(torch.randn(mod.running_mean.shape, generator=gen) * 0.1)
                mod.running_var.copy_(torch.rand(mod.running_var.shape, generator=gen) + 0.5)
                if mod.affine:
                    mod.weight.copy_(torch.rand(mod.weight.shape, generator=gen) + 0.5)
                    mod.bias.copy_(torch.randn(mod.bias.shape, generator=gen) * 0.1)
            if isinstance(mod, nn.LayerNorm) and mod.elementwise_affine:
                mod.weight.copy_(torch.rand(mod.weight.shape, generator=gen) + 0.5)
                mod.bias.copy_(torch.randn(mod.bias.shape, generator=gen) * 0.1)
        for name, p in model.named_parameters():
            if name.endswith('.bias') and not torch.count_nonzero(p):
                p.copy_(torch.randn(p.shape, generator=gen) * 0.02)
            if name.endswith('layer_scale'):
                p.copy_(torch.rand(p.shape, generator=gen) * 0.5 + 0.25)


def export(name, path, seed, arch, dynamic_batch=False):
    import torch
    make, shape = arch[name], ZOO[name]
    torch.manual_seed(seed)
    model = make().eval()
    randomize_stats(model, torch.Generator().manual_seed(seed + 1))
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed + 2))
    tmp = path + '.tmp'
    with torch.no_grad():
        torch.onnx.export(model, (x,), tmp, input_names=['x'], output_names=['y'], opset_version=13,
                          do_constant_folding=True,
                          dynamic_axes={'x': {0: 'batch'}, 'y': {0: 'batch'}} if dynamic_batch else None)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--out', default=os.path.join(os.path.dirname(__file__), '..', 'build/third_party/zoo'))
    ap.add_argument('--model', action='append', choices=sorted(ZOO), default=[])
    ap.add_argument('--force', action='store_true')
    ap.add_argument('--seed', type=int, default=20240521)
    ap.add_argument('--list', action='store_true', help='print name and input shape of each model')
    a = ap.parse_args()
    if a.list:
        for n, s in ZOO.items():
            print(n, 'x'.join(map(str, s)))
        return 0
    os.makedirs(a.out, exist_ok=True)
    stamp = os.path.join(a.out, 'zoo_version')
    old = open(stamp).read().strip() if os.path.exists(stamp) else ''
    if old != ZOO_VERSION:
        a.force = True
        shutil.rmtree(os.path.join(a.out, 'refs'), ignore_errors=True)
    arch = None
    for name in a.model or list(ZOO):
        path = os.path.join(a.out, name + '.onnx')
        if os.path.exists(path) and not a.force:
            continue
        if arch is None:
            import torch
            torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
            arch = architectures()
        t0 = time.time()
        export(name, path, a.seed + 100 * list(ZOO).index(name), arch)
        print(f'zoo_export: {name}: {os.path.getsize(path) >> 20} MiB in {time.time() - t0:.1f}s', file=sys.stderr)
    if old != ZOO_VERSION and not a.model:
        with open(stamp, 'w') as f:
            f.write(ZOO_VERSION + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
