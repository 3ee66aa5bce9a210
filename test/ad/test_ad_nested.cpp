// Tape housekeeping: grad, zeroing adjoints (all or the innermost region), recover_memory, and nested
// regions (freed at scope end, swept alone, nesting inside each other).
#include <catch2/catch.hpp>

#include <stdexcept>

#include "ad/ad_test_support.hpp"
#include "support/matchers.hpp"

using namespace maprect;
using test::clean_tape;

TEST_CASE("grad seeds the result and sweeps the whole tape") {
  clean_tape tape;
  var x = 2.0, y = 3.0;
  var unused = x * 100.0;  // on the tape but not on the path to z
  var z = x * y + sin(x);
  grad(z);
  CHECK(z.adj() == 1.0);
  CHECK(x.adj() == Approx(3 + std::cos(2.0)).epsilon(1e-15));
  CHECK(y.adj() == 2.0);
  CHECK(unused.adj() == 0.0);
}

TEST_CASE("set_zero_all_adjoints makes a second sweep equal the first") {
  clean_tape tape;
  var x = 0.7;
  var y = exp(x * x) * 3.0;
  grad(y);
  const double first = x.adj();
  CHECK(first == Approx(3 * 2 * 0.7 * std::exp(0.49)).epsilon(1e-15));
  grad(y);  // without zeroing, adjoints accumulate
  CHECK(x.adj() != first);
  set_zero_all_adjoints();
  for (vari* v : tape::current().stack) CHECK(v->adj_ == 0.0);
  grad(y);
  CHECK(x.adj() == first);
}

TEST_CASE("recover_memory empties the tape and keeps its memory blocks") {
  clean_tape tape;
  for (int i = 0; i < 100000; ++i) (void)var(i);  // more than the first block, so more blocks are made
  CHECK(tape_size() == 100000);
  CHECK(tape_bytes() > 0);
  const std::size_t capacity = tape::current().memory.capacity();
  recover_memory();
  CHECK(tape_size() == 0);
  CHECK(tape_bytes() == 0);
  CHECK(tape::current().memory.capacity() == capacity);
  for (int i = 0; i < 100000; ++i) (void)var(i);
  CHECK(tape::current().memory.capacity() == capacity);  // reused, not grown
  var x = 1.5;
  var y = x * x;
  grad(y);
  CHECK(x.adj() == 3.0);
}

TEST_CASE("recover_memory inside a nested_tape throws std::logic_error and leaves the tape intact") {
  clean_tape tape;
  var outer = 2.0;
  {
    nested_tape region;
    var inner = outer * 3.0;
    const std::size_t size = tape_size();
    CHECK_THROWS_AS(recover_memory(), std::logic_error);
    CHECK_THROWS_WITH(recover_memory(), Catch::Contains("nested_tape"));
    CHECK(tape_size() == size);
    grad(inner);
    CHECK(inner.val() == 6.0);
    {
      nested_tape deeper;
      CHECK_THROWS_AS(recover_memory(), std::logic_error);
    }
    CHECK_THROWS_AS(recover_memory(), std::logic_error);
  }
  CHECK_NOTHROW(recover_memory());
  CHECK(tape_size() == 0);
}

TEST_CASE("nested_tape frees its vars, sweeps only itself and keeps the enclosing adjoints") {
  clean_tape tape;
  var a = 1.25, b = -0.5;
  var c = a * b + a;
  grad(c);
  const double a_adj = a.adj(), b_adj = b.adj(), c_adj = c.adj();
  const std::size_t size = tape_size();
  const std::size_t bytes = tape_bytes();
  {
    nested_tape region;
    CHECK(tape_size() == size);
    var x = a.val(), y = b.val();  // leaves made from the enclosing vars' values
    var z = exp(x) * y;
    CHECK(tape_size() == size + 4);
    grad(z);
    CHECK(x.adj() == Approx(std::exp(1.25) * -0.5).epsilon(1e-15));
    CHECK(y.adj() == Approx(std::exp(1.25)).epsilon(1e-15));
    // Zeroing the region leaves the enclosing adjoints alone.
    set_zero_nested_adjoints();
    CHECK(x.adj() == 0.0);
    CHECK(z.adj() == 0.0);
    CHECK(a.adj() == a_adj);
    CHECK(b.adj() == b_adj);
    CHECK(c.adj() == c_adj);
    grad(z);
    CHECK(y.adj() == Approx(std::exp(1.25)).epsilon(1e-15));
  }
  CHECK(tape_size() == size);
  CHECK(tape_bytes() == bytes);
  CHECK(a.adj() == a_adj);
  CHECK(b.adj() == b_adj);
  CHECK(c.adj() == c_adj);
  // The enclosing tape still differentiates, and new nodes reuse the region's memory.
  set_zero_all_adjoints();
  var d = c * 2.0;
  CHECK(tape_bytes() > bytes);
  grad(d);
  CHECK(a.adj() == Approx(2 * (-0.5 + 1)).epsilon(1e-15));
  CHECK(b.adj() == Approx(2 * 1.25).epsilon(1e-15));
}

TEST_CASE("a vari made after a region reuses the region's memory") {
  clean_tape tape;
  var keep = 1.0;
  const vari* first_in_region = nullptr;
  {
    nested_tape region;
    var inner = 2.0;
    first_in_region = inner.vi_;
  }
  var after = 3.0;
  CHECK(after.vi_ == first_in_region);
  CHECK(keep.val() == 1.0);
  CHECK(after.val() == 3.0);
}

TEST_CASE("nested regions inside nested regions") {
  clean_tape tape;
  var root = 1.0;
  const std::size_t root_size = tape_size();
  {
    nested_tape level1;
    var x1 = 2.0;
    var y1 = x1 * x1;
    const std::size_t size1 = tape_size();
    const std::size_t bytes1 = tape_bytes();
    grad(y1);
    CHECK(x1.adj() == 4.0);
    {
      nested_tape level2;
      var x2 = 5.0;
      var y2 = x2 * x2 * x2;
      {
        nested_tape level3;
        var x3 = 7.0;
        var y3 = log(x3);
        grad(y3);
        CHECK(x3.adj() == Approx(1 / 7.0).epsilon(1e-15));
        CHECK(x2.adj() == 0.0);  // level 2 untouched by the level-3 sweep
        CHECK(x1.adj() == 4.0);
        set_zero_nested_adjoints();
        CHECK(x3.adj() == 0.0);
        CHECK(x1.adj() == 4.0);
      }
      grad(y2);
      CHECK(x2.adj() == 75.0);
      CHECK(x1.adj() == 4.0);  // level 1 untouched by the level-2 sweep
      CHECK(y1.adj() == 1.0);
    }
    CHECK(tape_size() == size1);
    CHECK(tape_bytes() == bytes1);
    // Level 1 sweeps all of level 1 again.
    set_zero_nested_adjoints();
    CHECK(x1.adj() == 0.0);
    grad(y1);
    CHECK(x1.adj() == 4.0);
  }
  CHECK(tape_size() == root_size);
  CHECK(tape::current().nests.empty());
  CHECK(root.adj() == 0.0);
}

TEST_CASE("a region that outgrows the current memory block rewinds across blocks") {
  clean_tape tape;
  var keep = 3.0;
  const std::size_t bytes = tape_bytes();
  {
    nested_tape region;
    var sum = 0.0;
    for (int i = 0; i < 200000; ++i) sum += var(1.0);
    grad(sum);
    CHECK(sum.val() == 200000.0);
  }
  CHECK(tape_bytes() == bytes);
  CHECK(tape_size() == 1);
  var y = keep * keep;
  grad(y);
  CHECK(keep.adj() == 6.0);
}

TEST_CASE("an exception inside a region unwinds it") {
  clean_tape tape;
  var keep = 1.0;
  const std::size_t size = tape_size();
  try {
    nested_tape region;
    var x = keep.val() * 2.0;
    (void)(x * x);
    throw std::runtime_error("inside");
  } catch (const std::runtime_error&) {
  }
  CHECK(tape_size() == size);
  CHECK(tape::current().nests.empty());
}

TEST_CASE("precomputed_gradients: value, partials, and a mismatch naming both sizes") {
  clean_tape tape;
  var a = 2.0, b = 3.0;
  const std::size_t before = tape_size();
  var y = precomputed_gradients(10.0, {a, b}, {0.5, -4.0});
  CHECK(tape_size() == before + 1);
  CHECK(y.val() == 10.0);
  var z = y * y;
  grad(z);
  CHECK(a.adj() == 2 * 10.0 * 0.5);
  CHECK(b.adj() == 2 * 10.0 * -4.0);
  CHECK_THROWS_MATCHES(precomputed_gradients(1.0, {a, b}, {1.0}), std::invalid_argument,
                       test::message_contains({"2 operands", "1 gradients"}));
  var none = precomputed_gradients(4.0, {}, {});
  grad(none);
  CHECK(none.val() == 4.0);
}
