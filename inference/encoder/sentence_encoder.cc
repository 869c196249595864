#include "inference/encoder/sentence_encoder.h"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "graph/visible_parallel_for.h"
#include "inference/encoder/encoder_rows.h"
#include "inference/encoder/text_attention.h"

namespace sluice::inference {
// Activation buffers of one pass, grown to the largest pass seen (bounded by max_pass_tokens).
struct SentenceEncoder::Pass {
  // x: the residual stream; h: norms, then attention outputs, then the residual projection;
  // tmp: matmul outputs; wide: q|k|v, then the feed-forward's hidden layer (never live together);
  // pooled: each text's mean of x, then its m.
  std::vector<float> x, h, tmp, wide, pooled;
  std::vector<int64_t> starts;  // token offset of each text, texts + 1 entries
  oneapi::tbb::task_arena arena;  // for a backend without host threads (run_on_host_threads)
  explicit Pass(int threads) : arena(std::max(1, threads)) {}
  // Grows `v` to exactly n, the old buffer released first. (resize() would grow by doubling,
  // so a pass slightly longer than the last one could hold close to twice the bound, and the
  // old and new buffers would both be resident while it copies: encoder_bench at batch 256 had
  // a 64.9 MB heap peak where the bound is 24 MiB; 27.4 MB now, docs/benchmarks.md.)
  static void fit(std::vector<float>& v, int64_t n) {
    if (int64_t(v.size()) >= n) return;
    std::vector<float>().swap(v);
    v.resize(size_t(n));
  }
};

SentenceEncoder::SentenceEncoder(std::shared_ptr<const UseLiteModel> model, SentenceEncoderOptions options)
    : model_(std::move(model)), options_(options) {
  if (!model_) throw std::invalid_argument("SentenceEncoder: no model");
  options_.threads = std::max(1, options_.threads);
  options_.max_pass_tokens = std::max(options_.max_pass_tokens, model_->config().context_length);
  kernels::BackendOptions b;
  b.threads = options_.threads;
  backend_ = kernels::make_backend(b);
  pass_ = std::make_unique<Pass>(options_.threads);
}

SentenceEncoder::~SentenceEncoder() = default;

std::vector<int32_t> SentenceEncoder::tokenize(std::string_view text) const {
  std::vector<int32_t> ids = model_->tokenizer().encode(text);
  if (ids.size() > size_t(model_->config().context_length)) ids.resize(size_t(model_->config().context_length));
  return ids;
}

void SentenceEncoder::embed(const std::vector<std::string>& texts, float* out) const {
  std::vector<std::vector<int32_t>> ids;
  ids.reserve(texts.size());
  for (const std::string& t : texts) ids.push_back(tokenize(t));
  embed_ids(ids, out);
}

void SentenceEncoder::embed_ids(const std::vector<std::vector<int32_t>>& ids, float* out) const {
  const auto context = size_t(model_->config().context_length);
  const auto vocab = size_t(model_->token_embedding.rows);
  for (size_t i = 0; i < ids.size(); ++i)
    for (int32_t id : ids[i])
      if (id < 0 || size_t(id) >= vocab)
        throw std::invalid_argument("text " + std::to_string(i) + ": token id " + std::to_string(id) + " is outside 0.." +
                                    std::to_string(vocab - 1));
  MutexLock lock(mu_);
  std::vector<const std::vector<int32_t>*> slice;
  size_t tokens = 0, first = 0;
  for (size_t i = 0; i <= ids.size(); ++i) {
    const size_t n = i < ids.size() ? std::min(ids[i].size(), context) : 0;
    if (i == ids.size() || (!slice.empty() && tokens + n > size_t(options_.max_pass_tokens))) {
      if (!slice.empty()) run_pass(slice, out + first * size_t(dimension()));
      slice.clear();
      tokens = 0;
      first = i;
      if (i == ids.size()) break;
    }
    slice.push_back(&ids[i]);
    tokens += n;
  }
}

void SentenceEncoder::run_pass(const std::vector<const std::vector<int32_t>*>& texts, float* out) const {
  const UseLiteModel& m = *model_;
  const UseLiteConfig& c = m.config();
  kernels::KernelBackend& be = *backend_;
  Pass& p = *pass_;
  const auto n_texts = int64_t(texts.size());
  p.starts.assign(size_t(n_texts + 1), 0);
  for (int64_t s = 0; s < n_texts; ++s)
    p.starts[size_t(s + 1)] = p.starts[size_t(s)] + int64_t(std::min(texts[size_t(s)]->size(), size_t(c.context_length)));
  const int64_t n = p.starts.back();
  int max_attn = 0, max_ffn = 0;
  for (const UseLiteLayer& L : m.layers()) {
    max_attn = std::max(max_attn, L.attention_width);
    max_ffn = std::max(max_ffn, L.ffn_width);
  }
  const int wide = std::max({c.model_width, c.embedding_width});
  Pass::fit(p.x, n * wide);
  Pass::fit(p.h, n * wide);
  Pass::fit(p.tmp, n * wide);
  Pass::fit(p.wide, n * std::max(3 * max_attn, max_ffn));
  Pass::fit(p.pooled, n_texts * std::max(c.model_width, c.output_width));

  // The pass runs inside the backend's arena where it has one, so its row loops and the
  // products between them share two threads without switching arenas (a tenth of a two-thread
  // pass was one thread waiting at the switches); else in the encoder's own.
  auto pass = [&] {
    // Rows of the `n` tokens in parallel, at least 64 a task.
    auto each_row = [&](auto&& body) {
      visible_parallel_for(oneapi::tbb::blocked_range<int64_t>(0, n, 64), [&](const oneapi::tbb::blocked_range<int64_t>& r) {
        for (int64_t t = r.begin(); t < r.end(); ++t) body(t);
      });
    };
    // Per-text and per-head work of a small pass (one short query) runs on this thread: split,
    // it cost more in waking the other worker than the work itself.
    const bool small = n < 128;
    auto each_job = [&](int64_t count, auto&& body) {
      if (small) {
        for (int64_t i = 0; i < count; ++i) body(i);
      } else {
        visible_parallel_for(int64_t(0), count, body);
      }
    };
    // Embeddings plus the positional signal, in the graph's order of additions.
    each_job(n_texts, [&](int64_t s) {
      const std::vector<int32_t>& ids = *texts[size_t(s)];
      for (int64_t t = p.starts[size_t(s)]; t < p.starts[size_t(s + 1)]; ++t) {
        const int64_t pos = t - p.starts[size_t(s)];
        float* x = p.x.data() + t * c.embedding_width;
        // The embedding table is F32 rows (the loader checks): a copy, not a backend call, since
        // this runs on many threads and a backend serves one at a time.
        const float* row = static_cast<const float*>(m.token_embedding.data) + int64_t(ids[size_t(pos)]) * c.embedding_width;
        std::copy(row, row + c.embedding_width, x);
        const float* timing = m.timing_row(int(pos));
        if (!timing) {  // past the table: only a context longer than kTimingTableRows
          m.timing(int(pos), p.h.data() + t * c.embedding_width);
          timing = p.h.data() + t * c.embedding_width;
        }
        rows::add_twice_with(x, timing, c.embedding_width);
      }
    });

    int width = c.embedding_width;
    const int D = c.model_width, O = c.output_width;
    const std::vector<UseLiteLayer>& layers = m.layers();
    // Each residual sum and the layer norm after it run in the same pass over the rows (the row
    // is still in cache); the first layer's norm is the only one on its own.
    each_row([&](int64_t t) {
      rows::layer_norm(p.x.data() + t * width, layers[0].attn_norm_w, layers[0].attn_norm_b, width, c.layer_norm_eps,
                       p.h.data() + t * width);
    });
    for (size_t l = 0; l < layers.size(); ++l) {
      const UseLiteLayer& L = layers[l];
      const bool is_last = l + 1 == layers.size();
      const int A = L.attention_width, hd = L.head_dim;
      be.matmul(L.qkv, p.h.data(), n, p.wide.data());
      // Attention of each text's tokens over the same text, per head; each job first adds the
      // bias to its head's q, k and v columns of its text and scales the q (text_attention.h).
      each_job(n_texts * L.heads, [&](int64_t job) {
        const int64_t s = job / L.heads;
        const int head = int(job % L.heads);
        const int64_t begin = p.starts[size_t(s)], len = p.starts[size_t(s + 1)] - begin;
        if (len == 0) return;
        thread_local std::vector<float> scratch;  // at most (head_dim + 128) x 128 floats
        const auto need = size_t(text_attention_scratch(len, hd));
        if (scratch.size() < need) scratch.resize(need);
        text_attention(p.wide.data() + begin * 3 * A, len, 3 * A, A, head, hd, L.qkv_b, L.query_scale,
                       p.h.data() + begin * A, scratch.data());
      });
      be.matmul(L.output, p.h.data(), n, p.tmp.data());  // h holds the attention outputs, A wide
      // Then the feed-forward's norm: x = x + relu(LN(x) W1 + b1) W2 + b2.
      if (L.residual.data) {  // x = (att Wo + bo) + (x Wr + br), the width changing here
        be.matmul(L.residual, p.x.data(), n, p.h.data());
        // Row t of h is read by row t's sum only, so the norm may overwrite it right after.
        each_row([&](int64_t t) {
          rows::sum_biased(p.tmp.data() + t * D, L.output_b, p.h.data() + t * D, L.residual_b, D);
          rows::layer_norm(p.tmp.data() + t * D, L.ffn_norm_w, L.ffn_norm_b, D, c.layer_norm_eps, p.h.data() + t * D);
        });
        std::swap(p.x, p.tmp);
      } else {
        each_row([&](int64_t t) {
          rows::add_biased(p.x.data() + t * D, p.tmp.data() + t * D, L.output_b, D);
          rows::layer_norm(p.x.data() + t * D, L.ffn_norm_w, L.ffn_norm_b, D, c.layer_norm_eps, p.h.data() + t * D);
        });
      }
      width = D;
      be.matmul(L.ffn_up, p.h.data(), n, p.wide.data());
      if (is_last) break;  // its ReLU is taken in the per-text means, and its W2 runs once per text, below
      each_row([&](int64_t t) { rows::relu_biased(p.wide.data() + t * L.ffn_width, L.ffn_up_b, L.ffn_width); });
      be.matmul(L.ffn_down, p.wide.data(), n, p.tmp.data());
      const UseLiteLayer& next = layers[l + 1];
      each_row([&](int64_t t) {
        rows::add_biased(p.x.data() + t * D, p.tmp.data() + t * D, L.ffn_down_b, D);
        rows::layer_norm(p.x.data() + t * D, next.attn_norm_w, next.attn_norm_b, D, c.layer_norm_eps, p.h.data() + t * D);
      });
    }

    // m = the mean over each text's tokens of the last layer's x + relu(...) W2 + b2, which is
    // mean(x) + mean(relu(...)) W2 + b2: W2 is linear, so it multiplies one row per text instead
    // of one per token (the last down-projection was 17% of a pass's products). An empty text's
    // m is zero, as the graph's mean of no tokens is. Then tanh(m Wp + bp), L2-normalised.
    const UseLiteLayer& last = m.layers().back();
    each_job(n_texts, [&](int64_t s) {
      const int64_t begin = p.starts[size_t(s)], len = p.starts[size_t(s + 1)] - begin;
      for (int c0 = 0; c0 < D; c0 += 64)
        rows::column_mean(p.x.data() + begin * D + c0, len, D, nullptr, std::min(64, D - c0), p.pooled.data() + s * D + c0);
    });
    // The means of the hidden layer's ReLU (its bias added here, never written back) go in
    // place, the k-th non-empty text's into row k of `wide`: row k is at or before that text's
    // first token and after every earlier text's rows are read, so texts are taken in order;
    // column blocks are independent, and run in parallel.
    const int F = last.ffn_width;
    std::vector<int64_t> nonempty;
    for (int64_t s = 0; s < n_texts; ++s)
      if (p.starts[size_t(s + 1)] > p.starts[size_t(s)]) nonempty.push_back(s);
    const auto kept = int64_t(nonempty.size());
    auto hidden_means = [&](const oneapi::tbb::blocked_range<int>& cols) {
      for (int c0 = cols.begin(); c0 < cols.end(); c0 += 64) {
        const int w = std::min(64, cols.end() - c0);
        for (int64_t k = 0; k < kept; ++k) {
          const int64_t begin = p.starts[size_t(nonempty[size_t(k)])], end = p.starts[size_t(nonempty[size_t(k)] + 1)];
          rows::column_mean(p.wide.data() + begin * F + c0, end - begin, F, last.ffn_up_b + c0, w, p.wide.data() + k * F + c0);
        }
      }
    };
    if (small) {
      hidden_means(oneapi::tbb::blocked_range<int>(0, F));
    } else {
      visible_parallel_for(oneapi::tbb::blocked_range<int>(0, F, 64), hidden_means);
    }
    if (kept > 0) be.matmul(last.ffn_down, p.wide.data(), kept, p.tmp.data());
    each_job(kept, [&](int64_t k) {  // an empty text's m stays zero
      float* mean = p.pooled.data() + nonempty[size_t(k)] * D;
      const float* f = p.tmp.data() + k * D;
      rows::add_biased(mean, f, last.ffn_down_b, D);
    });
    be.matmul(m.pool, p.pooled.data(), n_texts, out);
    each_job(n_texts, [&](int64_t s) {
      float* y = out + s * O;
      float sq = 0;
      for (int i = 0; i < O; ++i) {
        y[i] = std::tanh(y[i] + m.pool_b[i]);
        sq += y[i] * y[i];
      }
      const float inv = 1.0f / std::sqrt(std::max(sq, c.l2_eps));
      for (int i = 0; i < O; ++i) y[i] *= inv;
    });
  };
  if (!be.run_on_host_threads(pass)) p.arena.execute(pass);
}

}  // namespace sluice::inference
