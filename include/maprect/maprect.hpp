#pragma once
/// \file Everything maprect offers: the AD core, map_rect, reduce_sum, thread teams, and the MPI cluster.

#include "ad.hpp"
#include "cluster.hpp"
#include "job_data.hpp"
#include "map_rect.hpp"
#include "reduce_sum.hpp"
#include "thread_team.hpp"
