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

    class GPT2Block(nn.Module):
        """A GPT-2 block as Hugging Face writes it: pre-norm, one fused QKV projection split in
        three, the causal mask sliced from a registered lower-triangular buffer and applied with
        where(), tanh GELU written out."""

        def __init__(self, hidden, heads, max_pos):
            super().__init__()
            self.heads = heads
            self.dh = hidden // heads
            self.ln_1 = nn.LayerNorm(hidden, eps=1e-5)
            self.c_attn = nn.Linear(hidden, 3 * hidden)
            self.c_proj = nn.Linear(hidden, hidden)
            self.ln_2 = nn.LayerNorm(hidden, eps=1e-5)
            self.c_fc = nn.Linear(hidden, 4 * hidden)
            self.mlp_proj = nn.Linear(4 * hidden, hidden)
            self.register_buffer('bias', torch.tril(torch.ones(max_pos, max_pos, dtype=torch.bool)).view(1, 1, max_pos, max_pos))

        def split(self, t):
            b, s, _ = t.shape
            return t.view(b, s, self.heads, self.dh).permute(0, 2, 1, 3)

        def forward(self, x):
            b, s, h = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(h, dim=2)
            q, k, v = self.split(q), self.split(k), self.split(v)
            w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.dh)
            causal = self.bias[:, :, :s, :s]
            w = torch.where(causal, w, torch.tensor(torch.finfo(w.dtype).min, dtype=w.dtype))
            a = torch.matmul(torch.softmax(w, dim=-1), v).permute(0, 2, 1, 3).reshape(b, s, h)
            x = x + self.c_proj(a)
            f = self.c_fc(self.ln_2(x))
            f = 0.5 * f * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (f + 0.044715 * torch.pow(f, 3.0))))
            return x + self.mlp_proj(f)

    class GPT2(nn.Module):
        """GPT-2-style decoder over float embeddings x: [1, seq, hidden], seq dynamic up to
        max_pos; learned positions sliced to seq."""

        def __init__(self, layers=4, hidden=256, heads=4, max_pos=256):
            super().__init__()
            self.wpe = nn.Parameter(torch.randn(max_pos, hidden) * 0.02)
            self.blocks = nn.ModuleList([GPT2Block(hidden, heads, max_pos) for _ in range(layers)])
            self.ln_f = nn.LayerNorm(hidden, eps=1e-5)

        def forward(self, x):
            x = x + self.wpe[:x.shape[1]]
            for blk in self.blocks:
                x = blk(x)
            return self.ln_f(x)

    class TorchEncoder(nn.Module):
        """nn.TransformerEncoder as torch writes it; batch-first runs with a key padding mask
        (the last quarter of the positions padded)."""

        def __init__(self, batch_first, norm_first, activation, layers=4, hidden=256, heads=4, ffn=1024, seq=0):
            super().__init__()
            layer = nn.TransformerEncoderLayer(hidden, heads, ffn, dropout=0.0, activation=activation,
                                               batch_first=batch_first, norm_first=norm_first)
            self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            for p in self.enc.parameters():  # the layers are copies of one: give each its own weights
                if p.dim() > 1:
                    nn.init.xavier_uniform_(p)
            self.register_buffer('pad', torch.arange(seq).unsqueeze(0) >= seq - seq // 4 if seq else None)

        def forward(self, x):
            # torch's fused inference kernels (no ONNX export) run only without grad
            with torch.enable_grad():
                return self.enc(x, src_key_padding_mask=self.pad)

    class ConvModule(nn.Module):
        """Conformer's convolution module over [b, t, d]: pointwise conv, GLU, depthwise conv,
        batch norm, SiLU, pointwise conv."""

        def __init__(self, d, k=15):
            super().__init__()
            self.norm = nn.LayerNorm(d)
            self.pw1 = nn.Conv1d(d, 2 * d, 1)
            self.dw = nn.Conv1d(d, d, k, padding=k // 2, groups=d)
            self.bn = nn.BatchNorm1d(d)
            self.pw2 = nn.Conv1d(d, d, 1)

        def forward(self, x):
            y = self.norm(x).transpose(1, 2)
            y = nn.functional.glu(self.pw1(y), dim=1)
            y = self.pw2(nn.functional.silu(self.bn(self.dw(y))))
            return x + y.transpose(1, 2)

    class AudioBlock(nn.Module):
        """Pre-norm attention (nn.MultiheadAttention, batch-first), a conformer convolution
        module, a GELU feed-forward."""

        def __init__(self, d, heads, ffn):
            super().__init__()
            self.attn_norm = nn.LayerNorm(d)
            self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
            self.conv = ConvModule(d)
            self.ffn_norm = nn.LayerNorm(d)
            self.ffn = nn.Sequential(nn.Linear(d, ffn), nn.GELU(), nn.Linear(ffn, d))

        def forward(self, x):
            h = self.attn_norm(x)
            with torch.enable_grad():  # as TorchEncoder
                x = x + self.attn(h, h, h, need_weights=False)[0]
            x = self.conv(x)
            return x + self.ffn(self.ffn_norm(x))

    class AudioEncoder(nn.Module):
        """Whisper-like encoder over log-mel frames x: [1, mels, frames]: two 1-D convolutions
        with GELU (the second strided), sinusoidal positions, conformer-style blocks."""

        def __init__(self, mels=80, frames=400, d=256, heads=4, ffn=1024, layers=4):
            super().__init__()
            self.conv1 = nn.Conv1d(mels, d, 3, padding=1)
            self.conv2 = nn.Conv1d(d, d, 3, stride=2, padding=1)
            t = (frames + 1) // 2
            inv = torch.exp(-math.log(10000.0) * torch.arange(d // 2) / (d // 2 - 1))
            ang = torch.arange(t).unsqueeze(1) * inv.unsqueeze(0)
            self.register_buffer('pos', torch.cat([torch.sin(ang), torch.cos(ang)], dim=1))
            self.blocks = nn.ModuleList([AudioBlock(d, heads, ffn) for _ in range(layers)])
            self.ln_post = nn.LayerNorm(d)

        def forward(self, x):
            x = nn.functional.gelu(self.conv1(x))
            x = nn.functional.gelu(self.conv2(x)).transpose(1, 2) + self.pos
            for blk in self.blocks:
                x = blk(x)
            return self.ln_post(x)

    def deit_tiny():
        from torchvision.models.vision_transformer import VisionTransformer
        m = VisionTransformer(image_size=224, patch_size=16, num_layers=12, num_heads=3, hidden_dim=192, mlp_dim=768)
        nn.init.xavier_uniform_(m.heads.head.weight)  # torchvision zeroes it: the output would not depend on x
        return m

    def encoder(**kw):
        return lambda: TorchEncoder(**kw)

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
        'deit_tiny': deit_tiny,
        'gpt2_small': GPT2,
        'encoder_prenorm_gelu': encoder(batch_first=True, norm_first=True, activation='gelu', seq=128),
        'encoder_seqfirst': encoder(batch_first=False, norm_first=False, activation='relu'),
        'audio_encoder': AudioEncoder,
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
    'deit_tiny': IMAGE,
    'gpt2_small': (1, 64, 256),
    'encoder_prenorm_gelu': (1, 128, 256),
    'encoder_seqfirst': (64, 2, 256),
    'audio_encoder': (1, 80, 400),
}
# name -> the input's dynamic axes ({axis: name}); the output gets the same ones
DYNAMIC = {
    'gpt2_small': {1: 'seq'},
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
            if name.endswith('bias') and not torch.count_nonzero(p):  # also MultiheadAttention's in_proj_bias
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
    axes = {0: 'batch'} if dynamic_batch else DYNAMIC.get(name)
    # torchvision's swin calls F.dropout(p=0.0) without training=, which exports a training-mode
    # Dropout that OpenVINO refuses; in eval mode every dropout is the identity
    dropout = torch.nn.functional.dropout
    torch.nn.functional.dropout = lambda t, p=0.5, training=False, inplace=False: dropout(t, p, False, inplace)
    try:
        with torch.no_grad():
            torch.onnx.export(model, (x,), tmp, input_names=['x'], output_names=['y'], opset_version=13,
                              do_constant_folding=True,
                              dynamic_axes={'x': axes, 'y': axes} if axes else None)
    finally:
        torch.nn.functional.dropout = dropout
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
