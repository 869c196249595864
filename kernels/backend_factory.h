// The kernel backends of this build by kind, chosen once at start-up, and the one thing a
// backend does before any instance exists: laying out a model's weights for its kernels.
//
// Callers above kernels/ (the model, the generator, the serving engine) see KernelBackend and
// this header only; which implementation runs is a BackendKind in their options. A CUDA twin
// joins as a kind of its own behind the same two functions.
//
// Thread-safety: both functions may be called from any thread; a backend instance is used by
// one thread at a time (backend.h).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "kernels/backend.h"

namespace sluice::kernels {

enum class BackendKind { kCpu, kCuda };
const char* backend_kind_name(BackendKind kind);  // "cpu", "cuda"
// The inverse: false (kind untouched) for anything but "cpu" and "cuda".
bool parse_backend_kind(std::string_view name, BackendKind* kind);

// Whether this build and machine can run `kind`: the CPU always; CUDA when the build has the
// CUDA backend (cmake/Cuda.cmake) and a device is usable. When not, `why` says what is missing.
bool backend_kind_available(BackendKind kind, std::string* why = nullptr);
// Whether `kind`'s operands live in host memory (so weights stay in the mapped file).
bool backend_kind_uses_host_memory(BackendKind kind);

struct BackendOptions {
  BackendKind kind = BackendKind::kCpu;
  int threads = 1;  // CPU: kernel threads (one oneTBB arena)
};

// Throws std::runtime_error when the kind is not available (backend_kind_available's reason).
std::unique_ptr<KernelBackend> make_backend(const BackendOptions& options);

// The backend a generator runs on: one made here for BackendOptions (and owned), or one the
// caller lends (it must outlive the handle and be used by nothing else meanwhile).
class BackendHandle {
 public:
  explicit BackendHandle(const BackendOptions& options) : owned_(make_backend(options)), backend_(owned_.get()) {}
  explicit BackendHandle(KernelBackend& borrowed) : backend_(&borrowed) {}
  KernelBackend& get() const { return *backend_; }

 private:
  std::unique_ptr<KernelBackend> owned_;  // null when borrowed
  KernelBackend* backend_;
};

// Weight matrices a backend rewrote at load, and the memory that holds them.
class PreparedWeights {
 public:
  virtual ~PreparedWeights() = default;
  virtual size_t matrices() const = 0;  // views rewritten
  virtual size_t bytes() const = 0;     // memory they take
};

// Rewrites matrices used only by matmul into the layout `kind`'s kernels run fastest on,
// replacing each view in place (CPU: Q8_0/Q4_0 interleaved by 8 where AVX2 pays; the
// environment's SLUICE_QUANT_LAYOUT=rows keeps the file's layout). Returns what holds the
// copies, or null when no view changed; it must outlive every use of the views. A view that
// changed no longer reads its old bytes.
std::unique_ptr<PreparedWeights> prepare_matmul_weights(BackendKind kind, MatrixView* const* views, size_t count);

// A float vector of a model (a norm's weights) that place_weights may move.
struct WeightVector {
  const float** data;
  int64_t length;
};
// Puts a model's weights where a backend of a device-memory kind reads them: every matrix and
// vector is copied into device memory once (views sharing data share the copy) and its
// pointer replaced. For host-memory kinds nothing moves and null is returned. The result must
// outlive every use of the pointers; a model loaded for a device kind runs on no other kind.
std::unique_ptr<PreparedWeights> place_weights(BackendKind kind, MatrixView* const* views, size_t count,
                                               const WeightVector* vectors, size_t vector_count);

}  // namespace sluice::kernels
