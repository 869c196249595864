// The GGUF layout of a Universal Sentence Encoder Lite model, written once by the importer
// (use_lite_import.h) and read by the loader (use_lite_model.h): the names below are the
// contract between them.
//
// Metadata:
//   general.architecture             "use-lite"
//   general.name, general.source     what was imported (package name and version, input files'
//                                    SHA-256)
//   use_lite.context_length          u32, tokens kept per text (the graph's ClipToMaxLength, 128)
//   use_lite.token_embedding_length  u32, embedding width (256)
//   use_lite.embedding_length        u32, output width (512)
//   use_lite.block_count             u32, transformer layers (2)
//   use_lite.attention.head_count    i32[layers]
//   use_lite.attention.scale         f32[layers], the query scale the graph multiplies by
//   use_lite.feed_forward_length     i32[layers]
//   use_lite.layer_norm_epsilon      f32 (the graph's 1e-6)
//   use_lite.l2_epsilon              f32, floor of the squared norm before the final rsqrt
//   tokenizer.ggml.model             "use-unigram"
//   tokenizer.ggml.tokens            string[vocab], pieces in id order
//   tokenizer.ggml.scores            f32[vocab] (for tools that read llama.cpp's key)
//   use_lite.tokenizer.scores_f64    f64[vocab], the exact scores the segmentation sums
//   use_lite.tokenizer.reserved      u32, leading ids never produced from text (6)
// Tensors (F32; matrices rows = output features, as kernels/backend.h's MatrixView):
//   token_embd.weight                [vocab rows x 256]
//   timing.inv_timescales            [128], positional signal = sin(p*inv), cos(p*inv)
//   blk.0.residual_proj.{weight,bias}   256 -> 512 (the first layer's AdjustResidualInput)
//   blk.N.attn_norm.{weight,bias}, blk.N.attn_qkv.{weight,bias}, blk.N.attn_output.{weight,bias},
//   blk.N.ffn_norm.{weight,bias}, blk.N.ffn_up.{weight,bias}, blk.N.ffn_down.{weight,bias}
//   pool_proj.{weight,bias}          512 -> 512, then tanh and L2 normalisation
#pragma once

namespace sluice::inference::use_lite {

inline constexpr const char* kArchitecture = "use-lite";
inline constexpr const char* kTokenizerModel = "use-unigram";

inline constexpr const char* kContextLength = "use_lite.context_length";
inline constexpr const char* kTokenEmbeddingLength = "use_lite.token_embedding_length";
inline constexpr const char* kEmbeddingLength = "use_lite.embedding_length";
inline constexpr const char* kBlockCount = "use_lite.block_count";
inline constexpr const char* kHeadCount = "use_lite.attention.head_count";
inline constexpr const char* kAttentionScale = "use_lite.attention.scale";
inline constexpr const char* kFeedForwardLength = "use_lite.feed_forward_length";
inline constexpr const char* kLayerNormEpsilon = "use_lite.layer_norm_epsilon";
inline constexpr const char* kL2Epsilon = "use_lite.l2_epsilon";
inline constexpr const char* kScoresF64 = "use_lite.tokenizer.scores_f64";
inline constexpr const char* kReserved = "use_lite.tokenizer.reserved";

}  // namespace sluice::inference::use_lite
