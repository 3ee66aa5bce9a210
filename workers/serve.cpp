// Worker side of the cluster (in progress).
#include "src/cluster_state.hpp"

namespace maprect::detail {
void serve(cluster_state&) {}
}  // namespace maprect::detail
