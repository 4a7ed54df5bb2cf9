#!/usr/bin/env node
// ONNX Runtime reference outputs (and timings) for the real models fetched by
// scripts/fetch_models.sh.
//
//   node scripts/ort_reference.js [--model det|rec|cls|all]... [--out DIR] [--threads N]
//        [--seed N] [--env models.env]
//     writes DIR/<model>/{input_0.npy, output_0.npy, ..., meta.json}
//   node scripts/ort_reference.js --bench N [--model ...] [--threads N]
//     prints one JSON object per model: session creation and run times (median of N)
//   --onnx PATH --shape 1x3x64x64 [--name NAME]   any other model instead of --model
//     (float32 inputs only; --shape may repeat, one per input in order).
//
// Inputs are deterministic: a seeded xorshift32 stream mapped to uniform [-1, 1) float32, like
// a normalized image. The same seed always gives the same bytes on every machine.
'use strict';

const fs = require('fs');
const path = require('path');

const ROOT = path.resolve(__dirname, '..');

// The three PaddleOCR models and their fixed test shapes (NCHW).
const MODELS = {
  det: { envKey: 'GRAFT_MODEL_DET', shapes: [[1, 3, 640, 640]] },
  rec: { envKey: 'GRAFT_MODEL_REC', shapes: [[1, 3, 48, 320]] },
  cls: { envKey: 'GRAFT_MODEL_CLS', shapes: [[1, 3, 48, 192]] },
};

function usage(msg) {
  if (msg) process.stderr.write(`ort_reference: ${msg}\n`);
  process.stderr.write('usage: ort_reference.js [--model det|rec|cls|all]... [--out DIR] ' +
                       '[--threads N] [--seed N] [--bench N] [--env FILE] ' +
                       '[--onnx PATH --shape DxD.. [--name NAME]]\n');
  process.exit(2);
}

function parseArgs(argv) {
  const o = { models: [], out: null, threads: 1, seed: 20240521, bench: 0, env: null,
              onnx: null, shapes: [], name: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => { if (i + 1 >= argv.length) usage(`${a} needs a value`); return argv[++i]; };
    const int = () => { const v = Number(val()); if (!Number.isInteger(v) || v < 0) usage(`${a}: bad number`); return v; };
    switch (a) {
      case '--model': {
        const m = val();
        if (m === 'all') o.models.push(...Object.keys(MODELS));
        else if (MODELS[m]) o.models.push(m);
        else usage(`unknown model '${m}'`);
        break;
      }
      case '--out': o.out = val(); break;
      case '--threads': o.threads = int(); break;
      case '--seed': o.seed = int(); break;
      case '--bench': o.bench = int(); if (o.bench < 1) usage('--bench needs N >= 1'); break;
      case '--env': o.env = val(); break;
      case '--onnx': o.onnx = val(); break;
      case '--shape': o.shapes.push(val().split('x').map(Number)); break;
      case '--name': o.name = val(); break;
      case '-h': case '--help': usage();
      default: usage(`unknown argument '${a}'`);
    }
  }
  if (o.onnx && o.shapes.length === 0) usage('--onnx needs --shape');
  if (o.shapes.some((s) => s.some((d) => !Number.isInteger(d) || d <= 0))) usage('bad --shape');
  if (!o.onnx && o.models.length === 0) o.models = Object.keys(MODELS);
  return o;
}

// KEY=VALUE lines (the file fetch_models.sh writes).
function readEnvFile(file) {
  const env = {};
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const m = /^([A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (m) env[m[1]] = m[2];
  }
  return env;
}

// xorshift32 -> uniform [-1, 1). Seed 0 is mapped away (xorshift's fixed point).
function makeRng(seed) {
  let s = (seed >>> 0) || 0x9e3779b9;
  return () => {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return (s / 4294967296) * 2 - 1;
  };
}

function randomInput(shape, rng) {
  const n = shape.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) data[i] = rng();
  return data;
}

// ---- .npy writer (format 1.0, little-endian, C order) ----
const NPY_DESCR = {
  float32: '<f4', float64: '<f8', float16: '<f2', int8: '|i1', uint8: '|u1', int16: '<i2',
  uint16: '<u2', int32: '<i4', uint32: '<u4', int64: '<i8', uint64: '<u8', bool: '|b1',
};

function npyBytes(type, dims, data) {
  const descr = NPY_DESCR[type];
  if (!descr) throw new Error(`cannot write dtype ${type} as .npy`);
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  // magic(6) + version(2) + len(2) + header + '\n' is padded to a multiple of 64.
  const total = Math.ceil((10 + header.length + 1) / 64) * 64;
  header = header + ' '.repeat(total - 10 - header.length - 1) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1; pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  let body;
  if (ArrayBuffer.isView(data)) {
    body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    if (type === 'bool') body = Buffer.from(data.map((v) => (v ? 1 : 0)));
  } else {
    throw new Error('tensor data is not a typed array');
  }
  if (require('os').endianness() !== 'LE') throw new Error('big-endian host not supported');
  return Buffer.concat([pre, Buffer.from(header, 'latin1'), body]);
}

function writeNpy(file, type, dims, data) {
  fs.writeFileSync(file, npyBytes(type, dims, data));
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

const nowMs = () => Number(process.hrtime.bigint()) / 1e6;

function loadOrt(env) {
  const where = process.env.GRAFT_ORT_NODE || env.GRAFT_ORT_NODE ||
                path.join(ROOT, 'build/third_party/npm/node_modules/onnxruntime-node');
  try {
    return require(where);
  } catch (e) {
    process.stderr.write(`ort_reference: cannot load onnxruntime-node from ${where}: ${e.message}\n` +
                         'run scripts/fetch_models.sh first\n');
    process.exit(1);
  }
}

function sessionOptions(threads) {
  return { executionProviders: ['cpu'], graphOptimizationLevel: 'all',
           intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential' };
}

// The jobs to run: [{name, file, shapes}].
function jobs(opts, env) {
  if (opts.onnx) {
    return [{ name: opts.name || path.basename(opts.onnx, '.onnx'), file: opts.onnx,
              shapes: opts.shapes }];
  }
  return [...new Set(opts.models)].map((m) => {
    const file = process.env[MODELS[m].envKey] || env[MODELS[m].envKey];
    if (!file) {
      process.stderr.write(`ort_reference: no path for model '${m}' (${MODELS[m].envKey}); ` +
                           'run scripts/fetch_models.sh\n');
      process.exit(1);
    }
    return { name: m, file, shapes: MODELS[m].shapes };
  });
}

function makeFeeds(ort, session, shapes, seed) {
  if (shapes.length !== session.inputNames.length) {
    throw new Error(`model has ${session.inputNames.length} inputs, ${shapes.length} shapes given`);
  }
  const rng = makeRng(seed);
  const feeds = {};
  const raw = [];
  session.inputNames.forEach((name, i) => {
    const data = randomInput(shapes[i], rng);
    feeds[name] = new ort.Tensor('float32', data, shapes[i]);
    raw.push({ name, dims: shapes[i], data });
  });
  return { feeds, raw };
}

async function writeRefs(ort, job, opts, outRoot) {
  const dir = path.join(outRoot, job.name);
  fs.mkdirSync(dir, { recursive: true });
  const session = await ort.InferenceSession.create(job.file, sessionOptions(opts.threads));
  const { feeds, raw } = makeFeeds(ort, session, job.shapes, opts.seed);
  const results = await session.run(feeds);
  raw.forEach((r, i) => writeNpy(path.join(dir, `input_${i}.npy`), 'float32', r.dims, r.data));
  const outputs = session.outputNames.map((name, i) => {
    const t = results[name];
    writeNpy(path.join(dir, `output_${i}.npy`), t.type, t.dims, t.data);
    return { name, shape: t.dims.map(Number), dtype: t.type };
  });
  const meta = {
    model: job.name,
    onnx: path.resolve(job.file),
    ort_version: ort.env.versions.node,
    graph_optimization: 'all',
    intra_op_threads: opts.threads,
    seed: opts.seed,
    input_distribution: 'xorshift32 uniform [-1, 1) float32',
    inputs: raw.map((r) => ({ name: r.name, shape: r.dims, dtype: 'float32' })),
    outputs,
  };
  fs.writeFileSync(path.join(dir, 'meta.json'), JSON.stringify(meta, null, 2) + '\n');
  await session.release();
  process.stderr.write(`ort_reference: ${job.name}: wrote ${raw.length} input(s), ` +
                       `${outputs.length} output(s) to ${dir}\n`);
}

async function bench(ort, job, opts) {
  // Session creation is slow (graph optimization), so it is timed fewer times than runs.
  const createReps = Math.min(opts.bench, 5);
  const createMs = [];
  let session = null;
  for (let i = 0; i < createReps; i++) {
    if (session) await session.release();
    const t0 = nowMs();
    session = await ort.InferenceSession.create(job.file, sessionOptions(opts.threads));
    createMs.push(nowMs() - t0);
  }
  const { feeds } = makeFeeds(ort, session, job.shapes, opts.seed);
  await session.run(feeds); // warm-up
  const runMs = [];
  for (let i = 0; i < opts.bench; i++) {
    const t0 = nowMs();
    await session.run(feeds);
    runMs.push(nowMs() - t0);
  }
  await session.release();
  const r3 = (x) => Math.round(x * 1000) / 1000;
  const rss = process.memoryUsage().rss;
  process.stdout.write(JSON.stringify({
    model: job.name, onnx: path.resolve(job.file), ort_version: ort.env.versions.node,
    intra_op_threads: opts.threads, input_shapes: job.shapes,
    session_create_ms: { median: r3(median(createMs)), min: r3(Math.min(...createMs)),
                         runs: createReps },
    run_ms: { median: r3(median(runMs)), min: r3(Math.min(...runMs)), max: r3(Math.max(...runMs)),
              runs: opts.bench },
    rss_bytes: rss,
  }) + '\n');
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const envFile = opts.env || path.join(ROOT, 'build/third_party/models.env');
  const env = fs.existsSync(envFile) ? readEnvFile(envFile) : {};
  const ort = loadOrt(env);
  const outRoot = opts.out || process.env.GRAFT_REFS || env.GRAFT_REFS ||
                  path.join(ROOT, 'build/third_party/refs');
  for (const job of jobs(opts, env)) {
    if (opts.bench) await bench(ort, job, opts);
    else await writeRefs(ort, job, opts, outRoot);
  }
}

main().catch((e) => {
  process.stderr.write(`ort_reference: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
