#pragma once
/// \file Your own model for the program's sample, fit and plan commands: parameters with shapes and
/// bounds, data from CmdStan JSON, a log density over double and maprect::var that calls map_rect or
/// reduce_sum, and generated quantities; registered with MAPRECT_REGISTER_MODEL (docs/models.md).

#include "model/data.hpp"        // model_data: CmdStan JSON with checked shapes
#include "model/init.hpp"        // read_init_values: an init file on the unconstrained scale
#include "model/interface.hpp"   // model, model_adapter, the registry, MAPRECT_REGISTER_MODEL
#include "model/parameters.hpp"  // parameter_list, parameter_values, quantity_writer
#include "model/shape.hpp"       // variable_shape, Stan's column names
#include "model/transforms.hpp"  // bounds, constrain, unconstrain
