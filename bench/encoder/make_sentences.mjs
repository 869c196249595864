// Writes N sentences of exactly 20 words (a fixed seed over a list of common English words,
// a capital first and a full stop last) as a JSON array: the encoder benchmark's input.
//   node make_sentences.mjs N OUT.json
import { writeFileSync } from "node:fs";
const [n, out] = [Number(process.argv[2] || 256), process.argv[3] || "sentences.json"];
const words = ("the of and to in is was for that with as on by at from his her this an which be are or had were " +
  "not but have one all their they has been would there two more other when new some time could may first these " +
  "into after such most than only over also them made many where before then years people between through water " +
  "under house system during world number city government school state company question problem service market " +
  "research energy flow pressure surface engine model request answer network memory cache language document query").split(" ");
let seed = 42;
const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
const sentences = [];
for (let i = 0; i < n; i++) {
  const w = Array.from({ length: 20 }, () => words[Math.floor(random() * words.length)]);
  w[0] = w[0][0].toUpperCase() + w[0].slice(1);
  sentences.push(w.join(" ") + ".");
}
writeFileSync(out, JSON.stringify(sentences));
