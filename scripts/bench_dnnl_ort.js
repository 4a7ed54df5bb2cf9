#!/usr/bin/env node
// ONNX Runtime side of bench/bench_dnnl: a small server driven over stdin so the C benchmark
// can alternate one graft run and one ORT run.
//
//   node scripts/bench_dnnl_ort.js --onnx PATH --shape 1x3x640x640 [--threads N] [--input FILE.npy]
//   stdin lines:  run -> prints "<ms>"   mem -> prints "<peak KB above the baseline>"   quit
// The baseline is the resident size after onnxruntime-node is loaded and before the session
// is created, so the memory figure counts the model, its session and its runs only.
// Session options: CPU provider, graph optimizations 'all', intraOpNumThreads N, sequential.
'use strict';
const fs = require('fs');
const path = require('path');
const readline = require('readline');

function statusKb(key) {
  const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) : 0;
}

function readNpyF32(file) {
  const b = fs.readFileSync(file);
  const hlen = b.readUInt16LE(8);
  const body = b.subarray(10 + hlen);
  return new Float32Array(body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength));
}

async function main() {
  const a = process.argv.slice(2);
  const o = { onnx: null, shape: null, threads: 1, input: null };
  for (let i = 0; i < a.length; i++) {
    if (a[i] === '--onnx') o.onnx = a[++i];
    else if (a[i] === '--shape') o.shape = a[++i].split('x').map(Number);
    else if (a[i] === '--threads') o.threads = Number(a[++i]);
    else if (a[i] === '--input') o.input = a[++i];
    else { process.stderr.write(`bench_dnnl_ort: unknown argument ${a[i]}\n`); process.exit(2); }
  }
  if (!o.onnx || !o.shape) { process.stderr.write('bench_dnnl_ort: --onnx and --shape are required\n'); process.exit(2); }
  const where = process.env.GRAFT_ORT_NODE ||
                path.resolve(__dirname, '..', 'build/third_party/npm/node_modules/onnxruntime-node');
  const ort = require(where);
  global.gc && global.gc();
  const base = statusKb('VmRSS');
  const session = await ort.InferenceSession.create(o.onnx, {
    executionProviders: ['cpu'], graphOptimizationLevel: 'all',
    intraOpNumThreads: o.threads, interOpNumThreads: 1, executionMode: 'sequential' });
  const n = o.shape.reduce((x, y) => x * y, 1);
  let data = o.input ? readNpyF32(o.input) : new Float32Array(n).map((_, i) => Math.sin(i) * 0.5);
  const feeds = { [session.inputNames[0]]: new ort.Tensor('float32', data, o.shape) };
  const rl = readline.createInterface({ input: process.stdin });
  process.stdout.write('ready\n');
  for await (const line of rl) {
    const cmd = line.trim();
    if (cmd === 'run') {
      const t0 = process.hrtime.bigint();
      await session.run(feeds);
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      process.stdout.write(`${ms}\n`);
    } else if (cmd === 'mem') {
      process.stdout.write(`${Math.max(0, statusKb('VmHWM') - base)}\n`);
    } else if (cmd === 'quit') {
      break;
    }
  }
  process.exit(0);
}
main().catch((e) => { process.stderr.write(`bench_dnnl_ort: ${e.message}\n`); process.exit(1); });
