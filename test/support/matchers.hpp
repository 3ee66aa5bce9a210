#pragma once
// Exception matchers Catch2 v2 lacks: what() contains every given piece.
#include <catch2/catch.hpp>
#include <exception>
#include <string>
#include <vector>

namespace maprect::test {

/// Matches an exception whose what() contains each of the pieces.
class message_contains_matcher : public Catch::MatcherBase<std::exception> {
 public:
  explicit message_contains_matcher(std::vector<std::string> pieces) : pieces_(std::move(pieces)) {}
  bool match(const std::exception& e) const override {
    const std::string what = e.what();
    for (const auto& p : pieces_)
      if (what.find(p) == std::string::npos) return false;
    return true;
  }
  std::string describe() const override {
    std::string d = "message contains";
    for (const auto& p : pieces_) d += " \"" + p + "\"";
    return d;
  }

 private:
  std::vector<std::string> pieces_;
};

/// what() contains every piece.
inline message_contains_matcher message_contains(std::vector<std::string> pieces) {
  return message_contains_matcher(std::move(pieces));
}


}  // namespace maprect::test
