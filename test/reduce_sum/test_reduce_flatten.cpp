// reduce_sum's argument layer: vars packed into flat buffers and rebuilt from them with fresh leaves, the
// data and skeletons through Boost.Serialization, and slices run from those alone (as a rank would run
// them), in any order of chunks, folding to the in-process bits.
#include <catch2/catch.hpp>

#include <boost/archive/binary_iarchive.hpp>
#include <boost/archive/binary_oarchive.hpp>
#include <limits>
#include <sstream>

#include <maprect/detail/reduce_serialize.hpp>

#include "reduce_sum/functors.hpp"
#include "support/matchers.hpp"

using namespace maprect;
using namespace maprect::test;

MAPRECT_REGISTER_REDUCE(350, maprect::test::walking_partial)

namespace {

/// x written to a binary archive and read back into a T.
template <class T>
T round_trip(const T& x) {
  std::stringstream bytes;
  {
    boost::archive::binary_oarchive out(bytes);
    out << x;
  }
  T back;
  boost::archive::binary_iarchive in(bytes);
  in >> back;
  return back;
}

/// Every double of a matrix, bit for bit.
template <class M>
bool same_bits(const M& a, const M& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) return false;
  for (Eigen::Index i = 0; i < a.size(); ++i)
    if (bits(a(i)) != bits(b(i))) return false;
  return true;
}

/// A ragged nested parameter: vectors of var matrices of different shapes.
std::vector<std::vector<matrix_v>> nested_parameter() {
  std::vector<std::vector<matrix_v>> x(3);
  x[0].push_back(to_var(Eigen::MatrixXd::Constant(2, 3, 0.5)));
  x[0][0](1, 2) = -1.25;
  x[2].push_back(to_var(Eigen::MatrixXd::Constant(1, 1, 4.0)));
  x[2].push_back(matrix_v(0, 2));
  x[2].push_back(to_var(Eigen::Matrix2d::Identity()));
  return x;
}

}  // namespace

TEST_CASE("flatten: values and nodes in one order; rebuilt from the argument or its skeleton, fresh leaves") {
  recover_memory();
  const std::vector<std::vector<matrix_v>> x = nested_parameter();
  REQUIRE(detail::count_vars(x) == 6 + 1 + 0 + 4);
  REQUIRE(detail::count_vars_as<std::vector<std::vector<matrix_v>>>(detail::skeleton_of(x)) == 11);
  std::vector<double> values(11);
  std::vector<vari*> nodes(11);
  double* v = values.data();
  vari** n = nodes.data();
  detail::pack_values(x, v);
  detail::pack_nodes(x, n);
  CHECK(v == values.data() + 11);
  // Column-major coefficients of each matrix, matrices and vectors in order.
  const std::vector<double> expected = {0.5, 0.5, 0.5, 0.5, 0.5, -1.25, 4.0, 1.0, 0.0, 0.0, 1.0};
  CHECK(values == expected);
  CHECK(nodes[5] == x[0][0](1, 2).vi_);
  CHECK(nodes[6] == x[2][0](0, 0).vi_);
  CHECK(nodes[10] == x[2][2](1, 1).vi_);

  nested_tape region;
  const std::size_t leaves = tape::current().leaves.size();
  std::vector<std::vector<matrix_v>> from_argument, from_skeleton;
  const double* in = values.data();
  detail::rebuild(from_argument, x, in);
  CHECK(tape::current().leaves.size() == leaves + 11);
  in = values.data();
  detail::rebuild(from_skeleton, detail::skeleton_of(x), in);
  CHECK(tape::current().leaves.size() == leaves + 22);
  for (const auto* rebuilt : {&from_argument, &from_skeleton}) {
    REQUIRE(rebuilt->size() == 3);
    CHECK((*rebuilt)[1].empty());
    CHECK((*rebuilt)[2][1].rows() == 0);
    CHECK((*rebuilt)[2][1].cols() == 2);
    std::vector<double> again(11);
    std::vector<vari*> again_nodes(11);
    double* a = again.data();
    vari** an = again_nodes.data();
    detail::pack_values(*rebuilt, a);
    detail::pack_nodes(*rebuilt, an);
    CHECK(again == values);
    // Fresh leaves, in packed order on the tape.
    for (std::size_t k = 0; k < 11; ++k) CHECK(again_nodes[k] != nodes[k]);
    CHECK(again_nodes[0] == tape::current().leaves[leaves + (rebuilt == &from_argument ? 0 : 11)]);
  }
  // Data is copied, and has no vars.
  const std::vector<Eigen::VectorXd> data(2, Eigen::VectorXd::LinSpaced(3, 0, 1));
  std::vector<Eigen::VectorXd> data_copy;
  in = nullptr;
  detail::rebuild(data_copy, data, in);
  CHECK(detail::count_vars(data) == 0);
  REQUIRE(data_copy.size() == 2);
  CHECK(same_bits(data_copy[1], data[1]));
}

TEST_CASE("flatten: data arguments and skeletons survive Boost.Serialization bit for bit") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  Eigen::MatrixXd m(2, 3);
  m << 1.0 / 3, -0.0, nan, inf, -inf, 5e-324;
  const Eigen::MatrixXd m_back = round_trip(m);
  CHECK(same_bits(m_back, m));
  const Eigen::RowVectorXd r = Eigen::RowVectorXd::LinSpaced(5, -1, 1);
  CHECK(same_bits(round_trip(r), r));
  const Eigen::Matrix2d fixed = Eigen::Matrix2d::Identity() * 0.1;
  CHECK(same_bits(round_trip(fixed), fixed));
  const std::vector<std::vector<Eigen::VectorXd>> nested = {
      {Eigen::VectorXd::Constant(2, 0.7)}, {}, {Eigen::VectorXd(0)}};
  const auto nested_back = round_trip(nested);
  REQUIRE(nested_back.size() == 3);
  CHECK(same_bits(nested_back[0][0], nested[0][0]));
  CHECK(nested_back[1].empty());
  CHECK(nested_back[2][0].size() == 0);
  const std::vector<int> ints = {3, -7, 0};
  CHECK(round_trip(ints) == ints);
  const std::vector<std::vector<double>> ragged = {{1.5}, {}, {-2.5, 0.25}};
  CHECK(round_trip(ragged) == ragged);
  CHECK(round_trip(42) == 42);
  CHECK(bits(round_trip(0.1)) == bits(0.1));

  // The skeleton of a parameter: the shape and values a rank rebuilds it from.
  recover_memory();
  const auto x = nested_parameter();
  const auto skeleton = round_trip(detail::skeleton_of(x));
  REQUIRE(skeleton.size() == 3);
  CHECK(same_bits(skeleton[0][0], value_of(x[0][0])));
  CHECK(skeleton[2][1].rows() == 0);
  CHECK(skeleton[2][1].cols() == 2);
  CHECK(detail::count_vars_as<std::vector<std::vector<matrix_v>>>(skeleton) == 11);

  // A matrix read into a type whose fixed size does not fit is refused, not overrun.
  std::stringstream bytes;
  {
    boost::archive::binary_oarchive out(bytes);
    out << Eigen::MatrixXd(Eigen::MatrixXd::Ones(3, 3));
  }
  Eigen::Matrix2d too_small;
  boost::archive::binary_iarchive in(bytes);
  CHECK_THROWS_MATCHES(in >> too_small, std::length_error, message_contains_matcher({"3 x 3", "does not fit"}));
  recover_memory();
}

TEST_CASE("flatten: slices run from skeletons and packed values, in chunks in any order, give the in-process bits") {
  recover_memory();
  const int N = 11;
  std::vector<vector_v> sliced;
  for (int t = 0; t < N; ++t) sliced.push_back(to_var(Eigen::VectorXd::LinSpaced(1 + t % 3, -0.3 * t, 0.2 * t)));
  const matrix_v m = to_var(Eigen::MatrixXd::Constant(2, 2, 0.4));
  const std::vector<Eigen::VectorXd> data(2, Eigen::VectorXd::LinSpaced(3, -1, 1));
  const std::vector<vari*> ops = operands_of(sliced, m, data);

  for (int G : {1, 3, 4, 11}) {
    INFO("grainsize " << G);
    const value_and_gradient in_process =
        gradient_of(reduce_sum<350, walking_partial>(sliced, G, nullptr, m, data), ops);

    // What a rank holds: the data and the skeletons (shipped once), and the packed values (every call).
    const auto sliced_skeleton = round_trip(detail::skeleton_of(sliced));
    const auto m_skeleton = round_trip(detail::skeleton_of(m));
    const auto data_there = round_trip(data);
    std::vector<double> shared_values(detail::count_vars(m)), sliced_values(detail::count_vars(sliced));
    double* v = shared_values.data();
    detail::pack_values(m, v);
    v = sliced_values.data();
    detail::pack_values(sliced, v);

    detail::reduce_layout layout;
    layout.assign<vector_v>(detail::slice_plan{N, G}, sliced_skeleton, shared_values.size());
    std::vector<double> blocks(layout.block_doubles());
    detail::slice_block_sink sink(layout, blocks.data());
    using runner = detail::slice_runner<walking_partial, vector_v, matrix_v, std::vector<Eigen::VectorXd>>;
    const int n_slices = layout.plan().n_slices(), split = n_slices / 2;
    int cursor = 0;
    // The later chunk first: blocks are stored by slice index, whoever runs them and whenever.
    runner::run(layout, split, n_slices, sliced_skeleton, sliced_values.data(), shared_values.data(), nullptr,
                std::tie(m_skeleton, data_there), sink, cursor);
    CHECK(cursor == n_slices);
    runner::run(layout, 0, split, sliced_skeleton, sliced_values.data(), shared_values.data(), nullptr,
                std::tie(m_skeleton, data_there), sink, cursor);

    value_and_gradient folded;
    folded.gradient.resize(ops.size());
    detail::slice_fold fold(layout, folded.gradient.data());
    for (int s = 0; s < n_slices; ++s) fold.add_block(s, blocks.data() + layout.block_at(s));
    folded.value = fold.value();
    CHECK(folded == in_process);
    CHECK(folded == fold_over_slices<walking_partial>(G, sliced, m, data));
  }
  recover_memory();
}
