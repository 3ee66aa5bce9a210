#pragma once
// The JSON documents of the maprect program (fit results, bench records), built with nlohmann-json: keys in the
// order they are set, non-finite numbers as null, every double printed so that it reads back to the same bits.
#include <nlohmann/json.hpp>

#include <optional>
#include <ostream>

namespace maprect::cli {

/// A JSON value whose objects keep their keys in insertion order, as the documents list them.
using json = nlohmann::ordered_json;

/// `x` as JSON, or null when absent.
template <class T>
json value_or_null(const std::optional<T>& x) {
  return x ? json(*x) : json(nullptr);
}

/// Writes `document` indented by two spaces, with a final newline. Bytes that are not UTF-8 (a host name or an
/// argument in another encoding) become U+FFFD instead of failing the whole write.
inline void write_json_document(std::ostream& out, const json& document) {
  out << document.dump(2, ' ', false, json::error_handler_t::replace) << '\n';
}

}  // namespace maprect::cli
