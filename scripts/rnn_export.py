#!/usr/bin/python3
"""Exports the recurrent test models (random weights, fixed seed) to ONNX with Debian's
python3-torch, for tests/dnnl/test_dnnl_rnn.c. Run by scripts/fetch_rnn_models.sh.

  rnn_export.py --out DIR   writes DIR/<name>.onnx for each model missing there
  rnn_export.py --list      prints "<name> <input shape>" per model
"""
import argparse
import os
import sys

MODELS = {
    # speech-style tagger: 2-layer bidirectional LSTM over 40-dim frames, time-major
    "lstm_tagger": (50, 2, 40),
    # CRNN-style recognizer head: batch-first 2-layer GRU (PyTorch exports linear_before_reset=1)
    # over 64-dim column features, then per-step class log-probabilities
    "gru_ctc": (1, 80, 64),
}


def build(name):
    import torch

    class LstmTagger(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = torch.nn.LSTM(40, 64, num_layers=2, bidirectional=True)
            self.fc = torch.nn.Linear(128, 32)

        def forward(self, x):
            y, _ = self.rnn(x)
            return self.fc(y)

    class GruCtc(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(64, 96)
            self.rnn = torch.nn.GRU(96, 96, num_layers=2, batch_first=True)
            self.fc = torch.nn.Linear(96, 40)

        def forward(self, x):
            y, _ = self.rnn(torch.relu(self.proj(x)))
            return torch.log_softmax(self.fc(y), dim=-1)

    return {"lstm_tagger": LstmTagger, "gru_ctc": GruCtc}[name]()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    if a.list:
        for n, s in MODELS.items():
            print(n, "x".join(map(str, s)))
        return 0
    if not a.out:
        ap.error("--out or --list")
    import torch
    os.makedirs(a.out, exist_ok=True)
    for i, (name, shape) in enumerate(MODELS.items()):
        path = os.path.join(a.out, name + ".onnx")
        if os.path.exists(path):
            continue
        torch.manual_seed(1234 + i)
        m = build(name).eval()
        tmp = path + ".tmp"
        torch.onnx.export(m, torch.randn(*shape), tmp, opset_version=14, input_names=["x"],
                          output_names=["y"])
        os.replace(tmp, path)
        print("rnn_export: wrote", path, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
