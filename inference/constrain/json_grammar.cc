#include "inference/constrain/json_grammar.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

namespace sluice::constrain {

using json = nlohmann::ordered_json;

namespace {


const std::set<std::string>& annotations() {
  static const std::set<std::string> k = {"title", "description", "default", "examples", "$schema", "$id", "$comment",
                                          "$defs", "definitions", "strict", "name"};
  return k;
}

// Keywords each type accepts besides the annotations and `type` itself; null for a name that
// is not a JSON Schema type.
const std::set<std::string>* keywords_of(const std::string& type) {
  static const std::map<std::string, std::set<std::string>> k = {
      {"object", {"properties", "required", "additionalProperties"}},
      {"array", {"items", "minItems", "maxItems"}},
      {"string", {"minLength", "maxLength"}},
      {"number", {}},
      {"integer", {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}},
      {"boolean", {}},
      {"null", {}},
  };
  auto it = k.find(type);
  return it == k.end() ? nullptr : &it->second;
}

}  // namespace

int decimal_digits(std::int64_t m) {
  int d = 1;
  while (m >= 10) {
    m /= 10;
    ++d;
  }
  return d;
}

bool integer_reachable(bool negative, std::int64_t m, int more_digits, std::int64_t lo, std::int64_t hi, int* fewest) {
  const int most = m == 0 ? 0 : more_digits;  // nothing follows a leading zero
  __int128 scale = 1;
  for (int k = 0; k <= most; ++k, scale *= 10) {
    const __int128 low = __int128(m) * scale, high = low + scale - 1;
    if (low > kMaxMagnitude) break;
    const __int128 a = negative ? -high : low, b = negative ? -low : high;
    if (a <= hi && b >= lo) {
      *fewest = k;
      return true;
    }
  }
  return false;
}

class GrammarBuilder {
 public:
  GrammarBuilder(const json& root, GrammarError* error) : root_(root), error_(error) {}

  std::shared_ptr<JsonGrammar> build(const std::string& path) {
    auto g = std::make_shared<JsonGrammar>();
    g_ = g.get();
    g_->nodes_.emplace_back();  // the root, id 0
    if (!compile_into(root_, path, 0, 0)) return nullptr;
    if (!finish(path)) return nullptr;
    return g;
  }

  std::shared_ptr<JsonGrammar> build_any_object() {
    auto g = std::make_shared<JsonGrammar>();
    g_ = g.get();
    g_->nodes_.emplace_back();
    const std::uint32_t any = new_node();
    any_value_into(any);
    g_->nodes_[0].kind = NodeKind::kFreeObject;
    g_->nodes_[0].children = {any, string_node(0, kUnbounded)};
    finish("");
    return g;
  }

 private:
  bool fail(const std::string& path, std::string message) {
    error_->path = path;
    error_->message = std::move(message);
    return false;
  }

  std::uint32_t new_node() {
    g_->nodes_.emplace_back();
    return std::uint32_t(g_->nodes_.size() - 1);
  }
  GrammarNode& at(std::uint32_t id) { return g_->nodes_[id]; }

  std::uint32_t literal_node(std::string text) {
    const std::uint32_t id = new_node();
    at(id).kind = NodeKind::kLiteral;
    at(id).literal = std::move(text);
    return id;
  }
  std::uint32_t string_node(std::uint32_t min, std::uint32_t max) {
    const std::uint32_t id = new_node();
    at(id).kind = NodeKind::kString;
    at(id).min_count = min;
    at(id).max_count = max;
    return id;
  }

  // Any JSON value: string, number, true, false, null, any object, any array.
  void any_value_into(std::uint32_t id) {
    if (any_value_) {  // one shared node for the whole grammar
      at(id).kind = NodeKind::kAnyOf;
      at(id).children = {*any_value_};
      return;
    }
    any_value_ = id;
    const std::uint32_t str = string_node(0, kUnbounded);
    const std::uint32_t num = new_node();
    at(num).kind = NodeKind::kNumber;
    const std::uint32_t obj = new_node();
    at(obj).kind = NodeKind::kFreeObject;
    at(obj).children = {id, str};
    const std::uint32_t arr = new_node();
    at(arr).kind = NodeKind::kArray;
    at(arr).children = {id};
    std::vector<std::uint32_t> alts = {str, num, obj, arr, literal_node("true"), literal_node("false"), literal_node("null")};
    at(id).kind = NodeKind::kAnyOf;
    at(id).children = std::move(alts);
  }

  bool too_big(const std::string& path) {
    if (g_->nodes_.size() <= std::size_t(JsonGrammar::kMaxNodes)) return false;
    fail(path, "the schema compiles to more than " + std::to_string(JsonGrammar::kMaxNodes) + " nodes");
    return true;
  }

  bool read_count(const json& s, const char* key, const std::string& path, std::uint32_t* out) {
    auto it = s.find(key);
    if (it == s.end()) return true;
    if (!it->is_number_integer() || it->get<std::int64_t>() < 0 || it->get<std::int64_t>() > 1'000'000)
      return fail(path + "." + key, std::string("'") + key + "' must be a non-negative integer");
    *out = std::uint32_t(it->get<std::int64_t>());
    return true;
  }

  // Resolves a local $ref ("#", "#/$defs/X", "#/definitions/X") to its node, compiling the
  // target the first time (its id is known before it compiles, so recursion resolves).
  bool ref_into(const std::string& ref, const std::string& path, std::uint32_t id, int depth) {
    std::uint32_t target;
    if (ref == "#") {
      target = 0;
    } else if (auto it = refs_.find(ref); it != refs_.end()) {
      target = it->second;
    } else {
      const json* def = nullptr;
      for (const char* section : {"#/$defs/", "#/definitions/"}) {
        const std::string prefix = section;
        if (ref.compare(0, prefix.size(), prefix) != 0) continue;
        const std::string name = ref.substr(prefix.size());
        const std::string key = prefix.substr(2, prefix.size() - 3);
        auto defs = root_.find(key);
        if (defs != root_.end() && defs->is_object() && defs->contains(name)) def = &(*defs)[name];
      }
      if (!def) return fail(path + ".$ref", "'$ref' " + ref + " does not name an entry of the root's $defs or definitions");
      target = new_node();
      refs_[ref] = target;
      if (!compile_into(*def, ref.substr(2), target, depth + 1)) return false;
    }
    at(id).kind = NodeKind::kAnyOf;
    at(id).children = {target};
    return true;
  }

  bool compile_into(const json& s, const std::string& path, std::uint32_t id, int depth) {
    if (depth > 64) return fail(path, "the schema nests more than 64 levels");
    if (too_big(path)) return false;
    if (s.is_boolean()) {
      if (!s.get<bool>()) return fail(path, "schema 'false' admits no value");
      any_value_into(id);
      return true;
    }
    if (!s.is_object()) return fail(path, "a schema must be an object");

    if (auto ref = s.find("$ref"); ref != s.end()) {
      if (!ref->is_string()) return fail(path + ".$ref", "'$ref' must be a string");
      for (auto it = s.begin(); it != s.end(); ++it)
        if (it.key() != "$ref" && !annotations().count(it.key()))
          return fail(path + "." + it.key(), "'" + it.key() + "' beside '$ref' is not supported");
      return ref_into(ref->get<std::string>(), path, id, depth);
    }
    if (auto any = s.find("anyOf"); any != s.end()) {
      if (!any->is_array() || any->empty()) return fail(path + ".anyOf", "'anyOf' must be a non-empty array");
      for (auto it = s.begin(); it != s.end(); ++it)
        if (it.key() != "anyOf" && !annotations().count(it.key()))
          return fail(path + "." + it.key(), "'" + it.key() + "' beside 'anyOf' is not supported");
      std::vector<std::uint32_t> alts;
      for (std::size_t i = 0; i < any->size(); ++i) {
        const std::uint32_t alt = new_node();
        if (!compile_into((*any)[i], path + ".anyOf[" + std::to_string(i) + "]", alt, depth + 1)) return false;
        alts.push_back(alt);
      }
      at(id).kind = NodeKind::kAnyOf;
      at(id).children = std::move(alts);
      return true;
    }
    if (auto e = s.find("enum"); e != s.end() || s.contains("const")) {
      std::vector<std::uint32_t> alts;
      if (e != s.end()) {
        if (!e->is_array() || e->empty()) return fail(path + ".enum", "'enum' must be a non-empty array");
        for (const json& v : *e) alts.push_back(literal_node(v.dump()));
      } else {
        alts.push_back(literal_node(s["const"].dump()));
      }
      for (auto it = s.begin(); it != s.end(); ++it)
        if (it.key() != "enum" && it.key() != "const" && it.key() != "type" && !annotations().count(it.key()))
          return fail(path + "." + it.key(), "'" + it.key() + "' beside 'enum' or 'const' is not supported");
      at(id).kind = NodeKind::kAnyOf;
      at(id).children = std::move(alts);
      return true;
    }

    std::vector<std::string> types;
    if (auto t = s.find("type"); t != s.end()) {
      if (t->is_string()) {
        types.push_back(t->get<std::string>());
      } else if (t->is_array() && !t->empty()) {
        for (const json& v : *t) {
          if (!v.is_string()) return fail(path + ".type", "'type' must be a string or an array of strings");
          types.push_back(v.get<std::string>());
        }
      } else {
        return fail(path + ".type", "'type' must be a string or an array of strings");
      }
    } else if (s.contains("properties") || s.contains("additionalProperties") || s.contains("required")) {
      types.push_back("object");
    } else if (s.contains("items")) {
      types.push_back("array");
    }
    for (const std::string& t : types)
      if (!keywords_of(t))
        return fail(path + ".type", "'type' " + t + " is not one of object, array, string, number, integer, boolean, null");
    // Every keyword must belong to one of the types (or be an annotation): anything else is a
    // constraint this grammar would not enforce, refused by name.
    for (auto it = s.begin(); it != s.end(); ++it) {
      const std::string& k = it.key();
      if (k == "type" || annotations().count(k)) continue;
      bool known = false;
      for (const std::string& t : types) known = known || keywords_of(t)->count(k);
      if (!known)
        return fail(path + "." + k, "keyword '" + k + "' is not supported in structured outputs (supported: type, properties, "
                                    "required, additionalProperties, items, minItems, maxItems, minLength, maxLength, minimum and "
                                    "maximum on integers, enum, "
                                    "const, anyOf, $ref, $defs)");
    }
    if (types.empty()) {
      any_value_into(id);
      return true;
    }
    if (types.size() == 1) return typed_into(s, types[0], path, id, depth);
    std::vector<std::uint32_t> alts;
    for (const std::string& t : types) {
      const std::uint32_t alt = new_node();
      if (!typed_into(s, t, path, alt, depth)) return false;
      alts.push_back(alt);
    }
    at(id).kind = NodeKind::kAnyOf;
    at(id).children = std::move(alts);
    return true;
  }

  bool typed_into(const json& s, const std::string& type, const std::string& path, std::uint32_t id, int depth) {
    if (type == "string") {
      std::uint32_t min = 0, max = kUnbounded;
      if (!read_count(s, "minLength", path, &min) || !read_count(s, "maxLength", path, &max)) return false;
      if (min > max) return fail(path + ".minLength", "'minLength' is above 'maxLength'");
      at(id).kind = NodeKind::kString;
      at(id).min_count = min;
      at(id).max_count = max;
      return true;
    }
    if (type == "number" || type == "integer") {
      at(id).kind = type == "number" ? NodeKind::kNumber : NodeKind::kInteger;
      if (type == "integer") return integer_bounds_into(s, path, id);
      return true;
    }
    if (type == "boolean") {
      const std::uint32_t t = literal_node("true"), f = literal_node("false");
      at(id).kind = NodeKind::kAnyOf;
      at(id).children = {t, f};
      return true;
    }
    if (type == "null") {
      at(id).kind = NodeKind::kLiteral;
      at(id).literal = "null";
      return true;
    }
    if (type == "array") {
      std::uint32_t min = 0, max = kUnbounded;
      if (!read_count(s, "minItems", path, &min) || !read_count(s, "maxItems", path, &max)) return false;
      if (min > max) return fail(path + ".minItems", "'minItems' is above 'maxItems'");
      const std::uint32_t item = new_node();
      auto items = s.find("items");
      if (items == s.end()) {
        any_value_into(item);
      } else if (items->is_array()) {
        return fail(path + ".items", "'items' as an array (tuple validation) is not supported; use prefixItems-free schemas");
      } else if (!compile_into(*items, path + ".items", item, depth + 1)) {
        return false;
      }
      at(id).kind = NodeKind::kArray;
      at(id).children = {item};
      at(id).min_count = min;
      at(id).max_count = max;
      return true;
    }
    // object
    auto props = s.find("properties");
    auto extra = s.find("additionalProperties");
    if (extra != s.end() && !extra->is_boolean())
      return fail(path + ".additionalProperties", "'additionalProperties' must be true or false (a schema there is not supported)");
    if (props != s.end() && !props->is_object()) return fail(path + ".properties", "'properties' must be an object");
    std::set<std::string> listed;
    if (props != s.end())
      for (auto it = props->begin(); it != props->end(); ++it) listed.insert(it.key());
    if (auto req = s.find("required"); req != s.end()) {
      if (!req->is_array()) return fail(path + ".required", "'required' must be an array of property names");
      for (const json& name : *req) {
        if (!name.is_string()) return fail(path + ".required", "'required' must be an array of property names");
        if (!listed.count(name.get<std::string>()))
          return fail(path + ".required", "required property '" + name.get<std::string>() + "' is not in 'properties'");
      }
    }
    if (props == s.end() || props->empty()) {
      if (extra != s.end() && !extra->get<bool>()) {
        at(id).kind = NodeKind::kLiteral;
        at(id).literal = "{}";
        return true;
      }
      const std::uint32_t value = new_node();
      any_value_into(value);
      at(id).kind = NodeKind::kFreeObject;
      at(id).children = {value, string_node(0, kUnbounded)};
      return true;
    }
    // In the order the client wrote them (ordered_json), as OpenAI writes them.
    std::vector<std::uint32_t> values;
    std::vector<std::string> prefixes;
    for (auto it = props->begin(); it != props->end(); ++it) {
      const std::uint32_t v = new_node();
      if (!compile_into(it.value(), path + ".properties." + it.key(), v, depth + 1)) return false;
      values.push_back(v);
      prefixes.push_back((prefixes.empty() ? "" : ",") + json(it.key()).dump() + ":");
    }
    at(id).kind = NodeKind::kObject;
    at(id).children = std::move(values);
    at(id).prefixes = std::move(prefixes);
    return true;
  }

  // minimum / maximum (and the exclusive forms) of an integer, as an inclusive int64 range
  // clamped to +-kMaxMagnitude.
  bool integer_bounds_into(const json& s, const std::string& path, std::uint32_t id) {
    std::int64_t lo = -kMaxMagnitude, hi = kMaxMagnitude;
    bool any = false;
    for (const char* key : {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}) {
      auto it = s.find(key);
      if (it == s.end()) continue;
      if (!it->is_number()) return fail(path + "." + key, std::string("'") + key + "' must be a number");
      any = true;
      const double v = it->get<double>();
      const std::string k = key;
      const double limit = double(kMaxMagnitude);
      if (k == "minimum") lo = std::max(lo, std::int64_t(std::clamp(std::ceil(v), -limit, limit)));
      if (k == "exclusiveMinimum") lo = std::max(lo, std::int64_t(std::clamp(std::floor(v) + 1, -limit, limit)));
      if (k == "maximum") hi = std::min(hi, std::int64_t(std::clamp(std::floor(v), -limit, limit)));
      if (k == "exclusiveMaximum") hi = std::min(hi, std::int64_t(std::clamp(std::ceil(v) - 1, -limit, limit)));
    }
    if (!any) return true;
    if (lo > hi) return fail(path + ".minimum", "no integer lies between 'minimum' and 'maximum'");
    GrammarNode& n = at(id);
    n.bounded = true;
    n.min_value = lo;
    n.max_value = hi;
    return true;
  }

  static void set_first(GrammarNode& n, std::uint8_t c) { n.first[c >> 3] |= std::uint8_t(1u << (c & 7)); }

  // Shortest instance of every node (a fixed point: references may be cyclic) and the bytes
  // each can start with.
  bool finish(const std::string& path) {
    auto& nodes = g_->nodes_;
    for (bool changed = true; changed;) {
      changed = false;
      for (GrammarNode& n : nodes) {
        std::uint32_t m = kInfinite;
        switch (n.kind) {
          case NodeKind::kAnyOf:
            for (std::uint32_t c : n.children) m = std::min(m, nodes[c].min_bytes);
            break;
          case NodeKind::kLiteral: m = std::uint32_t(n.literal.size()); break;
          case NodeKind::kString: m = add_bytes(2, n.min_count); break;
          case NodeKind::kNumber: m = 1; break;
          case NodeKind::kInteger:
            if (!n.bounded || (n.min_value <= 0 && n.max_value >= 0)) m = 1;
            else if (n.min_value > 0) m = std::uint32_t(decimal_digits(n.min_value));
            else m = std::uint32_t(1 + decimal_digits(-n.max_value));
            break;
          case NodeKind::kFreeObject: m = 2; break;
          case NodeKind::kArray: {
            const std::uint32_t item = nodes[n.children[0]].min_bytes;
            m = n.min_count == 0 ? 2
                                 : add_bytes(2, add_bytes(multiply_bytes(n.min_count, item),
                                              n.min_count - 1));
            break;
          }
          case NodeKind::kObject: {
            const std::size_t k = n.children.size();
            n.suffix.assign(k + 1, 1);
            for (std::size_t i = k; i-- > 0;)
              n.suffix[i] = add_bytes(add_bytes(std::uint32_t(n.prefixes[i].size()), nodes[n.children[i]].min_bytes), n.suffix[i + 1]);
            m = add_bytes(1, n.suffix[0]);
            break;
          }
        }
        if (m < n.min_bytes) {
          n.min_bytes = m;
          changed = true;
        }
      }
    }
    for (const GrammarNode& n : nodes)
      if (n.min_bytes >= kInfinite) return fail(path, "the schema admits no finite value (a required property refers back to itself)");
    for (bool changed = true; changed;) {
      changed = false;
      for (GrammarNode& n : nodes) {
        std::uint8_t before[32];
        std::copy(std::begin(n.first), std::end(n.first), before);
        switch (n.kind) {
          case NodeKind::kAnyOf:
            for (std::uint32_t c : n.children)
              for (int i = 0; i < 32; ++i) n.first[i] |= nodes[c].first[i];
            break;
          case NodeKind::kLiteral:
            if (!n.literal.empty()) set_first(n, std::uint8_t(n.literal[0]));
            break;
          case NodeKind::kString: set_first(n, '"'); break;
          case NodeKind::kNumber:
          case NodeKind::kInteger: {
            const std::int64_t lo = n.bounded ? n.min_value : -kMaxMagnitude, hi = n.bounded ? n.max_value : kMaxMagnitude;
            int fewest;
            if (lo < 0) set_first(n, '-');
            if (lo <= 0 && hi >= 0) set_first(n, '0');
            for (int d = 1; d <= 9; ++d)
              if (n.kind == NodeKind::kNumber || integer_reachable(false, d, 17, lo, hi, &fewest)) set_first(n, std::uint8_t('0' + d));
            break;
          }
          case NodeKind::kObject:
          case NodeKind::kFreeObject: set_first(n, '{'); break;
          case NodeKind::kArray: set_first(n, '['); break;
        }
        changed = changed || !std::equal(std::begin(n.first), std::end(n.first), before);
      }
    }
    return true;
  }

  const json& root_;
  GrammarError* error_;
  JsonGrammar* g_ = nullptr;
  std::map<std::string, std::uint32_t> refs_;
  std::optional<std::uint32_t> any_value_;
};

std::shared_ptr<const JsonGrammar> JsonGrammar::compile(const json& schema, const std::string& path, GrammarError* error) {
  GrammarError ignored;
  GrammarBuilder b(schema, error ? error : &ignored);
  return b.build(path);
}

std::shared_ptr<const JsonGrammar> JsonGrammar::any_object() {
  static const std::shared_ptr<const JsonGrammar> g = [] {
    GrammarError ignored;
    json none;
    return std::shared_ptr<const JsonGrammar>(GrammarBuilder(none, &ignored).build_any_object());
  }();
  return g;
}

}  // namespace sluice::constrain
