// `sluice`: validate, draw and run pipeline files. Thin: everything happens in the libraries.
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>

#include "apps/sluice/command_help.h"
#include "apps/sluice/commands.h"

namespace {

const char* kUsage = R"(usage: sluice <command> [args]

commands:
  validate FILE        check a pipeline file; prints every problem as file:line:column
  graph FILE           print the pipeline as Graphviz DOT
  run FILE             serve the pipeline until SIGTERM/SIGINT, then drain; SIGHUP reloads API keys
  worker FILE          run a Kafka-fed pipeline (its kafka sources consume, answer, commit) until SIGTERM
  kafka-dev [--port P] [--brokers N] [--partitions N] [--topics T,..] [PIPELINE...]
                       a local in-memory Kafka (librdkafka's mock cluster) for trying workers and kcat
  keys new | keys hash < KEY
                       make an API key and its hash for an auth key file (docs/operations.md)
  kinds                list the node kinds this build knows
  schema               print the pipeline schema reference (Markdown)
  ingest FILE --source PATH
                       make the pipeline's knowledge base equal to PATH (file or directory),
                       re-embedding only new or changed documents
  eval FILE --dataset DIR [--dense lsa|use-lite|both] [--tune] [--json OUT] [--trec-dir DIR]
                       retrieval quality on a BEIR dataset (nDCG@10, R@10, R@100, MRR@10, P@10, MAP)
  generate --model M.gguf [--prompt P] [--max-tokens N] [--temperature T] ...
                       generate text from a GGUF Llama model (a quick look)
  quantize IN.gguf OUT.gguf q8_0|q4_0
                       rewrite a model with quantized weight matrices
  model synth --preset 15m|110m --type f32|f16|q8_0|q4_0 OUT.gguf
                       write a random-weight Llama of the anchors' shapes (speed tests)
  model import-use DIR OUT.gguf
                       convert USE-lite's TensorFlow.js package into the encoder's GGUF file
  bench [--target HOST:PORT] [--rates R1,R2] [--mix P0=20,P1=30,P2=50] [--stream] ...
                       open-loop Poisson load over HTTP; per-class results, JSON, PNG plot
  bench --concurrency 1,4,8,16 [--max-tokens N] [--prompt TEXT] ...
                       closed loop: N streaming clients; TTFT, inter-token latency, tokens/s
)";

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::function<int(const sluice::cli::Args&)>> commands = {
      {"validate", sluice::cli::validate},
      {"graph", sluice::cli::graph},
      {"run", sluice::cli::run},
      {"worker", sluice::cli::worker},
      {"kafka-dev", sluice::cli::kafka_dev},
      {"kinds", sluice::cli::kinds},
      {"schema", sluice::cli::schema},
      {"quantize", sluice::cli::quantize},
      {"model", sluice::cli::model},
      {"generate", sluice::cli::generate},
      {"ingest", sluice::cli::ingest},
      {"eval", sluice::cli::eval},
      {"bench", sluice::cli::bench},
      {"keys", sluice::cli::keys},
  };
  if (argc < 2 || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "help")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  auto it = commands.find(argv[1]);
  if (it == commands.end()) {
    std::fprintf(stderr, "sluice: unknown command '%s'\n%s", argv[1], kUsage);
    return 2;
  }
  sluice::cli::Args args(argv + 2, argv + argc);
  // --help anywhere: the command's help on stdout, exit 0, before the command can take it for
  // an argument (a file named --help is ./--help).
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      std::fputs(sluice::cli::command_help(argv[1]).c_str(), stdout);
      return 0;
    }
  }
  try {
    return it->second(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sluice %s: %s\n", argv[1], e.what());
    return 1;
  }
}
