#pragma once
/// \file Everything maprect offers: the AD core, map_rect, and the MPI cluster.

#include "ad.hpp"
#include "cluster.hpp"
#include "map_rect.hpp"
#include "thread_team.hpp"
