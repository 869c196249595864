#include "nodes/retrieval/kb/knowledge_base.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "graph/fnv1a.h"
#include "inference/encoder/encoder_location.h"
#include "nodes/retrieval/dense/use_lite_embedder.h"
#include "nodes/retrieval/dense/vector_device.h"
#include "nodes/retrieval/serial.h"

namespace sluice::retrieval {
namespace fs = std::filesystem;
namespace {

constexpr std::uint32_t kMagic = 0x42'4B'4C'53;  // "SLKB"
// 3: the path agreement after the documents; 2: the dense model's kind first; 1: LSA only.
// Every older format still loads (its agreement is then measured at load, as before).
constexpr std::uint32_t kFormat = 3;
constexpr std::uint32_t kFormatKindFirst = 2;
constexpr std::uint32_t kFormatLsaOnly = 1;
constexpr std::size_t kUseLiteChunkTokens = 128;  // USE-lite reads 128 tokens of a text

// A kb.bin that names an encoder which does not load: an error to report, not a damaged file
// to fall back from.
struct EncoderUnavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

bool is_lsa(const Embedder& e) { return dynamic_cast<const LsaEmbedder*>(&e) != nullptr; }
const char* kind_of(const Embedder& e) { return is_lsa(e) ? "lsa" : "use-lite"; }

// kb.bin's fingerprints and checksums were first written with this basis (FNV's offset
// basis with a digit lost); it stays, so stored knowledge bases keep matching.
constexpr std::uint64_t kKbHashBasis = 1469598103934665603ull;
std::uint64_t fnv1a(const void* data, std::size_t n, std::uint64_t h = kKbHashBasis) {
  return fnv1a64(std::string_view(static_cast<const char*>(data), n), h);
}

}  // namespace

std::uint64_t content_fingerprint(const SourceDocument& doc) {
  // Whitespace runs collapse to one space and the ends are trimmed, so re-saving a file with
  // different line endings or trailing spaces is not a change.
  std::string norm;
  norm.reserve(doc.text.size());
  bool space = false;
  for (char c : doc.text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !norm.empty();
    } else {
      if (space) norm.push_back(' ');
      space = false;
      norm.push_back(c);
    }
  }
  const auto kind = static_cast<unsigned char>(static_cast<int>(doc.kind) * 8 + static_cast<int>(doc.language));
  std::uint64_t h = fnv1a(&kind, 1);
  h = fnv1a(doc.title.data(), doc.title.size(), h);
  h = fnv1a("\0", 1, h);
  return fnv1a(norm.data(), norm.size(), h);
}

KnowledgeBase::KnowledgeBase(KnowledgeBaseOptions options) : options_(std::move(options)) {
  if (options_.embed_batch == 0) throw std::invalid_argument("kb.embed_batch must be > 0");
  if (!options_.dense_model.empty() && options_.dense_model != "lsa" && options_.dense_model != "use-lite")
    throw std::invalid_argument("dense model '" + options_.dense_model + "' is not one of lsa, use-lite");
  dense_model_ = options_.dense_model;
  if (!options_.directory.empty()) {
    fs::create_directories(options_.directory);
    const std::string bin = options_.directory + "/kb.bin", prev = options_.directory + "/kb.prev";
    const bool has_bin = fs::exists(bin), has_prev = fs::exists(prev);
    if (has_bin && load_file(bin)) {
      loaded_from_ = "kb.bin";
    } else if (has_prev && load_file(prev)) {
      loaded_from_ = "kb.prev";
    } else if (has_bin || has_prev) {
      throw std::runtime_error(options_.directory + ": neither kb.bin nor kb.prev passes its checksum");
    }
  }
  if (embedder_ == nullptr) {
    // An empty snapshot needs an embedder to answer (with nothing) before the first ingest: the
    // configured model, so queries embed as the first ingest will.
    embedder_ = dense_model_ == "use-lite" ? open_use_lite() : LsaEmbedder::fit({}, options_.lsa);
  }
  if (dense_model_.empty()) dense_model_ = kind_of(*embedder_);  // as stored
  IngestStats ignored;
  ignored.version = version();
  std::vector<Chunk> chunks;
  std::vector<float> vectors;
  gather(&chunks, &vectors);
  vector_device_ = resolve_vector_device(options_.index.vector_device);
  coalescing_ = options_.index.coalescing;
  // The agreement kb.bin carries was measured on these chunks (or carried to them): kept, not
  // measured again at every start (0.4-0.6 s with use-lite).
  live_ = KbSnapshot::build(std::move(chunks), vectors, embedder_, index_options(), version(),
                            loaded_agreement_.measured() ? &loaded_agreement_ : nullptr);
}

void KnowledgeBase::gather(std::vector<Chunk>* chunks, std::vector<float>* vectors) const {
  for (const auto& [id, s] : docs_) {
    chunks->insert(chunks->end(), s.chunks.begin(), s.chunks.end());
    vectors->insert(vectors->end(), s.vectors.begin(), s.vectors.end());
  }
}

IndexOptions KnowledgeBase::index_options() const {
  IndexOptions o = options_.index;
  o.vector_device = vector_device_;
  if (vector_device_chosen_) o.coalescing = coalescing_;
  o.coalescing.observer = search_observer_;
  return o;
}

void KnowledgeBase::set_vector_device(const std::string& device, const CoalescerOptions& coalescing) {
  const std::string resolved = resolve_vector_device(device);
  MutexLock lock(write_mu_);
  if (vector_device_chosen_ && resolved != vector_device_) {
    throw std::invalid_argument("knowledge base '" + options_.directory + "' is searched on " + vector_device_ +
                                " by another node; one knowledge base has one index");
  }
  vector_device_chosen_ = true;
  coalescing_ = coalescing;
  if (resolved == vector_device_) return;
  vector_device_ = resolved;
  std::vector<Chunk> chunks;
  std::vector<float> vectors;
  gather(&chunks, &vectors);
  std::shared_ptr<const KbSnapshot> live = current();
  const PathAgreement carried = live->path_agreement();
  auto rebuilt = KbSnapshot::build(std::move(chunks), vectors, live->shared_embedder(), index_options(), live->version(),
                                   carried.measured() ? &carried : nullptr);
  MutexLock swap(swap_mu_);
  live_ = std::move(rebuilt);
}

std::string KnowledgeBase::vector_device() const {
  MutexLock lock(write_mu_);
  return vector_device_;
}

std::shared_ptr<const Embedder> KnowledgeBase::open_use_lite() const {
  const std::string path = options_.encoder_path.empty() ? inference::default_encoder_path() : options_.encoder_path;
  try {
    return UseLiteEmbedder::open(path);
  } catch (const std::exception& e) {
    throw std::runtime_error("dense model use-lite: " + std::string(e.what()) + " (scripts/setup-encoder writes " + path + ")");
  }
}

std::shared_ptr<const Embedder> KnowledgeBase::target_embedder() const {
  if (kind_of(*embedder_) == dense_model_) return embedder_;
  // A counter for chunking until the fit below; LSA's token count needs no fitted vocabulary.
  return dense_model_ == "use-lite" ? open_use_lite() : LsaEmbedder::fit({}, options_.lsa);
}

void KnowledgeBase::set_dense_model(const std::string& model) {
  if (model != "lsa" && model != "use-lite") throw std::invalid_argument("dense model '" + model + "' is not one of lsa, use-lite");
  if (model == "use-lite") open_use_lite();  // refuse now, naming the file, not at the next ingest
  MutexLock lock(write_mu_);
  dense_model_ = model;
}

std::string KnowledgeBase::dense_model() const {
  MutexLock lock(write_mu_);
  return dense_model_;
}

std::shared_ptr<const KbSnapshot> KnowledgeBase::current() const {
  MutexLock lock(swap_mu_);
  return live_;
}

std::size_t KnowledgeBase::document_count() const {
  if (!current()) return 0;
  MutexLock lock(write_mu_);
  return docs_.size();
}

IngestStats KnowledgeBase::upsert(std::vector<SourceDocument> docs, const IngestProgressFn& progress) {
  return apply(std::move(docs), {}, false, progress);
}
IngestStats KnowledgeBase::remove(const std::vector<std::string>& ids) { return apply({}, ids, false, {}); }
IngestStats KnowledgeBase::sync(std::vector<SourceDocument> docs, const IngestProgressFn& progress) {
  return apply(std::move(docs), {}, true, progress);
}
IngestStats KnowledgeBase::update(std::vector<SourceDocument> upserts, const std::vector<std::string>& removals,
                                  const IngestProgressFn& progress) {
  return apply(std::move(upserts), removals, false, progress);
}

IngestStats KnowledgeBase::apply(std::vector<SourceDocument> upserts, const std::vector<std::string>& removals,
                                 bool exact_set, const IngestProgressFn& progress) {
  MutexLock lock(write_mu_);
  const auto t0 = std::chrono::steady_clock::now();
  IngestStats stats;
  std::map<std::string, DocState> next = docs_;  // copy: a failed ingest leaves the KB untouched
  std::set<std::string> seen;
  std::vector<std::string> changed;
  // The model this ingest embeds with; a change of model re-chunks and re-embeds everything.
  const std::shared_ptr<const Embedder> target = target_embedder();
  const bool switching = target != embedder_;
  const Embedder* embedder = target.get();  // a lambda is analysed without the lock
  const auto counter = [embedder](std::string_view t) { return embedder->count_tokens(t); };
  ChunkingOptions chunking = options_.chunking;
  if (!is_lsa(*target)) chunking.max_tokens = std::min(chunking.max_tokens, kUseLiteChunkTokens);
  IngestProgress at;
  at.documents_total = upserts.size();
  for (auto& d : upserts) {
    if (progress) {
      if (at.documents_done % 64 == 0) progress(at);  // often enough for a display, cheap for large ingests
      ++at.documents_done;
    }
    if (d.id.empty()) {
      stats.problems.push_back({"(document)", 0, "document without an id"});
      continue;
    }
    if (!seen.insert(d.id).second) {
      stats.problems.push_back({d.id, 0, "duplicate document id in one ingest; the first copy wins"});
      continue;
    }
    const std::uint64_t fp = content_fingerprint(d);
    auto it = next.find(d.id);
    if (!switching && it != next.end() && it->second.fingerprint == fp) {
      ++stats.unchanged;
      continue;
    }
    DocState s;
    s.fingerprint = fp;
    s.chunks = chunk_document(d, chunking, counter);
    if (s.chunks.empty()) {
      stats.problems.push_back({d.id, 0, "empty document"});
      continue;
    }
    (it == next.end() ? stats.added : stats.updated) += 1;
    changed.push_back(d.id);
    next[d.id] = std::move(s);
  }
  for (const auto& id : removals) stats.deleted += next.erase(id);
  if (exact_set) {
    for (auto it = next.begin(); it != next.end();) {
      if (seen.count(it->first) == 0) {
        it = next.erase(it);
        ++stats.deleted;
      } else {
        ++it;
      }
    }
  }
  if (changed.empty() && stats.deleted == 0) {
    stats.version = version();
    for (const auto& [id, s] : docs_) stats.chunks_total += s.chunks.size();
    return stats;
  }
  std::size_t total = 0, changed_chunks = 0;
  for (const auto& [id, s] : next) total += s.chunks.size();
  for (const auto& id : changed) changed_chunks += next[id].chunks.size();
  changed_since_fit_ += changed_chunks + stats.deleted;
  std::vector<DocState*> to_embed;
  const auto* lsa = dynamic_cast<const LsaEmbedder*>(target.get());
  const bool never_fitted = lsa && docs_.empty() && lsa->vocabulary_size() == 0;
  if (!lsa) {  // a pretrained model: nothing to fit; a switch to it re-embeds everything
    embedder_ = target;
    if (switching) {
      changed_since_fit_ = 0;
      stats.refitted = true;
      for (auto& [id, s] : next) to_embed.push_back(&s);
    } else {
      for (const auto& id : changed) to_embed.push_back(&next[id]);
    }
  } else if (switching || never_fitted ||
             static_cast<double>(changed_since_fit_) > options_.refit_fraction * static_cast<double>(total)) {
    std::vector<std::string> texts;
    for (const auto& [id, s] : next)
      for (const auto& c : s.chunks) texts.push_back(index_text(c));
    if (progress) {
      at.documents_done = at.documents_total;
      at.fitting_chunks = texts.size();
      progress(at);  // the fit is the long silent step of a large ingest
      at.fitting_chunks = 0;
    }
    embedder_ = LsaEmbedder::fit(texts, options_.lsa);
    changed_since_fit_ = 0;
    stats.refitted = true;
    for (auto& [id, s] : next) to_embed.push_back(&s);
  } else {
    for (const auto& id : changed) to_embed.push_back(&next[id]);
  }
  if (progress) {
    at.documents_done = at.documents_total;
    for (const DocState* st : to_embed) at.chunks_to_embed += st->chunks.size();
    progress(at);
  }
  embed_in_batches(to_embed, stats, progress, at);
  std::vector<std::string> retired = retired_chunks(docs_, next);
  docs_ = std::move(next);
  stats.chunks_total = total;
  commit(stats, std::move(retired));
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return stats;
}

void KnowledgeBase::embed_in_batches(std::vector<DocState*>& states, IngestStats& stats,
                                     const IngestProgressFn& progress, IngestProgress& at) {
  const std::size_t dim = embedder_->dimension();
  std::vector<std::pair<DocState*, std::size_t>> slots;  // (doc, chunk index)
  for (DocState* s : states) {
    s->vectors.assign(s->chunks.size() * dim, 0.f);
    for (std::size_t i = 0; i < s->chunks.size(); ++i) slots.emplace_back(s, i);
  }
  std::vector<std::string> batch;
  std::vector<float> out;
  for (std::size_t b = 0; b < slots.size(); b += options_.embed_batch) {
    const std::size_t e = std::min(slots.size(), b + options_.embed_batch);
    batch.clear();
    for (std::size_t i = b; i < e; ++i) batch.push_back(index_text(slots[i].first->chunks[slots[i].second]));
    out.resize(batch.size() * dim);
    embedder_->embed(batch, out.data());
    for (std::size_t i = b; i < e; ++i) {
      std::copy_n(out.data() + (i - b) * dim, dim, slots[i].first->vectors.data() + slots[i].second * dim);
    }
    stats.chunks_embedded += batch.size();
    if (progress) {
      at.chunks_embedded = stats.chunks_embedded;
      progress(at);
    }
  }
}

std::vector<std::string> KnowledgeBase::retired_chunks(const std::map<std::string, DocState>& before,
                                                       const std::map<std::string, DocState>& after) {
  std::vector<std::string> retired;
  for (const auto& [id, old] : before) {
    auto it = after.find(id);
    if (it != after.end() && it->second.fingerprint == old.fingerprint &&
        std::equal(old.chunks.begin(), old.chunks.end(), it->second.chunks.begin(), it->second.chunks.end(),
                   [](const Chunk& a, const Chunk& b) { return a.text == b.text; })) {
      continue;  // unchanged (a model switch re-chunks the same text: then the keys below tell)
    }
    std::set<std::string> kept;
    if (it != after.end())
      for (const auto& c : it->second.chunks) kept.insert(chunk_key(c));
    for (const auto& c : old.chunks) {
      std::string key = chunk_key(c);
      if (kept.count(key) == 0) retired.push_back(std::move(key));
    }
  }
  std::sort(retired.begin(), retired.end());
  retired.erase(std::unique(retired.begin(), retired.end()), retired.end());
  return retired;
}

std::uint64_t KnowledgeBase::add_change_listener(KbChangeListener listener) {
  MutexLock lock(listeners_mu_);
  const std::uint64_t id = next_listener_++;
  listeners_[id] = std::move(listener);
  return id;
}

void KnowledgeBase::remove_change_listener(std::uint64_t id) {
  MutexLock lock(listeners_mu_);
  listeners_.erase(id);
}

void KnowledgeBase::commit(IngestStats& stats, std::vector<std::string> retired) {
  std::vector<Chunk> chunks;
  std::vector<float> vectors;
  gather(&chunks, &vectors);
  const std::uint64_t v = version() + 1;
  // The figure moves little while little changes (path_agreement.h): carry it across small
  // writes with the same model, measure again after a refit or once 5% of the chunks changed.
  changed_since_agreement_ += stats.chunks_embedded + retired.size();
  PathAgreement carried;
  {
    MutexLock lock(swap_mu_);
    if (live_ && !stats.refitted && live_->shared_embedder() == embedder_) carried = live_->path_agreement();
  }
  const bool carry = carried.measured() && static_cast<double>(changed_since_agreement_) <
                                               kRemeasureAgreementShare * static_cast<double>(chunks.size());
  if (!carry) changed_since_agreement_ = 0;
  auto gen = KbSnapshot::build(std::move(chunks), vectors, embedder_, index_options(), v, carry ? &carried : nullptr);
  version_.store(v, std::memory_order_release);
  if (!options_.directory.empty()) persist(gen->path_agreement());
  if (before_swap_) before_swap_();
  {
    // Before the swap: no reader of the new version can meet an answer built on retired text.
    const KbChange change{v, std::move(retired)};
    MutexLock lock(listeners_mu_);
    for (const auto& [id, listener] : listeners_) listener(change);
  }
  {
    MutexLock lock(swap_mu_);
    live_ = std::move(gen);
  }
  stats.version = v;
}

void KnowledgeBase::persist(const PathAgreement& agreement) const {
  std::ostringstream payload;
  BinaryWriter w(payload);
  w.u64(changed_since_fit_);
  w.str(kind_of(*embedder_));
  if (const auto* lsa = dynamic_cast<const LsaEmbedder*>(embedder_.get())) {
    lsa->save(payload);
  } else {
    w.u64(embedder_->dimension());  // checked against the encoder the file is opened with
  }
  w.u64(docs_.size());
  for (const auto& [id, s] : docs_) {
    w.str(id);
    w.u64(s.fingerprint);
    w.u64(s.chunks.size());
    for (const auto& c : s.chunks) {
      w.str(c.doc_id);
      w.str(c.title);
      w.str(c.text);
      w.u32(c.begin);
      w.u32(c.end);
      w.u32(c.ordinal);
    }
    w.vec(s.vectors);
  }
  // The snapshot's path agreement, so opening the knowledge base need not measure it again.
  w.f64(agreement.overlap);
  w.u64(agreement.samples);
  w.u64(agreement.version);
  w.u64(changed_since_agreement_);
  const std::string body = payload.str();
  const std::string dir = options_.directory;
  const std::string tmp = dir + "/kb.tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    BinaryWriter h(out);
    h.u32(kMagic);
    h.u32(kFormat);
    h.u64(version());
    h.u64(body.size());
    h.u64(fnv1a(body.data(), body.size()));
    out.write(body.data(), static_cast<std::streamsize>(body.size()));
    out.flush();
    if (!out) throw std::runtime_error(tmp + ": write failed");
  }
  if (const int fd = ::open(tmp.c_str(), O_RDONLY); fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
  std::error_code ec;
  if (fs::exists(dir + "/kb.bin")) fs::rename(dir + "/kb.bin", dir + "/kb.prev", ec);
  fs::rename(tmp, dir + "/kb.bin");
  if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY); dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

bool KnowledgeBase::load_file(const std::string& path) {
  try {
    std::ifstream in(path, std::ios::binary);
    BinaryReader h(in, path);
    if (h.u32() != kMagic) return false;
    const std::uint32_t format = h.u32();
    if (format != kFormat && format != kFormatKindFirst && format != kFormatLsaOnly) return false;
    const std::uint64_t version = h.u64();
    const std::uint64_t size = h.u64();
    const std::uint64_t sum = h.u64();
    std::string body(static_cast<std::size_t>(std::min<std::uint64_t>(size, 1ull << 40)), '\0');
    in.read(body.data(), static_cast<std::streamsize>(body.size()));
    if (static_cast<std::uint64_t>(in.gcount()) != size || fnv1a(body.data(), body.size()) != sum) return false;
    std::istringstream payload(body);
    BinaryReader r(payload, path);
    std::map<std::string, DocState> docs;
    const std::uint64_t changed = r.u64();
    const std::string kind = format == kFormatLsaOnly ? "lsa" : r.str();
    std::shared_ptr<const Embedder> embedder;
    if (kind == "lsa") {
      embedder = LsaEmbedder::load(payload);
    } else if (kind == "use-lite") {
      const std::uint64_t dim = r.u64();
      try {
        embedder = open_use_lite();
      } catch (const std::exception& e) {
        throw EncoderUnavailable(path + ": embedded with use-lite: " + e.what());
      }
      if (embedder->dimension() != dim)
        throw EncoderUnavailable(path + ": embedded with a " + std::to_string(dim) + "-wide use-lite, the encoder gives " +
                                 std::to_string(embedder->dimension()));
    } else {
      return false;
    }
    const std::uint64_t n = r.u64();
    for (std::uint64_t i = 0; i < n; ++i) {
      std::string id = r.str();
      DocState s;
      s.fingerprint = r.u64();
      s.chunks.resize(r.u64());
      for (auto& c : s.chunks) {
        c.doc_id = r.str();
        c.title = r.str();
        c.text = r.str();
        c.begin = r.u32();
        c.end = r.u32();
        c.ordinal = r.u32();
      }
      s.vectors = r.vec<float>();
      if (s.vectors.size() != s.chunks.size() * embedder->dimension()) return false;
      docs.emplace(std::move(id), std::move(s));
    }
    PathAgreement agreement;
    std::uint64_t changed_since_agreement = 0;
    if (format >= 3) {
      agreement.overlap = r.f64();
      agreement.samples = r.u64();
      agreement.version = r.u64();
      changed_since_agreement = r.u64();
      // A figure that cannot belong to this file is dropped (measured again), not the file.
      if (agreement.version > version || agreement.overlap > 1 || (agreement.measured() && agreement.overlap < 0)) {
        agreement = PathAgreement{};
      }
    }
    docs_ = std::move(docs);
    loaded_agreement_ = agreement;
    changed_since_agreement_ = changed_since_agreement;
    embedder_ = std::move(embedder);
    changed_since_fit_ = changed;
    version_.store(version, std::memory_order_release);
    return true;
  } catch (const EncoderUnavailable&) {
    throw;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace sluice::retrieval
