#!/usr/bin/env node
// ort_run.js: runs one anchor ONNX model with onnxruntime-node on an .npy input, writes the .npy output.
//
// Usage: node ort_run.js MODEL.onnx X.npy Y.npy
// Same session options as ../shared/anchors/bench_ort.js (CPU EP, 2 intra-op threads, all graph
// optimisations), so the numerics are those of the ORT column of bench.sh. parity.sh uses it to show
// a second independent float32 implementation's error next to torch's and rlx's.
// onnxruntime-node is looked up in $ORT_NODE_DIR (default /tmp/ortnode/node_modules/onnxruntime-node).
'use strict';
const fs = require('fs');

const ORT_DIR = process.env.ORT_NODE_DIR || '/tmp/ortnode/node_modules/onnxruntime-node';

// Reads a little-endian float32, C-order .npy file (format 1.0 or 2.0) into {shape, data}.
function readNpy(file) {
  const b = fs.readFileSync(file);
  if (b.length < 10 || b.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`${file}: not an .npy file`);
  const major = b[6];
  const hlen = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = b.toString('latin1', start, start + hlen);
  if (!/'descr':\s*'<f4'/.test(header)) throw new Error(`${file}: dtype is not <f4: ${header.trim()}`);
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${file}: Fortran order is not supported`);
  const m = header.match(/'shape':\s*\(([^)]*)\)/);
  if (!m) throw new Error(`${file}: no shape in header`);
  const shape = m[1].split(',').map(s => s.trim()).filter(s => s.length).map(Number);
  const n = shape.reduce((p, q) => p * q, 1);
  const off = start + hlen;
  if (b.length - off !== 4 * n) throw new Error(`${file}: ${b.length - off} data bytes, shape needs ${4 * n}`);
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) data[i] = b.readFloatLE(off + 4 * i);
  return { shape, data };
}

// Writes a float32 tensor as a version 1.0 .npy file.
function writeNpy(file, shape, data) {
  const shp = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': ${shp}, }`;
  const pad = 64 - ((10 + header.length + 1) % 64);
  header += ' '.repeat(pad % 64) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1; head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  const body = Buffer.alloc(4 * data.length);
  for (let i = 0; i < data.length; i++) body.writeFloatLE(data[i], 4 * i);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(header, 'latin1'), body]));
}

(async () => {
  const [model, xin, yout] = process.argv.slice(2);
  if (!yout) { console.error('usage: node ort_run.js MODEL.onnx X.npy Y.npy'); process.exit(2); }
  const ort = require(ORT_DIR);
  const sess = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'], intraOpNumThreads: 2, interOpNumThreads: 1,
    executionMode: 'sequential', graphOptimizationLevel: 'all',
  });
  const x = readNpy(xin);
  const out = await sess.run({ x: new ort.Tensor('float32', x.data, x.shape) });
  writeNpy(yout, out.y.dims, out.y.data);
  await sess.release();
})().catch(e => { console.error(`ort_run.js: ${e.message}`); process.exit(1); });
