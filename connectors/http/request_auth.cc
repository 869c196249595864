#include "connectors/http/request_auth.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace sluice::http {
namespace {

// Endpoints and the scope they need; 0: open.
std::uint8_t scope_for(Endpoint endpoint, bool metrics_open, bool readyz_open) {
  switch (endpoint) {
    case Endpoint::kChatCompletions:
    case Endpoint::kCompletions:
    case Endpoint::kEmbeddings:
    case Endpoint::kJobs:  // GET /v1/jobs/{id}: the answers of inference jobs
    case Endpoint::kStreams:  // GET /v1/streams/{id}: the rest of a streamed answer
    case Endpoint::kModels: return kScopeInfer;
    case Endpoint::kRetrieve: return kScopeRetrieve;
    case Endpoint::kDocuments: return kScopeDocumentsWrite;
    case Endpoint::kCache: return kScopeAdmin;
    case Endpoint::kMetrics: return metrics_open ? 0 : kScopeAdmin;
    case Endpoint::kReadyz: return readyz_open ? 0 : kScopeAdmin;
    case Endpoint::kHealthz:
    default: return 0;
  }
}

bool counts_tokens(Endpoint endpoint) {
  return endpoint == Endpoint::kChatCompletions || endpoint == Endpoint::kCompletions;
}

std::string retry_after_seconds(Nanos wait) {
  return std::to_string(std::max<Nanos>(1, (wait + kNanosPerSecond - 1) / kNanosPerSecond));
}

Counter& refusal_counter(MetricsRegistry& m, const std::string& source, const char* reason) {
  return m.counter("sluice_http_auth_refusals_total", "Requests refused by authentication or authorisation, by reason.",
                   {{"source", source}, {"reason", reason}});
}

}  // namespace

std::string_view bearer_token(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer";
  if (authorization.size() <= kScheme.size()) return {};
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i]) return {};
  }
  std::string_view rest = authorization.substr(kScheme.size());
  if (rest.front() != ' ' && rest.front() != '\t') return {};
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
  while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\t')) rest.remove_suffix(1);
  return rest;
}

// ---------------------------------------------------------------- TokenMeter

TokenMeter::TokenMeter(const ApiKey& key, Nanos now, Counter& limited_requests, Counter& limited_tokens)
    : requests_(key.requests_per_second, key.burst, now),
      tokens_(key.tokens_per_minute / 60.0, key.tokens_per_minute, now),
      limited_requests_(limited_requests),
      limited_tokens_(limited_tokens) {}

std::optional<Nanos> TokenMeter::admit(Nanos now, bool counts_tokens) {
  MutexLock lock(mu_);
  // Tokens first: a request refused for tokens must not also spend a request.
  if (counts_tokens && tokens_.limited() && tokens_.level(now) <= 0) {
    limited_tokens_.inc();
    return std::max<Nanos>(1, tokens_.wait_for(now, 1));
  }
  if (!requests_.try_take(now)) {
    limited_requests_.inc();
    return std::max<Nanos>(1, requests_.wait_for(now, 1));
  }
  return std::nullopt;
}

void TokenMeter::charge_tokens(Nanos now, int tokens) {
  MutexLock lock(mu_);
  if (tokens > 0) tokens_.charge(now, tokens);
}

void TokenMeter::reconfigure(const ApiKey& key, Nanos now) {
  MutexLock lock(mu_);
  requests_.reconfigure(key.requests_per_second, key.burst, now);
  tokens_.reconfigure(key.tokens_per_minute / 60.0, key.tokens_per_minute, now);
}

// ---------------------------------------------------------------- RequestAuth

RequestAuth::RequestAuth(const AuthConfig& config, const std::string& source, KeyRing::ClassLookup classes,
                         const Clock& clock, MetricsRegistry& metrics)
    : config_(config),
      source_(source),
      classes_(std::move(classes)),
      clock_(clock),
      metrics_(metrics),
      keys_loaded_(metrics.gauge("sluice_http_api_keys", "API keys the source accepts (after the last good reload).",
                                 {{"source", source}})),
      reloads_ok_(metrics.counter("sluice_http_auth_reloads_total", "Key reloads (SIGHUP), by result.",
                                  {{"source", source}, {"result", "ok"}})),
      reloads_failed_(metrics.counter("sluice_http_auth_reloads_total", "Key reloads (SIGHUP), by result.",
                                      {{"source", source}, {"result", "failed"}})),
      refused_missing_(refusal_counter(metrics, source, "missing_key")),
      refused_invalid_(refusal_counter(metrics, source, "invalid_key")),
      refused_scope_(refusal_counter(metrics, source, "scope")),
      refused_priority_(refusal_counter(metrics, source, "priority")) {
  for (const std::string& p : config.open_paths()) {
    metrics_open_ = metrics_open_ || p == "/metrics";
    readyz_open_ = readyz_open_ || p == "/readyz";
  }
  enabled_ = config.mode() == "keys" || (config.mode().empty() && (!config.keys_file().empty() || !config.keys_env().empty()));
  if (!enabled_) return;
  std::shared_ptr<const KeyRing> ring;
  try {
    ring = read_keys();
  } catch (const std::exception& e) {
    throw std::invalid_argument("http source '" + source + "': auth: " + e.what());
  }
  MutexLock lock(mu_);
  install(std::move(ring));
}

std::shared_ptr<const KeyRing> RequestAuth::read_keys() const {
  if (!config_.keys_file().empty()) {
    std::ifstream in(config_.keys_file(), std::ios::binary);
    if (!in) throw KeyFileError(config_.keys_file() + ": cannot read the key file");
    std::stringstream text;
    text << in.rdbuf();
    return KeyRing::parse(text.str(), config_.keys_file(), classes_);
  }
  const char* value = std::getenv(config_.keys_env().c_str());
  if (!value) throw KeyFileError("$" + config_.keys_env() + ": the environment variable is not set");
  return KeyRing::parse(value, "$" + config_.keys_env(), classes_);
}

void RequestAuth::install(std::shared_ptr<const KeyRing> ring) {
  const Nanos now = clock_.now();
  std::unordered_map<std::string, std::shared_ptr<TokenMeter>> previous;  // by key id
  if (installed_) {
    for (std::size_t i = 0; i < installed_->meters.size(); ++i) {
      previous.emplace(installed_->ring->keys()[i].id, installed_->meters[i]);
    }
  }
  auto next = std::make_shared<Installed>();
  for (const ApiKey& key : ring->keys()) {
    if (auto it = previous.find(key.id); it != previous.end()) {
      it->second->reconfigure(key, now);
      next->meters.push_back(it->second);
      continue;
    }
    Labels requests{{"source", source_}, {"key", key.id}, {"limit", "requests"}};
    Labels tokens{{"source", source_}, {"key", key.id}, {"limit", "tokens"}};
    const std::string help = "Requests refused with 429 by a key's rate limit, by key and limit.";
    next->meters.push_back(std::make_shared<TokenMeter>(key, now, metrics_.counter("sluice_http_rate_limited_total", help, requests),
                                                        metrics_.counter("sluice_http_rate_limited_total", help, tokens)));
  }
  keys_loaded_.set(static_cast<double>(ring->keys().size()));
  next->ring = std::move(ring);
  installed_ = std::move(next);
}

Status RequestAuth::reload() {
  if (!enabled_) return Status::Ok();
  std::shared_ptr<const KeyRing> ring;
  try {
    ring = read_keys();
  } catch (const std::exception& e) {
    reloads_failed_.inc();
    return Status::Error(StatusCode::kInvalidArgument, e.what());
  }
  MutexLock lock(mu_);
  install(std::move(ring));
  reloads_ok_.inc();
  return Status::Ok();
}

std::size_t RequestAuth::key_count() const {
  MutexLock lock(mu_);
  return installed_ ? installed_->ring->keys().size() : 0;
}

ApiError RequestAuth::priority_refusal(const AuthDecision& decision, const std::string& asked) {
  refused_priority_.inc();
  return ApiError{403,
                  "X-Priority '" + asked + "' is above what the API key '" + decision.key_id + "' may ask for (at most " +
                      decision.ceiling_name + ")",
                  "permission_error", "X-Priority", "priority_not_allowed"};
}

AuthDecision RequestAuth::refuse(ApiError error, std::vector<HttpHeader> headers) {
  AuthDecision d;
  d.error = std::move(error);
  d.headers = std::move(headers);
  return d;
}

AuthDecision RequestAuth::authorize(const HttpRequest& request, Endpoint endpoint) {
  AuthDecision d;
  if (!enabled_) return d;
  const std::uint8_t scope = scope_for(endpoint, metrics_open_, readyz_open_);
  if (scope == 0) return d;
  const std::string* header = request.header("authorization");
  const std::string_view token = header ? bearer_token(*header) : std::string_view{};
  if (token.empty()) {
    refused_missing_.inc();
    return refuse(ApiError{401, "no API key: send it as 'Authorization: Bearer <key>'", "invalid_request_error", "",
                           "missing_api_key"},
                  {{"WWW-Authenticate", "Bearer realm=\"sluice\""}});
  }
  std::shared_ptr<const Installed> installed;
  {
    MutexLock lock(mu_);
    installed = installed_;
  }
  const ApiKey* key = installed->ring->find(token);
  if (!key) {
    refused_invalid_.inc();
    return refuse(ApiError{401, "the API key is not valid for this server", "invalid_request_error", "", "invalid_api_key"},
                  {{"WWW-Authenticate", "Bearer realm=\"sluice\", error=\"invalid_token\""}});
  }
  if (!key->allows(static_cast<Scope>(scope))) {
    refused_scope_.inc();
    return refuse(ApiError{403,
                           "the API key '" + key->id + "' lacks the scope '" + scope_name(static_cast<Scope>(scope)) +
                               "' that " + std::string(endpoint_label(endpoint)) + " needs",
                           "permission_error", "", "insufficient_scope"});
  }
  const std::shared_ptr<TokenMeter>& meter =
      installed->meters[static_cast<std::size_t>(key - installed->ring->keys().data())];
  const bool limited = key->requests_per_second > 0 || (counts_tokens(endpoint) && key->tokens_per_minute > 0);
  if (limited) {
    d.now = clock_.now();
    if (auto wait = meter->admit(d.now, counts_tokens(endpoint))) {
      const std::string retry = retry_after_seconds(*wait);
      return refuse(ApiError{429, "the API key '" + key->id + "' is over its rate limit; retry after " + retry + " s",
                             "rate_limit_error", "", "rate_limit_exceeded"},
                    {{"Retry-After", retry}});
    }
  }
  d.key_id = key->id;
  d.tenant = key->tenant;
  d.ceiling_class = key->ceiling_class;
  d.ceiling_name = key->ceiling_name;
  if (counts_tokens(endpoint) && key->tokens_per_minute > 0) d.meter = meter;
  return d;
}

}  // namespace sluice::http
