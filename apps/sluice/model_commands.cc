// `sluice quantize`, `sluice model synth|import-use`, `sluice generate`: thin wrappers over
// nodes/generation's model tools and Generator.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "apps/sluice/commands.h"
#include "inference/encoder/use_lite_import.h"
#include "inference/llama/generator.h"
#include "inference/llama/llama_model.h"
#include "inference/llama/model_tools.h"
#include "inference/model_error.h"

namespace sluice::cli {
namespace {

// Takes "--name value" pairs; returns false (after printing usage) on anything unexpected.
bool parse_flags(const Args& args, std::size_t from, std::initializer_list<std::pair<const char*, std::string*>> flags,
                 const char* usage) {
  for (std::size_t i = from; i < args.size(); ++i) {
    bool matched = false;
    for (auto& [name, out] : flags) {
      if (args[i] == name && i + 1 < args.size()) {
        *out = args[++i];
        matched = true;
        break;
      }
    }
    if (!matched) {
      std::fprintf(stderr, "unexpected argument '%s'\nusage: %s\n", args[i].c_str(), usage);
      return false;
    }
  }
  return true;
}

}  // namespace

int quantize(const Args& args) {
  const char* usage = "sluice quantize IN.gguf OUT.gguf q8_0|q4_0";
  if (args.size() != 3) {
    std::fprintf(stderr, "usage: %s\n", usage);
    return 2;
  }
  try {
    inference::quantize_model(args[0], args[1], inference::parse_weight_type(args[2]));
  } catch (const inference::ModelError& e) {
    std::fprintf(stderr, "sluice quantize: %s\n", e.what());
    return 2;
  }
  std::cout << "wrote " << args[1] << "\n";
  return 0;
}

int model(const Args& args) {
  const char* usage =
      "sluice model synth --preset 15m|110m --type f32|f16|q8_0|q4_0 [--seed N] OUT.gguf\n"
      "       sluice model import-use DIR OUT.gguf";
  if (args.size() == 3 && args[0] == "import-use") {
    try {
      const auto r = inference::import_use_lite(args[1], args[2]);
      std::cout << "wrote " << args[2] << " (" << r.source << ": " << r.layers << " layers, " << r.vocabulary
                << " pieces, " << r.parameters << " parameters, " << r.bytes_written << " bytes)\n";
    } catch (const inference::ModelError& e) {
      std::fprintf(stderr, "sluice model import-use: %s\n", e.what());
      return 2;
    }
    return 0;
  }
  if (args.size() < 2 || args[0] != "synth") {
    std::fprintf(stderr, "usage: %s\n", usage);
    return 2;
  }
  std::string preset = "15m", type = "f32", seed = "1", out = args.back();
  Args rest(args.begin(), args.end() - 1);
  if (!parse_flags(rest, 1, {{"--preset", &preset}, {"--type", &type}, {"--seed", &seed}}, usage)) return 2;
  try {
    inference::synth_model(inference::synth_preset(preset), inference::parse_weight_type(type), out, std::stoull(seed));
  } catch (const inference::ModelError& e) {
    std::fprintf(stderr, "sluice model synth: %s\n", e.what());
    return 2;
  }
  std::cout << "wrote " << out << " (" << preset << ", " << type << ", random weights: for speed tests only)\n";
  return 0;
}

int generate(const Args& args) {
  const char* usage =
      "sluice generate --model M.gguf [--prompt TEXT] [--max-tokens N] [--temperature T] [--top-k K] [--top-p P] "
      "[--min-p P] [--seed S] [--threads N] [--device cpu|cuda]";
  // The command line's own defaults: greedy unless asked, llama.cpp's filters when sampling.
  std::string model_path, prompt, max_tokens = "256", temperature = "0", top_k = "40", top_p = "0.95",
                                  min_p = "0.05", seed = "0", threads = "1", device = "cpu";
  if (!parse_flags(args, 0,
                   {{"--model", &model_path}, {"--prompt", &prompt}, {"--max-tokens", &max_tokens},
                    {"--temperature", &temperature}, {"--top-k", &top_k}, {"--top-p", &top_p}, {"--min-p", &min_p}, {"--seed", &seed},
                    {"--threads", &threads}, {"--device", &device}},
                   usage)) {
    return 2;
  }
  if (model_path.empty()) {
    std::fprintf(stderr, "usage: %s\n", usage);
    return 2;
  }
  kernels::BackendKind kind = kernels::BackendKind::kCpu;
  if (!kernels::parse_backend_kind(device, &kind)) {
    std::fprintf(stderr, "sluice generate: --device must be cpu or cuda, not '%s'\n", device.c_str());
    return 2;
  }
  if (std::string why; !kernels::backend_kind_available(kind, &why)) {
    std::fprintf(stderr, "sluice generate: --device %s: %s\n", device.c_str(), why.c_str());
    return 2;
  }
  try {
    auto model = inference::LlamaModel::load(model_path, kind);
    inference::GeneratorOptions options;
    options.backend = kind;
    options.threads = std::stoi(threads);
    inference::Generator generator(*model, options);
    inference::GenerationRequest request;
    request.prompt = prompt;
    request.max_tokens = std::stoi(max_tokens);
    request.sampling.temperature = std::stof(temperature);
    request.sampling.top_k = std::stoi(top_k);
    request.sampling.top_p = std::stof(top_p);
    request.sampling.min_p = std::stof(min_p);
    request.sampling.seed = std::stoull(seed);
    request.on_text = [](std::string_view piece) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    };
    auto result = generator.generate(request);
    const double decode_seconds = result.total_seconds - result.ttft_seconds;
    std::fprintf(stderr, "\n[%d prompt tokens, %d generated, finish %s; prompt %.1f ms, %.1f tokens/s]\n",
                 result.prompt_tokens, result.completion_tokens, inference::finish_reason_name(result.finish),
                 result.ttft_seconds * 1e3, decode_seconds > 0 ? result.completion_tokens / decode_seconds : 0.0);
  } catch (const inference::ModelError& e) {
    std::fprintf(stderr, "sluice generate: %s\n", e.what());
    return 2;
  }
  return 0;
}

}  // namespace sluice::cli
