#pragma once
/// \file A region of the tape that is freed when its scope ends.

#include "grad.hpp"

namespace maprect {

/// RAII region: vars made in its scope are freed when it ends; grad() inside sweeps only the region.
/// Regions nest. Vars of the region must not be used after it ends.
class nested_tape {
 public:
  nested_tape() : tape_(tape::current()) { tape_.nests.push_back(tape_.mark()); }
  nested_tape(const nested_tape&) = delete;
  nested_tape& operator=(const nested_tape&) = delete;
  ~nested_tape() {
    const tape_mark m = tape_.nests.back();
    tape_.nests.pop_back();
    tape_.rewind(m);
    detail::notify_tape_rewound(tape_);
  }

 private:
  tape& tape_;
};

}  // namespace maprect
