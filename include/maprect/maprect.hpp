#pragma once
/// \file Everything maprect offers: the AD core, map_rect, reduce_sum, and the MPI cluster.

#include "ad.hpp"
#include "cluster.hpp"
#include "map_rect.hpp"
#include "reduce_sum.hpp"
